/**
 * The writer/committer sink API, after Flink's SinkV2 (FLIP-143, FLIP-191,
 * FLIP-372): a {@linkcode SinkWriter} per subtask writes records and, at
 * each checkpoint barrier, turns what it wrote into *committables*; the
 * committables go into the checkpoint; a {@linkcode Committer} makes them
 * visible when the checkpoint completes, and again on restore.
 *
 * ## Exactly when each hook is called (one sink subtask)
 *
 * 1. Start or restore: `createCommitter` (when the sink has one), then the
 *    restored committables are committed (again): every committable of the
 *    restored checkpoint that this subtask's share holds, in checkpoint
 *    order. Then `createWriter`, with the restored writer state, if any. A
 *    writer that keeps transactions open in its target aborts here the
 *    lingering ones its uid owns and the restored state does not name
 *    (Flink's KafkaSink does this with its transactional-id prefix).
 * 2. `write(value)` for every record, on the mailbox loop, in order.
 *    Asynchronous writes are queued in record order.
 * 3. At checkpoint *n*'s barrier (the synchronous part of the snapshot):
 *    `flush(false)`, then `prepareCommit(n)` → committables (pre-commit:
 *    after this, committing them must be able to succeed), then
 *    `snapshotState(n)` → writer state. Both go into checkpoint *n*.
 * 4. When checkpoint *n* completes: the committer's `commit` with a request
 *    for every committable of checkpoints up to *n* not yet committed.
 *    Completion notifications may be late, reordered or lost: a later
 *    completion commits the earlier checkpoints' committables too.
 * 5. When checkpoint *n* is aborted, its committables stay pending; the next
 *    completed checkpoint commits them.
 * 6. End of bounded input: `flush(true)`; the final checkpoint then runs
 *    3 and 4.
 * 7. Finish, cancel or failure: `close()` on the writer and the committer.
 *    `close` releases resources only, like the process ending would: it
 *    must not commit, and need not abort (a restore aborts what lingers).
 *
 * Commit is idempotent: a committable may be committed again after a crash
 * between the commit and the checkpoint that records it. A request that is
 * not signalled otherwise counts as committed. Committables and writer state
 * are checkpointed as MessagePack, so they are plain data; on restore they
 * pass through `checkCommittable` / `checkWriterState`, which throw a
 * {@linkcode SinkStateError} naming what is wrong instead of guessing.
 *
 * On rescaling, committables and writer states are redistributed over the
 * new subtasks in contiguous even shares (Flink's split redistribution of
 * operator list state); every restored committable is committed by exactly
 * one new subtask, and every writer state item reaches exactly one writer.
 *
 * `runtime/task/operators/sink_writer_operator.ts` runs this protocol;
 * `sink_commit.ts` beside it decides each commit round: `retryLater`
 * requests are retried up to 10 times, 100 ms doubling to at most 1 s
 * apart, then the attempt fails.
 *
 * ## Guarantees
 *
 * A sink declares its {@linkcode DeliveryGuarantee}. `"exactly-once"` needs
 * a committer and checkpointing in exactly-once mode; `sinkTo` and
 * `execute()` refuse combinations that cannot hold (see
 * {@linkcode checkDeliveryGuarantee}). `TwoPhaseCommitSink`
 * (`runtime/api/sink.ts`) is adapted onto this API.
 *
 * @module
 */

import { SuppressRestartsError } from "../failure.ts";
import type { SinkContext, SinkInitContext } from "./sink.ts";

/**
 * What a sink promises about each record it receives, given a replayable
 * source (Flink's `DeliveryGuarantee`):
 * - `"none"`: records may be lost or duplicated on failure (at-most-once at
 *   best);
 * - `"at-least-once"`: nothing is lost, a replay may write a record again;
 * - `"exactly-once"`: every record's effect is visible once, through
 *   transactions or idempotent writes.
 */
export type DeliveryGuarantee = "none" | "at-least-once" | "exactly-once";

