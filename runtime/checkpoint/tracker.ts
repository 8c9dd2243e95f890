/**
 * `CheckpointTracker`: the checkpoint coordinator's pure bookkeeping of
 * trigger decisions, acknowledgements, expiry, retention and stats (the
 * protocol round is described in `pending.ts`). Performs no I/O and reads no
 * clock: every time is passed in as `nowMs`.
 *
 * @module
 */

import { CheckpointFailureReason } from "./types.ts";
import type { CheckpointId, SubtaskAck } from "./types.ts";
import {
  type CheckpointPlan,
  type CompletedCheckpointStats,
  type FailedCheckpointStats,
  PendingCheckpoint,
  type TaskAcknowledgeResult,
} from "./pending.ts";

/**
 * Options of {@linkcode CheckpointTracker}; defaults are Flink's
 * (`execution.checkpointing.*`).
 */
export interface CheckpointTrackerOptions {
  /**
   * Period of periodic checkpoints, in ms. `0` or `Infinity` disables
   * periodic checkpoints (savepoints can still be forced).
   */
  readonly intervalMs: number;
  /** A checkpoint not completed this long after its trigger expires, in ms. Default 600 000. */
  readonly timeoutMs?: number;
  /**
   * Minimum time between the completion of one checkpoint and the trigger of
   * the next periodic one, in ms. Default 0. When > 0, at most one periodic
   * checkpoint is in progress at a time.
   */
  readonly minPauseBetweenCheckpointsMs?: number;
  /** Maximum periodic checkpoints in progress at once. Default 1. */
  readonly maxConcurrentCheckpoints?: number;
  /** How many completed checkpoints (not savepoints) to keep. Default 1. */
  readonly retainedCheckpoints?: number;
}

/** Answer of {@linkcode CheckpointTracker.decideTrigger}. */
export type TriggerDecision =
  /** Trigger now, with this id (then call `startCheckpoint`). */
  | { readonly kind: "trigger"; readonly checkpointId: CheckpointId }
  /** Ask again at `untilMs` (epoch ms); `reason` says which rule delays it. */
  | { readonly kind: "wait"; readonly untilMs: number; readonly reason: "interval" | "min-pause" }
  /**
   * Do not trigger. `DISABLED`: ask again after `startScheduler`.
   * `TOO_MANY_PENDING`: ask again when a pending checkpoint ends.
   */
  | { readonly kind: "skip"; readonly reason: CheckpointFailureReason };

/** Answer of {@linkcode CheckpointTracker.acknowledge}. */
export interface AcknowledgeOutcome {
  /** What the ack did. */
  readonly result: TaskAcknowledgeResult;
  /** Set when this ack completed the set: write its metadata, then call `completed`. */
  readonly completed?: PendingCheckpoint;
}

/** Answer of {@linkcode CheckpointTracker.completed}. */
export interface CompletionOutcome {
  /** Completed checkpoints that fell out of retention: delete them from storage. */
  readonly discard: CheckpointId[];
  /** Older pending checkpoints aborted as `SUBSUMED`: notify their abort and delete their state. */
  readonly subsumed: PendingCheckpoint[];
  /** Stats of the checkpoint that completed. */
  readonly stats: CompletedCheckpointStats;
}

/** Counters for the dashboard (Flink's `CheckpointStatsCounts`). */
export interface CheckpointCounts {
  /** Checkpoints and savepoints started. */
  readonly triggered: number;
  /** Completed. */
  readonly completed: number;
  /** Aborted for any reason (declined, expired, subsumed, failover). */
  readonly failed: number;
  /** Pending now. */
  readonly inProgress: number;
}

const RECENT_OUTCOMES = 256;

/**
 * The checkpoint coordinator's pure bookkeeping: trigger decisions,
 * acknowledgements, expiry, retention and stats. See the module docs for the
 * protocol; every method is synchronous and does no I/O.
 *
 * @example
 * ```ts
 * import { CheckpointTracker } from "./tracker.ts";
 * const t = new CheckpointTracker({ intervalMs: 1000 });
 * t.startScheduler(0);
 * console.assert(t.decideTrigger(500).kind === "wait");
 * const d = t.decideTrigger(1000);
 * console.assert(d.kind === "trigger" && d.checkpointId === 1);
 * ```
 */
