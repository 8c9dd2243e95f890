/**
 * Aligned checkpoint barrier handling for a task with several input
 * channels, as a state machine that returns actions instead of doing them.
 *
 * It follows Flink's `SingleCheckpointBarrierHandler` and its aligned states
 * (`WaitingForFirstBarrier`, `CollectingBarriers`): each state is a tiny
 * object whose event methods return the next state. The handler reads no
 * clock and performs no I/O; the task passes `nowMs` in and executes the
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

import { CheckpointFailureReason } from "../checkpoint/types.ts";
import type { CheckpointId } from "../checkpoint/types.ts";

/** An instruction to the task, returned by the {@linkcode AlignedBarrierHandler} events. */
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
 * `CheckpointBarrierHandler`): the aligned {@linkcode AlignedBarrierHandler}
 * (exactly-once) and the `CheckpointBarrierTracker` of `barrier_tracker.ts`
 * (at-least-once) both implement it. Every event returns the actions to
 * execute, in order.
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

/** Name of the handler's current state. */
export type BarrierHandlerStateName =
  | "waiting-for-first-barrier"
  | "collecting-barriers"
  | "all-inputs-ended";

/** Mutable facts shared by the states; private to this module. */
class Context {
  readonly numChannels: number;
  readonly ended = new Set<number>();
  readonly blocked = new Set<number>();
  /** Highest checkpoint id seen in a barrier or an abort. */
  latestSeen = 0;
  /** Ids above `latestSeen` the coordinator already aborted: their barriers are ignored. */
  readonly abortedAhead = new Set<CheckpointId>();
  actions: BarrierAction[] = [];
  lastAlignmentDurationMs = 0;

  constructor(numChannels: number) {
    this.numChannels = numChannels;
  }

  /** Records `id` as seen; returns whether the coordinator had aborted it already. */
  see(id: CheckpointId): boolean {
    this.latestSeen = id;
    const aborted = this.abortedAhead.has(id);
    for (const a of this.abortedAhead) if (a <= id) this.abortedAhead.delete(a);
    return aborted;
  }

  block(channel: number): void {
    this.blocked.add(channel);
    this.actions.push({ kind: "block", channel });
  }

  unblockAll(): void {
    if (this.blocked.size === 0) return;
    this.blocked.clear();
    this.actions.push({ kind: "unblockAll" });
  }

  get allEnded(): boolean {
    return this.ended.size === this.numChannels;
  }
}

interface HandlerState {
  readonly name: BarrierHandlerStateName;
  barrier(ctx: Context, channel: number, id: CheckpointId, nowMs: number): HandlerState;
  endOfPartition(ctx: Context, nowMs: number): HandlerState;
  abort(ctx: Context, id: CheckpointId, reason: CheckpointFailureReason): HandlerState;
}

/** No alignment in progress. */
class WaitingForFirstBarrier implements HandlerState {
  readonly name = "waiting-for-first-barrier" as const;

  barrier(ctx: Context, channel: number, id: CheckpointId, nowMs: number): HandlerState {
    if (id <= ctx.latestSeen) return this; // older, or already triggered/aborted here
    if (ctx.see(id)) return this; // the coordinator aborted it before its first barrier came
    return new CollectingBarriers(id, nowMs).receive(ctx, channel, nowMs);
  }

  endOfPartition(ctx: Context): HandlerState {
    return ctx.allEnded ? ALL_INPUTS_ENDED : this;
  }

  abort(ctx: Context, id: CheckpointId): HandlerState {
    if (id > ctx.latestSeen) ctx.abortedAhead.add(id);
    return this;
  }
}

/** Aligning one checkpoint: some channels delivered its barrier and are blocked. */
class CollectingBarriers implements HandlerState {
  readonly name = "collecting-barriers" as const;
  readonly checkpointId: CheckpointId;
  readonly startedAt: number;
  readonly #received = new Set<number>();

  constructor(checkpointId: CheckpointId, startedAt: number) {
    this.checkpointId = checkpointId;
    this.startedAt = startedAt;
  }

