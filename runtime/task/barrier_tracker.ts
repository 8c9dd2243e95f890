/**
 * At-least-once checkpoint barrier handling for a task with several input
 * channels, without alignment: a state machine that counts barriers and
 * never blocks an input, returning actions instead of doing them.
 *
 * It follows Flink's `CheckpointBarrierTracker`, the handler Flink picks for
 * `CheckpointingMode.AT_LEAST_ONCE`: the task keeps processing every channel
 * while barriers arrive, and snapshots when barrier `n` has arrived on every
 * live channel. Records that came after barrier `n` on a fast channel are
 * already in the snapshot's state, and they are replayed again after a
 * restore from `n`: nothing is lost, some records count twice. The tracker
 * reads no clock and performs no I/O; the task passes `nowMs` in and
 * executes the returned {@linkcode BarrierAction}s in order (the same action
 * type as the aligned {@linkcode AlignedBarrierHandler}, of which this one
 * only ever returns `triggerCheckpoint` and `abort`).
 *
 * ## Design
 *
 * ```ts
 * import { CheckpointBarrierTracker } from "./barrier_tracker.ts";
 * const t = new CheckpointBarrierTracker(2);
 * t.onBarrier(0, 1, 100); // [] — channel 0 keeps flowing
 * const actions = t.onBarrier(1, 1, 130);
 * // [{ kind: "triggerCheckpoint", checkpointId: 1, alignmentStartedAt: 100,
 * //    alignmentDurationMs: 30 }]
 * console.assert(actions[0]?.kind === "triggerCheckpoint");
 * ```
 *
 * Several checkpoints may be pending at once (Flink tracks up to 50): each
 * counts the channels that delivered its barrier. When checkpoint `n`
 * completes, every pending checkpoint older than `n` is subsumed: it can no
 * longer complete here (each channel delivered `n` after it, so a channel
 * that had not delivered the older barrier never will), and it is declined.
 *
 * What the task does with each action:
 *
 * - `triggerCheckpoint`: snapshot the operator chain, forward barrier `n` on
 *   every output, start the asynchronous upload. `alignmentDurationMs` is the
 *   time from the first barrier of `n` to the last (Flink reports it the
 *   same way for the tracker, although nothing was blocked).
 * - `abort`: drop checkpoint `n` locally; if `decline` is `true`, decline it
 *   to the coordinator (the coordinator does not know yet).
 *
 * ## Invariants
 *
 * - No channel is ever blocked: no `block` or `unblockAll` action exists here.
 * - `triggerCheckpoint` for `n` is emitted at most once, when every channel
 *   has either delivered barrier `n` or ended; it is emitted in ascending id
 *   order and never for an id at or below one already triggered, aborted or
 *   subsumed.
 * - A barrier at or below the latest triggered id, of a checkpoint the
 *   coordinator aborted, or of a checkpoint dropped from tracking is ignored.
 * - A channel that ended counts as having delivered every later barrier; once
 *   every channel has ended nothing triggers any more.
 * - At most {@linkcode MAX_CHECKPOINTS_TO_TRACK} checkpoints are pending; the
 *   oldest beyond that is declined (`BARRIER_SUBSUMED`) and forgotten.
 *
 * @module
 */

import { CheckpointFailureReason } from "../checkpoint/types.ts";
import type { CheckpointId } from "../checkpoint/types.ts";
import type { BarrierAction, CheckpointBarrierHandler } from "./barrier_handler.ts";

/** Most checkpoints tracked at once (Flink's `CheckpointBarrierTracker.MAX_CHECKPOINTS_TO_TRACK`). */
export const MAX_CHECKPOINTS_TO_TRACK = 50;

/** Name of the tracker's current state. */
export type BarrierTrackerStateName =
  | "no-pending-checkpoint"
  | "tracking-barriers"
  | "all-inputs-ended";

/** One checkpoint whose barriers are being counted. */
interface PendingCheckpoint {
  readonly checkpointId: CheckpointId;
  /** When its first barrier arrived (`nowMs` then). */
  readonly startedAt: number;
  /** Channels that delivered its barrier. */
  readonly received: Set<number>;
}

/**
 * The at-least-once barrier handler of one task (see the module docs): feed
 * it the barriers, end-of-partition events and coordinator aborts of the
 * task's input channels, and execute the actions it returns, in order.
 *
 * Channels are numbered `0 .. numChannels - 1`. A duplicate barrier, a
 * barrier on an ended channel and a second end-of-partition are ignored
 * (they return no action).
 *
 * @example
 * ```ts
 * import { CheckpointBarrierTracker } from "./barrier_tracker.ts";
 * const t = new CheckpointBarrierTracker(1);
 * const [a] = t.onBarrier(0, 7, 0);
 * console.assert(a?.kind === "triggerCheckpoint" && a.checkpointId === 7);
 * ```
 */
