/**
 * Checkpoint timeout: one checkpoint's synchronous part blocks (a sink's
 * pre-commit, or a function's `snapshotState`) until the coordinator has
 * aborted that checkpoint for taking longer than `timeoutMs`. The job must
 * count the checkpoint as failed, go on without a restart, and still commit
 * exactly once: the transaction pre-committed for the aborted checkpoint
 * stays pending and is committed by the next completed one.
 *
 * The blocked call waits for the abort notification itself (seen by a
 * `CheckpointListener` in another subtask), not for a fixed time.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type FunctionSnapshotContext,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, type CollectingTxn, TestSource } from "../testing.ts";
import {
  assertSameOutput,
  expectedSums,
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
const TIMEOUT_MS = 200;
/** Upper bound on the wait for the abort, so a broken timeout fails the test instead of hanging it. */
const GIVE_UP_MS = 10_000;

/** Aborted checkpoint ids as seen by a listener, and a latch that opens on the first abort. */
class AbortLatch {
  readonly aborted: number[] = [];
  /** How the latch opened: `abort`, or `gave-up` after {@linkcode GIVE_UP_MS}. */
  openedBy: "abort" | "gave-up" | undefined;
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

  #release(by: "abort" | "gave-up"): void {
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

async function runBlockingJob(blocking: "pre-commit" | "snapshot") {
  return await withTempDir(async (dir) => {
    const latch = new AbortLatch();
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(5, { directory: dir, timeoutMs: TIMEOUT_MS })
      .setRestartStrategy(RestartStrategies.noRestart());
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
    const result = await env.execute(`blocking ${blocking}`);
    return { result, latch, sink, leftovers: await listTree(dir) };
  });
}

Deno.test("a checkpoint whose synchronous part outlasts the timeout is aborted and the job still commits exactly once", async (t) => {
  const expected = [...expectedSums(SPLITS).values()].flat();
  for (const blocking of ["pre-commit", "snapshot"] as const) {
    await t.step(`when a ${blocking} blocks`, async () => {
      const { result, latch, sink, leftovers } = await runBlockingJob(blocking);
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