  barrier(ctx: Context, channel: number, id: CheckpointId, nowMs: number): HandlerState {
    if (id < this.checkpointId) return this;
    if (id === this.checkpointId) {
      return this.#received.has(channel) ? this : this.receive(ctx, channel, nowMs);
    }
    // A newer barrier before this alignment finished: this checkpoint cannot complete here.
    ctx.actions.push({
      kind: "abort",
      checkpointId: this.checkpointId,
      reason: CheckpointFailureReason.BARRIER_SUBSUMED,
      decline: true,
    });
    ctx.unblockAll();
    return WAITING.barrier(ctx, channel, id, nowMs);
  }

  receive(ctx: Context, channel: number, nowMs: number): HandlerState {
    this.#received.add(channel);
    if (this.#aligned(ctx)) return this.#finish(ctx, nowMs);
    ctx.block(channel);
    return this;
  }

  endOfPartition(ctx: Context, nowMs: number): HandlerState {
    return this.#aligned(ctx) ? this.#finish(ctx, nowMs) : this;
  }

  abort(ctx: Context, id: CheckpointId, reason: CheckpointFailureReason): HandlerState {
    if (id > this.checkpointId) {
      ctx.abortedAhead.add(id);
      return this;
    }
    if (id < this.checkpointId) return this;
    ctx.actions.push({ kind: "abort", checkpointId: id, reason, decline: false });
    ctx.unblockAll();
    return WAITING;
  }

  #aligned(ctx: Context): boolean {
    for (let c = 0; c < ctx.numChannels; c++) {
      if (!ctx.ended.has(c) && !this.#received.has(c)) return false;
    }
    return true;
  }

  #finish(ctx: Context, nowMs: number): HandlerState {
    const alignmentDurationMs = Math.max(0, nowMs - this.startedAt);
    ctx.lastAlignmentDurationMs = alignmentDurationMs;
    ctx.actions.push({
      kind: "triggerCheckpoint",
      checkpointId: this.checkpointId,
      alignmentStartedAt: this.startedAt,
      alignmentDurationMs,
    });
    ctx.unblockAll();
    return ctx.allEnded ? ALL_INPUTS_ENDED : WAITING;
  }
}

/** Every channel ended: nothing blocks or triggers any more. */
class AllInputsEnded implements HandlerState {
  readonly name = "all-inputs-ended" as const;
  barrier(): HandlerState {
    return this;
  }
  endOfPartition(): HandlerState {
    return this;
  }
  abort(): HandlerState {
    return this;
  }
}

const WAITING = new WaitingForFirstBarrier();
const ALL_INPUTS_ENDED = new AllInputsEnded();

/**
 * The aligned (exactly-once) barrier handler of one task: feed it the
 * barriers, end-of-partition events and coordinator aborts of the task's
 * input channels, and execute the actions it returns, in order.
 *
 * Channels are numbered `0 .. numChannels - 1`. A duplicate barrier, a
 * barrier on an ended channel and a second end-of-partition are ignored
 * (they return no action).
 *
 * @example
 * ```ts
 * import { AlignedBarrierHandler } from "./barrier_handler.ts";
 * const h = new AlignedBarrierHandler(1);
 * const [a] = h.onBarrier(0, 7, 0);
 * console.assert(a?.kind === "triggerCheckpoint" && a.checkpointId === 7);
 * ```
 */
export class AlignedBarrierHandler implements CheckpointBarrierHandler {
  readonly #ctx: Context;
  #state: HandlerState = WAITING;

  /**
   * Creates a handler waiting for the first barrier, with every channel live.
   *
   * @param numChannels how many input channels the task reads, a positive integer.
   * @throws {RangeError} when `numChannels` is not a positive integer.
   */
  constructor(numChannels: number) {
    if (!Number.isSafeInteger(numChannels) || numChannels < 1) {
      throw new RangeError(
        `Cannot create a barrier handler: 'numChannels' must be a positive integer: current value is ${numChannels}`,
      );
    }
    this.#ctx = new Context(numChannels);
  }

