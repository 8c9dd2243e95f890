/**
 * A failover while checkpoint storage is out of reach (found by the chaos
 * run: a worker lost while NATS was down for a few seconds). The
 * coordinator reads the metadata of the checkpoint it is about to restore;
 * an `IO` error there (the Object Store timing out) is a failed restart,
 * retried through the restart strategy, not a lost checkpoint: the job
 * must not fail for good. A checkpoint that is gone or corrupt still fails
 * it for good (`coordinator_failures_test.ts`).
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  JobFailedError,
  RestartStrategies,
  type RestartStrategyConfig,
  StreamExecutionEnvironment,
  SuppressRestartsError,
  WatermarkStrategy,
} from "../mod.ts";
import {
  CheckpointStorageError,
  LocalDirectoryCheckpointStorage,
} from "../runtime/checkpoint/storage.ts";
import type { CheckpointId, CheckpointMetadata } from "../runtime/checkpoint/types.ts";
import { executeLocally } from "../runtime/cluster/local_executor.ts";
import type { JobExecutionResult } from "../runtime/cluster/job_result.ts";
import { systemClock } from "../runtime/time/clock.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import {
  assertSameOutput,
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  SequenceCheck,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

const SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 4,
  recordsPerKey: 100,
  awaitCheckpointEvery: 40,
};

/** Local storage whose next `outage` metadata reads fail with an `IO` error, as NATS down would. */
class OutageStorage extends LocalDirectoryCheckpointStorage {
  outage = 0;
  failedReads = 0;
  override readMetadata(jobId: string, checkpointId: CheckpointId): Promise<CheckpointMetadata> {
    if (this.outage > 0) {
      this.outage--;
      this.failedReads++;
      return Promise.reject(
        new CheckpointStorageError(
          `Cannot read the metadata of checkpoint ${checkpointId} of job ${JSON.stringify(jobId)}`,
          { code: "IO", jobId, checkpointId, path: "outage://test", cause: new Error("timeout") },
        ),
      );
    }
    return super.readMetadata(jobId, checkpointId);
  }
}

/**
 * Runs the keyed job; at the third checkpoint a subtask fails once, and
 * from then on the next `failedReads` metadata reads fail with `IO`.
 */
async function runWithOutage(
  dir: string,
  failedReads: number,
  restartStrategy: RestartStrategyConfig,
): Promise<
  { outcome: JobExecutionResult | Error; storage: OutageStorage; committed: SumRecord[] }
> {
  const sink = new CollectingSink<SumRecord>();
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(2);
  env.fromSource(
    TestSource.perSubtask<KeyedRecord>(keyedSplits(SPLITS), { batchSize: 8 }),
    WatermarkStrategy.noWatermarks(),
    "records",
  ).uid("records")
    .keyBy((r) => r.key)
    .process(new SequenceCheck()).uid("sums")
    .sinkTo(sink).uid("committed");
  const storage = new OutageStorage({ directory: dir });
  let failed = false;
  let outcome: JobExecutionResult | Error;
  try {
    outcome = await executeLocally(env.getJobGraph("storage outage"), {
      checkpointing: {
        intervalMs: 5,
        timeoutMs: 60_000,
        minPauseBetweenCheckpointsMs: 0,
        maxConcurrentCheckpoints: 1,
        retainedCheckpoints: 1,
        retainOnFinish: false,
      },
      checkpointDirectory: dir,
      storage,
      restartStrategy,
      taskConfig: {
        bufferSize: 1024,
        bufferTimeoutMs: 10,
        initialCredits: 8,
        autoWatermarkIntervalMs: 200,
        checkpointingMode: "exactly-once",
      },
      clock: systemClock,
      faults: (point, site) => {
        if (failed || point !== "before-snapshot" || site.checkpointId < 3) return;
        failed = true;
        storage.outage = failedReads;
        throw new Error(`induced failure at checkpoint ${site.checkpointId}`);
      },
    });
  } catch (error) {
    outcome = error instanceof Error ? error : new Error(String(error));
  }
  assert.ok(failed, "the failure was never induced");
  return { outcome, storage, committed: sink.committed() };
}

/** The errors of `error`'s cause chain, outermost first. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e !== undefined && !chain.includes(e); e = (e as Error).cause) {
    chain.push(e);
    if (!(e instanceof Error)) break;
  }
  return chain;
}

Deno.test("a failover retries a checkpoint whose metadata storage cannot reach, through the restart strategy", async () => {
  await withTempDir(async (dir) => {
    const run = await runWithOutage(dir, 2, RestartStrategies.fixedDelay(5, 0));
    if (run.outcome instanceof Error) throw run.outcome;
    assert.equal(run.storage.failedReads, 2);
    assert.equal(run.outcome.restarts, 1, run.outcome.summary);
    assertSameOutput(run.committed, [...expectedSums(SPLITS).values()].flat(), "after the outage");
  });
});

Deno.test("a storage outage longer than the restart strategy allows fails the job, not for good", async () => {
  await withTempDir(async (dir) => {
    const run = await runWithOutage(dir, 1000, RestartStrategies.fixedDelay(3, 0));
    const error = run.outcome;
    assert.ok(error instanceof JobFailedError, `not a JobFailedError: ${error}`);
    assert.doesNotMatch(error.message, /for good/);
    assert.match(error.message, /resume with resumeFrom/);
    // The first failure and then three failed restarts, each an unreadable checkpoint.
    assert.equal(run.storage.failedReads, 3);
    const chain = causes(error);
    assert.ok(!chain.some((e) => e instanceof SuppressRestartsError), error.message);
    const io = chain.find((e) => e instanceof CheckpointStorageError);
    assert.ok(io instanceof CheckpointStorageError && io.code === "IO", error.message);
  });
});
