/**
 * Aligned checkpoint barrier handling for a task with several input
 * channels, as a state machine that returns actions instead of doing them.
 *
 * It follows Flink's `SingleCheckpointBarrierHandler` with its aligned states
 * (`WaitingForFirstBarrier`, `CollectingBarriers`): each state is a tiny
 * object whose event methods return the next state. The states are those of
 * `single_checkpoint_barrier_handler.ts`, which the alternating handler of
 * unaligned checkpoints shares; this handler runs them in their aligned-only
 * mode, where every barrier aligns as a savepoint's does. The handler reads
 * no clock and performs no I/O; the task passes `nowMs` in and executes the
 * returned {@linkcode BarrierAction}s in order.
 *
 * ## Design
 *
 * ```ts
 * import { AlignedBarrierHandler } from "./barrier_handler.ts";
 * const h = new AlignedBarrierHandler(2);
 * h.onBarrier(0, 1, 100); // [{ kind: "block", channel: 0 }]
 * const actions = h.onBarrier(1, 1, 130);
 * // [{ kind: "triggerCheckpoint", checkpointId: 1, alignmentStartedAt: 100,
 * //    alignmentDurationMs: 30 }, { kind: "unblockAll" }]
 * console.assert(actions[0]?.kind === "triggerCheckpoint");
 * ```
 *
 * What the task does with each action:
 *
 * - `block`: stop taking data from that channel; keep what arrives queued.
 * - `triggerCheckpoint`: snapshot the operator chain, forward barrier `n` on
 *   every output, start the asynchronous upload, then go on to the next
 *   action.
 * - `unblockAll`: resume every channel, the queued data first.
 * - `abort`: drop checkpoint `n` locally; if `decline` is `true`, decline it
 *   to the coordinator (the coordinator does not know yet).
 *
 * ## Invariants
 *
 * - Only the channels that delivered the barrier of the checkpoint being
 *   aligned are blocked, and only while aligning.
 * - `triggerCheckpoint` for `n` is emitted at most once, when every channel
 *   has either delivered barrier `n` or ended; it is never emitted for an id
 *   at or below one already triggered, aborted or subsumed.
 * - Barriers older than the latest seen id are ignored and never block.
 * - A channel that ended counts as having delivered every later barrier; once
 *   every channel has ended nothing triggers any more.
 *
 * @module
 */

import {
  type SingleBarrierHandlerStateName,
  SingleCheckpointBarrierHandler,
} from "./single_checkpoint_barrier_handler.ts";

export type { BarrierAction, CheckpointBarrierHandler } from "./barrier_action.ts";

/** Name of the aligned handler's current state. */
export type BarrierHandlerStateName = Exclude<
  SingleBarrierHandlerStateName,
  "collecting-barriers-unaligned"
>;

/**
 * The aligned (exactly-once) barrier handler of one task: feed it the
 * barriers, end-of-partition events and coordinator aborts of the task's
 * input channels, and execute the actions it returns, in order.
 *
 * Channels are numbered `0 .. numChannels - 1`. A duplicate barrier, a
 * barrier on an ended channel and a second end-of-partition are ignored
 * (they return no action). Its events and accessors are those of
 * {@linkcode SingleCheckpointBarrierHandler}, in the aligned-only mode.
 *
 * @example
 * ```ts
 * import { AlignedBarrierHandler } from "./barrier_handler.ts";
 * const h = new AlignedBarrierHandler(1);
 * const [a] = h.onBarrier(0, 7, 0);
 * console.assert(a?.kind === "triggerCheckpoint" && a.checkpointId === 7);
 * ```
 */
export class AlignedBarrierHandler extends SingleCheckpointBarrierHandler<BarrierHandlerStateName> {
  /**
   * Creates a handler waiting for the first barrier, with every channel live.
   *
   * @param numChannels how many input channels the task reads, a positive integer.
   * @throws {RangeError} when `numChannels` is not a positive integer.
   */
  constructor(numChannels: number) {
    super({ numChannels });
  }
}
