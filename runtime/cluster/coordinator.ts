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
 * ## Recovery
 *
 * Failover is full (every subtask restarts): the attempt number goes up,
 * every task of the old attempt is cancelled (their messages are fenced off
 * by the attempt number), and every subtask of the new attempt restores from
 * the latest checkpoint whose metadata this coordinator wrote (or the
 * checkpoint the job was started from, when it wrote none). Before it
 * deploys the next attempt, the coordinator waits (while the restart delay
 * runs) until every live worker that ran subtasks of the failed attempt
 * answered `attempt-cancelled`, i.e. those subtasks ended, up to
 * `cancellationTimeoutMs`; see `cancellation_wait.ts`. The coordinator
 * remembers that id itself instead of asking storage for the latest
 * complete checkpoint: once a checkpoint's metadata is written, sinks may
 * commit its transactions, so restoring anything older would commit records
 * twice. If that checkpoint's metadata is gone or corrupt, the job fails
 * for good (a `SuppressRestartsError`) rather than fall back. If storage
 * cannot be reached (an `IO` error, e.g. while NATS restarts), that is a
 * failed restart: the restart strategy decides whether and when to try
 * again, as for any other failure.
 *
 * ## Failed checkpoints
 *
 * A checkpoint that expires, is declined, or whose metadata cannot be
 * written is reported to a `CheckpointFailureManager`: more than
 * `tolerableCheckpointFailures` consecutive such failures fail the attempt
 * (a normal failover, through the restart strategy), as Flink's
 * `execution.checkpointing.tolerable-failed-checkpoints` does. Failures
 * caused by a failover do not count.
 *
 * ## End of input
 *
 * When every source subtask has reported end of input, the coordinator
 * triggers a final checkpoint (even when periodic checkpointing is off), so
 * two-phase-commit sinks commit their last transaction; when it completes,
 * it tells every subtask to finish (FLIP-147).
 *
 * @module
 */

import type { Subscription, Transport } from "../actor/types.ts";
import { decode, encode } from "../actor/codec.ts";
import { delay } from "../actor/async.ts";
import type { JobGraphShape } from "../graph/job_graph_summary.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { PendingCheckpoint, VertexInfo } from "../checkpoint/pending.ts";
import { CheckpointTracker } from "../checkpoint/tracker.ts";
import { CheckpointRetention } from "./checkpoint_retention.ts";
import { CheckpointFailureManager } from "../checkpoint/failure_manager.ts";
import {
  CheckpointFailureReason,
  type CheckpointId,
  type SubtaskRef,
} from "../checkpoint/types.ts";
import {
  createRestartBackoff,
  type RestartBackoff,
  type RestartStrategyConfig,
} from "./restart_strategy.ts";
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
  CheckpointFailureThresholdError,
  type JobExecutionResult,
  JobFailedError,
  RemoteTaskError,
  TaskFailureError,
  type VertexMetrics,
} from "./job_result.ts";
import { logger } from "../log.ts";
import { ExecutionAttempt } from "./execution_attempt.ts";
import {
  decideRestore,
  describeError as describe,
  describeRestorePoint as describePoint,
  restoreTarget,
} from "./restore_decision.ts";
import type { CheckpointConfig, CoordinatorFaultPoint } from "../api/executor.ts";
import { decideCancellationWait, DEFAULT_CANCELLATION_TIMEOUT_MS } from "./cancellation_wait.ts";
import {
  decideClaimedDiscard,
  discardAfterCompleted,
  refuseSavepoint,
  SavepointError,
  SavepointRequests,
  type StopWithSavepointOptions,
  storeSavepoint,
} from "./savepoints.ts";
import type { RestoreMode } from "../api/executor.ts";

const log = logger("coordinator");

export type { CheckpointConfig, CoordinatorFaultPoint } from "../api/executor.ts";

