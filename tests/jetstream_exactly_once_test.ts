/**
 * Exactly-once end to end through JetStream, in local mode: a job reads a
 * stream of `{ key, seq }` records (one subject per key, so one source split
 * per key) with `JetStreamSource`, checks per key in keyed state that every
 * `seq` is the last one plus 1, and writes each record through the
 * transactional `JetStreamSink` to another stream. Faults are injected:
 *
 * - a user map throws at a record in the middle of attempt 0, after a
 *   checkpoint completed;
 * - on attempt 1, the sink fails when its first checkpoint completes,
 *   after pre-commit and before commit (the `before-commit` fault point);
 * - on attempt 2, the keyed operator fails after its first snapshot.
 *
 * Afterwards the target stream, read committed, must hold per key exactly
 * seq 1..N in order (none lost, none twice), and no transaction may be left
 * open. The job's own checks (a gap or repeat fails it) guard the input
 * side. Runs against the shared NATS server (`WEIR_TEST_NATS_URL`, see
 * `_nats_server.ts`) with unique stream and bucket names.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type CheckpointListener,
  type Collector,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import { jetstreamApi, kvApi } from "../runtime/actor/nats_deps.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { JetStreamSink, JetStreamSource, readCommitted } from "../connectors/jetstream/mod.ts";
import { withTempDir } from "./_job_kit.ts";
import { TEST_NATS_URL } from "./_nats_server.ts";

const CONNECTION = { servers: TEST_NATS_URL, name: "weir-test" };
const KEYS = ["k0", "k1", "k2", "k3"];
const RECORDS_PER_KEY = 1000;

interface Rec {
  readonly key: string;
  readonly seq: number;
}

/** Fails the job on a gap or repeat of `seq` per key (1, 2, 3, ...), and passes records on. */
class SeqCheck implements KeyedProcessFunction<string, Rec, Rec> {
  private last!: ValueState<number>;
  open(ctx: RuntimeContext): void {
    this.last = ctx.getState(new ValueStateDescriptor<number>("last"));
  }
  processElement(record: Rec, ctx: KeyedProcessContext<string>, out: Collector<Rec>): void {
    const last = this.last.value() ?? 0;
    if (record.seq !== last + 1) {
      throw new Error(`key ${ctx.getCurrentKey()}: expected seq ${last + 1}, got ${record.seq}`);
    }
    this.last.update(record.seq);
    out.collect(record);
  }
}

/**
 * An identity map that throws once, on attempt 0, at the first record of
 * `key` from `fromSeq` on that follows a completed checkpoint (so attempt 0
 * leaves committed and pre-committed transactions behind), or at the key's
 * last record when no checkpoint completed before it.
 */
class FailOnce implements CheckpointListener {
  readonly key: string;
  readonly fromSeq: number;
  readonly fired: string[];
  private attempt = -1;
  private checkpointed = false;
  constructor(key: string, fromSeq: number, fired: string[]) {
    this.key = key;
    this.fromSeq = fromSeq;
    this.fired = fired;
  }
  open(ctx: RuntimeContext): void {
    this.attempt = ctx.attempt;
  }
  notifyCheckpointComplete(): void {
    this.checkpointed = true;
  }
  map(record: Rec): Rec {
    if (
      this.attempt === 0 && record.key === this.key &&
      ((this.checkpointed && record.seq >= this.fromSeq) || record.seq === RECORDS_PER_KEY)
    ) {
      this.attempt = -1;
      this.fired.push(`map at ${record.key}#${record.seq}`);
      throw new Error(`induced failure in map at ${record.key}#${record.seq}`);
    }
    return record;
  }
}

