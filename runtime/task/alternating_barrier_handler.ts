/**
 * Barrier handling for unaligned checkpoints (FLIP-76) and the
 * aligned-checkpoint timeout, as a state machine that returns actions
 * instead of doing them: Flink's `SingleCheckpointBarrierHandler` with its
 * alternating states (`AlternatingWaitingForFirstBarrier`,
 * `AlternatingCollectingBarriers`, `AlternatingCollectingBarriersUnaligned`).
 *
 * ## Design
 *
 * ```ts
 * import { AlternatingBarrierHandler } from "./alternating_barrier_handler.ts";
 * const h = new AlternatingBarrierHandler({ numChannels: 2, alignedCheckpointTimeoutMs: 0 });
 * const [t] = h.onBarrier(0, 1, 100);
 * // { kind: "triggerCheckpoint", checkpointId: 1, unaligned: true, pendingChannels: [1], … }
 * console.assert(t?.kind === "triggerCheckpoint" && t.unaligned === true);
 * ```
 *
 * - **Unaligned** (`alignedCheckpointTimeoutMs: 0`): the first barrier of
 *   checkpoint *n* on any channel triggers the snapshot at once
 *   (`triggerCheckpoint` with `unaligned: true` and the `pendingChannels`
 *   whose barrier *n* has not arrived). The task records as channel state
 *   what those channels deliver before their barrier *n*; nothing is
 *   blocked. Later barriers of *n* only complete the set; a newer barrier
 *   before that subsumes *n* (`abort` with `decline: true`).
 * - **Aligned first, then unaligned** (`alignedCheckpointTimeoutMs > 0`):
 *   checkpoint *n* aligns as in `barrier_handler.ts` (channels that
 *   delivered barrier *n* are blocked). When the alignment has lasted the
 *   timeout, measured from the first barrier of *n* to ARRIVE at this
 *   subtask (its announcement, {@linkcode AlternatingBarrierHandler.onBarrierAnnouncement}:
 *   the input gate announces a barrier on arrival, while the barrier itself
 *   waits in order behind the data queued before it, as Flink's
 *   `EventAnnouncement`; the task calls
 *   {@linkcode AlternatingBarrierHandler.onAlignmentTimer}, or any event
 *   notices it), the checkpoint switches to unaligned:
 *   `triggerCheckpoint` with `unaligned: true` for the channels still
 *   pending, then `unblockAll`. Flink measures the timeout from the
 *   checkpoint's start at the source (the barrier's timestamp); this
 *   handler reads one monotonic clock of this process only.
 * - **Savepoints are always aligned** (`forceAligned` on the barrier): they
 *   never switch and never record channel state.
 *
 * The handler reads no clock and performs no I/O; the task passes `nowMs`
 * and executes the returned {@linkcode BarrierAction}s in order. Its states
 * are those of `single_checkpoint_barrier_handler.ts`, which the aligned
 * handler shares; this handler runs them in their alternating mode.
 *
 * ## Invariants
 *
 * - `triggerCheckpoint` for *n* is emitted at most once, never for an id at
 *   or below one already triggered, aborted or subsumed.
 * - An unaligned `triggerCheckpoint` lists exactly the live channels that
 *   have not delivered barrier *n*; channels are blocked only while
 *   aligning, and every block is undone by `unblockAll` before the
 *   checkpoint is triggered, aborted or subsumed.
 * - A channel that ended counts as having delivered every later barrier.
 *
 * @module
 */

import type { BarrierAction } from "./barrier_action.ts";
import {
  type SingleBarrierHandlerStateName,
  SingleCheckpointBarrierHandler,
} from "./single_checkpoint_barrier_handler.ts";
import type { CheckpointId } from "../checkpoint/types.ts";

/** Options of {@linkcode AlternatingBarrierHandler}. */
export interface AlternatingBarrierHandlerOptions {
  /** How many input channels the task reads, a positive integer. */
  readonly numChannels: number;
  /**
   * How long a checkpoint may align before it switches to unaligned, in ms
   * (Flink's `execution.checkpointing.aligned-checkpoint-timeout`); `0`:
   * every checkpoint is unaligned from its first barrier.
   */
  readonly alignedCheckpointTimeoutMs: number;
}

/** Name of the handler's current state. */
export type AlternatingHandlerStateName = SingleBarrierHandlerStateName;

/**
 * The exactly-once barrier handler of a task with unaligned checkpoints on
 * (see the module docs). Channels are numbered `0 .. numChannels - 1`; a
 * duplicate barrier, a barrier on an ended channel and a second
 * end-of-partition return no action. Its other events and accessors are
 * those of {@linkcode SingleCheckpointBarrierHandler}.
 *
 * @example
 * ```ts
 * import { AlternatingBarrierHandler } from "./alternating_barrier_handler.ts";
 * const h = new AlternatingBarrierHandler({ numChannels: 2, alignedCheckpointTimeoutMs: 50 });
 * h.onBarrier(0, 3, 0); // [{ kind: "block", channel: 0 }]
 * const [t, u] = h.onAlignmentTimer(60);
 * console.assert(t?.kind === "triggerCheckpoint" && t.unaligned && u?.kind === "unblockAll");
 * ```
 */
export class AlternatingBarrierHandler extends SingleCheckpointBarrierHandler {
  /**
   * Creates a handler waiting for the first barrier, with every channel live.
   * @throws {RangeError} when `numChannels` is not a positive integer or
   *   `alignedCheckpointTimeoutMs` is not a finite number ≥ 0, naming the
   *   current value.
   */
  constructor(options: AlternatingBarrierHandlerOptions) {
    super(options);
  }

  /**
   * Barrier `checkpointId` arrived on some channel and waits in order
   * behind data (Flink's `EventAnnouncement`; only with a positive
   * `alignedCheckpointTimeoutMs`, never for a savepoint): its alignment
   * starts now, without blocking anything, so the timeout runs while the
   * data ahead of the barrier is processed. An announcement of an id
   * already seen or aborted is ignored.
   * @param nowMs current time, ms.
   * @returns the actions to execute (a switch, when an alignment in progress timed out).
   * @throws {RangeError} when `checkpointId` is not a positive integer.
   */
  onBarrierAnnouncement(checkpointId: CheckpointId, nowMs: number): BarrierAction[] {
    return this.announce(checkpointId, nowMs);
  }

  /**
   * The alignment timer fired (or the task polls it): an alignment that has
   * lasted `alignedCheckpointTimeoutMs` switches to unaligned.
   * @param nowMs current time, ms.
   * @returns the actions to execute, in order (none when nothing is due).
   */
  onAlignmentTimer(nowMs: number): BarrierAction[] {
    return this.alignmentTimer(nowMs);
  }

  /**
   * How long until the current alignment times out, in ms (≥ 0), or
   * `undefined` when nothing is aligning or it cannot switch (a savepoint).
   */
  alignmentTimerDelayMs(nowMs: number): number | undefined {
    return this.alignmentTimeoutDelayMs(nowMs);
  }
}
