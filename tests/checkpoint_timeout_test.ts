/**
 * Checkpoint timeout: one checkpoint's synchronous part blocks (a sink's
 * pre-commit, or a function's `snapshotState`) until the coordinator has
 * aborted that checkpoint for taking longer than `timeoutMs`.
 *
 * - With a tolerance for failed checkpoints (`tolerableCheckpointFailures`),
 *   the job must count the checkpoint as failed, go on without a restart,
 *   and still commit exactly once: the transaction pre-committed for the
 *   aborted checkpoint stays pending and is committed by the next completed
 *   one.
 * - Without one (the default, Flink's 0), the expired checkpoint fails the
 *   attempt: the restart strategy restarts the job, which still commits
 *   exactly once, or, with `noRestart`, the job fails with Flink's
 *   "Exceeded checkpoint tolerable failure threshold".
 *
 * The blocked call waits for the abort notification itself (seen by a
 * `CheckpointListener` in another subtask), or for that subtask's
 * cancellation, not for a fixed time.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type FunctionSnapshotContext,
  type JobExecutionResult,
  JobFailedError,
  RestartStrategies,
  type RestartStrategyConfig,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CheckpointFailureThresholdError } from "../runtime/cluster/job_result.ts";
import { CollectingSink, type CollectingTxn, TestSource } from "../testing.ts";
import {
  assertSameOutput,
  expectedSums,
  groupByKey,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  listTree,
  SequenceCheck,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

const SPLITS: KeyedSplitsOptions = {
  splits: 1,
  keysPerSplit: 4,
  recordsPerKey: 300,
  awaitCheckpointEvery: 200,
};
/** Long enough that no unblocked checkpoint expires on a loaded 2-core machine (200 ms did; 1 s did once the suite grew to ~850 tests in parallel). */
const TIMEOUT_MS = 2500;
/**
 * Consecutive failed checkpoints tolerated where the job must go on: one
 * checkpoint is blocked on purpose; the slack keeps a slow machine from
 * failing the test.
 */
const TOLERANCE = 3;
/** Upper bound on the wait for the abort, so a broken timeout fails the test instead of hanging it. */
const GIVE_UP_MS = 10_000;

/**
 * Aborted checkpoint ids as seen by a listener, and a latch that opens on the
 * first abort, or when the listener's subtask is closed (its attempt was
 * cancelled by a failover).
 */
class AbortLatch {
  readonly aborted: number[] = [];
  /** How the latch opened: `abort`, `closed`, or `gave-up` after {@linkcode GIVE_UP_MS}. */
  openedBy: "abort" | "closed" | "gave-up" | undefined;
  readonly #opened: Promise<void>;
  #open!: () => void;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor() {
    this.#opened = new Promise((resolve) => this.#open = resolve);
  }

  /** Resolves on the first abort notification (or after {@linkcode GIVE_UP_MS}). */
  wait(): Promise<void> {
    this.#timer ??= setTimeout(() => this.#release("gave-up"), GIVE_UP_MS);
    return this.#opened;
  }

  onAborted(checkpointId: number): void {
    this.aborted.push(checkpointId);
    this.#release("abort");
  }

  onClosed(): void {
    this.#release("closed");
  }

  #release(by: "abort" | "closed" | "gave-up"): void {
    this.openedBy ??= by;
    clearTimeout(this.#timer);
    this.#open();
  }
}

/** An identity map, chained to the source, that tells the latch about aborted checkpoints. */
class AbortListener {
  readonly latch: AbortLatch;
  constructor(latch: AbortLatch) {
    this.latch = latch;
  }
  map(record: KeyedRecord): KeyedRecord {
    return record;
  }
  notifyCheckpointAborted(checkpointId: number): void {
    this.latch.onAborted(checkpointId);
  }
  close(): void {
    this.latch.onClosed();
  }
}