/** Options of {@linkcode JobCoordinator}. */
export interface JobCoordinatorOptions {
  readonly transport: Transport;
  readonly jobId: string;
  /** The graph to run: a full `JobGraph` or its plain summary (cluster mode). */
  readonly graph: JobGraphShape;
  readonly storage: CheckpointStorage;
  readonly checkpointing: CheckpointConfig;
  readonly restartStrategy: RestartStrategyConfig;
  /**
   * Ids of the workers (slots, in cluster mode) to deploy on, round-robin.
   * When it is empty at deployment, the coordinator waits for workers until
   * `deployTimeoutMs` has passed (as Flink waits for slots), then fails the
   * attempt.
   */
  readonly workers: () => string[];
  /** Checkpoint to start from (resume, possibly of another job id), or `null`. */
  readonly restoreFrom: RestorePoint | null;
  /** How long subtasks may take to become ready, in ms. */
  readonly deployTimeoutMs: number;
  /**
   * True when the workers run in this process (local mode): task failures
   * are then `TaskFailureError`s, not `RemoteTaskError`s. Default false.
   */
  readonly local?: boolean;
  /**
   * How long a failover waits for the failed attempt's subtasks to end
   * before it deploys the next attempt anyway (logging the workers and
   * subtasks still running), in ms; like Flink's `task.cancellation.timeout`.
   * Default 10 000.
   * @throws {RangeError} (from the constructor) when negative or not finite.
   */
  readonly cancellationTimeoutMs?: number;
  /**
   * The storage rooted at a savepoint directory (`undefined`: the default
   * one), for `triggerSavepoint` and `stopWithSavepoint`; it throws for a
   * directory this deployment cannot serve. Without it, savepoints are refused.
   */
  readonly savepointStorage?: ((directory: string | undefined) => CheckpointStorage) | undefined;
  /**
   * How `restoreFrom` was restored: its kind and the restore mode (see
   * `RestoreMode`). Default `{ kind: "checkpoint", mode: "NO_CLAIM" }`.
   */
  readonly restoreSettings?: {
    readonly kind: "checkpoint" | "savepoint";
    readonly mode: RestoreMode;
  } | undefined;
  /** Test hook: throwing fails the job at that point. */
  readonly faults?:
    | ((point: CoordinatorFaultPoint, checkpointId: number, attempt: number) => void)
    | undefined;
}

type Phase = "deploying" | "running" | "restarting" | "done";