export class CheckpointTracker {
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  readonly #minPauseMs: number;
  readonly #maxConcurrent: number;
  readonly #retainedCount: number;
  #counter = 0;
  readonly #pending = new Map<CheckpointId, PendingCheckpoint>();
  #schedulerRunning = false;
  #nextPeriodicDueMs = 0;
  #lastCompletedAt: number | undefined;
  #retained: CheckpointId[] = [];
  readonly #recent = new Map<CheckpointId, "completed" | "aborted">();
  #triggered = 0;
  #completed = 0;
  #failed = 0;
  #latestCompleted: CompletedCheckpointStats | undefined;
  #latestFailed: FailedCheckpointStats | undefined;

  /**
   * Creates a tracker with no checkpoint yet and the scheduler stopped.
   *
   * @param options interval, timeout, min pause, max concurrent and retention.
   * @throws {RangeError} naming the option and its current value when one is
   *   out of range (negative or NaN interval; non-positive timeout; negative
   *   min pause; max concurrent or retained not a positive integer).
   */
  constructor(options: CheckpointTrackerOptions) {
    const { intervalMs } = options;
    const timeoutMs = options.timeoutMs ?? 600_000;
    const minPause = options.minPauseBetweenCheckpointsMs ?? 0;
    const maxConcurrent = options.maxConcurrentCheckpoints ?? 1;
    const retained = options.retainedCheckpoints ?? 1;
    const fail = (name: string, rule: string, value: number): never => {
      throw new RangeError(
        `Cannot create a CheckpointTracker: '${name}' must be ${rule}: current value is ${value}`,
      );
    };
    if (!(intervalMs >= 0)) fail("intervalMs", "a non-negative number or Infinity", intervalMs);
    if (!(timeoutMs > 0)) fail("timeoutMs", "a positive number", timeoutMs);
    if (!(minPause >= 0) || minPause === Infinity) {
      fail("minPauseBetweenCheckpointsMs", "a non-negative finite number", minPause);
    }
    if (!Number.isSafeInteger(maxConcurrent) || maxConcurrent < 1) {
      fail("maxConcurrentCheckpoints", "a positive integer", maxConcurrent);
    }
    if (!Number.isSafeInteger(retained) || retained < 1) {
      fail("retainedCheckpoints", "a positive integer", retained);
    }
    this.#intervalMs = intervalMs;
    this.#timeoutMs = timeoutMs;
    this.#minPauseMs = minPause;
    this.#maxConcurrent = minPause > 0 ? 1 : maxConcurrent;
    this.#retainedCount = retained;
  }

  /** `true` when periodic checkpoints are configured (`intervalMs` finite and > 0). */
  get isEnabled(): boolean {
    return this.#intervalMs > 0 && Number.isFinite(this.#intervalMs);
  }

  /** `true` between {@linkcode CheckpointTracker.startScheduler} and `stopScheduler`. */
  get isSchedulerRunning(): boolean {
    return this.#schedulerRunning;
  }

  /** The last id handed out (0 before the first); the next checkpoint gets this + 1. */
  get lastCheckpointId(): CheckpointId {
    return this.#counter;
  }

  /**
   * Starts periodic triggering (Flink's `startCheckpointScheduler`): the
   * first periodic checkpoint is due `intervalMs` after `nowMs`. Call it when
   * all tasks of an attempt are running.
   *
   * @param nowMs current time, in epoch ms.
   */
  startScheduler(nowMs: number): void {
    this.#schedulerRunning = true;
    this.#nextPeriodicDueMs = nowMs + this.#intervalMs;
  }

  /** Stops periodic triggering (on failover, cancel, finish). Pending checkpoints are untouched. */
  stopScheduler(): void {
    this.#schedulerRunning = false;
  }