  /**
   * Barrier `checkpointId` arrived on `channel`.
   *
   * @param channel the input channel index.
   * @param checkpointId the barrier's checkpoint id.
   * @param nowMs current time, in ms (any monotonic clock; used for alignment durations).
   * @returns the actions to execute, in order.
   * @throws {RangeError} when `channel` is out of range or `checkpointId` is not a positive integer.
   */
  onBarrier(channel: number, checkpointId: CheckpointId, nowMs: number): BarrierAction[] {
    this.#checkChannel(channel);
    this.#checkId(checkpointId);
    if (this.#ctx.ended.has(channel)) return [];
    return this.#run((ctx) => this.#state.barrier(ctx, channel, checkpointId, nowMs));
  }

  /**
   * `channel` delivered its end-of-partition: it will deliver nothing more,
   * and counts as having delivered every later barrier. May complete an
   * alignment in progress.
   *
   * @param channel the input channel index.
   * @param nowMs current time, in ms.
   * @returns the actions to execute, in order.
   * @throws {RangeError} when `channel` is out of range.
   */
  onEndOfPartition(channel: number, nowMs: number): BarrierAction[] {
    this.#checkChannel(channel);
    if (this.#ctx.ended.has(channel)) return [];
    this.#ctx.ended.add(channel);
    return this.#run((ctx) => this.#state.endOfPartition(ctx, nowMs));
  }

  /**
   * The coordinator notified that checkpoint `checkpointId` was aborted. If it
   * is being aligned, the alignment stops (`abort` with `decline: false`, then
   * `unblockAll`); if its barriers have not arrived yet, they will be ignored.
   * A checkpoint already triggered here is not affected: the task discards its
   * upload itself.
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
    return this.#run((ctx) => this.#state.abort(ctx, checkpointId, reason));
  }

  /** Name of the current state. */
  get state(): BarrierHandlerStateName {
    return this.#state.name;
  }

  /** `true` while some but not all live channels delivered the current barrier. */
  get isAligning(): boolean {
    return this.#state instanceof CollectingBarriers;
  }

  /** `true` once every channel ended. */
  get isFinished(): boolean {
    return this.#state === ALL_INPUTS_ENDED;
  }

  /** The checkpoint being aligned, or `undefined`. */
  get pendingCheckpointId(): CheckpointId | undefined {
    return this.#state instanceof CollectingBarriers ? this.#state.checkpointId : undefined;
  }

  /** Highest checkpoint id seen in a barrier or a coordinator abort (0 before any). */
  get latestCheckpointId(): CheckpointId {
    return this.#ctx.latestSeen;
  }

  /** Channels currently blocked, ascending. */
  get blockedChannels(): readonly number[] {
    return [...this.#ctx.blocked].sort((a, b) => a - b);
  }

  /** Channels that delivered end-of-partition, ascending. */
  get endedChannels(): readonly number[] {
    return [...this.#ctx.ended].sort((a, b) => a - b);
  }

  /** Number of input channels. */
  get numberOfChannels(): number {
    return this.#ctx.numChannels;
  }

  /** Alignment duration of the last triggered checkpoint, in ms (0 before any). */
  get lastAlignmentDurationMs(): number {
    return this.#ctx.lastAlignmentDurationMs;
  }

  /**
   * How long the current alignment has lasted, in ms, for Flink's
   * `checkpointAlignmentTime` gauge and the aligned-checkpoint timeout.
   *
   * @param nowMs current time, in ms, on the clock passed to the events.
   * @returns 0 when not aligning.
   */
  currentAlignmentDurationMs(nowMs: number): number {
    return this.#state instanceof CollectingBarriers
      ? Math.max(0, nowMs - this.#state.startedAt)
      : 0;
  }

  #run(event: (ctx: Context) => HandlerState): BarrierAction[] {
    this.#ctx.actions = [];
    this.#state = event(this.#ctx);
    const actions = this.#ctx.actions;
    this.#ctx.actions = [];
    return actions;
  }

  #checkChannel(channel: number): void {
    if (!Number.isSafeInteger(channel) || channel < 0 || channel >= this.#ctx.numChannels) {
      throw new RangeError(
        `Barrier handler with ${this.#ctx.numChannels} channels: 'channel' must be an integer in [0, ${
          this.#ctx.numChannels - 1
        }]: current value is ${channel}`,
      );
    }
  }

  #checkId(checkpointId: CheckpointId): void {
    if (!Number.isSafeInteger(checkpointId) || checkpointId < 1) {
      throw new RangeError(
        `Barrier handler: 'checkpointId' must be a positive integer: current value is ${checkpointId}`,
      );
    }
  }
}
