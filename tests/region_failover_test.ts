/**
 * Region failover in local mode (Flink's `jobmanager.execution.failover-strategy:
 * region`): a job of two independent forward pipelines at parallelism 2
 * (source -> map -> two-phase-commit sink, chaining off, so records cross
 * forward network edges) has two pipelined regions, one per subtask index.
 * A map failure in subtask 0 restarts region 0 only: region 1's subtasks
 * keep running (opened once, on attempt 0; every transaction they commit
 * is of attempt 0), region 0's reopen on attempt 1, and the committed
 * output equals the failure-free run's record by record. A keyed job (one
 * region) and the `"full"` strategy restart every subtask, and so does a
 * failure while a stop-with-savepoint is in progress (every source was told
 * to stop, and must resume once the stop failed). A sink failing in the
 * final checkpoint (after every source ended): before it completed, a
 * region failover that triggers it again; after its metadata was written
 * and before the sink committed it, a full failover restoring it. After a
 * region failover, a stop-with-savepoint snapshots subtasks on different
 * attempts, and a run resumed from it commits the rest of the input once.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type FailoverStrategy,
  type JobExecutionResult,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";

/** A record of split `split`, numbered `seq` within it. */
interface Rec {
  readonly split: number;
  readonly seq: number;
}

const RECORDS = 600;
const MARK_EVERY = 100;

/** Split `split`: RECORDS records with a checkpoint to wait for every MARK_EVERY. */
function split(split: number) {
  const items = [];
  for (let seq = 0; seq < RECORDS; seq++) {
    if (seq > 0 && seq % MARK_EVERY === 0) items.push(TestSource.awaitCheckpoint());
    items.push({ split, seq });
  }
  return items;
}

/** Who opened the map function: `subtask@attempt`, in order. */
type Opens = string[];

/**
 * An identity map that records its opens and throws once on attempt 0 of
 * subtask 0 at `failAt`. Functions are copied per subtask (own fields,
 * shallowly): no #private fields.
 */
class TracingMap {
  context: RuntimeContext | undefined;
  constructor(
    private readonly opens: Opens,
    private readonly failAt: number | undefined,
    private readonly fired: { count: number },
  ) {}
  open(context: RuntimeContext): void {
    this.context = context;
    this.opens.push(`${context.subtaskIndex}@${context.attempt}`);
  }
  map(r: Rec): Rec {
    const c = this.context!;
    if (this.failAt === r.seq && c.subtaskIndex === 0 && c.attempt === 0 && r.split === 0) {
      this.fired.count++;
      throw new Error(`induced failure in map at ${r.split}#${r.seq}`);
    }
    return r;
  }
}

interface Run {
  readonly result: JobExecutionResult;
  readonly opens: Opens;
  readonly committed: Rec[];
  readonly transactions: string[];
  readonly fired: number;
}

async function run(
  options: { failAt?: number; keyed?: boolean; strategy?: FailoverStrategy },
): Promise<Run> {
  return await withTempDir(async (dir) => {
    const opens: Opens = [];
    const fired = { count: 0 };
    const sink = new CollectingSink<Rec>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(10, { directory: dir })
      .setRestartStrategy(RestartStrategies.fixedDelay(2, 0))
      .disableOperatorChaining();
    if (options.strategy !== undefined) env.setFailoverStrategy(options.strategy);
    const records = env.fromSource(
      TestSource.perSubtask<Rec>([split(0), split(1)], { batchSize: 4 }),
      WatermarkStrategy.noWatermarks(),
      "records",
    ).uid("records").setParallelism(2);
    const mapped = options.keyed
      ? records.keyBy((r) => r.split).map(new TracingMap(opens, options.failAt, fired))
      : records.map(new TracingMap(opens, options.failAt, fired));
    mapped.uid("traced").setParallelism(2).sinkTo(sink).uid("committed").setParallelism(2);
    const result = await env.execute("region failover");
    return {
      result,
      opens,
      committed: sink.committed(),
      transactions: sink.committedTransactions(),
      fired: fired.count,
    };
  });
}

/** The committed records of split `split`, in commit order. */
const ofSplit = (records: Rec[], s: number) =>
  records.filter((r) => r.split === s).map((r) => r.seq);

const everySeq = Array.from({ length: RECORDS }, (_, i) => i);

