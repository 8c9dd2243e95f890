/**
 * The job coordinator (Flink's JobManager role for one job): deploys every
 * subtask of the JobGraph, starts them once all are ready, triggers
 * checkpoints and tracks the pending ones, writes completed-checkpoint
 * metadata (the commit point), notifies completion and abort, detects
 * failures and applies the restart strategy.
 *
 * The decisions live in pure code (`CheckpointTracker`, the restart
 * backoff, `decideRestore` in `restore_decision.ts`); this actor executes
 * them and does the I/O.
 *
 * ## Structure
 *
 * This file holds the job's lifecycle (phases, attempts, message dispatch,
 * the job result). The concepts it drives live in
 * their own files:
 *
 * - `checkpoint_coordinator.ts` (its host and options in
 *   `checkpoint_coordinator_host.ts`): triggering, acks, declines, expiry,
 *   metadata writes, completion/abort notifications, savepoints, retention
 *   calls (Flink's `CheckpointCoordinator`);
 * - `attempt_deployment.ts`: placing an attempt's subtasks on workers and
 *   its readiness deadline, waiting for slots;
 * - `attempt_cancellation.ts`: cancelling a failed attempt and waiting for
 *   its subtasks to end;
 * - `job_failover.ts`: full and region failovers, restarts and the last
 *   failure; `failover_restart.ts`: restart strategy, restart delay and the
 *   restore decision; `region_failover.ts` and `failover_regions.ts`: which
 *   subtasks a failure restarts, and a region failover's sequence;
 * - `job_metrics.ts`: vertex metrics summed from subtask metrics;
 * - `runtime/metrics/`: live metrics (`MetricStore`) and checkpoint
 *   statistics (`CheckpointStatsTracker`), which the REST API reads.
 *
 * Failed checkpoints (`tolerableCheckpointFailures`) and the final
 * checkpoint at end of input (FLIP-147) are the checkpoint coordinator's.
 *
 * ## Recovery
 *
 * With the `"region"` failover strategy (the default), a failure a subtask
 * reports while the job runs restarts only its pipelined region
 * (`region_failover.ts`); other failures, and all with `"full"`, restart
 * every subtask. Attempt numbers are job-wide and go up on every failover;
 * each subtask is fenced by the number it was last deployed with
 * (`ExecutionAttempt.attemptOf`): a message counts iff its `att` is its
 * sender's.
 *
 * A full failover cancels every subtask, waits (while the restart delay
 * runs) until every live worker that ran some answered `attempt-cancelled`,
 * up to `cancellationTimeoutMs` (`cancellation_wait.ts`), then deploys the
 * next attempt restoring the latest checkpoint whose metadata this
 * coordinator wrote (or the one the job started from). The coordinator
 * remembers that id instead of asking storage for the latest complete
 * checkpoint: once a checkpoint's metadata is written, sinks may commit its
 * transactions, so restoring anything older would commit records twice. If
 * its metadata is gone or corrupt, the job fails for good rather than fall
 * back; storage out of reach is a failed restart for the restart strategy.
 *
 * @module
 */

import type { Subscription } from "../actor/types.ts";
import { decode, encode } from "../actor/codec.ts";
import type { SubtaskRef } from "../checkpoint/types.ts";
import {
  type CoordinatorMessage,
  coordinatorSubject,
  type MessageBody,
  type RestorePoint,
  type SubtaskMetrics,
  type TaskControlMessage,
  taskSubject,
  type WorkerMessage,
  workerSubject,
} from "../task/messages.ts";
import {
  type JobExecutionResult,
  JobFailedError,
  RemoteTaskError,
  TaskFailureError,
} from "./job_result.ts";
import { logger } from "../log.ts";
import { ExecutionAttempt } from "./execution_attempt.ts";
import type { JobCoordinatorOptions } from "./job_coordinator_options.ts";
import { DEFAULT_CANCELLATION_TIMEOUT_MS } from "./cancellation_wait.ts";
import type { StopWithSavepointOptions } from "./savepoints.ts";
import { CheckpointCoordinator } from "./checkpoint_coordinator.ts";
import { AttemptDeployment } from "./attempt_deployment.ts";
import { AttemptCancellation } from "./attempt_cancellation.ts";
import { aggregateVertexMetrics } from "./job_metrics.ts";
import type { JobPhase } from "./job_phase.ts";
import { CheckpointStatsTracker } from "../metrics/checkpoint_stats.ts";
import { MetricStore } from "../metrics/metric_store.ts";
import { FailoverRegions, type PipelinedRegion } from "./failover_regions.ts";
import { type FailoverRecord, JobFailover } from "./job_failover.ts";
import { validateFailoverStrategy } from "../api/restart_strategy_config.ts";