/** The delivery guarantees, in increasing strength. */
export const DELIVERY_GUARANTEES: readonly DeliveryGuarantee[] = [
  "none",
  "at-least-once",
  "exactly-once",
];

/**
 * The checkpointing mode (Flink's `CheckpointingMode`): `"exactly-once"`
 * aligns barriers (a channel that delivered barrier *n* is blocked until
 * every channel has); `"at-least-once"` does not block, so records after
 * the barrier on one channel may be in the snapshot and replayed again.
 */
export type CheckpointingMode = "exactly-once" | "at-least-once";

/** What a sink writer gets at start. */
export interface WriterInitContext<StateT> extends SinkInitContext {
  /** The checkpoint this attempt restored from; `undefined` on a fresh start. */
  readonly restoredCheckpointId: number | undefined;
  /** This subtask's share of the writer states in the restored checkpoint (empty on a fresh start). */
  readonly restoredState: readonly StateT[];
  /** The job's checkpointing mode, or `"none"` when checkpointing is off. */
  readonly checkpointingMode: CheckpointingMode | "none";
}

/** What a committer gets at start. */
export interface CommitterInitContext extends SinkInitContext {
  /** The checkpoint this attempt restored from; `undefined` on a fresh start. */
  readonly restoredCheckpointId: number | undefined;
}

/**
 * Writes a sink subtask's records (Flink's `SinkWriter`,
 * `CommittingSinkWriter` and `StatefulSinkWriter` in one).
 */
export interface SinkWriter<T, CommT = never, StateT = never> {
  /** Writes one record. Errors fail the attempt. */
  write(value: T, context: SinkContext): void | Promise<void>;
  /**
   * Flushes buffered records: at every barrier before `prepareCommit`, and
   * with `endOfInput` true once at the end of bounded input.
   */
  flush(endOfInput: boolean): void | Promise<void>;
  /**
   * Pre-commits what was written since the last call and returns it as
   * committables for checkpoint `checkpointId` (plain data). Absent for
   * sinks without a committer.
   */
  prepareCommit?(checkpointId: number): readonly CommT[] | Promise<readonly CommT[]>;
  /** The writer's state for checkpoint `checkpointId` (plain data), restored into `createWriter`. */
  snapshotState?(checkpointId: number): readonly StateT[] | Promise<readonly StateT[]>;
  /** Releases resources; see step 7 of the module docs. Idempotent. */
  close(): void | Promise<void>;
}

/**
 * One committable to commit (Flink's `Committer.CommitRequest`). A request
 * the committer leaves unsignalled counts as committed.
 */
export interface CommitRequest<CommT> {
  /** The committable, as `prepareCommit` returned it (or as restored). */
  readonly committable: CommT;
  /** The checkpoint whose barrier produced it. */
  readonly checkpointId: number;
  /** How often this request was retried already (0 on the first try). */
  readonly numberOfRetries: number;
  /**
   * The commit cannot succeed and a retry cannot fix it (records expired, a
   * prepared transaction vanished): the job fails without restarts, with
   * `error` as the cause. Nothing is silently dropped.
   */
  signalFailedWithKnownReason(error: Error): void;
  /** The commit failed for a reason a restart may fix: the attempt fails and the restore commits again. */
  signalFailedWithUnknownReason(error: Error): void;
  /** Transient failure: commit it again later (bounded retries with backoff, then the attempt fails). */
  retryLater(): void;
  /** Like `retryLater`, with a changed committable. */
  updateAndRetryLater(committable: CommT): void;
  /** It had been committed before (a replayed commit): not an error. */
  signalAlreadyCommitted(): void;
}

/** Makes committables visible (Flink's `Committer`). Idempotent. */
export interface Committer<CommT> {
  /** Commits `requests`, in checkpoint order; signal per request what happened. */
  commit(requests: readonly CommitRequest<CommT>[]): void | Promise<void>;
  /** Releases resources. Idempotent. */
  close(): void | Promise<void>;
}

/**
 * A sink built from a writer and, for two-phase sinks, a committer (Flink's
 * SinkV2 `Sink` with `SupportsCommitter` and `SupportsWriterState`). See
 * the module docs for when each hook runs.
 */
