/**
 * The checkpoint side of a job coordinator (Flink's `CheckpointCoordinator`):
 * triggers checkpoints and savepoints at the sources, counts acknowledgements
 * and declines, expires checkpoints past their timeout, writes the metadata
 * of a fully acknowledged checkpoint (the commit point), notifies completion
 * and abort to every subtask, and tells `CheckpointRetention` what to keep
 * and delete. `JobCoordinator` owns one per job, across attempts.
 *
 * The decisions are pure code (`CheckpointTracker`,
 * `CheckpointFailureManager`, the savepoint decisions in `savepoints.ts`);
 * this class executes them and does the I/O (timers, metadata writes,
 * messages through its `CheckpointCoordinatorHost`). Savepoint requests,
 * their refusal, storage and the discards after a completion are run by
 * `CheckpointCoordinatorSavepoints` (`checkpoint_coordinator_savepoints.ts`).
 *
 * ## Invariants
 *
 * - One timer at a time: the next periodic trigger or the next expiry,
 *   whichever comes first; none unless the job is `running`.
 * - Fully acknowledged checkpoints are finalized one at a time, in the
 *   order they completed: a later checkpoint never completes (and subsumes
 *   an earlier one) while the earlier one's metadata is being written.
 * - `latestWritten` is set as soon as a metadata write resolves, even if a
 *   failover started meanwhile: from then on sinks may commit that
 *   checkpoint's transactions, so it is the one a failover restores.
 * - A failed checkpoint (expired, declined, metadata not written) counts
 *   against `tolerableCheckpointFailures` only while its own attempt is
 *   running; more consecutive failures than tolerated fail the attempt
 *   with a `CheckpointFailureThresholdError`.
 * - When every source ended, a final checkpoint is triggered (a savepoint
 *   when stopping with one); once it completes every subtask is told to
 *   finish (FLIP-147). An aborted final checkpoint is triggered again.
 *
 * @module
 */

import type { CompletedCheckpointStats, PendingCheckpoint } from "../checkpoint/pending.ts";
import { type CheckpointCounts, CheckpointTracker } from "../checkpoint/tracker.ts";
import { CheckpointFailureManager } from "../checkpoint/failure_manager.ts";
import {
  type CheckpointFailureCode,
  CheckpointFailureReason,
  type CheckpointId,
  type SubtaskAck,
} from "../checkpoint/types.ts";
import type { RestorePoint } from "../task/messages.ts";
import { logger } from "../log.ts";
import { CheckpointRetention, retainedAtStart } from "./checkpoint_retention.ts";
import type {
  CheckpointCoordinatorHost,
  CheckpointCoordinatorOptions,
} from "./checkpoint_coordinator_host.ts";
import { CheckpointFailureThresholdError } from "./job_result.ts";
import { describeError as describe } from "./restore_decision.ts";
import { SavepointError, type StopWithSavepointOptions } from "./savepoints.ts";
import { CheckpointCoordinatorSavepoints } from "./checkpoint_coordinator_savepoints.ts";

const log = logger("coordinator");

export type {
  CheckpointCoordinatorHost,
  CheckpointCoordinatorOptions,
} from "./checkpoint_coordinator_host.ts";

/** Triggers, tracks and finalizes the checkpoints and savepoints of one job. */
export class CheckpointCoordinator {
  readonly #o: CheckpointCoordinatorOptions;
  readonly #host: CheckpointCoordinatorHost;
  readonly #tracker: CheckpointTracker;
  readonly #failures: CheckpointFailureManager;
  readonly #finalizing = new Set<Promise<void>>();
  /** Deletes what retention and aborts release, shared blobs by reference count (set by `start`). */
  #retention!: CheckpointRetention;
  /** Fully acknowledged checkpoints are finalized one at a time, in the order they completed. */
  #finalizeQueue: Promise<void> = Promise.resolve();
  /** Savepoint and stop-with-savepoint requests, and their I/O (`checkpoint_coordinator_savepoints.ts`). */
  readonly #savepoints: CheckpointCoordinatorSavepoints;
  /**
   * The latest checkpoint whose `_metadata` this coordinator wrote, in any
   * attempt: the one a failover restores. Set as soon as the write resolves.
   */
  #latestWritten: CheckpointId | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The keys (`vertexId#subtask`) of `tasks`. */
  readonly #taskKeys: readonly string[];