const log = logger("coordinator");

export type { CheckpointConfig, CoordinatorFaultPoint } from "../api/executor.ts";
export type { JobCoordinatorOptions } from "./job_coordinator_options.ts";

/** The coordinator process lost its leadership: the job was suspended, to be resumed by the next leader. */
export class JobSuspendedError extends Error {
  /** The error class name. */
  override name = "JobSuspendedError";
}

/** Coordinates one job. */
export class JobCoordinator {
  readonly #o: JobCoordinatorOptions;
  readonly #tasks: SubtaskRef[] = [];
  readonly #sources: SubtaskRef[] = [];
  /** Checkpoints and savepoints of the job, across attempts. */
  readonly #checkpoints: CheckpointCoordinator;
  /** Places each attempt's subtasks on workers. */
  readonly #deployment: AttemptDeployment;
  /** Cancels a failed attempt and waits for its subtasks to end. */
  readonly #cancellation: AttemptCancellation;
  /** The current attempt; failover replaces it with the next one. */
  #current: ExecutionAttempt;
  #phase: JobPhase = "deploying";
  /** The job's pipelined regions (one region, the whole job, without edges in the graph). */
  readonly #regions: FailoverRegions;
  /** Failover decisions and sequences, restarts and the last failure. */
  readonly #failover: JobFailover;
  readonly #subtaskMetrics = new Map<string, SubtaskMetrics>();
  /** Latest per-second metrics of the current attempt's subtasks. */
  readonly #liveMetrics = new MetricStore();
  /** Checkpoint history, counts and summary. */
  readonly #checkpointStats = new CheckpointStatsTracker();
  #subscription: Subscription | undefined;
  /** Suspended (leadership lost): nothing more goes to workers. */
  #suspended = false;
  #startedAt = Date.now();
  #resolve!: (r: JobExecutionResult) => void;
  #reject!: (e: unknown) => void;

