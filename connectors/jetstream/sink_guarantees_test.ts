/**
 * The JetStream sink's guarantees without transactions in whole jobs
 * (local mode): at-least-once with at-least-once checkpoints loses nothing
 * across a failure and a replay; none runs without checkpoints. (The
 * exactly-once sink runs the conformance suite, `sink_conformance_test.ts`,
 * and `tests/jetstream_exactly_once_test.ts`.)
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type CheckpointListener,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import { withTempDir } from "../../tests/_job_kit.ts";
import { waitUntil } from "../../tests/_wait.ts";
import { JetStreamSink } from "./sink.ts";
import { JetStreamSource } from "./source.ts";
import { CONNECTION, publishJson, readJson, withJetStream } from "./_test_kit.ts";

const RECORDS = 500;

/** Throws once, on attempt 0, at the first record after a completed checkpoint (or at the last). */
class FailOnceAfterCheckpoint implements CheckpointListener {
  private attempt = -1;
  private checkpointed = false;
  /** Shared by the engine's per-subtask copies (they are shallow). */
  readonly fired: string[] = [];
  open(ctx: RuntimeContext): void {
    this.attempt = ctx.attempt;
  }
  notifyCheckpointComplete(): void {
    this.checkpointed = true;
  }
  map(n: number): number {
    if (this.attempt === 0 && (this.checkpointed || n === RECORDS - 1)) {
      this.attempt = -1;
      this.fired.push(`record ${n}`);
      throw new Error(`induced failure at record ${n}`);
    }
    return n;
  }
}

Deno.test("an at-least-once JetStream sink loses no record across a failure and a replay", async () => {
  await withJetStream(async (t) => {
    const values = Array.from({ length: RECORDS }, (_, i) => i);
    await publishJson(t.js, `${t.stream}.in`, values);
    const fail = new FailOnceAfterCheckpoint();
    await withTempDir(async (dir) => {
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .enableCheckpointing(50, { directory: dir, mode: "at-least-once" })
        .setRestartStrategy(RestartStrategies.fixedDelay(2, 0))
        .setNetworkBuffers({ bufferSize: 16, credits: 2 });
      env.fromSource(
        new JetStreamSource<number>({
          connection: CONNECTION,
          stream: t.stream,
          filterSubject: `${t.stream}.in`,
          bounded: true,
          batchSize: 10,
          // About 1 s of input, so checkpoints (every 50 ms) complete before the failure.
          recordsPerSecond: 500,
        }),
        WatermarkStrategy.noWatermarks(),
        "numbers",
      ).uid("numbers")
        .map(fail).uid("fail")
        .sinkTo(
          new JetStreamSink<number>({
            connection: CONNECTION,
            stream: t.stream,
            subject: `${t.stream}.out`,
            deliveryGuarantee: "at-least-once",
            maxBatchBytes: 64,
          }),
        ).uid("out");
      const result = await env.execute("jetstream at-least-once");
      // Usually the failure comes after a completed checkpoint, so the replay starts past its
      // offset; on a machine too loaded for any checkpoint to complete first, at the last record.
      assert.equal(fail.fired.length, 1, result.summary);
      assert.equal(result.restarts, 1, result.summary);
    });
    const out = (await readJson(t.stream, { filterSubject: `${t.stream}.out` })) as number[];
    const seen = new Set(out);
    const missing = values.filter((v) => !seen.has(v));
    assert.deepEqual(missing, [], `${out.length} records written`);
  });
});

Deno.test("a JetStream sink with guarantee none writes every record of a job without checkpoints", async () => {
  await withJetStream(async (t) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.fromCollection(Array.from({ length: 100 }, (_, i) => i))
      .sinkTo(
        new JetStreamSink<number>({
          connection: CONNECTION,
          stream: t.stream,
          subject: `${t.stream}.out`,
          deliveryGuarantee: "none",
        }),
      ).uid("out");
    await env.execute("jetstream none");
    let out: unknown[] = [];
    await waitUntil(async () => (out = await readJson(t.stream)).length >= 100, {
      timeoutMs: 30_000,
      missing: () => `${out.length} of 100 records stored`,
    });
    assert.deepEqual(out, Array.from({ length: 100 }, (_, i) => i));
  });
});