/** A collecting sink whose `nth` pre-commit on subtask 0 waits for the latch. */
class BlockingPreCommitSink<T> extends CollectingSink<T> {
  readonly latch: AbortLatch;
  readonly nth: number;
  readonly seen: { preCommits: number; blockedTxn: string | undefined };
  constructor(latch: AbortLatch, nth: number) {
    super();
    this.latch = latch;
    this.nth = nth;
    this.seen = { preCommits: 0, blockedTxn: undefined };
  }
  override async preCommit(txn: CollectingTxn<T>): Promise<void> {
    if (txn.subtask === 0 && ++this.seen.preCommits === this.nth) {
      this.seen.blockedTxn = txn.id;
      await this.latch.wait();
    }
    super.preCommit(txn);
  }
}

/** The keyed operator, whose `snapshotState` on subtask 0 waits for the latch at `checkpointId`. */
class BlockingSnapshot extends SequenceCheck {
  readonly latch: AbortLatch | undefined;
  readonly blockAt: number;
  private subtaskIndex = -1;
  constructor(latch: AbortLatch | undefined, blockAt: number) {
    super();
    this.latch = latch;
    this.blockAt = blockAt;
  }
  override open(context: RuntimeContext): void {
    super.open(context);
    this.subtaskIndex = context.subtaskIndex;
  }
  override async snapshotState(context: FunctionSnapshotContext): Promise<void> {
    super.snapshotState(context);
    if (this.latch && this.subtaskIndex === 0 && context.checkpointId === this.blockAt) {
      await this.latch.wait();
    }
  }
}

/** What {@linkcode runBlockingJob} varies. */
interface BlockingJobOptions {
  /** Default: none set, so the default (0) applies. */
  readonly tolerableCheckpointFailures?: number;
  /** Default `noRestart`. */
  readonly restartStrategy?: RestartStrategyConfig;
}

/** Runs the keyed job with checkpoint 2 blocked; `outcome` is the result or the error `execute` threw. */
async function runBlockingJob(
  blocking: "pre-commit" | "snapshot",
  options: BlockingJobOptions = {},
) {
  return await withTempDir(async (dir) => {
    const latch = new AbortLatch();
    const { tolerableCheckpointFailures } = options;
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(5, {
        directory: dir,
        timeoutMs: TIMEOUT_MS,
        ...(tolerableCheckpointFailures === undefined ? {} : { tolerableCheckpointFailures }),
      })
      .setRestartStrategy(options.restartStrategy ?? RestartStrategies.noRestart());
    const sink = new BlockingPreCommitSink<SumRecord>(latch, blocking === "pre-commit" ? 2 : 0);
    env.fromSource(
      TestSource.perSubtask<KeyedRecord>(keyedSplits(SPLITS), { batchSize: 8 }),
      WatermarkStrategy.noWatermarks(),
      "records",
    ).uid("records")
      .map(new AbortListener(latch)).uid("abort-listener")
      .keyBy((r) => r.key)
      .process(new BlockingSnapshot(blocking === "snapshot" ? latch : undefined, 2))
      .uid("sums").setParallelism(2)
      .sinkTo(sink).uid("committed").setParallelism(2);
    const outcome: JobExecutionResult | Error = await env.execute(`blocking ${blocking}`).catch((
      error: unknown,
    ) => error instanceof Error ? error : new Error(String(error)));
    return { outcome, latch, sink, leftovers: await listTree(dir) };
  });
}

const BLOCKINGS = ["pre-commit", "snapshot"] as const;