  /**
   * Decides whether to trigger a checkpoint now (Flink's
   * `CheckpointRequestDecider`). Performs no state change: call
   * {@linkcode CheckpointTracker.startCheckpoint} with the id to act on it.
   *
   * Periodic rules, in order: skip when disabled or the scheduler is
   * stopped; skip when `maxConcurrentCheckpoints` are pending; wait until
   * the later of the next interval tick and the last completion +
   * `minPauseBetweenCheckpointsMs`.
   *
   * @param nowMs current time, in epoch ms.
   * @param options `force: true` (savepoints, manual checkpoints) bypasses
   *   every rule and always triggers.
   * @returns the decision.
   */
  decideTrigger(nowMs: number, options?: { readonly force?: boolean }): TriggerDecision {
    const checkpointId = this.#counter + 1;
    if (options?.force) return { kind: "trigger", checkpointId };
    if (!this.isEnabled || !this.#schedulerRunning) {
      return { kind: "skip", reason: CheckpointFailureReason.DISABLED };
    }
    let periodicPending = 0;
    for (const p of this.#pending.values()) if (p.kind === "checkpoint") periodicPending++;
    if (periodicPending >= this.#maxConcurrent) {
      return { kind: "skip", reason: CheckpointFailureReason.TOO_MANY_PENDING };
    }
    const pauseUntil = this.#lastCompletedAt === undefined
      ? -Infinity
      : this.#lastCompletedAt + this.#minPauseMs;
    if (nowMs < this.#nextPeriodicDueMs || nowMs < pauseUntil) {
      return pauseUntil > this.#nextPeriodicDueMs
        ? { kind: "wait", untilMs: pauseUntil, reason: "min-pause" }
        : { kind: "wait", untilMs: this.#nextPeriodicDueMs, reason: "interval" };
    }
    return { kind: "trigger", checkpointId };
  }

  /**
   * Registers a triggered checkpoint. For a `"checkpoint"` the next periodic
   * one becomes due `intervalMs` after `nowMs`.
   *
   * @param checkpointId the id from a `trigger` decision (any id above the last one is accepted).
   * @param nowMs trigger time, in epoch ms.
   * @param plan the attempt, the tasks that must acknowledge, and the kind.
   * @returns the new pending checkpoint.
   * @throws {RangeError} when `checkpointId` is not above the last id handed
   *   out, or `plan.tasks` is empty.
   */
  startCheckpoint(
    checkpointId: CheckpointId,
    nowMs: number,
    plan: CheckpointPlan,
  ): PendingCheckpoint {
    if (!Number.isSafeInteger(checkpointId) || checkpointId <= this.#counter) {
      throw new RangeError(
        `Cannot start checkpoint ${checkpointId}: ids must be integers above the last one handed out (${this.#counter})`,
      );
    }
    const pending = new PendingCheckpoint({ ...plan, checkpointId, triggeredAt: nowMs });
    this.#counter = checkpointId;
    this.#pending.set(checkpointId, pending);
    this.#triggered++;
    if (pending.kind === "checkpoint") this.#nextPeriodicDueMs = nowMs + this.#intervalMs;
    return pending;
  }

  /**
   * Routes an acknowledgement to its pending checkpoint (Flink's
   * `receiveAcknowledgeMessage`).
   *
   * For a checkpoint no longer pending the result is `DUPLICATE` if it
   * completed (never delete that state: the checkpoint references it),
   * `DISCARDED` if it was aborted, `UNKNOWN` otherwise (also for outcomes too
   * old to remember).
   *
   * @param ack the subtask's report.
   * @returns the result, plus `completed` when this ack completed the set.
   */
  acknowledge(ack: SubtaskAck): AcknowledgeOutcome {
    const pending = this.#pending.get(ack.checkpointId);
    if (pending === undefined) {
      const outcome = this.#recent.get(ack.checkpointId);
      return {
        result: outcome === "completed"
          ? "DUPLICATE"
          : outcome === "aborted"
          ? "DISCARDED"
          : "UNKNOWN",
      };
    }
    const result = pending.acknowledge(ack);
    return result === "SUCCESS" && pending.isFullyAcknowledged
      ? { result, completed: pending }
      : { result };
  }

  /**
   * Aborts a pending checkpoint because a task declined it, or its metadata
   * could not be written (`FINALIZE_FAILED`), or its trigger failed.
   *
   * @param checkpointId the checkpoint.
   * @param reason default `DECLINED`.
   * @returns the aborted checkpoint, or `undefined` when it was not pending.
   */
  decline(
    checkpointId: CheckpointId,
    reason: CheckpointFailureReason = CheckpointFailureReason.DECLINED,
  ): PendingCheckpoint | undefined {
    const pending = this.#pending.get(checkpointId);
    if (pending === undefined) return undefined;
    this.#abort(pending, reason);
    return pending;
  }

  /**
   * Aborts, with `TIMEOUT`, every pending checkpoint triggered at least
   * `timeoutMs` before `nowMs`. Fully acknowledged checkpoints (being
   * finalized) do not expire.
   *
   * @param nowMs current time, in epoch ms.
   * @returns the expired checkpoints, oldest first.
   */
  expire(nowMs: number): PendingCheckpoint[] {
    const expired: PendingCheckpoint[] = [];
    for (const p of this.#pending.values()) {
      if (!p.isFullyAcknowledged && nowMs >= p.triggeredAt + this.#timeoutMs) expired.push(p);
    }
    for (const p of expired) this.#abort(p, CheckpointFailureReason.TIMEOUT);
    return expired;
  }

  /** Earliest time a pending checkpoint expires, in epoch ms, or `undefined` when none can. */
  get nextExpiryMs(): number | undefined {
    let next: number | undefined;
    for (const p of this.#pending.values()) {
      if (p.isFullyAcknowledged) continue;
      const at = p.triggeredAt + this.#timeoutMs;
      if (next === undefined || at < next) next = at;
    }
    return next;
  }

  /**
   * Aborts every pending checkpoint, e.g. on failover (Flink's
   * `abortPendingCheckpoints`). Does not stop the scheduler.
   *
   * @param reason default `JOB_FAILING`.
   * @returns the aborted checkpoints, oldest first.
   */
  abortAll(
    reason: CheckpointFailureReason = CheckpointFailureReason.JOB_FAILING,
  ): PendingCheckpoint[] {
    const all = [...this.#pending.values()];
    for (const p of all) this.#abort(p, reason);
    return all;
  }

  /**
   * Records that a fully acknowledged checkpoint's metadata is durably
   * written. Older pending periodic checkpoints are aborted as `SUBSUMED`
   * (Flink's `dropSubsumedCheckpoints`); for a `"checkpoint"`, the completed
   * ones beyond `retainedCheckpoints` are returned for deletion, oldest
   * first.
   *
   * @param checkpointId the checkpoint whose metadata was written.
   * @param location where it was written (shown in stats).
   * @param nowMs completion time, in epoch ms; starts the min pause.
   * @returns what to discard and which pending checkpoints were subsumed.
   * @throws {Error} when the checkpoint is not pending or not fully acknowledged.
   */
  completed(checkpointId: CheckpointId, location: string, nowMs: number): CompletionOutcome {
    const pending = this.#pending.get(checkpointId);
    if (pending === undefined || !pending.isFullyAcknowledged) {
      throw new Error(
        `Cannot complete checkpoint ${checkpointId}: ` +
          (pending === undefined ? "it is not pending" : "it is not fully acknowledged"),
      );
    }
    this.#pending.delete(checkpointId);
    this.#remember(checkpointId, "completed");
    this.#completed++;
    this.#lastCompletedAt = nowMs;
    const stats: CompletedCheckpointStats = {
      ...pending.stats(),
      completedAt: nowMs,
      durationMs: nowMs - pending.triggeredAt,
      location,
    };
    this.#latestCompleted = stats;
    const subsumed: PendingCheckpoint[] = [];
    for (const p of this.#pending.values()) {
      if (p.checkpointId < checkpointId && p.kind === "checkpoint") subsumed.push(p);
    }
    for (const p of subsumed) this.#abort(p, CheckpointFailureReason.SUBSUMED);
    const discard: CheckpointId[] = [];
    if (pending.kind === "checkpoint") {
      this.#retained.push(checkpointId);
      this.#retained.sort((a, b) => a - b);
      const excess = this.#retained.length - this.#retainedCount;
      if (excess > 0) discard.push(...this.#retained.splice(0, excess));
    }
    return { discard, subsumed, stats };
  }

  /**
   * Continues the id counter after a restore, so ids keep increasing across
   * attempts and coordinator restarts (Flink's `CheckpointIDCounter`). Never
   * moves the counter backwards.
   *
   * @param latestCompletedId the highest checkpoint id known to storage (or
   *   persisted by the coordinator); 0 for none.
   * @param retainedIds completed checkpoints (not savepoints) already in
   *   storage, so retention can discard them later. Default
   *   `[latestCompletedId]` when it is > 0.
   * @throws {RangeError} when `latestCompletedId` is not a non-negative integer.
   */
  restoreCounter(latestCompletedId: CheckpointId, retainedIds?: readonly CheckpointId[]): void {
    if (!Number.isSafeInteger(latestCompletedId) || latestCompletedId < 0) {
      throw new RangeError(
        `Cannot restore the checkpoint counter: 'latestCompletedId' must be a non-negative integer: current value is ${latestCompletedId}`,
      );
    }
    const ids = retainedIds ?? (latestCompletedId > 0 ? [latestCompletedId] : []);
    this.#counter = Math.max(this.#counter, latestCompletedId, ...ids);
    this.#retained = [...new Set([...this.#retained, ...ids])].sort((a, b) => a - b);
  }

  /**
   * Drops the oldest retained checkpoints beyond `retainedCheckpoints`
   * (Flink's `CheckpointSubsumeHelper.subsume`), for a coordinator that
   * recovered more completed checkpoints from storage than it retains (a
   * new leader taking a job over): the newest `retainedCheckpoints` stay.
   *
   * @returns the dropped ids, oldest first, for deletion; empty when none is in excess.
   */
  subsumeExcessRetained(): CheckpointId[] {
    const excess = this.#retained.length - this.#retainedCount;
    return excess > 0 ? this.#retained.splice(0, excess) : [];
  }

  /** Ids of the completed checkpoints retained, ascending. */
  get retainedCheckpointIds(): readonly CheckpointId[] {
    return [...this.#retained];
  }

  /** The pending checkpoints, oldest first. */
  pendingCheckpoints(): PendingCheckpoint[] {
    return [...this.#pending.values()];
  }

  /** Triggered, completed, failed and in-progress counts. */
  get counts(): CheckpointCounts {
    return {
      triggered: this.#triggered,
      completed: this.#completed,
      failed: this.#failed,
      inProgress: this.#pending.size,
    };
  }

  /** Stats of the latest completed checkpoint or savepoint. */
  get latestCompleted(): CompletedCheckpointStats | undefined {
    return this.#latestCompleted;
  }

  /** Stats of the latest failed checkpoint or savepoint. */
  get latestFailed(): FailedCheckpointStats | undefined {
    return this.#latestFailed;
  }

  /**
   * One line for logs and the dashboard, e.g.
   * `checkpoints: 3 triggered, 2 completed, 0 failed, 1 in progress; latest #2 in 340 ms, 1.2 KiB (sync 5 ms, async 200 ms, alignment 12 ms)`.
   */
  summary(): string {
    const c = this.counts;
    let line =
      `checkpoints: ${c.triggered} triggered, ${c.completed} completed, ${c.failed} failed, ${c.inProgress} in progress`;
    const l = this.#latestCompleted;
    if (l !== undefined) {
      line +=
        `; latest ${l.kind === "savepoint" ? "savepoint " : ""}#${l.checkpointId} in ${
          Math.round(l.durationMs)
        } ms, ` +
        `${formatBytes(l.totalBytes)} (sync ${Math.round(l.maxSyncDurationMs)} ms, async ${
          Math.round(l.maxAsyncDurationMs)
        } ms, ` +
        `alignment ${Math.round(l.maxAlignmentDurationMs)} ms)`;
    }
    const f = this.#latestFailed;
    if (f !== undefined) line += `; last failure #${f.checkpointId}: ${f.reason.code}`;
    return line;
  }

  #abort(pending: PendingCheckpoint, reason: CheckpointFailureReason): void {
    pending.abort(reason);
    this.#pending.delete(pending.checkpointId);
    this.#remember(pending.checkpointId, "aborted");
    this.#failed++;
    this.#latestFailed = { ...pending.stats(), reason };
  }

  #remember(checkpointId: CheckpointId, outcome: "completed" | "aborted"): void {
    this.#recent.set(checkpointId, outcome);
    if (this.#recent.size > RECENT_OUTCOMES) {
      const oldest = this.#recent.keys().next();
      if (!oldest.done) this.#recent.delete(oldest.value);
    }
  }
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