export interface SinkV2<T, CommT = never, StateT = never> {
  /** Always `"v2"`. */
  readonly kind: "v2";
  /** What this sink promises (see {@linkcode DeliveryGuarantee}). */
  readonly deliveryGuarantee: DeliveryGuarantee;
  /**
   * `true` when the sink makes records visible only when a checkpoint
   * completes, whatever its `deliveryGuarantee` (a write-ahead log; part
   * files that become finished at a checkpoint). `execute()` then refuses
   * it in an unbounded job with checkpointing off, as it refuses every
   * exactly-once sink there (`delivery_check.ts`); a bounded job's final
   * checkpoint commits it. Default `false`.
   */
  readonly commitsOnlyAtCheckpoints?: boolean;
  /** Creates the subtask's writer, restoring `context.restoredState`. */
  createWriter(
    context: WriterInitContext<StateT>,
  ): SinkWriter<T, CommT, StateT> | Promise<SinkWriter<T, CommT, StateT>>;
  /** Creates the subtask's committer; present when the writer returns committables. */
  createCommitter?(context: CommitterInitContext): Committer<CommT> | Promise<Committer<CommT>>;
  /**
   * Validates a committable read back from a checkpoint.
   * @throws {SinkStateError} naming what is wrong. Required with `createCommitter`.
   */
  checkCommittable?(raw: unknown): CommT;
  /**
   * Validates a writer state read back from a checkpoint.
   * @throws {SinkStateError} naming what is wrong. Required when the writer snapshots state.
   */
  checkWriterState?(raw: unknown): StateT;
}

/**
 * A sink's checkpointed committable or writer state is not what the sink
 * wrote: a corrupt or foreign checkpoint. Retrying cannot fix it, so the
 * job fails without restarts (it is a `SuppressRestartsError`).
 */
export class SinkStateError extends SuppressRestartsError {
  /**
   * Builds the error; its message reads `Invalid <what> in checkpoint: <problem>`.
   * @param what what was being read, e.g. `"XA committable"`.
   * @param problem what is wrong, with the current value, e.g.
   *   `"field 'xid' must be a string: current value is 7"`.
   */
  constructor(what: string, problem: string, options?: ErrorOptions) {
    super(`Invalid ${what} in checkpoint: ${problem}`, options);
    this.name = "SinkStateError";
  }
}

/**
 * A sink was configured for a guarantee it or the job cannot give (Flink
 * refuses these at job build time too, e.g. `KafkaSink` with
 * `EXACTLY_ONCE` and no transactional-id prefix).
 */
export class DeliveryGuaranteeError extends Error {
  /**
   * Builds the error.
   * @param message names the sink and both guarantees.
   */
  constructor(message: string) {
    super(message);
    this.name = "DeliveryGuaranteeError";
  }
}

/**
 * Checks that a sink can give `requested` at all, given the guarantees it
 * `supports` (in a connector's constructor).
 * @returns `requested`.
 * @throws {DeliveryGuaranteeError} naming the sink, the requested
 *   guarantee and the ones it supports.
 */
export function checkDeliveryGuarantee(
  sinkName: string,
  requested: unknown,
  supports: readonly DeliveryGuarantee[],
): DeliveryGuarantee {
  if (!DELIVERY_GUARANTEES.includes(requested as DeliveryGuarantee)) {
    throw new DeliveryGuaranteeError(
      `${sinkName}: deliveryGuarantee must be one of ${
        DELIVERY_GUARANTEES.map((g) => `"${g}"`).join(", ")
      }: current value is ${JSON.stringify(requested)}`,
    );
  }
  const guarantee = requested as DeliveryGuarantee;
  if (!supports.includes(guarantee)) {
    throw new DeliveryGuaranteeError(
      `${sinkName} cannot give deliveryGuarantee "${guarantee}": it supports ${
        supports.map((g) => `"${g}"`).join(", ")
      }`,
    );
  }
  return guarantee;
}