  /**
   * Builds the coordinator's parts; no I/O until `run`.
   * @throws {RangeError} when `cancellationTimeoutMs` is negative or not finite, or
   *   `failoverStrategy` is neither `"region"` nor `"full"`.
   */
  constructor(options: JobCoordinatorOptions) {
    this.#o = options;
    const cancellationTimeoutMs = options.cancellationTimeoutMs ??
      DEFAULT_CANCELLATION_TIMEOUT_MS;
    if (!Number.isFinite(cancellationTimeoutMs) || cancellationTimeoutMs < 0) {
      throw new RangeError(
        `JobCoordinator option cancellationTimeoutMs must be a finite number >= 0: ` +
          `current value is ${cancellationTimeoutMs}`,
      );
    }
    for (const v of options.graph.vertices) {
      for (let s = 0; s < v.parallelism; s++) {
        this.#tasks.push({ vertexId: v.id, subtask: s });
        if (v.isSource) this.#sources.push({ vertexId: v.id, subtask: s });
      }
    }
    this.#regions = FailoverRegions.ofJob(options.graph);
    this.#current = new ExecutionAttempt({
      number: options.firstAttempt ?? 0,
      subtasks: this.#tasks.length,
      sourceSubtasks: this.#sources.length,
    });
    const phase = () => this.#failover.phase();
    const attempt = () => this.#current;
    const failover = (error: unknown) => void this.#failover.fail(error);
    const toWorker = (w: string, body: MessageBody<WorkerMessage>) => this.#toWorker(w, body);
    this.#checkpoints = new CheckpointCoordinator({
      host: {
        phase,
        attempt,
        failover,
        toTask: (ref, body) => this.#toTask(ref, body),
        toAllTasks: (body) => this.#toAllTasks(body),
      },
      jobId: options.jobId,
      jobName: options.graph.name,
      storage: options.storage,
      checkpointing: options.checkpointing,
      tasks: this.#tasks,
      sources: this.#sources,
      vertexInfos: options.graph.vertices.map((v) => ({
        vertexId: v.id,
        operatorUids: v.operators.map((o) => o.uid),
        parallelism: v.parallelism,
        maxParallelism: v.maxParallelism,
      })),
      restoreFrom: options.restoreFrom,
      recoveredCheckpoints: options.recoveredCheckpoints,
      restoreSettings: options.restoreSettings,
      savepointStorage: options.savepointStorage,
      stats: this.#checkpointStats,
      faults: options.faults,
    });
    this.#deployment = new AttemptDeployment({
      host: { phase, attempt, failover, toWorker },
      jobId: options.jobId,
      jobName: options.graph.name,
      tasks: this.#tasks,
      workers: options.workers,
      deployTimeoutMs: options.deployTimeoutMs,
      local: options.local,
    });
    this.#cancellation = new AttemptCancellation({
      jobId: options.jobId,
      workers: options.workers,
      timeoutMs: cancellationTimeoutMs,
      phase,
      attempt,
      deployedOn: () => this.#deployment.deployedOn,
      deployment: () => this.#deployment.deployment,
      toWorker,
    });
    this.#failover = new JobFailover({
      jobId: options.jobId,
      jobName: options.graph.name,
      storage: options.storage,
      restoreFrom: options.restoreFrom,
      regions: this.#regions,
      checkpoints: this.#checkpoints,
      cancellation: this.#cancellation,
      phase: () => this.#phase,
      setPhase: (p) => this.#phase = p,
      attempt,
      setAttempt: (a) => this.#current = a,
      deploymentFailingOver: () => this.#deployment.failingOver(),
      deploy: (restore, region) => this.#deploy(restore, region),
      startAttemptMetrics: (n) => this.#liveMetrics.startAttempt(n),
      end: (error) => this.#end(error),
    }, {
      restartStrategy: options.restartStrategy,
      failoverStrategy: validateFailoverStrategy(options.failoverStrategy ?? "region"),
      // A job taken over at attempt n restarted n times before (each earlier attempt ended).
      restartsBefore: options.firstAttempt ?? 0,
    });
  }

  /** The current attempt: the latest attempt number, job-wide (it goes up on every failover). */
  get attempt(): number {
    return this.#current.number;
  }

  /**
   * The attempt each subtask (`vertexId#subtask`) was last deployed with;
   * a region failover renumbers only its region's subtasks. A subtask of a
   * region being cancelled has none.
   */
  get subtaskAttempts(): ReadonlyMap<string, number> {
    const out = new Map<string, number>();
    for (const t of this.#tasks) {
      const key = this.#key(t.vertexId, t.subtask);
      const att = this.#current.attemptOf(key);
      if (att !== undefined) out.set(key, att);
    }
    return out;
  }

  /** The latest failovers, oldest first: the failure, and the region or full restart it caused. */
  get failovers(): readonly FailoverRecord[] {
    return this.#failover.history;
  }

  /** The job's pipelined regions (Flink's `SchedulingPipelinedRegion`s). */
  get regions(): FailoverRegions {
    return this.#regions;
  }

  /** Latest per-second metrics of the current attempt's subtasks (Flink's `MetricStore`). */
  get liveMetrics(): MetricStore {
    return this.#liveMetrics;
  }

  /** Checkpoint statistics: counts, history, latest, summary (Flink's `CheckpointStatsTracker`). */
  get checkpointStats(): CheckpointStatsTracker {
    return this.#checkpointStats;
  }

  /** Where the latest attempt's subtasks were deployed: worker (slot) id by `vertexId#subtask`. */
  get placement(): ReadonlyMap<string, string> {
    const out = new Map<string, string>();
    for (const [worker, subtasks] of this.#deployment.deployment) {
      for (const key of subtasks) out.set(key, worker);
    }
    return out;
  }

  /** Restarts so far (Flink's `numRestarts`). */
  get restarts(): number {
    return this.#failover.restarts;
  }

  /** When `run` started, epoch ms. */
  get startedAt(): number {
    return this.#startedAt;
  }

  /** Why the latest attempt failed (`name: message`), if one did. */
  get lastFailure(): string | undefined {
    return this.#failover.lastFailure;
  }

  /**
   * Why the current attempt exists, once the job restarted: `attempt <n>
   * failed: <name>: <message>`, naming the failed attempt (the one before the
   * current one), not the current attempt's own failure; after a region
   * failover, `region failover of region <id> (<vertex>#<subtask>, …):
   * attempt <n> failed: …`.
   */
  get restartedAfter(): string | undefined {
    return this.#failover.restartedAfter;
  }

  /**
   * While the coordinator waits for workers (slots, in cluster mode) to
   * deploy the current attempt on: what it waits for, e.g. `waiting for
   * slots to deploy attempt 0 (4 subtasks) on: 0 registered, at least 1
   * needed; the attempt fails after 60000 ms without one`. Undefined otherwise.
   */
  get waitingForSlots(): string | undefined {
    return this.#deployment.waitingForSlots;
  }

  /**
   * Runs the job to its end.
   * @returns the result once every subtask finished.
   * @throws {JobFailedError} when the restart strategy gives up; the last failure is the cause.
   */
  run(): Promise<JobExecutionResult> {
    const o = this.#o;
    this.#startedAt = Date.now();
    const done = new Promise<JobExecutionResult>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#subscription = o.transport.subscribe(coordinatorSubject(o.jobId), (m) => {
      let msg: CoordinatorMessage;
      try {
        msg = decode(m.data) as CoordinatorMessage;
      } catch (error) {
        log.warn(`job ${o.jobId}: dropping an undecodable message: ${error}`);
        return;
      }
      this.#onMessage(msg).catch((error) => this.#failover.fail(error));
    });
    this.#checkpoints.start();
    this.#deploy(o.restoreFrom);
    return done.finally(() => this.#shutDown());
  }

  /** The workers the current attempt deployed subtasks to. */
  get deployedWorkers(): ReadonlySet<string> {
    return this.#deployment.deployedOn;
  }

  /**
   * Fails the current attempt from outside (e.g. a worker stopped
   * heartbeating): failover follows the restart strategy, as for a subtask
   * failure. Ignored while restarting or after the job ended.
   */
  failAttempt(error: Error): void {
    if (this.#phase === "deploying" || this.#phase === "running") void this.#failover.fail(error);
  }

  /**
   * Suspends the job (Flink's SUSPENDED: this coordinator process lost its
   * leadership): checkpointing and deployment stop, `run()` rejects with a
   * {@linkcode JobSuspendedError}, and nothing is sent to workers or
   * deleted from storage. The next leader resumes the job; workers end its
   * subtasks when they see that leader's epoch.
   */
  suspend(reason: string): void {
    if (this.#phase === "done") return;
    this.#suspended = true;
    this.#subscription?.unsubscribe();
    this.#end(new JobSuspendedError(`Job ${this.#o.jobId} was suspended: ${reason}`));
  }

  /** The latest checkpoint whose metadata this coordinator wrote, if any. */
  get latestCheckpointId(): number | undefined {
    return this.#checkpoints.latestWritten;
  }

  /**
   * Cancels the job: every subtask is cancelled and `run()` rejects. The
   * retained checkpoints stay (a resume may use them); shared blobs no
   * retained checkpoint refers to (of aborted checkpoints, or written by a
   * checkpoint the cancel cut short) are swept in the background, as when
   * a job finishes. A blob a cancelled subtask writes after the sweep's
   * listing stays behind as garbage (never a loss).
   */
  cancel(): void {
    if (this.#phase === "done") return;
    this.#cancellation.cancel();
    this.#end(new JobFailedError(`Job ${this.#o.jobId} was cancelled`));
    this.#checkpoints.jobFinished().catch((error) =>
      log.warn(`job ${this.#o.jobId}: sweeping shared state after the cancel failed: ${error}`)
    );
  }

  /**
   * Triggers a savepoint now (Flink's `CheckpointCoordinator.triggerSavepoint`):
   * a forced checkpoint of type `"savepoint"`, stored once complete in its
   * own location under `directory` (see `savepoints.ts`).
   *
   * @param directory the savepoint directory; `undefined`: the default one.
   * @returns the savepoint's path.
   * @throws {SavepointError} (rejects) when the job is not running, a stop
   *   is in progress, no savepoint storage is configured or it refuses the
   *   directory, the savepoint fails or expires, or the job fails over.
   */
  triggerSavepoint(directory?: string): Promise<string> {
    return this.#checkpoints.triggerSavepoint(directory);
  }

  /**
   * Stops the job with a final savepoint (FLIP-34; see `savepoints.ts`):
   * sources stop (draining with `drain`), the final checkpoint is the
   * savepoint, sinks commit it and the job ends FINISHED; `run()` resolves.
   *
   * @returns the savepoint's path.
   * @throws {SavepointError} (rejects) as `triggerSavepoint`, or when a stop
   *   is already in progress.
   */
  stopWithSavepoint(options: StopWithSavepointOptions = {}): Promise<string> {
    return this.#checkpoints.stopWithSavepoint(options);
  }

  #key(vertexId: string, subtask: number): string {
    return `${vertexId}#${subtask}`;
  }

  #toTask(ref: SubtaskRef, body: MessageBody<TaskControlMessage>): void {
    const o = this.#o;
    const att = this.#current.attemptOf(this.#key(ref.vertexId, ref.subtask));
    if (att === undefined) return; // its region is being cancelled
    const msg = { ...body, job: o.jobId, att } as TaskControlMessage;
    o.transport.publish(taskSubject(o.jobId, att, ref.vertexId, ref.subtask), encode(msg));
  }

  #toAllTasks(body: MessageBody<TaskControlMessage>): void {
    for (const t of this.#tasks) this.#toTask(t, body);
  }

  #toWorker(worker: string, body: MessageBody<WorkerMessage>): void {
    const o = this.#o;
    const msg = {
      ...body,
      job: o.jobId,
      att: this.#current.number,
      ...(o.leaderEpoch === undefined ? {} : { epoch: o.leaderEpoch }),
    } as WorkerMessage;
    o.transport.publish(workerSubject(worker), encode(msg));
  }

  /** Deploys the current attempt (only `region`'s subtasks, for a region failover) past `beforeDeploy`. */
  #deploy(restore: RestorePoint | null, region?: PipelinedRegion): void {
    if (region === undefined) this.#phase = "deploying";
    const where = region && this.#regions.describe(region);
    const deploy = () =>
      region === undefined
        ? this.#deployment.deploy(restore)
        : this.#deployment.deployRegion(region.subtasks, restore, where!);
    const gate = this.#o.beforeDeploy;
    if (gate === undefined) return deploy();
    const attempt = this.#current.number;
    const still = () => this.#failover.phase() === "deploying" && this.#current.number === attempt;
    gate(attempt).then(
      () => still() && deploy(),
      (error) => still() && void this.#failover.fail(error),
    );
  }

  async #onMessage(msg: CoordinatorMessage): Promise<void> {
    if (msg.t === "attempt-cancelled") {
      if (msg.job === this.#o.jobId && msg.att === this.#current.number) {
        this.#cancellation.cancelled(msg.worker);
      }
      return;
    }
    // While restarting, the failed attempt is being cancelled: nothing it reports counts.
    if (msg.job !== this.#o.jobId || this.#phase === "done" || this.#phase === "restarting") return;
    const from = msg.t === "ack"
      ? this.#key(msg.ack.vertexId, msg.ack.subtask)
      : this.#key(msg.vertex, msg.subtask);
    if (msg.att !== this.#current.attemptOf(from)) return; // fenced: an older attempt
    switch (msg.t) {
      case "ready":
        if (
          this.#current.markReady(this.#key(msg.vertex, msg.subtask)) &&
          this.#failover.phase() === "deploying"
        ) {
          this.#start();
        }
        return;
      case "ack":
        await this.#checkpoints.acknowledged(msg.ack);
        return;
      case "decline":
        this.#checkpoints.declined(msg);
        return;
      case "eoi":
        if (
          this.#current.markSourceEnded(this.#key(msg.vertex, msg.subtask)) &&
          this.#failover.phase() === "running"
        ) {
          this.#checkpoints.sourcesEnded();
        }
        return;
      case "metrics":
        // Fenced per subtask above; after a region failover the others' attempt is older.
        this.#liveMetrics.update(this.#current.number, msg.vertex, msg.subtask, msg.sample);
        return;
      case "finished":
        this.#subtaskMetrics.set(this.#key(msg.vertex, msg.subtask), msg.metrics);
        if (this.#current.markFinished(this.#key(msg.vertex, msg.subtask))) {
          await this.#jobFinished();
        }
        return;
      case "failed":
        await this.#failover.fail(
          new (this.#o.local ? TaskFailureError : RemoteTaskError)(
            msg.vertex,
            msg.subtask,
            msg.att,
            msg.error,
          ),
        );
        return;
    }
  }

  #start(): void {
    this.#deployment.stopTimer();
    const restarted = this.#failover.started();
    this.#phase = "running";
    for (const t of restarted?.subtasks ?? this.#tasks) this.#toTask(t, { t: "start" });
    this.#failover.backoff.onRecovered(Date.now());
    const what = restarted === undefined ? "" : `${this.#regions.describe(restarted)} of `;
    log.info(`job ${this.#o.jobId}: ${what}attempt ${this.#current.number} running`, {
      name: restarted === undefined ? "attempt-running" : "region-running",
      jobId: this.#o.jobId,
      attempt: this.#current.number,
    });
    this.#checkpoints.attemptRunning();
  }

  async #jobFinished(): Promise<void> {
    const o = this.#o;
    const summary = this.#checkpoints.summary();
    const result: JobExecutionResult = {
      jobId: o.jobId,
      jobName: o.graph.name,
      durationMs: Date.now() - this.#startedAt,
      restarts: this.#failover.restarts,
      checkpoints: this.#checkpoints.counts,
      latestCheckpoint: this.#checkpoints.latestCompleted,
      summary: `${summary}; restarts: ${this.#failover.restarts}`,
      metrics: aggregateVertexMetrics(o.graph, this.#subtaskMetrics),
    };
    await this.#checkpoints.jobFinished();
    if (!o.checkpointing.retainOnFinish) {
      await o.storage.discardJob(o.jobId).catch((e) =>
        log.warn(`job ${o.jobId}: cannot discard checkpoints: ${e}`)
      );
    }
    log.info(`job ${o.jobId} '${o.graph.name}' finished: ${result.summary}`);
    this.#end(result);
  }

  #end(outcome: JobExecutionResult | Error): void {
    if (this.#phase === "done") return;
    this.#phase = "done";
    this.#checkpoints.stop();
    this.#deployment.stopTimer();
    if (outcome instanceof Error) this.#reject(outcome);
    else this.#resolve(outcome);
  }

  #shutDown(): void {
    this.#subscription?.unsubscribe();
    if (this.#suspended) return; // the next leader's epoch fences the workers
    // Workers may free what they hold for the job (cluster mode: its slot threads).
    for (const w of this.#o.workers()) this.#toWorker(w, { t: "release" });
  }
}
