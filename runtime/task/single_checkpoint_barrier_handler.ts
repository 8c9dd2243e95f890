/**
 * The exactly-once barrier handler's state machine (Flink's
 * `SingleCheckpointBarrierHandler`), shared by the aligned handler
 * (`barrier_handler.ts`) and the alternating one for unaligned checkpoints
 * (`alternating_barrier_handler.ts`). Like Flink, which gives one handler
 * class either the aligned states (`WaitingForFirstBarrier`,
 * `CollectingBarriers`) or the alternating ones, the two handlers here are
 * one machine in two modes:
 *
 * - **aligned only** (no `alignedCheckpointTimeoutMs`): every barrier is
 *   treated as a savepoint's (`forceAligned`), so a checkpoint always
 *   aligns and never switches to unaligned;
 * - **alternating** (`alignedCheckpointTimeoutMs` ≥ 0): `0` takes every
 *   checkpoint unaligned at its first barrier, a positive timeout aligns
 *   first and switches to unaligned when the alignment has lasted it
 *   (announcements and the alignment timer are its events).
 *
 * Each state is a tiny object whose event methods return the next state;
 * the handler reads no clock and performs no I/O: the task passes `nowMs`
 * in and executes the returned {@linkcode BarrierAction}s in order.
 *
 * ## States
 *
 * | state | entered | left |
 * | --- | --- | --- |
 * | `waiting-for-first-barrier` | at the start, and when a checkpoint is triggered, aborted or subsumed | the first barrier (or announcement) of a newer checkpoint |
 * | `collecting-barriers` | an aligned (or not yet switched) checkpoint's first barrier: its channels are blocked | every live channel delivered it (trigger), the timeout (switch), a newer barrier (subsume) or an abort |
 * | `collecting-barriers-unaligned` | an unaligned trigger with channels still pending | every live channel delivered it, a newer barrier (subsume) or an abort |
 * | `all-inputs-ended` | every channel ended (after settling the checkpoint in progress) | never |
 *
 * ## Invariants
 *
 * - `triggerCheckpoint` for *n* is emitted at most once, never for an id at
 *   or below one already triggered, aborted or subsumed; barriers older
 *   than the latest seen id are ignored and never block.
 * - Channels are blocked only while aligning, and every block is undone by
 *   `unblockAll` before the checkpoint is triggered (aligned), switched,
 *   aborted or subsumed.
 * - An unaligned `triggerCheckpoint` lists exactly the live channels that
 *   have not delivered barrier *n*.
 * - A channel that ended counts as having delivered every later barrier;
 *   once every channel has ended nothing triggers any more.
 *
 * @module
 */

import type { BarrierAction, CheckpointBarrierHandler } from "./barrier_action.ts";
import { CheckpointFailureReason } from "../checkpoint/types.ts";
import type { CheckpointId } from "../checkpoint/types.ts";

/** Name of a {@linkcode SingleCheckpointBarrierHandler}'s current state (see the module docs). */
export type SingleBarrierHandlerStateName =
  | "waiting-for-first-barrier"
  | "collecting-barriers"
  | "collecting-barriers-unaligned"
  | "all-inputs-ended";

/**
 * Options of a {@linkcode SingleCheckpointBarrierHandler}.
 */
export interface SingleCheckpointBarrierHandlerOptions {
  /** How many input channels the task reads, a positive integer. */
  readonly numChannels: number;
  /**
   * How long a checkpoint may align before it switches to unaligned, in ms
   * (Flink's `execution.checkpointing.aligned-checkpoint-timeout`), a
   * finite number ≥ 0; `0`: every checkpoint is unaligned from its first
   * barrier. Absent: aligned only (no checkpoint ever switches).
   */
  readonly alignedCheckpointTimeoutMs?: number;
}

/** One barrier's arrival, as the states see it. */
interface Barrier {
  readonly channel: number;
  readonly id: CheckpointId;
  readonly nowMs: number;
  /** Never unaligned: a savepoint's barrier, or any barrier of an aligned-only handler. */
  readonly aligned: boolean;
}

/** Mutable facts shared by the states; private to this module. */
class Context {
  readonly numChannels: number;
  /** The aligned-checkpoint timeout, ms; `Infinity` for an aligned-only handler. */
  readonly timeoutMs: number;
  readonly ended = new Set<number>();
  readonly blocked = new Set<number>();
  /** Highest checkpoint id seen in a barrier, an announcement or an abort. */
  latestSeen = 0;
  /** Ids above `latestSeen` the coordinator already aborted: their barriers are ignored. */
  readonly abortedAhead = new Set<CheckpointId>();
  actions: BarrierAction[] = [];
  lastAlignmentDurationMs = 0;