  /** Builds the tracker and failure manager from `options.checkpointing`; no I/O. */
  constructor(options: CheckpointCoordinatorOptions) {
    this.#o = options;
    this.#host = options.host;
    this.#taskKeys = options.tasks.map((t) => `${t.vertexId}#${t.subtask}`);
    this.#savepoints = new CheckpointCoordinatorSavepoints(options);
    const cp = options.checkpointing;
    this.#tracker = new CheckpointTracker({
      intervalMs: cp.intervalMs,
      timeoutMs: cp.timeoutMs,
      minPauseBetweenCheckpointsMs: cp.minPauseBetweenCheckpointsMs,
      maxConcurrentCheckpoints: cp.maxConcurrentCheckpoints,
      retainedCheckpoints: cp.retainedCheckpoints,
    });
    this.#failures = new CheckpointFailureManager({
      tolerableFailures: cp.tolerableCheckpointFailures ?? 0,
    });
  }

  /**
   * Prepares for the job's first attempt: retention (keeping the restored
   * checkpoint when it is this job's own, and the older ones a new leader
   * recovered: see `recoveredCheckpoints`) and the checkpoint id counter,
   * which continues after the restored checkpoint.
   */
  start(): void {
    const o = this.#o;
    const retained = retainedAtStart(o.jobId, o.restoreFrom, o.recoveredCheckpoints);
    this.#retention = new CheckpointRetention({ jobId: o.jobId, storage: o.storage, retained });
    if (o.restoreFrom !== null) {
      // Ids continue after the restored checkpoint, also when resuming another
      // job's (Flink resets its CheckpointIDCounter to the savepoint's id + 1):
      // sinks order their transactions by checkpoint id (the MariaDB XA sink's
      // lingering-xid rollback). Another job's checkpoints are not retained here.
      this.#tracker.restoreCounter(o.restoreFrom.checkpointId, retained);
      // A new leader may recover more than it retains (the old one died
      // between a completion and its discards): the oldest go now, after the
      // registry counted their shared blobs, so none of those the retained
      // ones use is deleted and none of theirs is left behind.
      const subsumed = this.#tracker.subsumeExcessRetained();
      if (subsumed.length > 0) {
        log.info(
          `job ${o.jobId}: discarding checkpoint(s) ${subsumed.join(", ")} recovered from ` +
            `storage beyond the ${o.checkpointing.retainedCheckpoints ?? 1} retained`,
        );
        this.#retention.discard(subsumed);
      }
      o.stats?.reportRestored({
        checkpointId: o.restoreFrom.checkpointId,
        jobId: o.restoreFrom.jobId,
        kind: o.restoreSettings?.kind ?? "checkpoint",
        restoredAt: Date.now(),
      });
    }
  }

  /** The latest checkpoint whose metadata this coordinator wrote, in any attempt. */
  get latestWritten(): CheckpointId | undefined {
    return this.#latestWritten;
  }

  /** A stop-with-savepoint is in progress: the sources were told to stop. */
  get stopping(): boolean {
    return this.#savepoints.stopping;
  }

  /** Completed/failed/in-progress checkpoint counts (the tracker's). */
  get counts(): CheckpointCounts {
    return this.#tracker.counts;
  }

  /** Statistics of the latest completed checkpoint, if any. */
  get latestCompleted(): CompletedCheckpointStats | undefined {
    return this.#tracker.latestCompleted;
  }

  /** One line summarizing the job's checkpoints (the tracker's). */
  summary(): string {
    return this.#tracker.summary();
  }

  /**
   * Triggers a savepoint now (Flink's `CheckpointCoordinator.triggerSavepoint`).
   * @param directory the savepoint directory; `undefined`: the default one.
   * @returns the savepoint's path, once stored.
   * @throws {SavepointError} (rejects) as `JobCoordinator.triggerSavepoint`.
   */
  triggerSavepoint(directory?: string): Promise<string> {
    const refused = this.#savepoints.refuse(directory);
    if (refused !== undefined) return Promise.reject(refused);
    const id = this.#trigger(true, "savepoint");
    if (id === undefined) {
      return Promise.reject(
        new SavepointError(`job ${this.#o.jobId}: the savepoint was not triggered`),
      );
    }
    log.info(`job ${this.#o.jobId}: triggered savepoint ${id}`, {
      name: "savepoint-triggered",
      jobId: this.#o.jobId,
      checkpointId: id,
    });
    this.#schedule();
    return this.#savepoints.requests.add(id, directory);
  }

  /**
   * Stops the sources for a final savepoint (FLIP-34).
   * @returns the savepoint's path, once stored.
   * @throws {SavepointError} (rejects) as `JobCoordinator.stopWithSavepoint`.
   */
  stopWithSavepoint(options: StopWithSavepointOptions = {}): Promise<string> {
    return this.#savepoints.stopWithSavepoint(options);
  }

  /** The current attempt started running: periodic checkpoints begin. */
  attemptRunning(): void {
    this.#tracker.startScheduler(Date.now());
    this.#schedule();
  }

  /**
   * A subtask acknowledged a checkpoint. Once all did, its metadata is
   * written (after those of checkpoints completed before it), then it is
   * notified complete.
   * @throws (rejects) what finalizing throws: the `faults` hook's error.
   */
  async acknowledged(ack: SubtaskAck): Promise<void> {
    const outcome = this.#tracker.acknowledge(ack);
    if (outcome.result === "SUCCESS") {
      this.#retention.acknowledged(ack);
      this.#o.stats?.reportAck(ack, Date.now());
    } else {
      log.debug(
        `job ${this.#o.jobId}: ack of checkpoint ${ack.checkpointId} from ${ack.vertexId}#${ack.subtask}: ${outcome.result}`,
      );
    }
    if (outcome.completed) {
      // In order: a later checkpoint must not complete (and subsume this
      // one) while this one's metadata is still being written.
      const pending = outcome.completed;
      const finalized = this.#finalizeQueue.then(() => this.#finalize(pending));
      this.#finalizeQueue = finalized.catch(() => {});
      await finalized;
    }
  }

  /**
   * Subtask `vertex#subtask` declined checkpoint `id`: it is aborted (a
   * decline of a checkpoint no longer pending is logged at debug only).
   * @param code the failure reason's code (unknown codes: `DECLINED`).
   */
  declined(
    decline: {
      readonly id: number;
      readonly vertex: string;
      readonly subtask: number;
      readonly code: CheckpointFailureCode;
      readonly reason: string;
    },
  ): void {
    const { id, vertex, subtask, reason } = decline;
    const aborted = this.#tracker.decline(
      id,
      CheckpointFailureReason[decline.code] ?? CheckpointFailureReason.DECLINED,
    );
    if (aborted === undefined) {
      // Already aborted, subsumed or expired (its folder may be gone under
      // the subtask's write, which then fails): the decline changes nothing
      // (Flink logs a decline for a checkpoint no longer pending, no warning).
      log.debug(
        `job ${this.#o.jobId}: checkpoint ${id}, no longer pending, declined by ${vertex}#${subtask}: ${reason}`,
      );
      return;
    }
    log.warn(`job ${this.#o.jobId}: checkpoint ${id} declined by ${vertex}#${subtask}: ${reason}`);
    this.#aborted(aborted, `by ${vertex}#${subtask}: ${reason}`);
  }

  /** Every source of the current attempt ended: triggers the final checkpoint. */
  sourcesEnded(): void {
    this.#triggerFinal();
  }

  /**
   * The current attempt fails: stops the timer and the scheduler, fails
   * pending savepoint requests with `failure`, and aborts every pending
   * checkpoint (not counted as failed checkpoints).
   * @returns the ids of the aborted checkpoints, for `releaseAborted`.
   */
  failingOver(failure: string): CheckpointId[] {
    clearTimeout(this.#timer);
    this.#savepoints.requests.failAll(failure);
    const abortedIds = this.#tracker.abortAll(CheckpointFailureReason.JOB_FAILING)
      .map((p) => p.checkpointId);
    for (const id of abortedIds) this.#o.stats?.reportFailed(id, Date.now(), failure);
    this.#tracker.stopScheduler();
    return abortedIds;
  }

  /**
   * A region of the current attempt fails (a region failover): as
   * {@linkcode failingOver} (timer and scheduler stop, pending savepoint
   * requests fail with `failure`, every pending checkpoint is aborted and
   * not counted as failed), and every subtask is notified of each abort, so
   * the subtasks outside the region, which keep running, end their
   * alignments and keep their pre-committed transactions for the next
   * completed checkpoint. The aborted checkpoints' folders go once
   * `cancelled` resolves (the region's subtasks ended) and metadata writes
   * settled; their shared blobs stay until a later checkpoint completes,
   * since the running subtasks may reuse them (see `shared_state_registry.ts`).
   */
  regionFailingOver(failure: string, cancelled: Promise<void>): void {
    const abortedIds = this.failingOver(failure);
    for (const id of abortedIds) {
      this.#host.toAllTasks({
        t: "abort",
        id,
        reason: CheckpointFailureReason.JOB_FAILING.message,
      });
    }
    void Promise.all([cancelled, ...this.#finalizing]).then(() => {
      for (const id of abortedIds) this.#retention.aborted(id);
    });
  }

  /**
   * Once `cancelled` resolves (no subtask of the failed attempt runs) and
   * every metadata write settled, the checkpoints it aborted release their
   * shared blobs: those up to the last id triggered so far (call it right
   * after {@linkcode failingOver}, before the next attempt triggers any),
   * never those of the next attempt, which may be running by then.
   */
  releaseAborted(abortedIds: CheckpointId[], cancelled: Promise<void>): void {
    const upTo = Math.max(this.#tracker.lastCheckpointId, ...abortedIds);
    void Promise.all([cancelled, ...this.#finalizing])
      .then(() => this.#retention.failedOver(abortedIds, upTo));
  }

  /** Resolves once every metadata write in flight settled; never rejects. */
  async writesSettled(): Promise<void> {
    await Promise.all([...this.#finalizing]);
  }

  /**
   * The next attempt restores `point`: checkpoint ids continue after it when
   * it is this job's own and later than any id triggered so far.
   */
  restoring(point: RestorePoint | null): void {
    if (
      point !== null && point.jobId === this.#o.jobId &&
      point.checkpointId > this.#tracker.lastCheckpointId
    ) {
      this.#tracker.restoreCounter(point.checkpointId);
    }
    if (point !== null) {
      this.#o.stats?.reportRestored({
        checkpointId: point.checkpointId,
        jobId: point.jobId,
        kind: point.jobId === this.#o.jobId ? "checkpoint" : this.#o.restoreSettings?.kind ??
          "checkpoint",
        restoredAt: Date.now(),
      });
    }
  }

  /** The job finished: aborted checkpoints' shared blobs go; resolves once retention settled. */
  async jobFinished(): Promise<void> {
    // Nothing is in flight any more: aborted checkpoints' shared blobs go.
    this.#retention.ended();
    await this.#retention.settled();
  }

  /** The job ended (any outcome): stops the timer and fails pending savepoint requests. */
  stop(): void {
    this.#savepoints.requests.failAll(`job ${this.#o.jobId} ended`);
    clearTimeout(this.#timer);
  }

  #trigger(force: boolean, kind: "checkpoint" | "savepoint"): number | undefined {
    const now = Date.now();
    const decision = this.#tracker.decideTrigger(now, { force });
    if (decision.kind !== "trigger") return undefined;
    this.#tracker.startCheckpoint(decision.checkpointId, now, {
      attempt: this.#host.attempt().number,
      tasks: this.#o.tasks,
      // After a region failover, subtasks outside the region ack under their own attempt.
      taskAttempts: this.#host.attempt().taskAttempts(this.#taskKeys),
      kind,
    });
    this.#retention.triggered(decision.checkpointId);
    this.#o.stats?.reportPending({
      checkpointId: decision.checkpointId,
      kind,
      triggeredAt: now,
      numSubtasks: this.#o.tasks.length,
    });
    log.debug(`job ${this.#o.jobId}: triggering ${kind} ${decision.checkpointId}`);
    for (const s of this.#o.sources) {
      this.#host.toTask(s, { t: "trigger", id: decision.checkpointId, ts: now, type: kind });
    }
    return decision.checkpointId;
  }

  #triggerFinal(): void {
    this.#tracker.stopScheduler();
    const current = this.#host.attempt();
    // A stop-with-savepoint's final checkpoint is its savepoint.
    const stopping = this.#savepoints.stopping;
    current.finalCheckpointId = this.#trigger(true, stopping ? "savepoint" : "checkpoint");
    if (stopping && current.finalCheckpointId !== undefined) {
      this.#savepoints.requests.assignStop(current.finalCheckpointId);
    }
    log.info(
      `job ${this.#o.jobId}: all sources ended; final checkpoint ${current.finalCheckpointId}`,
    );
    this.#schedule();
  }

  /**
   * Notifies the tasks of an aborted checkpoint and deletes its state; then
   * fails the attempt when the failure manager says so, or else re-triggers
   * an aborted final checkpoint.
   *
   * @param detail what exactly went wrong, for the failure message.
   */
  #aborted(pending: PendingCheckpoint, detail?: string): void {
    const o = this.#o;
    const reason = pending.failureReason ?? CheckpointFailureReason.ABORTED_BY_COORDINATOR;
    this.#host.toAllTasks({ t: "abort", id: pending.checkpointId, reason: reason.message });
    this.#o.stats?.reportFailed(
      pending.checkpointId,
      Date.now(),
      `${reason.code}: ${detail ?? reason.message}`,
    );
    this.#savepoints.requests.failed(
      pending.checkpointId,
      `${reason.code}: ${detail ?? reason.message}`,
    );
    this.#retention.aborted(pending.checkpointId);
    if (this.#host.phase() === "running" && pending.attempt === this.#host.attempt().number) {
      const verdict = this.#failures.onFailure({
        checkpointId: pending.checkpointId,
        reason,
        kind: pending.kind,
        ...(detail === undefined ? {} : { detail }),
      });
      if (verdict.verdict === "EXCEEDED") {
        this.#host.failover(
          new CheckpointFailureThresholdError(verdict.message, {
            jobId: o.jobId,
            checkpointId: pending.checkpointId,
            reason: reason.code,
          }),
        );
        return;
      }
      if (verdict.verdict === "TOLERATED") {
        log.warn(
          `job ${o.jobId}: checkpoint ${pending.checkpointId} failed (${reason.code}); ` +
            `${verdict.consecutive} consecutive failed checkpoints of ` +
            `${this.#failures.tolerableFailures} tolerated`,
        );
      }
    }
    if (
      this.#host.attempt().finalCheckpointId === pending.checkpointId &&
      this.#host.phase() === "running"
    ) {
      this.#triggerFinal();
    }
    this.#schedule();
  }

  /** Whether attempt `attempt` is still the current one and running. */
  #stillRunning(attempt: number): boolean {
    return attempt === this.#host.attempt().number && this.#host.phase() === "running";
  }

  /** Writes the metadata of a fully acknowledged checkpoint, then notifies. */
  async #finalize(pending: PendingCheckpoint): Promise<void> {
    const o = this.#o;
    const attempt = this.#host.attempt().number;
    if (pending.isDiscarded) return; // aborted (failover) while queued behind another
    const meta = pending.toMetadata({
      jobId: o.jobId,
      jobName: o.jobName,
      completedAt: Date.now(),
      vertices: o.vertexInfos,
    });
    let location: string;
    const write = o.storage.writeMetadata(meta);
    const tracked = write.then(() => {}, () => {});
    this.#finalizing.add(tracked);
    try {
      location = await write;
      // Written: the commit point. Even if a failover started meanwhile, this
      // is now the checkpoint to restore (sinks may commit its transactions).
      this.#latestWritten = Math.max(this.#latestWritten ?? 0, pending.checkpointId);
      this.#retention.written(pending.checkpointId);
      this.#failures.onSuccess(pending.checkpointId);
    } catch (error) {
      log.error(
        `job ${o.jobId}: cannot write metadata of checkpoint ${pending.checkpointId}: ${error}`,
      );
      const aborted = this.#tracker.decline(
        pending.checkpointId,
        CheckpointFailureReason.FINALIZE_FAILED,
      );
      if (aborted) this.#aborted(aborted, describe(error));
      return;
    } finally {
      this.#finalizing.delete(tracked);
    }
    if (!this.#stillRunning(attempt)) return;
    let externalPath = location;
    if (this.#savepoints.requests.isSavepoint(pending.checkpointId)) {
      // Stored in its own location before anyone is told it completed.
      externalPath = await this.#savepoints.store(pending.checkpointId) ?? location;
      if (!this.#stillRunning(attempt)) return;
    }
    o.faults?.("before-notify-complete", pending.checkpointId, attempt);
    const outcome = this.#tracker.completed(pending.checkpointId, location, Date.now());
    const stats = this.#tracker.latestCompleted;
    // A savepoint's statistics name its own location (Flink's external path), not the job's copy.
    o.stats?.reportCompleted(pending.checkpointId, stats?.completedAt ?? Date.now(), externalPath);
    log.info(`job ${o.jobId}: ${this.#tracker.summary()}`, {
      name: "checkpoint-completed",
      jobId: o.jobId,
      checkpointId: pending.checkpointId,
      durationMs: Math.round(stats?.durationMs ?? NaN),
      bytes: stats?.totalBytes ?? null,
      syncMs: Math.round(stats?.maxSyncDurationMs ?? NaN),
      asyncMs: Math.round(stats?.maxAsyncDurationMs ?? NaN),
      alignmentMs: Math.round(stats?.maxAlignmentDurationMs ?? NaN),
    });
    this.#retention.discard(outcome.discard);
    for (const s of outcome.subsumed) this.#aborted(s);
    this.#savepoints.afterCompleted(pending.checkpointId, pending.kind);
    this.#host.toAllTasks({ t: "complete", id: pending.checkpointId });
    const finalId = this.#host.attempt().finalCheckpointId;
    if (finalId !== undefined && pending.checkpointId >= finalId) {
      this.#host.toAllTasks({ t: "finish" });
    }
    this.#schedule();
  }

  /** Sets the one timer for the next trigger or expiry. */
  #schedule(): void {
    clearTimeout(this.#timer);
    if (this.#host.phase() !== "running") return;
    const now = Date.now();
    let next = this.#tracker.nextExpiryMs;
    if (this.#host.attempt().finalCheckpointId === undefined) {
      const decision = this.#tracker.decideTrigger(now);
      if (decision.kind === "trigger") {
        this.#trigger(false, "checkpoint");
        return this.#schedule();
      }
      if (decision.kind === "wait") {
        next = next === undefined ? decision.untilMs : Math.min(next, decision.untilMs);
      }
    }
    if (next === undefined) return;
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, next - now));
  }

  #tick(): void {
    if (this.#host.phase() !== "running") return;
    for (const p of this.#tracker.expire(Date.now())) {
      log.warn(`job ${this.#o.jobId}: checkpoint ${p.checkpointId} expired before completing`);
      this.#aborted(p);
    }
    this.#schedule();
  }
}
