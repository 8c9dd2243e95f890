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
 * and executes the returned {@linkcode BarrierAction}s in order.
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

import { type BarrierAction, type CheckpointBarrierHandler } from "./barrier_handler.ts";
import { CheckpointFailureReason } from "../checkpoint/types.ts";
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
export type AlternatingHandlerStateName =
  | "waiting-for-first-barrier"
  | "collecting-barriers"
  | "collecting-barriers-unaligned"
  | "all-inputs-ended";

/** Mutable facts shared by the states; private to this module. */
class Context {
  readonly numChannels: number;
  readonly timeoutMs: number;
  readonly ended = new Set<number>();
  readonly blocked = new Set<number>();
  latestSeen = 0;
  readonly abortedAhead = new Set<CheckpointId>();
  actions: BarrierAction[] = [];

  constructor(numChannels: number, timeoutMs: number) {
    this.numChannels = numChannels;
    this.timeoutMs = timeoutMs;
  }

  see(id: CheckpointId): boolean {
    this.latestSeen = id;
    const aborted = this.abortedAhead.has(id);
    for (const a of this.abortedAhead) if (a <= id) this.abortedAhead.delete(a);
    return aborted;
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
}

interface HandlerState {
  readonly name: AlternatingHandlerStateName;
  barrier(
    ctx: Context,
    channel: number,
    id: CheckpointId,
    nowMs: number,
    forceAligned: boolean,
  ): HandlerState;
  endOfPartition(ctx: Context, nowMs: number): HandlerState;
  announce(ctx: Context, id: CheckpointId, nowMs: number): HandlerState;
  abort(ctx: Context, id: CheckpointId, reason: CheckpointFailureReason): HandlerState;
  timer(ctx: Context, nowMs: number): HandlerState;
}

class Waiting implements HandlerState {
  readonly name = "waiting-for-first-barrier" as const;

