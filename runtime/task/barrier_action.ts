/**
 * What a task's barrier handler tells the task to do, and what a task needs
 * from its barrier handler (Flink's `CheckpointBarrierHandler`): the leaf
 * types shared by the exactly-once handlers (`barrier_handler.ts`,
 * `alternating_barrier_handler.ts`, both run by
 * `single_checkpoint_barrier_handler.ts`) and the at-least-once
 * `barrier_tracker.ts`. `barrier_handler.ts` re-exports both types.
 *
 * @module
 */

import type { CheckpointFailureReason, CheckpointId } from "../checkpoint/types.ts";

/** An instruction to the task, returned by a {@linkcode CheckpointBarrierHandler}'s events. */
export type BarrierAction =
  /** Stop consuming `channel` until `unblockAll`. */
  | { readonly kind: "block"; readonly channel: number }
  /**
   * Every live channel delivered barrier `checkpointId`: snapshot, forward
   * the barrier downstream, and report `alignmentDurationMs` in the ack.
   */
  | {
    readonly kind: "triggerCheckpoint";
    readonly checkpointId: CheckpointId;
    /** When the first barrier of this checkpoint arrived (the `nowMs` passed then). */
    readonly alignmentStartedAt: number;
    /** From the first barrier to the last, in ms (0 when it triggered on the first barrier). */
    readonly alignmentDurationMs: number;
    /**
     * `true` for an unaligned checkpoint (FLIP-76, `alternating_barrier_handler.ts`):
     * barrier `checkpointId` has not arrived on `pendingChannels` yet, and
     * what they deliver before it is recorded as channel state.
     */
    readonly unaligned?: boolean;
    /** With `unaligned`: the live channels whose barrier has not arrived, ascending. */
    readonly pendingChannels?: readonly number[];
  }
  /** Resume consuming every blocked channel. */
  | { readonly kind: "unblockAll" }
  /**
   * Checkpoint `checkpointId` will not be taken by this task. `decline`:
   * whether the task must tell the coordinator (false when the coordinator
   * itself aborted it).
   */
  | {
    readonly kind: "abort";
    readonly checkpointId: CheckpointId;
    readonly reason: CheckpointFailureReason;
    readonly decline: boolean;
  };

/**
 * What a task needs from its barrier handler (Flink's
 * `CheckpointBarrierHandler`): the aligned `AlignedBarrierHandler`
 * (exactly-once), the `AlternatingBarrierHandler` (exactly-once with
 * unaligned checkpoints) and the `CheckpointBarrierTracker` of
 * `barrier_tracker.ts` (at-least-once) implement it. Every event returns
 * the actions to execute, in order.
 */
export interface CheckpointBarrierHandler {
  /**
   * Barrier `checkpointId` arrived on `channel` (`nowMs`: current time, ms;
   * `forceAligned`: a savepoint's barrier, never unaligned).
   */
  onBarrier(
    channel: number,
    checkpointId: CheckpointId,
    nowMs: number,
    forceAligned?: boolean,
  ): BarrierAction[];
  /** `channel` delivered its end-of-partition. */
  onEndOfPartition(channel: number, nowMs: number): BarrierAction[];
  /** The coordinator aborted checkpoint `checkpointId`. */
  onAbort(checkpointId: CheckpointId, reason?: CheckpointFailureReason): BarrierAction[];
  /** The checkpoint being aligned or tracked (the oldest one), or `undefined`. */
  readonly pendingCheckpointId: CheckpointId | undefined;
  /** `true` while some channels are blocked for an alignment. */
  readonly isAligning: boolean;
  /** How long the current alignment has lasted, in ms (0 when none). */
  currentAlignmentDurationMs(nowMs: number): number;
}
