/**
 * Regression tests for the breaker's findings about resuming and restoring
 * jobs (one test per fix, see `/tmp/breaker/repro_*.ts`; the others are
 * `breaker_regressions_test.ts`):
 *
 * 1. a run resumed after a failure for good begins no transaction id a
 *    killed run already used, so a two-phase-commit sink loses nothing;
 * 2. a checkpoint with a missing state file fails the restore without
 *    restarts, even under the default (unlimited) restart strategy;
 * 3. `resumeFrom` with an unknown job or checkpoint fails at once with a
 *    `ResumeError` that lists the completed checkpoints.
 *
 * Tests of a hang run under a deadline, so a regression fails the test
 * instead of stalling the suite.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  JobFailedError,
  RestartStrategies,
  ResumeError,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import type { SinkInitContext } from "../runtime/api/sink.ts";
import { CollectingSink, type CollectingTxn, TestSource } from "../testing.ts";
import {
  assertSameOutput,
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  listTree,
  SequenceCheck,
  SplitCounter,
  splitKeys,
  type SumRecord,
} from "./_job_kit.ts";
import {
  checkpointsIn,
  CountPerKey,
  inTempDir,
  onlyJob,
  rejectionOf,
  withinDeadline,
} from "./_breaker_kit.ts";

// ---------------------------------------------------------------------------
// 1. Transaction ids after a resume

/**
 * A CollectingSink that records the id of every transaction it begins (in
 * an array shared by all subtask copies and by every run).
 */
class IdRecordingSink<T> extends CollectingSink<T> {
  readonly begun: string[] = [];
  override beginTransaction(context: SinkInitContext): CollectingTxn<T> {
    const txn = super.beginTransaction(context);
    this.begun.push(txn.id);
    return txn;
  }
}

/**
 * What a killed process forgets: the sink's in-memory transaction counters
 * (its committed output is durable, as a real sink's would be). Without
 * this, the second run would continue the first run's counters in the
 * shared store and could never reuse an id, whatever the ids are made of.
 */
function forgetTransactionCounters(sink: CollectingSink<unknown>): void {
  const store = Reflect.get(sink, "store") as { counters?: unknown } | undefined;
  assert.ok(
    store?.counters instanceof Map,
    "CollectingSink keeps no transaction counters in `store.counters` any more: update this test",
  );
  store.counters.clear();
}

/** A split-counting identity map that throws at `failAt` (every attempt). */
class ThrowAt extends SplitCounter {
  readonly failAt: KeyedRecord;
  constructor(failAt: KeyedRecord) {
    super(undefined);
    this.failAt = failAt;
  }
  override onRecord(record: KeyedRecord): void {
    if (record.key === this.failAt.key && record.seq === this.failAt.seq) {
      throw new Error(`induced failure at ${record.key}#${record.seq}`);
    }
  }
}

const RESUME_SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 2,
  recordsPerKey: 150,
  awaitCheckpointEvery: 50,
};

/** The keyed job of `_job_kit.ts` at parallelism 2, with `identity` as its second operator. */
function keyedJob(
  dir: string,
  identity: SplitCounter,
  sink: CollectingSink<SumRecord>,
): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .enableCheckpointing(5, { directory: dir })
    .setRestartStrategy(RestartStrategies.noRestart());
  env.fromSource(
    TestSource.perSubtask<KeyedRecord>(keyedSplits(RESUME_SPLITS), { batchSize: 8 }),
    WatermarkStrategy.noWatermarks(),
    "records",
  ).uid("records").setParallelism(2)
    .map(identity).uid("identity").setParallelism(2)
    .keyBy((r) => r.key)
    .process(new SequenceCheck()).uid("sums").setParallelism(2)
    .sinkTo(sink).uid("committed").setParallelism(2);
  return env;
}

Deno.test("a job resumed after failing for good commits the failure-free output and repeats no transaction id", async () => {
  await inTempDir(async (dir) => {
    const sink = new IdRecordingSink<SumRecord>();
    // Split 0's key 0 fails at seq 120, after 240 records of the split: 4
    // awaitCheckpoint markers passed, so checkpoints completed and committed.
    const failAt = { key: splitKeys(0, RESUME_SPLITS.keysPerSplit)[0]!, seq: 120 };
    const first = await rejectionOf(
      keyedJob(dir, new ThrowAt(failAt), sink).execute("txn-ids"),
      10_000,
      "the failing run",
    );
    assert.ok(first instanceof JobFailedError, `not a JobFailedError: ${first}`);
    assert.match(first.message, /induced failure/);
    const committedBefore = sink.committed().length;
    assert.ok(committedBefore > 0, "the failing run committed nothing: the test would be vacuous");
    const { jobId, checkpoints } = await onlyJob(dir);
    assert.ok(checkpoints.length > 0, `job ${jobId} kept no completed checkpoint`);

    forgetTransactionCounters(sink);
    const result = await withinDeadline(
      keyedJob(dir, new SplitCounter(undefined), sink).resumeFrom({ jobId }).execute("txn-ids"),
      10_000,
      "the resumed run",
    );
    const context = `resumed from ${jobId} checkpoint ${checkpoints.at(-1)} (${result.summary})`;

    const repeated = sink.begun.filter((id, i) => sink.begun.indexOf(id) !== i);
    assert.deepEqual(repeated, [], `${context}: transaction ids begun twice`);
    assertSameOutput(
      sink.committed(),
      [...expectedSums(RESUME_SPLITS).values()].flat(),
      context,
    );
  });
});

// ---------------------------------------------------------------------------
// 2. A missing state file