Deno.test("a failure in one forward pipeline restarts only its region; the other keeps its attempt and commits exactly once", async () => {
  const baseline = await run({});
  assert.equal(baseline.result.restarts, 0, baseline.result.summary);
  assert.deepEqual(ofSplit(baseline.committed, 0), everySeq);
  assert.deepEqual(ofSplit(baseline.committed, 1), everySeq);

  const faulted = await run({ failAt: 250 });
  const context = `${faulted.result.summary}; opens ${faulted.opens.join(", ")}`;
  assert.equal(faulted.fired, 1, context);
  assert.equal(faulted.result.restarts, 1, context);
  // Region 1 (subtask 1 of every vertex) was never redeployed; region 0 was, as attempt 1.
  assert.deepEqual(faulted.opens.filter((o) => o.startsWith("1@")), ["1@0"], context);
  assert.deepEqual(faulted.opens.filter((o) => o.startsWith("0@")), ["0@0", "0@1"], context);
  // Every transaction region 1's sink committed was opened by attempt 0.
  const region1 = faulted.transactions.filter((id) => id.includes("committed-1-"));
  assert.ok(region1.length > 0, context);
  assert.deepEqual(region1.filter((id) => !id.includes("-1-a0-")), [], context);
  assert.ok(faulted.transactions.some((id) => id.includes("committed-0-a1-")), context);
  // Exactly-once: record by record what the failure-free run committed.
  assert.deepEqual(ofSplit(faulted.committed, 0), ofSplit(baseline.committed, 0), context);
  assert.deepEqual(ofSplit(faulted.committed, 1), ofSplit(baseline.committed, 1), context);
});

Deno.test("a keyed job is one region: a failure restarts every subtask", async () => {
  const faulted = await run({ failAt: 250, keyed: true });
  const context = `${faulted.result.summary}; opens ${faulted.opens.join(", ")}`;
  assert.equal(faulted.fired, 1, context);
  assert.equal(faulted.result.restarts, 1, context);
  assert.deepEqual([...faulted.opens].sort(), ["0@0", "0@1", "1@0", "1@1"], context);
  assert.deepEqual(ofSplit(faulted.committed, 0), everySeq, context);
  assert.deepEqual(ofSplit(faulted.committed, 1), everySeq, context);
});

Deno.test("failover strategy full restarts every subtask of a job with two regions", async () => {
  const faulted = await run({ failAt: 250, strategy: "full" });
  const context = `${faulted.result.summary}; opens ${faulted.opens.join(", ")}`;
  assert.equal(faulted.result.restarts, 1, context);
  assert.deepEqual([...faulted.opens].sort(), ["0@0", "0@1", "1@0", "1@1"], context);
  assert.deepEqual(ofSplit(faulted.committed, 0), everySeq, context);
  assert.deepEqual(ofSplit(faulted.committed, 1), everySeq, context);
});

Deno.test("setFailoverStrategy refuses anything but region and full, naming the value", () => {
  assert.throws(
    () =>
      StreamExecutionEnvironment.getExecutionEnvironment().setFailoverStrategy(
        "pipelined" as FailoverStrategy,
      ),
    /failover strategy must be "region" or "full": current value is "pipelined"/,
  );
});

Deno.test("a failure while stopping with a savepoint fails the stop and restarts every region: each source resumes, and the job commits its whole input once", async () => {
  await withTempDir(async (dir) => {
    const sink = new CollectingSink<Rec>();
    const state = { stopping: false, fired: 0 };
    const vertexIds: string[] = [];
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(20, { directory: dir })
      .setRestartStrategy(RestartStrategies.fixedDelay(3, 0))
      .disableOperatorChaining()
      .setFaultInjector({
        task: (point, site) => {
          // Region 0's sink fails in the first snapshot after the stop was asked for.
          if (
            state.stopping && state.fired === 0 && point === "before-snapshot" &&
            site.vertexId === vertexIds[2] && site.subtask === 0
          ) {
            state.fired++;
            throw new Error(
              `induced failure of sink#0 while stopping (checkpoint ${site.checkpointId})`,
            );
          }
        },
      });
    env.fromSource(
      TestSource.perSubtask<Rec>([split(0), split(1)], { batchSize: 2 }),
      WatermarkStrategy.noWatermarks(),
      "records",
    ).uid("records").setParallelism(2)
      .map((r: Rec) => r).uid("identity").setParallelism(2)
      .sinkTo(sink).uid("committed").setParallelism(2);
    vertexIds.push(...env.getJobGraph().vertices.map((v) => v.id));
    const job = await env.executeAsync("stop while failing");
    // Once both splits passed their first checkpoint marker, ask to stop.
    while (ofSplit(sink.committed(), 0).length < 100 || ofSplit(sink.committed(), 1).length < 100) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    state.stopping = true;
    await assert.rejects(job.stopWithSavepoint({ directory: `${dir}/savepoints` }));
    const result = await job.result();
    const context = `${result.summary}; fired ${state.fired}`;
    assert.equal(state.fired, 1, context);
    // Both sources resumed after the failover: the whole input, once, in order.
    assert.deepEqual(ofSplit(sink.committed(), 0), everySeq, context);
    assert.deepEqual(ofSplit(sink.committed(), 1), everySeq, context);
  });
});