  barrier(
    ctx: Context,
    channel: number,
    id: CheckpointId,
    nowMs: number,
    forceAligned: boolean,
  ): HandlerState {
    if (id <= ctx.latestSeen) return this;
    if (ctx.see(id)) return this;
    if (!forceAligned && ctx.timeoutMs === 0) {
      return new CollectingUnaligned(id).start(ctx, channel, nowMs);
    }
    return new CollectingAligned(id, nowMs, forceAligned).receive(ctx, channel, nowMs);
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

/** Common handling of a newer barrier and of aborts while a checkpoint is collected. */
abstract class Collecting {
  abstract readonly checkpointId: CheckpointId;

  /** A barrier newer than the one collected: it is subsumed (declined), the new one starts. */
  subsume(
    ctx: Context,
    channel: number,
    id: CheckpointId,
    nowMs: number,
    forceAligned: boolean,
  ): HandlerState {
    ctx.actions.push({
      kind: "abort",
      checkpointId: this.checkpointId,
      reason: CheckpointFailureReason.BARRIER_SUBSUMED,
      decline: true,
    });
    ctx.unblockAll();
    return WAITING.barrier(ctx, channel, id, nowMs, forceAligned);
  }

  abortBy(ctx: Context, id: CheckpointId, reason: CheckpointFailureReason, self: HandlerState) {
    if (id > this.checkpointId) {
      ctx.abortedAhead.add(id);
      return self;
    }
    if (id < this.checkpointId) return self;
    ctx.actions.push({ kind: "abort", checkpointId: id, reason, decline: false });
    ctx.unblockAll();
    return ctx.allEnded ? ALL_INPUTS_ENDED : WAITING;
  }
}

/** Aligning checkpoint `checkpointId`; it may switch to unaligned at the timeout. */
class CollectingAligned extends Collecting implements HandlerState {
  readonly name = "collecting-barriers" as const;
  readonly checkpointId: CheckpointId;
  readonly startedAt: number;
  readonly forceAligned: boolean;
  readonly received = new Set<number>();

  constructor(checkpointId: CheckpointId, startedAt: number, forceAligned: boolean) {
    super();
    this.checkpointId = checkpointId;
    this.startedAt = startedAt;
    this.forceAligned = forceAligned;
  }

  barrier(
    ctx: Context,
    channel: number,
    id: CheckpointId,
    nowMs: number,
    forceAligned: boolean,
  ): HandlerState {
    if (id < this.checkpointId) return this;
    if (id > this.checkpointId) return this.subsume(ctx, channel, id, nowMs, forceAligned);
    if (this.received.has(channel)) return this.timer(ctx, nowMs);
    return this.receive(ctx, channel, nowMs);
  }

  receive(ctx: Context, channel: number, nowMs: number): HandlerState {
    this.received.add(channel);
    if (ctx.pending(this.received).length === 0) return this.#finish(ctx, nowMs);
    ctx.blocked.add(channel);
    ctx.actions.push({ kind: "block", channel });
    return this.timer(ctx, nowMs);
  }

  endOfPartition(ctx: Context, nowMs: number): HandlerState {
    return ctx.pending(this.received).length === 0 ? this.#finish(ctx, nowMs) : this;
  }

  abort(ctx: Context, id: CheckpointId, reason: CheckpointFailureReason): HandlerState {
    return this.abortBy(ctx, id, reason, this);
  }

  announce(ctx: Context, _id: CheckpointId, nowMs: number): HandlerState {
    return this.timer(ctx, nowMs);
  }

  /** Switches to unaligned once the alignment has lasted the timeout. */
  timer(ctx: Context, nowMs: number): HandlerState {
    if (this.forceAligned || nowMs - this.startedAt < ctx.timeoutMs) return this;
    const alignmentDurationMs = Math.max(0, nowMs - this.startedAt);
    const next = new CollectingUnaligned(this.checkpointId);
    for (const c of this.received) next.received.add(c);
    ctx.actions.push({
      kind: "triggerCheckpoint",
      checkpointId: this.checkpointId,
      alignmentStartedAt: this.startedAt,
      alignmentDurationMs,
      unaligned: true,
      pendingChannels: ctx.pending(this.received),
    });
    ctx.unblockAll();
    return next;
  }

  #finish(ctx: Context, nowMs: number): HandlerState {
    ctx.actions.push({
      kind: "triggerCheckpoint",
      checkpointId: this.checkpointId,
      alignmentStartedAt: this.startedAt,
      alignmentDurationMs: Math.max(0, nowMs - this.startedAt),
    });
    ctx.unblockAll();
    return ctx.allEnded ? ALL_INPUTS_ENDED : WAITING;
  }
}

/** Checkpoint `checkpointId` was taken unaligned; its remaining barriers are collected. */
class CollectingUnaligned extends Collecting implements HandlerState {
  readonly name = "collecting-barriers-unaligned" as const;
  readonly checkpointId: CheckpointId;
  readonly received = new Set<number>();

  constructor(checkpointId: CheckpointId) {
    super();
    this.checkpointId = checkpointId;
  }

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
    return pendingChannels.length === 0 ? this.#done(ctx) : this;
  }

  barrier(
    ctx: Context,
    channel: number,
    id: CheckpointId,
    nowMs: number,
    forceAligned: boolean,
  ): HandlerState {
    if (id < this.checkpointId) return this;
    if (id > this.checkpointId) return this.subsume(ctx, channel, id, nowMs, forceAligned);
    this.received.add(channel);
    return ctx.pending(this.received).length === 0 ? this.#done(ctx) : this;
  }

  endOfPartition(ctx: Context): HandlerState {
    return ctx.pending(this.received).length === 0 ? this.#done(ctx) : this;
  }

  abort(ctx: Context, id: CheckpointId, reason: CheckpointFailureReason): HandlerState {
    return this.abortBy(ctx, id, reason, this);
  }

  timer(): HandlerState {
    return this;
  }

  announce(): HandlerState {
    return this;
  }

  #done(ctx: Context): HandlerState {
    return ctx.allEnded ? ALL_INPUTS_ENDED : WAITING;
  }
}