/** words -> keyBy -> CountPerKey -> sink, checkpointing into `dir` (checkpoints kept at the end). */
function countingJob(
  dir: string,
  words: readonly string[],
  sink: CollectingSink<[string, number]>,
  options: {
    parallelism?: number;
    awaitEvery?: number;
    retainedCheckpoints?: number;
    memoryThresholdBytes?: number;
  } = {},
): StreamExecutionEnvironment {
  const items: (string | ReturnType<typeof TestSource.awaitCheckpoint>)[] = [];
  words.forEach((w, i) => {
    items.push(w);
    if (options.awaitEvery && (i + 1) % options.awaitEvery === 0) {
      items.push(TestSource.awaitCheckpoint());
    }
  });
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .enableCheckpointing(5, {
      directory: dir,
      retainOnFinish: true,
      retainedCheckpoints: options.retainedCheckpoints ?? 1,
      ...(options.memoryThresholdBytes === undefined
        ? {}
        : { memoryThresholdBytes: options.memoryThresholdBytes }),
    })
    .setParallelism(options.parallelism ?? 1);
  env.fromSource(TestSource.of(items), WatermarkStrategy.noWatermarks(), "words").uid("words")
    .keyBy((w: string) => w)
    .process(new CountPerKey()).uid("counts")
    .sinkTo(sink).uid("out");
  return env;
}

Deno.test("a missing state file fails the restore without restarts under the default restart strategy", async () => {
  await inTempDir(async (dir) => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i % 6}`);
    // Threshold 0: every blob a file (small state would be inline in the metadata).
    await countingJob(dir, words, new CollectingSink(), { memoryThresholdBytes: 0 })
      .execute("retained");
    const { jobId, checkpoints } = await onlyJob(dir);
    const checkpointId = checkpoints.at(-1);
    assert.ok(checkpointId !== undefined, `job ${jobId} retained no completed checkpoint`);
    const stateFiles = (await listTree(`${dir}/${jobId}/chk-${checkpointId}`))
      .filter((name) => name !== "_metadata" && !name.endsWith(".tmp"));
    // The keyed state of the counts (any state file would do).
    const victim = stateFiles.find((name) => name.endsWith(".keyed")) ?? stateFiles[0];
    assert.ok(victim !== undefined, `checkpoint ${checkpointId} has no state file`);
    await Deno.remove(`${dir}/${jobId}/chk-${checkpointId}/${victim}`);

    // No restart strategy set: with checkpointing on, the default restarts
    // forever, one second apart. A restore that restarts never settles here.
    const sink = new CollectingSink<[string, number]>();
    const env = countingJob(dir, words, sink).resumeFrom({ jobId, checkpointId });
    const started = performance.now();
    const error = await rejectionOf(env.execute("resumed"), 4_000, "execute() of the resume");
    const elapsed = performance.now() - started;
    assert.ok(error instanceof JobFailedError, `not a JobFailedError: ${error}`);
    assert.ok(
      error.message.includes(`checkpoint ${checkpointId}`),
      `the error does not name checkpoint ${checkpointId}: ${error.message}`,
    );
    assert.ok(
      error.message.includes(victim),
      `the error does not name the missing file ${victim}: ${error.message}`,
    );
    assert.ok(elapsed < 1_000, `the failure took ${Math.round(elapsed)} ms: it restarted first`);
    assert.deepEqual(sink.committed(), [], "the failed resume committed records");
  });
});

// ---------------------------------------------------------------------------
// 3. resumeFrom an unknown job or checkpoint

Deno.test("resumeFrom an unknown job or checkpoint rejects at once with a ResumeError listing the completed checkpoints", async (t) => {
  await inTempDir(async (dir) => {
    const words = Array.from({ length: 40 }, (_, i) => `w${i % 4}`);
    await countingJob(dir, words, new CollectingSink(), {
      awaitEvery: 10,
      retainedCheckpoints: 3,
    }).execute("retained");
    const { jobId, checkpoints } = await onlyJob(dir);
    assert.ok(checkpoints.length >= 2, `job ${jobId} retained checkpoints ${checkpoints}`);

    const resume = async (options: { jobId: string; checkpointId?: number }) => {
      const sink = new CollectingSink<[string, number]>();
      const env = countingJob(dir, words, sink).resumeFrom(options);
      const started = performance.now();
      const error = await rejectionOf(env.execute("resumed"), 4_000, "execute() of the resume");
      const elapsed = performance.now() - started;
      assert.ok(error instanceof ResumeError, `not a ResumeError: ${error}`);
      assert.ok(elapsed < 1_000, `the ResumeError took ${Math.round(elapsed)} ms`);
      assert.deepEqual(sink.committed(), [], "the rejected resume committed records");
      assert.deepEqual([...(await checkpointsIn(dir)).keys()], [jobId], "the resume made a job");
      return error;
    };

    await t.step("a checkpoint id that does not exist", async () => {
      const missing = checkpoints.at(-1)! + 100;
      const error = await resume({ jobId, checkpointId: missing });
      assert.match(error.message, new RegExp(`checkpoint ${missing}\\b`));
      assert.ok(
        error.message.includes(`completed checkpoints ${checkpoints.join(", ")}`),
        `the error does not list checkpoints ${checkpoints.join(", ")}: ${error.message}`,
      );
    });

    await t.step("an unknown job id", async () => {
      const error = await resume({ jobId: "no-such-job" });
      assert.match(error.message, /no-such-job/);
      assert.match(error.message, /no completed checkpoint/);
    });
  });
});