  constructor(numChannels: number, timeoutMs: number) {
    this.numChannels = numChannels;
    this.timeoutMs = timeoutMs;
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

  /** Live channels not in `received`, ascending. */
  pending(received: ReadonlySet<number>): number[] {
    const out: number[] = [];
    for (let c = 0; c < this.numChannels; c++) {
      if (!this.ended.has(c) && !received.has(c)) out.push(c);
    }
    return out;
  }

  /** The state once the checkpoint in progress is settled. */
  settled(): HandlerState {
    return this.allEnded ? ALL_INPUTS_ENDED : WAITING;
  }
}

interface HandlerState {
  readonly name: SingleBarrierHandlerStateName;
  barrier(ctx: Context, barrier: Barrier): HandlerState;
  endOfPartition(ctx: Context, nowMs: number): HandlerState;
  announce(ctx: Context, id: CheckpointId, nowMs: number): HandlerState;
  abort(ctx: Context, id: CheckpointId, reason: CheckpointFailureReason): HandlerState;
  timer(ctx: Context, nowMs: number): HandlerState;
}

/** No checkpoint in progress (Flink's `WaitingForFirstBarrier`, `AlternatingWaitingForFirstBarrier`). */
class WaitingForFirstBarrier implements HandlerState {
  readonly name = "waiting-for-first-barrier" as const;

  barrier(ctx: Context, b: Barrier): HandlerState {
    if (b.id <= ctx.latestSeen) return this; // older, or already triggered/aborted here
    if (ctx.see(b.id)) return this; // the coordinator aborted it before its first barrier came
    if (!b.aligned && ctx.timeoutMs === 0) {
      return new CollectingUnaligned(b.id).start(ctx, b.channel, b.nowMs);
    }
    return new CollectingAligned(b.id, b.nowMs, b.aligned).receive(ctx, b.channel, b.nowMs);
  }

  endOfPartition(ctx: Context): HandlerState {
    return ctx.allEnded ? ALL_INPUTS_ENDED : this;
  }

  /** A barrier arrived (still queued): its alignment timeout starts now. */
  announce(ctx: Context, id: CheckpointId, nowMs: number): HandlerState {
    if (id <= ctx.latestSeen || ctx.timeoutMs === 0) return this;
    if (ctx.see(id)) return this;
    return new CollectingAligned(id, nowMs, false);
  }

  abort(ctx: Context, id: CheckpointId): HandlerState {
    if (id > ctx.latestSeen) ctx.abortedAhead.add(id);
    return this;
  }

  timer(): HandlerState {
    return this;
  }
}

/** Collecting checkpoint `checkpointId`: what an older, a newer and its own barrier and an abort do. */
abstract class Collecting implements HandlerState {
  abstract readonly name: SingleBarrierHandlerStateName;
  readonly checkpointId: CheckpointId;
  /** Channels that delivered barrier `checkpointId`. */
  readonly received = new Set<number>();

  constructor(checkpointId: CheckpointId) {
    this.checkpointId = checkpointId;
  }

  barrier(ctx: Context, b: Barrier): HandlerState {
    if (b.id < this.checkpointId) return this;
    if (b.id === this.checkpointId) return this.ownBarrier(ctx, b.channel, b.nowMs);
    // A newer barrier before this checkpoint was collected: it cannot complete here.
    ctx.actions.push({
      kind: "abort",
      checkpointId: this.checkpointId,
      reason: CheckpointFailureReason.BARRIER_SUBSUMED,
      decline: true,
    });
    ctx.unblockAll();
    return WAITING.barrier(ctx, b);
  }

  /** Barrier `checkpointId` arrived on `channel` (possibly again). */
  abstract ownBarrier(ctx: Context, channel: number, nowMs: number): HandlerState;
  abstract endOfPartition(ctx: Context, nowMs: number): HandlerState;
  abstract announce(ctx: Context, id: CheckpointId, nowMs: number): HandlerState;
  abstract timer(ctx: Context, nowMs: number): HandlerState;

  abort(ctx: Context, id: CheckpointId, reason: CheckpointFailureReason): HandlerState {
    if (id > this.checkpointId) {
      ctx.abortedAhead.add(id);
      return this;
    }
    if (id < this.checkpointId) return this;
    ctx.actions.push({ kind: "abort", checkpointId: id, reason, decline: false });
    ctx.unblockAll();
    return ctx.settled();
  }
}

/**
 * Aligning checkpoint `checkpointId`: channels that delivered its barrier
 * are blocked (Flink's `CollectingBarriers`, `AlternatingCollectingBarriers`);
 * unless `forceAligned`, it switches to unaligned at the timeout.
 */
class CollectingAligned extends Collecting {
  readonly name = "collecting-barriers" as const;
  /** When the first barrier (or announcement) of `checkpointId` arrived, ms. */
  readonly startedAt: number;
  readonly forceAligned: boolean;

