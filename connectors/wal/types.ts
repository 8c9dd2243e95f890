/**
 * The interfaces a write-ahead-log sink writes through, after Flink's
 * `GenericWriteAheadSink` with its `CheckpointCommitter`:
 *
 * - a {@linkcode WalTarget} sends one committed batch of values to the
 *   outside system, and a separate {@linkcode CheckpointCommitter} records
 *   which batches were sent, so a batch replayed after a crash is skipped;
 * - an {@linkcode AtomicWalTarget} does both in one transaction of the
 *   target, which closes the window in which a crash duplicates a batch.
 *
 * A target declares which of the two it is through the factory it is
 * given to the sink with: {@linkcode WalTargetFactory} is a union
 * discriminated by `atomicity`, known when the job is built, so the sink
 * can refuse `"exactly-once"` for a non-atomic target before anything runs.
 *
 * ## Batch identity
 *
 * A batch is named by a {@linkcode WalCommitId}: the job, the execution
 * attempt and the sink subtask that wrote it, the checkpoint whose barrier
 * closed it, and its part (a checkpoint's values are split into parts of a
 * bounded size). Flink's committer keys on (job, operator, subtask,
 * checkpoint); the attempt is added here so that a checkpoint id reused by
 * another incarnation (a resumed job restarts its ids at 1 under a new job
 * id; a test harness may repeat an id after a restore) can never be
 * mistaken for a batch already sent. The id travels inside the committable,
 * so a batch restored from a checkpoint keeps the id it was written under.
 *
 * @module
 */

import type { CommitterInitContext } from "../../runtime/api/sink_v2.ts";

/**
 * Names one batch of a write-ahead-log sink: what a {@linkcode
 * CheckpointCommitter} records and what an {@linkcode AtomicWalTarget}
 * writes with the batch (Flink's `(jobId, operatorId, subtask,
 * checkpointId)`, plus `attempt` and `part`).
 */
export interface WalCommitId {
  /** The job whose sink subtask wrote the batch (stays with the batch across resumes). */
  readonly jobId: string;
  /** The execution attempt that wrote it (0 first, +1 per restart). */
  readonly attempt: number;
  /** The sink subtask that wrote it (its index when it was written, not after a rescale). */
  readonly subtask: number;
  /** The checkpoint whose barrier closed the batch. */
  readonly checkpointId: number;
  /** The part of the checkpoint's values, 0-based (see `maxValuesPerCommittable`). */
  readonly part: number;
}

/**
 * Sends a batch of values to an outside system (Flink's
 * `GenericWriteAheadSink.sendValues`). Not atomic with the
 * {@linkcode CheckpointCommitter}: a crash after `sendValues` and before
 * `commitCheckpoint` sends the batch again on restore (at-least-once). A
 * `sendValues` that fails halfway may also have sent part of the batch.
 */
export interface WalTarget<T> {
  /**
   * Sends `values`, in order.
   * @throws a {@linkcode SuppressRestartsError} subclass when the target
   *   rejects the batch for good (the job then fails without restarts);
   *   anything else is retried, then the attempt fails and a restore sends
   *   the batch again.
   */
  sendValues(values: readonly T[], id: WalCommitId): Promise<void>;
  /** Releases connections. Idempotent. */
  close(): Promise<void>;
}

/**
 * Records which batches a write-ahead-log sink has sent (Flink's
 * `CheckpointCommitter`). Must be durable: a record that a crash loses
 * sends its batch again.
 */
export interface CheckpointCommitter {
  /** Whether the batch `id` was recorded as sent. */
  isCheckpointCommitted(id: WalCommitId): Promise<boolean>;
  /** Records the batch `id` as sent. Idempotent. */
  commitCheckpoint(id: WalCommitId): Promise<void>;
  /** Releases connections. Idempotent. */
  close(): Promise<void>;
}

/** What {@linkcode AtomicWalTarget.sendValuesOnce} did. */
export type WalSendOutcome =
  /** The values and the batch's record were written in one transaction. */
  | "sent"
  /** The batch was recorded already (a replay): nothing was written. */
  | "already-committed";

/**
 * A target that writes a batch and its committer record in one
 * transaction: either both are visible or neither, so a replayed batch is
 * always recognised and skipped (exactly-once).
 */
export interface AtomicWalTarget<T> {
  /**
   * In one transaction: unless the batch `id` is recorded, writes `values`
   * and records `id`.
   * @returns whether the values were written now or had been before.
   * @throws as {@linkcode WalTarget.sendValues}; nothing is written then.
   */
  sendValuesOnce(values: readonly T[], id: WalCommitId): Promise<WalSendOutcome>;
  /** Releases connections. Idempotent. */
  close(): Promise<void>;
}

/** A target and its committer, written separately (at-least-once). */
export interface SeparateWalDestination<T> {
  /** Where values go. */
  readonly target: WalTarget<T>;
  /** Where sent batches are recorded. */
  readonly committer: CheckpointCommitter;
}

/**
 * How a write-ahead-log sink reaches its target; one per committer (sink
 * subtask), opened when the committer is created. The `atomicity` is the
 * target's declaration of what it can guarantee:
 * - `"atomic"`: {@linkcode AtomicWalTarget}, exactly-once;
 * - `"separate"`: {@linkcode WalTarget} plus {@linkcode CheckpointCommitter},
 *   at-least-once (a crash between the two writes replays the batch).
 */
export type WalTargetFactory<T> =
  | {
    /** The target writes the batch and its record in one transaction. */
    readonly atomicity: "atomic";
    /** Opens the target for one sink subtask's committer. */
    open(context: CommitterInitContext): Promise<AtomicWalTarget<T>>;
  }
  | {
    /** The target and the committer record are written separately. */
    readonly atomicity: "separate";
    /** Opens the target and committer for one sink subtask's committer. */
    open(context: CommitterInitContext): Promise<SeparateWalDestination<T>>;
  };