export class CheckpointBarrierTracker implements CheckpointBarrierHandler {
  readonly #numChannels: number;
  readonly #ended = new Set<number>();
  /** Pending checkpoints, ascending by id. */
  #pending: PendingCheckpoint[] = [];
  /** Highest checkpoint id seen in a barrier or a coordinator abort. */
  #latestSeen = 0;
  /** Highest id triggered, aborted or subsumed: barriers at or below it are ignored. */
  #settledUpTo = 0;
  /** Ids the coordinator aborted before (or while) their barriers came: ignored. */
  readonly #aborted = new Set<CheckpointId>();
  #lastAlignmentDurationMs = 0;

  /**
   * Creates a tracker with no pending checkpoint and every channel live.
   *
   * @param numChannels how many input channels the task reads, a positive integer.
   * @throws {RangeError} when `numChannels` is not a positive integer.
   */
  constructor(numChannels: number) {
    if (!Number.isSafeInteger(numChannels) || numChannels < 1) {
      throw new RangeError(
        `Cannot create a barrier tracker: 'numChannels' must be a positive integer: current value is ${numChannels}`,
      );
    }
    this.#numChannels = numChannels;
  }

  /**
   * Barrier `checkpointId` arrived on `channel`. Never blocks the channel.
   *
   * @param channel the input channel index.
   * @param checkpointId the barrier's checkpoint id.
   * @param nowMs current time, in ms (any monotonic clock; used for alignment durations).
   * @returns the actions to execute, in order: possibly declines of older
   *   pending checkpoints it subsumes, then `triggerCheckpoint`.
   * @throws {RangeError} when `channel` is out of range or `checkpointId` is not a positive integer.
   */
  onBarrier(channel: number, checkpointId: CheckpointId, nowMs: number): BarrierAction[] {
    this.#checkChannel(channel);
    this.#checkId(checkpointId);
    if (this.#ended.has(channel) || this.isFinished) return [];
    if (checkpointId <= this.#settledUpTo || this.#aborted.has(checkpointId)) return [];
    const actions: BarrierAction[] = [];
    let pending = this.#pending.find((p) => p.checkpointId === checkpointId);
    if (pending === undefined) {
      // Only a barrier newer than every one seen starts tracking: an older id
      // not pending was dropped from tracking and can no longer complete.
      if (checkpointId <= this.#latestSeen) return [];
      this.#latestSeen = checkpointId;
      pending = { checkpointId, startedAt: nowMs, received: new Set() };
      this.#pending.push(pending);
      if (this.#pending.length > MAX_CHECKPOINTS_TO_TRACK) {
        const dropped = this.#pending.shift()!;
        this.#settledUpTo = Math.max(this.#settledUpTo, dropped.checkpointId);
        actions.push(subsumed(dropped.checkpointId));
      }
    }
    pending.received.add(channel);
    this.#triggerComplete(actions, nowMs);
    return actions;
  }

  /**
   * `channel` delivered its end-of-partition: it will deliver nothing more,
   * and counts as having delivered every later barrier. May complete pending
   * checkpoints.
   *
   * @param channel the input channel index.
   * @param nowMs current time, in ms.
   * @returns the actions to execute, in order.
   * @throws {RangeError} when `channel` is out of range.
   */
  onEndOfPartition(channel: number, nowMs: number): BarrierAction[] {
    this.#checkChannel(channel);
    if (this.#ended.has(channel)) return [];
    this.#ended.add(channel);
    const actions: BarrierAction[] = [];
    this.#triggerComplete(actions, nowMs);
    if (this.isFinished) this.#pending = [];
    return actions;
  }

  /**
   * The coordinator notified that checkpoint `checkpointId` was aborted. If it
   * is pending here, it stops (`abort` with `decline: false`); if its
   * barriers have not arrived yet, they will be ignored. A checkpoint already
   * triggered here is not affected: the task discards its upload itself.
   *
   * @param checkpointId the aborted checkpoint.
   * @param reason default `ABORTED_BY_COORDINATOR`.
   * @returns the actions to execute, in order.
   * @throws {RangeError} when `checkpointId` is not a positive integer.
   */
  onAbort(
    checkpointId: CheckpointId,
    reason: CheckpointFailureReason = CheckpointFailureReason.ABORTED_BY_COORDINATOR,
  ): BarrierAction[] {
    this.#checkId(checkpointId);
    if (checkpointId <= this.#settledUpTo || this.isFinished) return [];
    const index = this.#pending.findIndex((p) => p.checkpointId === checkpointId);
    if (index >= 0) {
      this.#pending.splice(index, 1);
      this.#aborted.add(checkpointId);
      return [{ kind: "abort", checkpointId, reason, decline: false }];
    }
    if (checkpointId > this.#latestSeen) this.#aborted.add(checkpointId);
    return [];
  }

  /** Name of the current state. */
  get state(): BarrierTrackerStateName {
    if (this.isFinished) return "all-inputs-ended";
    return this.#pending.length > 0 ? "tracking-barriers" : "no-pending-checkpoint";
  }

  /** Always `false`: the tracker never aligns (never blocks a channel). */
  get isAligning(): boolean {
    return false;
  }

  /** `true` once every channel ended. */
  get isFinished(): boolean {
    return this.#ended.size === this.#numChannels;
  }

  /** The oldest pending checkpoint, or `undefined`. */
  get pendingCheckpointId(): CheckpointId | undefined {
    return this.#pending[0]?.checkpointId;
  }

  /** Every pending checkpoint id, ascending. */
  get pendingCheckpointIds(): readonly CheckpointId[] {
    return this.#pending.map((p) => p.checkpointId);
  }

  /** Highest checkpoint id seen in a barrier (0 before any). */
  get latestCheckpointId(): CheckpointId {
    return this.#latestSeen;
  }

  /** Always empty: the tracker never blocks. */
  get blockedChannels(): readonly number[] {
    return [];
  }

  /** Channels that delivered end-of-partition, ascending. */
  get endedChannels(): readonly number[] {
    return [...this.#ended].sort((a, b) => a - b);
  }

  /** Number of input channels. */
  get numberOfChannels(): number {
    return this.#numChannels;
  }

  /** First-to-last barrier time of the last triggered checkpoint, in ms (0 before any). */
  get lastAlignmentDurationMs(): number {
    return this.#lastAlignmentDurationMs;
  }

  /**
   * Always 0: nothing is blocked, so there is no alignment to time out.
   *
   * @param _nowMs current time, in ms (unused).
   * @returns 0.
   */
  currentAlignmentDurationMs(_nowMs: number): number {
    return 0;
  }

  /**
   * Triggers every pending checkpoint that every live channel delivered, in
   * ascending order, and declines the incomplete ones older than a triggered
   * one (subsumed).
   */
  #triggerComplete(actions: BarrierAction[], nowMs: number): void {
    let lastComplete = -1;
    for (let i = 0; i < this.#pending.length; i++) {
      if (this.#complete(this.#pending[i]!)) lastComplete = i;
    }
    if (lastComplete < 0) return;
    const settled = this.#pending.slice(0, lastComplete + 1);
    this.#pending = this.#pending.slice(lastComplete + 1);
    for (const p of settled) {
      this.#settledUpTo = Math.max(this.#settledUpTo, p.checkpointId);
      if (!this.#complete(p)) {
        actions.push(subsumed(p.checkpointId));
        continue;
      }
      const alignmentDurationMs = Math.max(0, nowMs - p.startedAt);
      this.#lastAlignmentDurationMs = alignmentDurationMs;
      actions.push({
        kind: "triggerCheckpoint",
        checkpointId: p.checkpointId,
        alignmentStartedAt: p.startedAt,
        alignmentDurationMs,
      });
    }
    for (const id of this.#aborted) if (id <= this.#settledUpTo) this.#aborted.delete(id);
  }

  #complete(p: PendingCheckpoint): boolean {
    for (let c = 0; c < this.#numChannels; c++) {
      if (!this.#ended.has(c) && !p.received.has(c)) return false;
    }
    return true;
  }

  #checkChannel(channel: number): void {
    if (!Number.isSafeInteger(channel) || channel < 0 || channel >= this.#numChannels) {
      throw new RangeError(
        `Barrier tracker with ${this.#numChannels} channels: 'channel' must be an integer in [0, ${
          this.#numChannels - 1
        }]: current value is ${channel}`,
      );
    }
  }

  #checkId(checkpointId: CheckpointId): void {
    if (!Number.isSafeInteger(checkpointId) || checkpointId < 1) {
      throw new RangeError(
        `Barrier tracker: 'checkpointId' must be a positive integer: current value is ${checkpointId}`,
      );
    }
  }
}

function subsumed(checkpointId: CheckpointId): BarrierAction {
  return {
    kind: "abort",
    checkpointId,
    reason: CheckpointFailureReason.BARRIER_SUBSUMED,
    decline: true,
  };
}