for (const point of ["after-snapshot", "before-commit"] as const) {
  Deno.test(`a sink failing at ${point} of a checkpoint taken after every source ended (the final one) still commits the whole input once`, async () => {
    await withTempDir(async (dir) => {
      const sink = new CollectingSink<Rec>();
      const seen = { count: 0, fired: 0, at: -1 };
      const vertexIds: string[] = [];
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .enableCheckpointing(10, { directory: dir })
        .setRestartStrategy(RestartStrategies.fixedDelay(3, 0))
        .disableOperatorChaining()
        .setFaultInjector({
          task: (p, site) => {
            if (
              p === point && seen.fired === 0 && seen.count === 2 * RECORDS &&
              site.vertexId === vertexIds[2] && site.subtask === 0
            ) {
              seen.fired++;
              seen.at = site.checkpointId;
              throw new Error(`induced ${p} failure of sink#0 at checkpoint ${site.checkpointId}`);
            }
          },
        });
      env.fromSource(
        TestSource.perSubtask<Rec>([split(0), split(1)], { batchSize: 4 }),
        WatermarkStrategy.noWatermarks(),
        "records",
      ).uid("records").setParallelism(2)
        .map((r: Rec) => {
          seen.count++;
          return r;
        }).uid("counting").setParallelism(2)
        .sinkTo(sink).uid("committed").setParallelism(2);
      vertexIds.push(...env.getJobGraph().vertices.map((v) => v.id));
      const result = await env.execute("final checkpoint failure");
      const context = `${result.summary}; fired ${seen.fired} at checkpoint ${seen.at}`;
      assert.equal(seen.fired, 1, context);
      assert.deepEqual(ofSplit(sink.committed(), 0), everySeq, context);
      assert.deepEqual(ofSplit(sink.committed(), 1), everySeq, context);
    });
  });
}

Deno.test("after a region failover, stop-with-savepoint takes a savepoint of subtasks on different attempts; resuming from it commits the rest of the input once", async () => {
  await withTempDir(async (dir) => {
    // One sink over both runs, as one external system.
    const sink = new CollectingSink<Rec>();
    const opens: Opens = [];
    const fired = { count: 0 };
    const build = (savepoint?: string) => {
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .enableCheckpointing(20, { directory: dir })
        .setRestartStrategy(RestartStrategies.fixedDelay(2, 0))
        .disableOperatorChaining();
      if (savepoint !== undefined) env.fromSavepoint(savepoint);
      env.fromSource(
        TestSource.perSubtask<Rec>([split(0), split(1)], { batchSize: 2 }),
        WatermarkStrategy.noWatermarks(),
        "records",
      ).uid("records").setParallelism(2)
        .map(new TracingMap(opens, savepoint === undefined ? 150 : undefined, fired))
        .uid("traced").setParallelism(2)
        .sinkTo(sink).uid("committed").setParallelism(2);
      return env;
    };
    const job = await build().executeAsync("stop after region failover");
    // Region 0 failed at 150 and runs again on attempt 1; region 1 still on attempt 0.
    while (!opens.includes("0@1") || ofSplit(sink.committed(), 0).length < 200) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const savepoint = await job.stopWithSavepoint({ directory: `${dir}/savepoints` });
    const first = await job.result();
    assert.equal(first.restarts, 1, first.summary);
    assert.equal(fired.count, 1);
    const stoppedAt = sink.committed().length;
    assert.ok(stoppedAt < 2 * RECORDS, `the stop came before the end of the input (${stoppedAt})`);
    await build(savepoint).execute("resumed");
    const context = `stopped after ${stoppedAt} records; opens ${opens.join(", ")}`;
    assert.deepEqual(ofSplit(sink.committed(), 0), everySeq, context);
    assert.deepEqual(ofSplit(sink.committed(), 1), everySeq, context);
  });
});