class AllInputsEnded implements HandlerState {
  readonly name = "all-inputs-ended" as const;
  barrier(): HandlerState {
    return this;
  }
  announce(): HandlerState {
    return this;
  }
  endOfPartition(): HandlerState {
    return this;
  }
  abort(): HandlerState {
    return this;
  }
  timer(): HandlerState {
    return this;
  }
}

const WAITING = new Waiting();
const ALL_INPUTS_ENDED = new AllInputsEnded();

/**
 * The exactly-once barrier handler of a task with unaligned checkpoints on
 * (see the module docs). Channels are numbered `0 .. numChannels - 1`; a
 * duplicate barrier, a barrier on an ended channel and a second
 * end-of-partition return no action.
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
export class AlternatingBarrierHandler implements CheckpointBarrierHandler {
  readonly #ctx: Context;
  #state: HandlerState = WAITING;

  /**
   * Creates a handler waiting for the first barrier, with every channel live.
   * @throws {RangeError} when `numChannels` is not a positive integer or
   *   `alignedCheckpointTimeoutMs` is not a finite number ≥ 0, naming the
   *   current value.
   */
  constructor(options: AlternatingBarrierHandlerOptions) {
    const { numChannels, alignedCheckpointTimeoutMs } = options;
    if (!Number.isSafeInteger(numChannels) || numChannels < 1) {
      throw new RangeError(
        `Cannot create a barrier handler: 'numChannels' must be a positive integer: current value is ${numChannels}`,
      );
    }
    if (!(Number.isFinite(alignedCheckpointTimeoutMs) && alignedCheckpointTimeoutMs >= 0)) {
      throw new RangeError(
        `Cannot create a barrier handler: 'alignedCheckpointTimeoutMs' must be a finite number >= 0 (ms): current value is ${alignedCheckpointTimeoutMs}`,
      );
    }
    this.#ctx = new Context(numChannels, alignedCheckpointTimeoutMs);
  }

  /**
   * Barrier `checkpointId` arrived on `channel`.
   * @param nowMs current time, ms, on one monotonic clock.
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
    return this.#run((ctx) => this.#state.barrier(ctx, channel, checkpointId, nowMs, forceAligned));
  }

  /**
   * `channel` delivered its end-of-partition; it counts as having delivered every later barrier.
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
   * The coordinator aborted `checkpointId`: a collection of it stops
   * (`abort` with `decline: false`, `unblockAll` if aligning); later barriers of it are ignored.
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
    this.#checkId(checkpointId);
    return this.#run((ctx) => this.#state.announce(ctx, checkpointId, nowMs));
  }

  /**
   * The alignment timer fired (or the task polls it): an alignment that has
   * lasted `alignedCheckpointTimeoutMs` switches to unaligned.
   * @param nowMs current time, ms.
   * @returns the actions to execute, in order (none when nothing is due).
   */
  onAlignmentTimer(nowMs: number): BarrierAction[] {
    return this.#run((ctx) => this.#state.timer(ctx, nowMs));
  }

  /**
   * How long until the current alignment times out, in ms (≥ 0), or
   * `undefined` when nothing is aligning or it cannot switch (a savepoint).
   */
  alignmentTimerDelayMs(nowMs: number): number | undefined {
    const s = this.#state;
    if (!(s instanceof CollectingAligned) || s.forceAligned) return undefined;
    return Math.max(0, s.startedAt + this.#ctx.timeoutMs - nowMs);
  }

  /** Name of the current state. */
  get state(): AlternatingHandlerStateName {
    return this.#state.name;
  }

  /** `true` while some channels are blocked for an alignment. */
  get isAligning(): boolean {
    return this.#state instanceof CollectingAligned;
  }

  /** The checkpoint being collected (aligned or unaligned), or `undefined`. */
  get pendingCheckpointId(): CheckpointId | undefined {
    const s = this.#state;
    return s instanceof CollectingAligned || s instanceof CollectingUnaligned
      ? s.checkpointId
      : undefined;
  }

  /** Channels currently blocked, ascending. */
  get blockedChannels(): readonly number[] {
    return [...this.#ctx.blocked].sort((a, b) => a - b);
  }

  /** How long the current alignment has lasted, in ms (0 when not aligning). */
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