Deno.test("a JetStream-to-JetStream job commits every record exactly once through injected failures", async () => {
  const nc = await connectNats(CONNECTION);
  const jsm = await jetstreamApi.jetstreamManager(nc);
  const suffix = crypto.randomUUID().slice(0, 8);
  const input = `weir-test-in-${suffix}`;
  const output = `weir-test-out-${suffix}`;
  const bucket = `weir-test-txn-${suffix}`;
  try {
    await jsm.streams.add({ name: input, subjects: [`${input}.>`] });
    await jsm.streams.add({ name: output, subjects: [`${output}.>`] });
    const js = jetstreamApi.jetstream(nc);
    const encoder = new TextEncoder();
    for (let from = 1; from <= RECORDS_PER_KEY; from += 100) {
      const batch: Promise<unknown>[] = [];
      for (let seq = from; seq < from + 100 && seq <= RECORDS_PER_KEY; seq++) {
        for (const key of KEYS) {
          batch.push(js.publish(`${input}.${key}`, encoder.encode(JSON.stringify({ key, seq }))));
        }
      }
      await Promise.all(batch);
    }

    const fired: string[] = [];
    const result = await withTempDir(async (dir) => {
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .enableCheckpointing(100, { directory: dir })
        .setRestartStrategy(RestartStrategies.fixedDelay(5, 0))
        // Small buffers couple the source to the sink's pace, so checkpoints land mid-stream.
        .setNetworkBuffers({ bufferSize: 32, credits: 2 });
      env.fromSource(
        new JetStreamSource<Rec>({
          connection: CONNECTION,
          stream: input,
          filterSubject: `${input}.*`,
          bounded: true,
          txnBucket: bucket,
          batchSize: 64,
        }),
        WatermarkStrategy.noWatermarks(),
        "records",
      ).uid("records").setParallelism(2)
        .map(new FailOnce("k1", RECORDS_PER_KEY / 2, fired)).uid("fail-once")
        .setParallelism(2)
        .keyBy((r) => r.key)
        .process(new SeqCheck()).uid("check").setParallelism(2)
        .sinkTo(
          new JetStreamSink<Rec>({
            connection: CONNECTION,
            stream: output,
            subject: (r) => `${output}.${r.key}`,
            txnBucket: bucket,
          }),
        ).uid("out").setParallelism(2);
      const vertexOf = (uid: string) =>
        env.getJobGraph().vertices.find((v) => v.operators.some((o) => o.uid === uid))!.id;
      const sinkVertex = vertexOf("out");
      const checkVertex = vertexOf("check");
      let commitFault = false;
      let snapshotFault = false;
      env.setFaultInjector({
        task: (point, site) => {
          if (
            !commitFault && point === "before-commit" && site.attempt === 1 &&
            site.vertexId === sinkVertex
          ) {
            commitFault = true;
            fired.push(`before-commit of checkpoint ${site.checkpointId} on attempt 1`);
            throw new Error("induced failure between pre-commit and commit");
          }
          if (
            !snapshotFault && point === "after-snapshot" && site.attempt === 2 &&
            site.vertexId === checkVertex
          ) {
            snapshotFault = true;
            fired.push(`after-snapshot of checkpoint ${site.checkpointId} on attempt 2`);
            throw new Error("induced failure after a snapshot");
          }
        },
      });
      return await env.execute("jetstream exactly-once");
    });

    const context = `faults [${fired.join("; ")}]; ${result.summary}`;
    assert.equal(fired.length, 3, `${context}: faults fired`);
    assert.equal(result.restarts, 3, `${context}: restarts`);

    const byKey = new Map<string, number[]>(KEYS.map((k) => [k, []]));
    for await (
      const record of readCommitted({
        connection: CONNECTION,
        stream: output,
        txnBucket: bucket,
        bounded: true,
      })
    ) {
      const { key, seq } = JSON.parse(new TextDecoder().decode(record.data)) as Rec;
      assert.equal(record.subject, `${output}.${key}`);
      byKey.get(key)!.push(seq);
    }
    const expected = Array.from({ length: RECORDS_PER_KEY }, (_, i) => i + 1);
    for (const key of KEYS) {
      assert.deepEqual(byKey.get(key), expected, `${context}: committed seqs of key ${key}`);
    }

    // Nothing is left open for readers to stall behind.
    const kv = await new kvApi.Kvm(nc).open(bucket);
    const states = new Map<string, number>();
    for await (const key of await kv.keys("txn.>")) {
      const state = (await kv.get(key))!.json<{ state: string }>().state;
      states.set(state, (states.get(state) ?? 0) + 1);
    }
    assert.equal(states.get("open") ?? 0, 0, `${context}: transactions by state ${[...states]}`);
    assert.ok(
      (states.get("committed") ?? 0) > 0,
      `${context}: transactions by state ${[...states]}`,
    );
  } finally {
    for (const stream of [input, output, `KV_${bucket}`]) {
      await jsm.streams.delete(stream).catch(() => {});
    }
    await nc.close();
  }
});