Deno.test("a checkpoint whose synchronous part outlasts the timeout is aborted and, when tolerated, the job still commits exactly once", async (t) => {
  const expected = [...expectedSums(SPLITS).values()].flat();
  for (const blocking of BLOCKINGS) {
    await t.step(`when a ${blocking} blocks`, async () => {
      const { outcome: result, latch, sink, leftovers } = await runBlockingJob(blocking, {
        tolerableCheckpointFailures: TOLERANCE,
      });
      if (result instanceof Error) throw result;
      const context = `${blocking}: ${result.summary}`;
      assert.equal(latch.openedBy, "abort", `${context}: no checkpoint was aborted while blocked`);
      assert.ok(result.checkpoints.failed >= 1, `${context}: no failed checkpoint`);
      const firstAborted = latch.aborted[0]!;
      assert.ok(
        (result.latestCheckpoint?.checkpointId ?? 0) > firstAborted,
        `${context}: no checkpoint completed after checkpoint ${firstAborted} was aborted`,
      );
      assert.equal(result.restarts, 0, context);
      assertSameOutput(sink.committed(), expected, context);
      assert.deepEqual(sink.preparedTransactions(), [], `${context}: transactions left pending`);
      assert.deepEqual(leftovers, [], `${context}: checkpoint files left behind`);
      if (blocking === "pre-commit") {
        // The transaction pre-committed for the aborted checkpoint was committed by a later one.
        const blocked = sink.seen.blockedTxn;
        assert.ok(blocked !== undefined, context);
        assert.ok(sink.committedTransactions().includes(blocked), `${context}: ${blocked} lost`);
      } else {
        assert.ok(latch.aborted.includes(2), `${context}: aborted ${latch.aborted.join()}`);
      }
    });
  }
});

Deno.test("a checkpoint that outlasts the timeout fails the attempt when no failure is tolerated (the default)", async (t) => {
  const expected = [...expectedSums(SPLITS).values()].flat();
  for (const blocking of BLOCKINGS) {
    await t.step(
      `the job restarts and still commits exactly once when a ${blocking} blocks`,
      async () => {
        const { outcome: result, latch, sink } = await runBlockingJob(blocking, {
          restartStrategy: RestartStrategies.fixedDelay(1, 0),
        });
        if (result instanceof Error) throw result;
        const context = `${blocking}: ${result.summary}`;
        assert.notEqual(
          latch.openedBy,
          "gave-up",
          `${context}: the blocked call was never released`,
        );
        assert.equal(result.restarts, 1, context);
        assert.ok((result.latestCheckpoint?.checkpointId ?? 0) > 2, context);
        assertSameOutput(sink.committed(), expected, context);
        assert.deepEqual(sink.preparedTransactions(), [], `${context}: transactions left pending`);
      },
    );

    await t.step(
      `with noRestart the job fails with the threshold message when a ${blocking} blocks`,
      async () => {
        const { outcome: error, latch, sink } = await runBlockingJob(blocking);
        assert.ok(error instanceof JobFailedError, `${blocking}: ${error}`);
        assert.match(
          error.message,
          /^Job blocking-[a-z-]+-[0-9a-f]{8} 'blocking [a-z-]+' failed: Restart strategy none does not restart: CheckpointFailureThresholdError: Job blocking-[a-z-]+-[0-9a-f]{8}: Exceeded checkpoint tolerable failure threshold \(0\): checkpoint 2 expired before completing; its latest completed checkpoint is 1: /,
        );
        const cause = error.cause;
        assert.ok(cause instanceof CheckpointFailureThresholdError, `${blocking}: cause ${cause}`);
        assert.equal(cause.checkpointId, 2);
        assert.equal(cause.reason, "TIMEOUT");
        assert.ok(error.message.startsWith(`Job ${cause.jobId} `), error.message);
        assert.notEqual(
          latch.openedBy,
          "gave-up",
          `${blocking}: the blocked call was never released`,
        );
        // Only checkpoint 1's transactions can have been committed: a prefix of every key's output.
        const committed = sink.committed();
        assert.ok(committed.length < expected.length, `${blocking}: committed everything`);
        for (const [key, records] of groupByKey(committed)) {
          assert.deepEqual(records, expectedSums(SPLITS).get(key)?.slice(0, records.length), key);
        }
      },
    );
  }
});