  constructor(checkpointId: CheckpointId, startedAt: number, forceAligned: boolean) {
    super(checkpointId);
    this.startedAt = startedAt;
    this.forceAligned = forceAligned;
  }

  ownBarrier(ctx: Context, channel: number, nowMs: number): HandlerState {
    return this.received.has(channel) ? this.timer(ctx, nowMs) : this.receive(ctx, channel, nowMs);
  }

  receive(ctx: Context, channel: number, nowMs: number): HandlerState {
    this.received.add(channel);
    if (ctx.pending(this.received).length === 0) return this.#finish(ctx, nowMs);
    ctx.block(channel);
    return this.timer(ctx, nowMs);
  }

  endOfPartition(ctx: Context, nowMs: number): HandlerState {
    return ctx.pending(this.received).length === 0 ? this.#finish(ctx, nowMs) : this;
  }

  announce(ctx: Context, _id: CheckpointId, nowMs: number): HandlerState {
    return this.timer(ctx, nowMs);
  }

  /** Switches to unaligned once the alignment has lasted the timeout. */
  timer(ctx: Context, nowMs: number): HandlerState {
    if (this.forceAligned || nowMs - this.startedAt < ctx.timeoutMs) return this;
    const next = new CollectingUnaligned(this.checkpointId);
    for (const c of this.received) next.received.add(c);
    ctx.actions.push({
      kind: "triggerCheckpoint",
      checkpointId: this.checkpointId,
      alignmentStartedAt: this.startedAt,
      alignmentDurationMs: Math.max(0, nowMs - this.startedAt),
      unaligned: true,
      pendingChannels: ctx.pending(this.received),
    });
    ctx.unblockAll();
    return next;
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
    return ctx.settled();
  }
}

/**
 * Checkpoint `checkpointId` was taken unaligned; its remaining barriers are
 * collected (Flink's `AlternatingCollectingBarriersUnaligned`).
 */
class CollectingUnaligned extends Collecting {
  readonly name = "collecting-barriers-unaligned" as const;

  /** The first barrier arrived on `channel`: trigger unaligned at once. */
  start(ctx: Context, channel: number, nowMs: number): HandlerState {
    this.received.add(channel);
    const pendingChannels = ctx.pending(this.received);
    ctx.actions.push({
      kind: "triggerCheckpoint",
      checkpointId: this.checkpointId,
      alignmentStartedAt: nowMs,
      alignmentDurationMs: 0,
      unaligned: true,
      pendingChannels,
    });
    return pendingChannels.length === 0 ? ctx.settled() : this;
  }

  ownBarrier(ctx: Context, channel: number): HandlerState {
    this.received.add(channel);
    return this.endOfPartition(ctx);
  }

  endOfPartition(ctx: Context): HandlerState {
    return ctx.pending(this.received).length === 0 ? ctx.settled() : this;
  }

  announce(): HandlerState {
    return this;
  }