/** Coordinates one job. */
export class JobCoordinator {
  readonly #o: JobCoordinatorOptions;
  readonly #tracker: CheckpointTracker;
  readonly #failures: CheckpointFailureManager;
  readonly #backoff: RestartBackoff;
  readonly #tasks: SubtaskRef[] = [];
  readonly #sources: SubtaskRef[] = [];
  readonly #vertexInfos: VertexInfo[];
  readonly #finalizing = new Set<Promise<void>>();
  /** Deletes what retention and aborts release, shared blobs by reference count (set by `run`). */
  #retention!: CheckpointRetention;
  /** Fully acknowledged checkpoints are finalized one at a time, in the order they completed. */
  #finalizeQueue: Promise<void> = Promise.resolve();
  /** The current attempt; failover replaces it with the next one. */
  #current: ExecutionAttempt;
  #phase: Phase = "deploying";
  readonly #subtaskMetrics = new Map<string, SubtaskMetrics>();
  /** Pending savepoint and stop-with-savepoint requests (`savepoints.ts`). */
  readonly #savepoints = new SavepointRequests();
  /** Checkpoints (not savepoints) completed by this job, for the CLAIM restore mode. */
  #completedCheckpoints = 0;
  #claimedDiscarded = false;
  /**
   * The latest checkpoint whose `_metadata` this coordinator wrote, in any
   * attempt: the one a failover restores. Set as soon as the write resolves.
   */
  #latestWritten: CheckpointId | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #deployTimer: ReturnType<typeof setTimeout> | undefined;
  #subscription: Subscription | undefined;
  #restarts = 0;
  #deployedOn = new Set<string>();
  /** The subtasks (`vertex#subtask`) the current attempt deployed, by worker. */
  #deployment = new Map<string, string[]>();
  /** Workers that ran subtasks of the failed attempt and did not answer `attempt-cancelled` yet. */
  #cancelPending = new Set<string>();
  #cancelWake: (() => void) | undefined;
  #lastFailure: string | undefined;
  #restartedAfter: string | undefined;
  #waitingForSlots: string | undefined;
  #startedAt = Date.now();
  #resolve!: (r: JobExecutionResult) => void;
  #reject!: (e: unknown) => void;

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
    this.#backoff = createRestartBackoff(options.restartStrategy);
    for (const v of options.graph.vertices) {
      for (let s = 0; s < v.parallelism; s++) {
        this.#tasks.push({ vertexId: v.id, subtask: s });
        if (v.isSource) this.#sources.push({ vertexId: v.id, subtask: s });
      }
    }
    this.#current = new ExecutionAttempt({
      number: 0,
      subtasks: this.#tasks.length,
      sourceSubtasks: this.#sources.length,
    });
    this.#vertexInfos = options.graph.vertices.map((v) => ({
      vertexId: v.id,
      operatorUids: v.operators.map((o) => o.uid),
      parallelism: v.parallelism,
      maxParallelism: v.maxParallelism,
    }));
  }

  /** The current attempt. */
  get attempt(): number {
    return this.#current.number;
  }

  /** Why the latest attempt failed (`name: message`), if one did. */
  get lastFailure(): string | undefined {
    return this.#lastFailure;
  }

  /**
   * Why the current attempt exists, once the job restarted: `attempt <n>
   * failed: <name>: <message>`, naming the failed attempt (the one before the
   * current one), not the current attempt's own failure.
   */
  get restartedAfter(): string | undefined {
    return this.#restartedAfter;
  }

  /**
   * While the coordinator waits for workers (slots, in cluster mode) to
   * deploy the current attempt on: what it waits for, e.g. `waiting for
   * slots to deploy attempt 0 (4 subtasks) on: 0 registered, at least 1
   * needed; the attempt fails after 60000 ms without one`. Undefined otherwise.
   */
  get waitingForSlots(): string | undefined {
    return this.#waitingForSlots;
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
      this.#onMessage(msg).catch((error) => this.#failover(error));
    });
    this.#retention = new CheckpointRetention({
      jobId: o.jobId,
      storage: o.storage,
      retained: o.restoreFrom?.jobId === o.jobId ? [o.restoreFrom.checkpointId] : [],
    });
    if (o.restoreFrom !== null) {
      // Ids continue after the restored checkpoint, also when resuming another
      // job's (Flink resets its CheckpointIDCounter to the savepoint's id + 1):
      // sinks order their transactions by checkpoint id (the MariaDB XA sink's
      // lingering-xid rollback). Another job's checkpoints are not retained here.
      this.#tracker.restoreCounter(
        o.restoreFrom.checkpointId,
        o.restoreFrom.jobId === o.jobId ? undefined : [],
      );
    }
    this.#deploy(o.restoreFrom);
    return done.finally(() => this.#shutDown());
  }

  /** The workers the current attempt deployed subtasks to. */
  get deployedWorkers(): ReadonlySet<string> {
    return this.#deployedOn;
  }

  /**
   * Fails the current attempt from outside (e.g. a worker stopped
   * heartbeating): failover follows the restart strategy, as for a subtask
   * failure. Ignored while restarting or after the job ended.
   */
  failAttempt(error: Error): void {
    if (this.#phase === "deploying" || this.#phase === "running") void this.#failover(error);
  }

  /** Cancels the job: every subtask is cancelled and `run()` rejects. */
  cancel(): void {
    if (this.#phase === "done") return;
    this.#cancelAttempt();
    this.#end(new JobFailedError(`Job ${this.#o.jobId} was cancelled`));
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
    const refused = this.#refuseSavepoint(directory);
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
    return this.#savepoints.add(id, directory);
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
    const refused = this.#refuseSavepoint(options.directory);
    if (refused !== undefined) return Promise.reject(refused);
    const done = this.#savepoints.requestStop(options);
    const drain = options.drain ?? false;
    log.info(
      `job ${this.#o.jobId}: stopping with a savepoint (${drain ? "draining" : "no drain"})`,
      { name: "stop-with-savepoint", jobId: this.#o.jobId, drain },
    );
    for (const s of this.#sources) this.#toTask(s, { t: "stop-source", drain });
    return done;
  }

  #refuseSavepoint(directory: string | undefined): SavepointError | undefined {
    return refuseSavepoint({
      jobId: this.#o.jobId,
      phase: this.#phase,
      stopping: this.#savepoints.stopping !== undefined,
      finishing: this.#current.finalCheckpointId !== undefined,
      storage: this.#o.savepointStorage,
      directory,
    });
  }

  /** Copies completed savepoint `checkpointId` to its own location; returns its path. */
  #storeSavepoint(checkpointId: number, directory: string | undefined): Promise<string> {
    const o = this.#o;
    return storeSavepoint({
      storage: o.storage,
      jobId: o.jobId,
      checkpointId,
      target: o.savepointStorage!(directory),
    });
  }

  /**
   * After checkpoint `checkpointId` completed: discards the job-storage
   * copies of earlier savepoints, and a claimed restored checkpoint once the
   * restore mode says so (see `savepoints.ts`).
   */
  #afterCompleted(checkpointId: number, kind: "checkpoint" | "savepoint"): void {
    const o = this.#o;
    if (kind === "checkpoint") this.#completedCheckpoints++;
    const claimed = !this.#claimedDiscarded && o.restoreFrom !== null &&
      decideClaimedDiscard({
          restoreMode: o.restoreSettings?.mode ?? "NO_CLAIM",
          restoredKind: o.restoreSettings?.kind ?? "checkpoint",
          otherJob: o.restoreFrom.jobId !== o.jobId,
          completedCheckpoints: this.#completedCheckpoints,
          retainedCheckpoints: o.checkpointing.retainedCheckpoints,
        }) === "discard";
    if (claimed) this.#claimedDiscarded = true;
    discardAfterCompleted({
      storage: o.storage,
      jobId: o.jobId,
      savepointCopies: this.#savepoints.laterCheckpointCompleted(checkpointId),
      claimed: claimed ? o.restoreFrom : null,
    });
  }

  #key(vertexId: string, subtask: number): string {
    return `${vertexId}#${subtask}`;
  }

  #toTask(ref: SubtaskRef, body: MessageBody<TaskControlMessage>): void {
    const o = this.#o;
    const msg = { ...body, job: o.jobId, att: this.#current.number } as TaskControlMessage;
    o.transport.publish(
      taskSubject(o.jobId, this.#current.number, ref.vertexId, ref.subtask),
      encode(msg),
    );
  }

  #toAllTasks(body: MessageBody<TaskControlMessage>): void {
    for (const t of this.#tasks) this.#toTask(t, body);
  }

  #toWorker(worker: string, body: MessageBody<WorkerMessage>): void {
    const o = this.#o;
    const msg = { ...body, job: o.jobId, att: this.#current.number } as WorkerMessage;
    o.transport.publish(workerSubject(worker), encode(msg));
  }

  #deploy(restore: RestorePoint | null): void {
    const o = this.#o;
    this.#phase = "deploying";
    const workers = o.workers();
    if (workers.length === 0) {
      this.#awaitWorkers(restore);
      return;
    }
    log.info(
      `job ${o.jobId} '${o.graph.name}': deploying attempt ${this.#current.number} (${this.#tasks.length} subtasks)` +
        (restore === null ? "" : ` from ${describePoint(restore, o.jobId)}`),
      {
        name: "attempt-deploying",
        jobId: o.jobId,
        attempt: this.#current.number,
        subtasks: this.#tasks.length,
        checkpointId: restore?.checkpointId ?? null,
      },
    );
    this.#deployedOn = new Set();
    this.#deployment = new Map();
    this.#tasks.forEach((t, i) => {
      const worker = workers[i % workers.length]!;
      this.#deployedOn.add(worker);
      const names = this.#deployment.get(worker) ?? this.#deployment.set(worker, []).get(worker)!;
      names.push(this.#key(t.vertexId, t.subtask));
      this.#toWorker(worker, {
        t: "deploy",
        vertex: t.vertexId,
        subtask: t.subtask,
        restore,
      });
    });
    const attempt = this.#current.number;
    clearTimeout(this.#deployTimer);
    this.#deployTimer = setTimeout(() => {
      if (this.#phase === "deploying" && this.#current.number === attempt) {
        this.#failover(
          new Error(
            `Only ${this.#current.readyCount} of ${this.#tasks.length} subtasks of attempt ${attempt} became ready within ${o.deployTimeoutMs} ms`,
          ),
        );
      }
    }, o.deployTimeoutMs);
  }

  /** No worker yet: polls for one until the deploy timeout, then fails the attempt. */
  #awaitWorkers(restore: RestorePoint | null): void {
    const o = this.#o;
    const attempt = this.#current.number;
    const since = Date.now();
    this.#waitingForSlots = `waiting for slots to deploy attempt ${attempt} ` +
      `(${this.#tasks.length} subtasks) on: 0 registered, at least 1 needed; ` +
      `the attempt fails after ${o.deployTimeoutMs} ms without one` +
      (o.local ? "" : " (start a worker: `deno run -A cli.ts worker --nats <url>`)");
    log.warn(`job ${o.jobId}: no worker to deploy attempt ${attempt} on, ${this.#waitingForSlots}`);
    const poll = () => {
      if (this.#phase !== "deploying" || this.#current.number !== attempt) {
        this.#waitingForSlots = undefined;
        return;
      }
      if (o.workers().length > 0) {
        this.#waitingForSlots = undefined;
        return this.#deploy(restore);
      }
      if (Date.now() - since >= o.deployTimeoutMs) {
        this.#waitingForSlots = undefined;
        return void this.#failover(
          new Error(`Job ${o.jobId} found no worker to run on within ${o.deployTimeoutMs} ms`),
        );
      }
      this.#deployTimer = setTimeout(poll, 250);
    };
    clearTimeout(this.#deployTimer);
    this.#deployTimer = setTimeout(poll, 250);
  }

  async #onMessage(msg: CoordinatorMessage): Promise<void> {
    if (msg.t === "attempt-cancelled") {
      if (msg.job === this.#o.jobId && msg.att === this.#current.number) {
        this.#cancelPending.delete(msg.worker);
        this.#cancelWake?.();
      }
      return;
    }
    // While restarting, the failed attempt is being cancelled: nothing it reports counts.
    if (msg.job !== this.#o.jobId || this.#phase === "done" || this.#phase === "restarting") return;
    if (msg.att !== this.#current.number) return; // fenced: an older attempt
    switch (msg.t) {
      case "ready":
        if (
          this.#current.markReady(this.#key(msg.vertex, msg.subtask)) && this.#phase === "deploying"
        ) {
          this.#start();
        }
        return;
      case "ack": {
        const outcome = this.#tracker.acknowledge(msg.ack);
        if (outcome.result === "SUCCESS") this.#retention.acknowledged(msg.ack);
        else {
          log.debug(
            `job ${this.#o.jobId}: ack of checkpoint ${msg.ack.checkpointId} from ${msg.ack.vertexId}#${msg.ack.subtask}: ${outcome.result}`,
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
        return;
      }
      case "decline": {
        log.warn(
          `job ${this.#o.jobId}: checkpoint ${msg.id} declined by ${msg.vertex}#${msg.subtask}: ${msg.reason}`,
        );
        const aborted = this.#tracker.decline(
          msg.id,
          CheckpointFailureReason[msg.code] ?? CheckpointFailureReason.DECLINED,
        );
        if (aborted) this.#aborted(aborted, `by ${msg.vertex}#${msg.subtask}: ${msg.reason}`);
        return;
      }
      case "eoi":
        if (
          this.#current.markSourceEnded(this.#key(msg.vertex, msg.subtask)) &&
          this.#phase === "running"
        ) {
          this.#triggerFinal();
        }
        return;
      case "finished":
        this.#subtaskMetrics.set(this.#key(msg.vertex, msg.subtask), msg.metrics);
        if (this.#current.markFinished(this.#key(msg.vertex, msg.subtask))) {
          await this.#jobFinished();
        }
        return;
      case "failed":
        await this.#failover(
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
    clearTimeout(this.#deployTimer);
    this.#phase = "running";
    this.#toAllTasks({ t: "start" });
    this.#backoff.onRecovered(Date.now());
    this.#tracker.startScheduler(Date.now());
    log.info(`job ${this.#o.jobId}: attempt ${this.#current.number} running`, {
      name: "attempt-running",
      jobId: this.#o.jobId,
      attempt: this.#current.number,
    });
    this.#schedule();
  }

  /** Sets the one timer for the next trigger or expiry. */
  #schedule(): void {
    clearTimeout(this.#timer);
    if (this.#phase !== "running") return;
    const now = Date.now();
    let next = this.#tracker.nextExpiryMs;
    if (this.#current.finalCheckpointId === undefined) {
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
    if (this.#phase !== "running") return;
    for (const p of this.#tracker.expire(Date.now())) {
      log.warn(`job ${this.#o.jobId}: checkpoint ${p.checkpointId} expired before completing`);
      this.#aborted(p);
    }
    this.#schedule();
  }

  #trigger(force: boolean, kind: "checkpoint" | "savepoint"): number | undefined {
    const now = Date.now();
    const decision = this.#tracker.decideTrigger(now, { force });
    if (decision.kind !== "trigger") return undefined;
    this.#tracker.startCheckpoint(decision.checkpointId, now, {
      attempt: this.#current.number,
      tasks: this.#tasks,
      kind,
    });
    log.debug(`job ${this.#o.jobId}: triggering ${kind} ${decision.checkpointId}`);
    for (const s of this.#sources) {
      this.#toTask(s, { t: "trigger", id: decision.checkpointId, ts: now, type: kind });
    }
    return decision.checkpointId;
  }

  #triggerFinal(): void {
    this.#tracker.stopScheduler();
    // A stop-with-savepoint's final checkpoint is its savepoint.
    const stopping = this.#savepoints.stopping !== undefined;
    this.#current.finalCheckpointId = this.#trigger(true, stopping ? "savepoint" : "checkpoint");
    if (stopping && this.#current.finalCheckpointId !== undefined) {
      this.#savepoints.assignStop(this.#current.finalCheckpointId);
    }
    log.info(
      `job ${this.#o.jobId}: all sources ended; final checkpoint ${this.#current.finalCheckpointId}`,
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
    this.#toAllTasks({ t: "abort", id: pending.checkpointId, reason: reason.message });
    this.#savepoints.failed(pending.checkpointId, `${reason.code}: ${detail ?? reason.message}`);
    this.#retention.aborted(pending.checkpointId);
    if (this.#phase === "running" && pending.attempt === this.#current.number) {
      const verdict = this.#failures.onFailure({
        checkpointId: pending.checkpointId,
        reason,
        kind: pending.kind,
        ...(detail === undefined ? {} : { detail }),
      });
      if (verdict.verdict === "EXCEEDED") {
        void this.#failover(
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
    if (this.#current.finalCheckpointId === pending.checkpointId && this.#phase === "running") {
      this.#triggerFinal();
    }
    this.#schedule();
  }

  /** Writes the metadata of a fully acknowledged checkpoint, then notifies. */
  async #finalize(pending: PendingCheckpoint): Promise<void> {
    const o = this.#o;
    const attempt = this.#current.number;
    if (pending.isDiscarded) return; // aborted (failover) while queued behind another
    const meta = pending.toMetadata({
      jobId: o.jobId,
      jobName: o.graph.name,
      completedAt: Date.now(),
      vertices: this.#vertexInfos,
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
    if (attempt !== this.#current.number || this.#phase !== "running") return;
    if (this.#savepoints.isSavepoint(pending.checkpointId)) {
      // Stored in its own location before anyone is told it completed.
      await this.#savepoints.completed(
        pending.checkpointId,
        (directory) => this.#storeSavepoint(pending.checkpointId, directory),
      );
      if (attempt !== this.#current.number || this.#phase !== "running") return;
    }
    o.faults?.("before-notify-complete", pending.checkpointId, attempt);
    const outcome = this.#tracker.completed(pending.checkpointId, location, Date.now());
    const stats = this.#tracker.latestCompleted;
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
    this.#afterCompleted(pending.checkpointId, pending.kind);
    this.#toAllTasks({ t: "complete", id: pending.checkpointId });
    if (
      this.#current.finalCheckpointId !== undefined &&
      pending.checkpointId >= this.#current.finalCheckpointId
    ) {
      this.#toAllTasks({ t: "finish" });
    }
    this.#schedule();
  }

  async #failover(error: unknown): Promise<void> {
    if (this.#phase === "restarting" || this.#phase === "done") return;
    const o = this.#o;
    this.#phase = "restarting";
    this.#waitingForSlots = undefined;
    clearTimeout(this.#timer);
    clearTimeout(this.#deployTimer);
    this.#lastFailure = describe(error);
    log.warn(`job ${o.jobId}: attempt ${this.#current.number} failed: ${this.#lastFailure}`);
    this.#savepoints.failAll(
      `attempt ${this.#current.number} of job ${o.jobId} failed (${this.#lastFailure})`,
    );
    const abortedIds = this.#tracker.abortAll(CheckpointFailureReason.JOB_FAILING)
      .map((p) => p.checkpointId);
    this.#tracker.stopScheduler();
    this.#cancelAttempt();
    const cancelled = this.#awaitCancellation();
    // Once no subtask of the attempt runs and every metadata write settled,
    // the checkpoints it aborted can release their shared blobs.
    void Promise.all([cancelled, ...this.#finalizing])
      .then(() => this.#retention.failedOver(abortedIds));
    let failure = error;
    let latest: RestorePoint | null;
    for (;;) {
      const decision = this.#backoff.onFailure(Date.now(), failure);
      if (decision.kind === "fail") {
        await Promise.all([...this.#finalizing]);
        this.#end(
          new JobFailedError(
            `Job ${o.jobId} '${o.graph.name}' failed${decision.suppressed ? " " : ": "}` +
              `${decision.reason}${this.#resumeHint()}`,
            { cause: failure },
          ),
        );
        return;
      }
      // The restart delay and the wait for the failed attempt to end overlap.
      await Promise.all([delay(decision.delayMs), cancelled]);
      if (this.#phase !== "restarting") return;
      await Promise.all([...this.#finalizing]);
      const facts = {
        jobId: o.jobId,
        latestWritten: this.#latestWritten,
        restoreFrom: o.restoreFrom,
      };
      const target = restoreTarget(facts);
      let readError: { error: unknown } | undefined;
      if (target !== null) {
        try {
          await o.storage.readMetadata(target.jobId, target.checkpointId);
        } catch (e) {
          readError = { error: e };
        }
      }
      const restore = decideRestore({
        ...facts,
        jobName: o.graph.name,
        target,
        readError,
        restartingAfter: error,
      });
      if (restore.kind === "restore") {
        latest = restore.point;
        break;
      }
      if (restore.kind === "retry") {
        log.warn(restore.warning);
        if (this.#phase !== "restarting") return;
        failure = restore.failure;
        continue;
      }
      this.#end(new JobFailedError(restore.message, { cause: restore.cause }));
      return;
    }
    if (this.#phase !== "restarting") return; // cancelled meanwhile
    if (
      latest !== null && latest.jobId === o.jobId &&
      latest.checkpointId > this.#tracker.lastCheckpointId
    ) {
      this.#tracker.restoreCounter(latest.checkpointId);
    }
    this.#restarts++;
    this.#restartedAfter = `attempt ${this.#current.number} failed: ${this.#lastFailure}`;
    this.#current = this.#current.next();
    log.warn(
      `job ${o.jobId}: restarting as attempt ${this.#current.number} (restart ${this.#restarts}) from ` +
        (latest === null ? "scratch" : describePoint(latest, o.jobId)),
    );
    this.#deploy(latest);
  }

  /** How to resume the job after it failed for good (`; …`), for its error message. */
  #resumeHint(): string {
    const o = this.#o;
    const latest = this.#latestWritten;
    const from = o.restoreFrom;
    return latest !== undefined
      ? `; its latest completed checkpoint is ${latest}: resume with ` +
        `resumeFrom({ jobId: "${o.jobId}", checkpointId: ${latest} })`
      : from !== null
      ? `; it completed no checkpoint of its own: resume again from where it started, with ` +
        `resumeFrom({ jobId: "${from.jobId}", checkpointId: ${from.checkpointId} })`
      : "; it has no completed checkpoint";
  }

  #cancelAttempt(): void {
    const workers = this.#o.workers();
    this.#cancelPending = new Set(workers.filter((w) => this.#deployedOn.has(w)));
    for (const w of workers) this.#toWorker(w, { t: "cancel-attempt" });
  }

  /**
   * Resolves once every live worker that ran subtasks of the current
   * (failed) attempt answered `attempt-cancelled`, or after
   * `cancellationTimeoutMs` (then it logs who still runs what), or when the
   * job ended meanwhile. Never rejects.
   */
  async #awaitCancellation(): Promise<void> {
    const o = this.#o;
    const attempt = this.#current.number;
    const startedAtMs = Date.now();
    const timeoutMs = o.cancellationTimeoutMs ?? DEFAULT_CANCELLATION_TIMEOUT_MS;
    for (;;) {
      if (this.#phase !== "restarting" || this.#current.number !== attempt) return;
      const decision = decideCancellationWait({
        pending: this.#cancelPending,
        live: new Set(o.workers()),
        startedAtMs,
        nowMs: Date.now(),
        timeoutMs,
      });
      if (decision.kind === "ended") {
        log.debug(
          `job ${o.jobId}: every subtask of attempt ${attempt} ended after ${
            Date.now() - startedAtMs
          } ms`,
        );
        return;
      }
      if (decision.kind === "timed-out") {
        const running = decision.workers.map((w) =>
          `${w} (ran ${(this.#deployment.get(w) ?? []).join(", ")})`
        );
        log.warn(
          `job ${o.jobId}: subtasks of attempt ${attempt} have not all ended within ` +
            `cancellationTimeoutMs ${timeoutMs} ms on workers ${running.join("; ")}; ` +
            `deploying attempt ${attempt + 1} anyway (nothing can kill a stuck subtask: ` +
            `sinks must fence the old attempt's writes)`,
          {
            name: "cancellation-timeout",
            jobId: o.jobId,
            attempt,
            workers: decision.workers.join(","),
          },
        );
        return;
      }
      // Re-check at least every 250 ms: a worker may be lost meanwhile.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(250, decision.deadlineMs - Date.now()));
        this.#cancelWake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#cancelWake = undefined;
    }
  }

  async #jobFinished(): Promise<void> {
    const o = this.#o;
    const result: JobExecutionResult = {
      jobId: o.jobId,
      jobName: o.graph.name,
      durationMs: Date.now() - this.#startedAt,
      restarts: this.#restarts,
      checkpoints: this.#tracker.counts,
      latestCheckpoint: this.#tracker.latestCompleted,
      summary: `${this.#tracker.summary()}; restarts: ${this.#restarts}`,
      metrics: this.#vertexMetrics(),
    };
    // Nothing is in flight any more: aborted checkpoints' shared blobs go.
    this.#retention.ended();
    await this.#retention.settled();
    if (!o.checkpointing.retainOnFinish) {
      await o.storage.discardJob(o.jobId).catch((e) =>
        log.warn(`job ${o.jobId}: cannot discard checkpoints: ${e}`)
      );
    }
    log.info(`job ${o.jobId} '${o.graph.name}' finished: ${result.summary}`);
    this.#end(result);
  }

  #vertexMetrics(): Record<string, VertexMetrics> {
    const out: Record<string, VertexMetrics> = {};
    for (const v of this.#o.graph.vertices) {
      let numRecordsIn = 0;
      let numRecordsOut = 0;
      let backPressured = 0;
      const operators = new Map<string, Map<string, number>>();
      for (let s = 0; s < v.parallelism; s++) {
        const m = this.#subtaskMetrics.get(this.#key(v.id, s));
        if (!m) continue;
        numRecordsIn += m.numRecordsIn;
        numRecordsOut += m.numRecordsOut;
        backPressured += m.backPressuredTimeMsPerSecond;
        for (const [uid, counters] of Object.entries(m.operators ?? {})) {
          const sums = operators.get(uid) ?? operators.set(uid, new Map()).get(uid)!;
          for (const [name, n] of Object.entries(counters)) {
            sums.set(name, (sums.get(name) ?? 0) + n);
          }
        }
      }
      out[v.id] = {
        name: v.name,
        numRecordsIn,
        numRecordsOut,
        backPressuredTimeMsPerSecond: backPressured / v.parallelism,
        operators: Object.fromEntries(
          [...operators].map(([uid, sums]) => [uid, Object.fromEntries(sums)]),
        ),
      };
    }
    return out;
  }

  #end(outcome: JobExecutionResult | Error): void {
    if (this.#phase === "done") return;
    this.#phase = "done";
    this.#savepoints.failAll(`job ${this.#o.jobId} ended`);
    clearTimeout(this.#timer);
    clearTimeout(this.#deployTimer);
    if (outcome instanceof Error) this.#reject(outcome);
    else this.#resolve(outcome);
  }

  #shutDown(): void {
    this.#subscription?.unsubscribe();
    // Workers may free what they hold for the job (cluster mode: its slot threads).
    for (const w of this.#o.workers()) this.#toWorker(w, { t: "release" });
  }
}