  timer(): HandlerState {
    return this;
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
  announce(): HandlerState {
    return this;
  }
  abort(): HandlerState {
    return this;
  }
  timer(): HandlerState {
    return this;
  }
}

const WAITING = new WaitingForFirstBarrier();
const ALL_INPUTS_ENDED = new AllInputsEnded();

/**
 * The exactly-once barrier handler of one task (Flink's
 * `SingleCheckpointBarrierHandler`): feed it the barriers, end-of-partition
 * events and coordinator aborts of the task's input channels, and execute
 * the actions it returns, in order. Channels are numbered
 * `0 .. numChannels - 1`; a duplicate barrier, a barrier on an ended
 * channel and a second end-of-partition return no action.
 *
 * Used through its two modes, `AlignedBarrierHandler` and
 * `AlternatingBarrierHandler`; the announcement and alignment timer events
 * are protected, for the alternating one to offer.
 *
 * @typeParam S the state names the mode can reach (the aligned-only mode
 *   never reaches `"collecting-barriers-unaligned"`).
 */
export abstract class SingleCheckpointBarrierHandler<
  S extends SingleBarrierHandlerStateName = SingleBarrierHandlerStateName,
> implements CheckpointBarrierHandler {
  readonly #ctx: Context;
  #state: HandlerState = WAITING;

  /**
   * Creates a handler waiting for the first barrier, with every channel live.
   * @param options the channels and, for the alternating mode, the aligned-checkpoint timeout.
   * @throws {RangeError} when `numChannels` is not a positive integer or
   *   `alignedCheckpointTimeoutMs` is given but not a finite number ≥ 0,
   *   naming the current value.
   */
  protected constructor(options: SingleCheckpointBarrierHandlerOptions) {
    const { numChannels, alignedCheckpointTimeoutMs } = options;
    if (!Number.isSafeInteger(numChannels) || numChannels < 1) {
      throw new RangeError(
        `Cannot create a barrier handler: 'numChannels' must be a positive integer: current value is ${numChannels}`,
      );
    }
    if (
      alignedCheckpointTimeoutMs !== undefined &&
      !(Number.isFinite(alignedCheckpointTimeoutMs) && alignedCheckpointTimeoutMs >= 0)
    ) {
      throw new RangeError(
        `Cannot create a barrier handler: 'alignedCheckpointTimeoutMs' must be a finite number >= 0 (ms): current value is ${alignedCheckpointTimeoutMs}`,
      );
    }
    this.#ctx = new Context(numChannels, alignedCheckpointTimeoutMs ?? Infinity);
  }

  /**
   * Barrier `checkpointId` arrived on `channel`.
   *
   * @param channel the input channel index.
   * @param checkpointId the barrier's checkpoint id.
   * @param nowMs current time, in ms (any monotonic clock; used for alignment durations).
   * @param forceAligned `true` for a savepoint's barrier: always aligned.
   * @returns the actions to execute, in order.
   * @throws {RangeError} when `channel` is out of range or `checkpointId` is not a positive integer.
   */
  onBarrier(
    channel: number,
    checkpointId: CheckpointId,
    nowMs: number,
    forceAligned = false,
  ): BarrierAction[] {
    this.#checkChannel(channel);
    this.#checkId(checkpointId);
    if (this.#ctx.ended.has(channel)) return [];
    const aligned = forceAligned || this.#ctx.timeoutMs === Infinity;
    return this.#run((ctx) =>
      this.#state.barrier(ctx, { channel, id: checkpointId, nowMs, aligned })
    );
  }

  /**
   * `channel` delivered its end-of-partition: it will deliver nothing more,
   * and counts as having delivered every later barrier. May complete a
   * checkpoint in progress.
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
   * The coordinator notified that checkpoint `checkpointId` was aborted. If
   * it is being collected, the collection stops (`abort` with `decline:
   * false`, then `unblockAll` if aligning); if its barriers have not
   * arrived yet, they will be ignored. A checkpoint already triggered here
   * is not affected: the task discards its upload itself.
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

  /**
   * Barrier `checkpointId` arrived on some channel and waits in order
   * behind data: its alignment starts now (see
   * `AlternatingBarrierHandler.onBarrierAnnouncement`).
   * @param checkpointId the announced barrier's checkpoint id.
   * @param nowMs current time, ms.
   * @returns the actions to execute (a switch, when an alignment in progress timed out).
   * @throws {RangeError} when `checkpointId` is not a positive integer.
   */
  protected announce(checkpointId: CheckpointId, nowMs: number): BarrierAction[] {
    this.#checkId(checkpointId);
    return this.#run((ctx) => this.#state.announce(ctx, checkpointId, nowMs));
  }

  /**
   * The alignment timer fired: an alignment that has lasted the timeout
   * switches to unaligned.
   * @param nowMs current time, ms.
   * @returns the actions to execute, in order (none when nothing is due).
   */
  protected alignmentTimer(nowMs: number): BarrierAction[] {
    return this.#run((ctx) => this.#state.timer(ctx, nowMs));
  }

  /**
   * How long until the current alignment times out, in ms (≥ 0), or
   * `undefined` when nothing is aligning or it cannot switch.
   * @param nowMs current time, ms.
   */
  protected alignmentTimeoutDelayMs(nowMs: number): number | undefined {
    const s = this.#state;
    if (!(s instanceof CollectingAligned) || s.forceAligned) return undefined;
    return Math.max(0, s.startedAt + this.#ctx.timeoutMs - nowMs);
  }

  /** Name of the current state. */
  get state(): S {
    // The mode decides which states are reachable: S names them.
    return this.#state.name as S;
  }

  /** `true` while some channels are blocked for an alignment. */
  get isAligning(): boolean {
    return this.#state instanceof CollectingAligned;
  }

  /** `true` once every channel ended. */
  get isFinished(): boolean {
    return this.#state === ALL_INPUTS_ENDED;
  }

  /** The checkpoint being collected (aligned or unaligned), or `undefined`. */
  get pendingCheckpointId(): CheckpointId | undefined {
    return this.#state instanceof Collecting ? this.#state.checkpointId : undefined;
  }

  /** Highest checkpoint id seen in a barrier, an announcement or a coordinator abort (0 before any). */
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

  /** Alignment duration of the last checkpoint triggered aligned, in ms (0 before any). */
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
    const s = this.#state;
    return s instanceof CollectingAligned ? Math.max(0, nowMs - s.startedAt) : 0;
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
