/**
 * The coordinator process (`cli.ts coordinator`): accepts job submissions,
 * runs one {@linkcode JobCoordinator} per job, tracks live workers by their
 * heartbeats, and answers `list` and `cancel`.
 *
 * ## Failure detection
 *
 * Worker heartbeats, the heartbeat timeout and NATS outages are
 * `heartbeat_monitor.ts`: a worker silent for `heartbeatTimeoutMs` fails the
 * attempts of the jobs it ran subtasks of, which restart from their latest
 * completed checkpoint on the workers left (full failover).
 *
 * ## High availability
 *
 * With `ha` (the `weir coordinator` process, through `ha/ha_coordinator.ts`)
 * this coordinator serves one leadership term: it records each job in the
 * job store (`ha/leader_job_records.ts`: on submission before it answers,
 * before each attempt deploys, on completed checkpoints within one sweep,
 * at the end), stamps its leader epoch on every message to workers, and
 * runs no job for `workerRegistrationMs` after `start` (workers register
 * with a new leader on its announcement): meanwhile its jobs show as
 * WAITING_FOR_RESOURCES, waiting for workers to register, and none is
 * deployed on the few workers heard first nor reported as having none. A
 * new leader `recover`s the stored jobs; a deposed one is `suspend`ed.
 * Without `ha`, jobs live in this process only.
 *
 * ## Structure
 *
 * Submissions are checked and accepted in `job_submission.ts` (the restore
 * point resolved, the job's coordinator options built, the job recorded in
 * the job store); the job table is `cluster_jobs.ts`; live workers are
 * `worker_pool.ts`, watched by `heartbeat_monitor.ts`; a new leader's
 * registration window is `ha/worker_registration.ts`.
 *
 * @module
 */

import type { Subscription, Transport, TransportMessage } from "../actor/types.ts";
import { decode, encode } from "../actor/codec.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import { JobCoordinator, JobSuspendedError } from "./coordinator.ts";
import type { LeaderJobRecords } from "./ha/leader_job_records.ts";
import type { StoredJob } from "./ha/job_store.ts";
import type { JobRecoveryPlan } from "./ha/job_recovery.ts";
import {
  failedRecovery,
  storedJobStatus,
  storedOutcome,
  takeoverReason,
} from "./ha/recovered_job.ts";
import { JobFailedError } from "./job_result.ts";
import { HeartbeatMonitor } from "./heartbeat_monitor.ts";
import { WorkerRegistrationWindow } from "./ha/worker_registration.ts";
import { type ClusterJob, ClusterJobs, type WorkerRegistrationFacts } from "./cluster_jobs.ts";
export { NatsConnectionLostError, WorkerLostError } from "./cluster_errors.ts";
import {
  acceptSubmission,
  checkSubmission,
  jobCoordinatorOptions,
  jobSpecReply,
  type ResumedJob,
  type SubmissionCheck,
} from "./job_submission.ts";
import type { RestorePoint } from "../task/messages.ts";
import { errorInfo } from "../task/messages.ts";
import {
  CANCEL_SUBJECT,
  type CancelReply,
  type ClusterOverview,
  type Heartbeat,
  HEARTBEAT_SUBJECT,
  JOB_SPEC_SUBJECT,
  JOB_STATUS_SUBJECT,
  type JobOutcome,
  type JobStatus,
  type JobStatusReply,
  LIST_SUBJECT,
  SAVEPOINT_SUBJECT,
  type SavepointReply,
  type SavepointRequest,
  STOP_SUBJECT,
  type StopRequest,
  SUBMIT_SUBJECT,
  type SubmitReply,
  type SubmitRequest,
} from "./cluster_protocol.ts";
import { logger } from "../log.ts";
import { INFO_SUBJECT } from "./cluster_protocol.ts";
import type { JobFacts, RestBackend, SavepointOrder } from "./rest/job_facts.ts";
import { answerJobInfo } from "./rest/job_info.ts";

const log = logger("cluster");

/** Options of {@linkcode ClusterCoordinator}. */
export interface ClusterCoordinatorOptions {
  /** The transport (NATS in production). */
  readonly transport: Transport;
  /** Checkpoint storage shared with every worker. */
  readonly storage: CheckpointStorage;
  /** The Object Store bucket behind `storage`, told to slot threads. */
  readonly checkpointBucket: string;
  /** A worker silent for this long is dead, in ms. Default 3000. */
  readonly heartbeatTimeoutMs?: number;
  /** How long subtasks may take to become ready (and to wait for workers), in ms. Default 60 000. */
  readonly deployTimeoutMs?: number;
  /** Ended jobs kept for `list`. Default 100. */
  readonly retainedEndedJobs?: number;
  /** High availability: this leader term's job records, and the worker registration window. */
  readonly ha?: {
    /** The job store as this leader term writes it. */
    readonly records: LeaderJobRecords;
    /** Nothing deploys for this long after `start`, in ms (workers register). */
    readonly workerRegistrationMs: number;
  } | undefined;
}

/** Runs the jobs of a cluster (see the module docs). */
export class ClusterCoordinator implements RestBackend {
  readonly #o: ClusterCoordinatorOptions;
  /** The job table (`cluster_jobs.ts`). */
  readonly #jobs = new ClusterJobs();
  /** Live workers and failure detection (`heartbeat_monitor.ts`). */
  readonly #heartbeats: HeartbeatMonitor;
  readonly #subscriptions: Subscription[] = [];
  #sweeper: ReturnType<typeof setInterval> | undefined;
  /** High availability: no job runs while workers register with this leader. */
  readonly #registration: WorkerRegistrationWindow;
  /** High availability: this term ended (`suspend`). */
  #suspended = false;

  constructor(options: ClusterCoordinatorOptions) {
    this.#o = options;
    this.#heartbeats = new HeartbeatMonitor(this.#jobs, this.#heartbeatTimeoutMs);
    this.#registration = new WorkerRegistrationWindow(options.ha?.workerRegistrationMs ?? 0);
  }

  get #heartbeatTimeoutMs(): number {
    return this.#o.heartbeatTimeoutMs ?? 3000;
  }

  /** Starts answering on the cluster subjects. */
  start(): void {
    const t = this.#o.transport;
    const on = (subject: string, handle: (m: TransportMessage) => void | Promise<void>) => {
      this.#subscriptions.push(t.subscribe(subject, (m) => {
        Promise.resolve()
          .then(() => handle(m))
          .catch((error) => log.error(`on ${subject}: ${describe(error)}`));
      }));
    };
    on(HEARTBEAT_SUBJECT, (m) => this.#heartbeats.heartbeat(decode(m.data) as Heartbeat));
    on(SUBMIT_SUBJECT, (m) => this.#onSubmit(m));
    on(LIST_SUBJECT, (m) => this.#reply(m, this.overview()));
    on(CANCEL_SUBJECT, (m) => this.#onCancel(m));
    on(JOB_SPEC_SUBJECT, (m) => this.#onJobSpec(m));
    on(SAVEPOINT_SUBJECT, (m) => this.#onSavepoint(m, false));
    on(STOP_SUBJECT, (m) => this.#onSavepoint(m, true));
    on(JOB_STATUS_SUBJECT, (m) => this.#onJobStatus(m));
    on(INFO_SUBJECT, (m) => this.#reply(m, answerJobInfo(this, decodeJobId(m), Date.now())));
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(50, this.#heartbeatTimeoutMs / 4));
    this.#registration.start();
  }

  /**
   * High availability: takes over a job of the job store as `plan` says
   * (`ha/job_recovery.ts`): resumes a running one (same job id, the plan's
   * attempt and restore point), serves an ended one's status and outcome,
   * or fails one that cannot be resumed (recording that). Call before `start`.
   */
  recover(stored: StoredJob, plan: JobRecoveryPlan): void {
    const request = stored.request;
    for (const sp of stored.savepoints ?? []) {
      this.#jobs.rememberSavepoint(request.jobId, sp.triggerId, sp.location);
    }
    if (plan.kind === "serve-ended") {
      const served = { status: storedJobStatus(stored), outcome: storedOutcome(stored) };
      this.#jobs.serveEnded(request.jobId, served);
      return;
    }
    if (plan.kind === "fail") {
      const failed = failedRecovery(stored, plan.reason, Date.now());
      log.error(`job ${request.jobId}: ${plan.reason}`);
      this.#jobs.serveEnded(request.jobId, failed);
      this.#o.ha?.records.ended(request.jobId, {
        status: "FAILED",
        endedAt: failed.status.endedAt!,
        outcome: failed.outcome,
        error: failed.error,
      }).catch((e) => log.warn(`job ${request.jobId}: cannot record its failure: ${e}`));
      return;
    }
    const coordinator = this.#jobCoordinator(request, plan.restoreFrom, {
      firstAttempt: plan.attempt,
      recoveredCheckpoints: plan.recoveredCheckpoints,
      restoreSettings: plan.fromSubmission
        ? stored.restoreSettings
        : { kind: "checkpoint", mode: "NO_CLAIM" },
    });
    log.info(
      `job ${request.jobId} '${request.graph.name}': taken over from the previous leader; ` +
        `resuming as attempt ${plan.attempt} from ` +
        (plan.restoreFrom === null
          ? "scratch"
          : `checkpoint ${plan.restoreFrom.checkpointId} of job ${plan.restoreFrom.jobId}`),
      { name: "job-recovered", jobId: request.jobId, attempt: plan.attempt },
    );
    const entry: ClusterJob = {
      request,
      coordinator,
      status: {
        ...storedJobStatus(stored),
        attempt: plan.attempt,
        restartedAfter: takeoverReason(this.#o.ha?.records.epoch ?? 0, stored.attempt),
      },
    };
    this.#jobs.add(entry);
    void this.#runJob(entry);
  }

  /**
   * High availability: this process lost its leadership. Stops answering
   * and sweeping, and suspends every running job (`JobCoordinator.suspend`):
   * nothing more goes to workers or to the job store; the next leader
   * resumes them.
   */
  suspend(): void {
    this.#suspended = true;
    this.#registration.close(); // jobs that never ran stay so: the next leader runs them
    clearInterval(this.#sweeper);
    for (const s of this.#subscriptions.splice(0)) s.unsubscribe();
    for (const job of this.#jobs.values()) {
      if (job.status.status === "RUNNING" && !job.awaitingWorkers) {
        job.coordinator.suspend("this coordinator is no longer the leader");
      }
    }
  }

  /** The jobs and live workers. */
  overview(): ClusterOverview {
    const now = Date.now();
    return {
      jobs: this.#jobs.statuses(this.#registrationFacts, now),
      workers: this.#heartbeats.workers.list(now),
    };
  }

  /**
   * Live slots, interleaved across workers (first slot of every worker, then
   * the second, ...), so round-robin deployment spreads a job over processes.
   */
  slots(): string[] {
    return this.#heartbeats.workers.slots();
  }

  /**
   * The coordinator's NATS connection was lost (a NATS outage, as seen from
   * here): no heartbeat can arrive meanwhile, so no worker is declared lost
   * until the connection is back (it would be a NATS outage reported as lost
   * workers). Call {@linkcode ClusterCoordinator.connectionRestored} when it is.
   */
  connectionLost(): void {
    this.#heartbeats.connectionLost();
  }

  /**
   * The coordinator's NATS connection was lost and re-established: core NATS
   * may have dropped control messages (acknowledgements, notifications), so
   * every running job fails its attempt with a `NatsConnectionLostError`
   * and restarts from its latest checkpoint rather than wait for a
   * checkpoint timeout. Workers are forgotten until their next heartbeat, so
   * the restart deploys only to workers that are connected again.
   */
  connectionRestored(): void {
    this.#heartbeats.connectionRestored();
  }

  /** Cancels every running job and stops answering. */
  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    for (const s of this.#subscriptions) s.unsubscribe();
    for (const job of this.#jobs.values()) {
      if (job.awaitingWorkers) job.cancelRequested = true;
      else job.coordinator.cancel();
    }
    this.#registration.close();
    await this.#o.transport.flush().catch(() => {});
  }

  #reply(m: TransportMessage, body: unknown): void {
    if (m.reply !== undefined) this.#o.transport.publish(m.reply, encode(body));
  }

  /** Declares silent workers dead and fails the attempts that used them. */
  #sweep(): void {
    for (const job of this.#jobs.values()) {
      if (job.status.status !== "RUNNING") continue;
      this.#o.ha?.records.checkpointCompleted(
        job.request.jobId,
        job.coordinator.latestCheckpointId,
      );
    }
    this.#heartbeats.expire(Date.now());
  }

  /** A submission (`job_submission.ts` checks and accepts it); the reply comes before the job runs. */
  async #onSubmit(m: TransportMessage): Promise<void> {
    let check: SubmissionCheck;
    try {
      check = checkSubmission(decode(m.data), (jobId) => this.#jobs.has(jobId));
    } catch (error) {
      check = { ok: false, error: describe(error) };
    }
    if (!check.ok) {
      this.#reply(m, { ok: false, error: check.error } satisfies SubmitReply);
      return;
    }
    const request = check.request;
    const outcome = await acceptSubmission(request, {
      storage: this.#o.storage,
      checkpointBucket: this.#o.checkpointBucket,
      records: this.#o.ha?.records,
      jobCoordinator: (r, restoreFrom) => this.#jobCoordinator(r, restoreFrom),
      now: Date.now,
    });
    if (outcome.kind === "refused") {
      this.#reply(m, { ok: false, error: outcome.error } satisfies SubmitReply);
      return;
    }
    const entry = outcome.entry;
    this.#jobs.add(entry);
    log.info(`job ${request.jobId} '${request.graph.name}' submitted from ${request.moduleUrl}`, {
      name: "job-submitted",
      jobId: request.jobId,
      jobName: request.graph.name,
    });
    this.#reply(m, { ok: true, jobId: request.jobId } satisfies SubmitReply);
    await this.#runJob(entry);
  }

  /**
   * Runs a job to its end and records how it ended (unless it was
   * suspended). While workers register with a new leader, the job waits
   * first (WAITING_FOR_RESOURCES), so its first attempt neither deploys on
   * the workers heard first nor reports that none is registered.
   */
  async #runJob(entry: ClusterJob): Promise<void> {
    const { coordinator, request } = entry;
    if (this.#registration.open) {
      entry.awaitingWorkers = true;
      await this.#registration.passed();
      entry.awaitingWorkers = false;
      if (this.#suspended) return; // never ran: the next leader takes it over
    }
    let outcome: JobOutcome;
    try {
      const running = coordinator.run();
      if (entry.cancelRequested) coordinator.cancel();
      const result = await running;
      entry.status = {
        ...entry.status,
        status: "FINISHED",
        attempt: coordinator.attempt,
        endedAt: Date.now(),
      };
      outcome = { t: "result", result };
    } catch (error) {
      if (error instanceof JobSuspendedError) return; // the next leader takes it over
      const cancelled = error instanceof JobFailedError && / was cancelled$/.test(error.message);
      entry.status = {
        ...entry.status,
        status: cancelled ? "CANCELED" : "FAILED",
        attempt: coordinator.attempt,
        endedAt: Date.now(),
        error: describe(error),
      };
      outcome = {
        t: "failed",
        error: errorInfo(error),
        resumable: error instanceof JobFailedError ? error.resumable : undefined,
      };
    }
    entry.outcome = outcome;
    const status = entry.status;
    if (status.status !== "RUNNING" && status.status !== "WAITING_FOR_RESOURCES") {
      this.#o.ha?.records.ended(request.jobId, {
        status: status.status,
        endedAt: status.endedAt ?? Date.now(),
        outcome,
        error: status.error,
      }).catch((e) => log.warn(`job ${request.jobId}: cannot record its end: ${e}`));
    }
    this.#forgetOldJobs();
  }

  /**
   * The job's coordinator, from its submission (`jobCoordinatorOptions`).
   * @throws {RangeError} for settings the coordinator refuses (e.g. a negative timeout).
   */
  #jobCoordinator(
    request: SubmitRequest,
    restoreFrom: RestorePoint | null,
    resumed?: ResumedJob,
  ): JobCoordinator {
    const o = this.#o;
    return new JobCoordinator(jobCoordinatorOptions(request, restoreFrom, {
      transport: o.transport,
      storage: o.storage,
      checkpointBucket: o.checkpointBucket,
      records: o.ha?.records,
      deployTimeoutMs: o.deployTimeoutMs,
      workers: () => this.#registration.open ? [] : this.slots(),
    }, resumed));
  }

  #onCancel(m: TransportMessage): void {
    const { jobId } = decode(m.data) as { jobId: string };
    this.#reply(m, this.cancelJob(jobId));
  }

  /** Cancels job `jobId` (`weir cancel`, the REST API's `PATCH /jobs/:jobid`); the reply says why not. */
  cancelJob(jobId: string): CancelReply {
    const job = this.#jobs.get(jobId);
    if (!job) return { ok: false, error: `no job ${jobId}` };
    if (job.status.status !== "RUNNING") {
      return { ok: false, error: `job ${jobId} is already ${job.status.status}` };
    }
    log.info(`job ${jobId}: cancel requested`);
    if (job.awaitingWorkers) job.cancelRequested = true;
    else job.coordinator.cancel();
    return { ok: true };
  }

  /** What the REST API and `weir info` show of job `jobId` (`rest/job_facts.ts`), if known. */
  jobFacts(jobId: string): JobFacts | undefined {
    const job = this.#jobs.get(jobId);
    if (!job) return undefined;
    const c = job.coordinator;
    return {
      status: this.#status(job),
      graph: job.request.graph,
      checkpointing: job.request.checkpointing,
      metrics: c.liveMetrics,
      checkpoints: c.checkpointStats,
      placement: c.placement,
      restarts: c.restarts,
      subtaskAttempts: c.subtaskAttempts,
      failovers: c.failovers,
    };
  }

  /**
   * Takes a savepoint of job `order.jobId`, or stops it with one (REST API).
   * @returns the savepoint's path, once stored.
   * @throws (rejects) when the job is unknown or not running, or the savepoint fails.
   */
  savepoint(order: SavepointOrder): Promise<string> {
    const job = this.#jobs.get(order.jobId);
    if (!job || job.status.status !== "RUNNING") {
      return Promise.reject(
        new Error(job ? `job ${order.jobId} is ${job.status.status}` : `no job ${order.jobId}`),
      );
    }
    if (job.awaitingWorkers) {
      return Promise.reject(
        new Error(
          `job ${order.jobId} is not deployed yet: it waits for workers to register with the ` +
            `new leading coordinator; try again in a moment`,
        ),
      );
    }
    log.info(
      `job ${order.jobId}: ${order.stop ? "stop with savepoint" : "savepoint"} requested` +
        (order.directory === undefined ? "" : ` into ${order.directory}`),
    );
    const done = order.stop
      ? job.coordinator.stopWithSavepoint({ directory: order.directory, drain: order.drain })
      : job.coordinator.triggerSavepoint(order.directory);
    const triggerId = order.triggerId;
    if (triggerId === undefined) return done;
    return done.then((location) => {
      // Recorded, so a new leader still answers for it (`GET /jobs/:id/savepoints/:trigger`).
      this.#jobs.rememberSavepoint(order.jobId, triggerId, location);
      this.#o.ha?.records.savepointCompleted(order.jobId, triggerId, location, Date.now());
      return location;
    });
  }

  /** This coordinator's leader epoch (0 without high availability), for REST trigger ids. */
  leaderEpoch(): number {
    return this.#o.ha?.records.epoch ?? 0;
  }

  /**
   * Where savepoint operation `triggerId` of job `jobId` stored its savepoint,
   * when it completed under this leader or one before it (job store).
   */
  savepointLocation(jobId: string, triggerId: string): string | undefined {
    return this.#jobs.savepointLocation(jobId, triggerId);
  }

  /** Serves a savepoint trigger or a stop-with-savepoint; replies once the savepoint is stored. */
  async #onSavepoint(m: TransportMessage, stop: boolean): Promise<void> {
    const request = decode(m.data) as StopRequest | SavepointRequest;
    try {
      const path = await this.savepoint({
        jobId: request.jobId,
        directory: request.directory,
        stop,
        drain: stop && (request as StopRequest).drain === true,
      });
      this.#reply(m, { ok: true, path } satisfies SavepointReply);
    } catch (error) {
      // A job unknown or not running is answered with the bare message, as before.
      const known = this.#jobs.get(request.jobId)?.status.status === "RUNNING";
      const text = known ? describe(error) : (error as Error).message;
      this.#reply(m, { ok: false, error: text } satisfies SavepointReply);
    }
  }

  #onJobSpec(m: TransportMessage): void {
    const jobId = String(decodeJobId(m));
    this.#reply(m, jobSpecReply(jobId, this.#jobs.get(jobId), this.#o.checkpointBucket));
  }

  #status(job: ClusterJob): JobStatus {
    return this.#jobs.statusOf(job, this.#registrationFacts, Date.now());
  }

  /** Until when jobs wait for workers to register with this leader, and its epoch. */
  get #registrationFacts(): WorkerRegistrationFacts {
    return { until: this.#registration.until, epoch: this.#o.ha?.records.epoch ?? 0 };
  }

  #onJobStatus(m: TransportMessage): void {
    const { jobId } = decode(m.data) as { jobId: string };
    const job = this.#jobs.get(jobId);
    const stored = this.#jobs.storedEnded(jobId);
    if (!job && stored) return this.#reply(m, { ok: true, ...stored } satisfies JobStatusReply);
    if (!job) {
      return this.#reply(m, { ok: false, error: `no job ${jobId}` } satisfies JobStatusReply);
    }
    this.#reply(
      m,
      {
        ok: true,
        status: this.#status(job),
        outcome: job.outcome,
      } satisfies JobStatusReply,
    );
  }

  #forgetOldJobs(): void {
    for (const jobId of this.#jobs.forgetEnded(this.#o.retainedEndedJobs ?? 100)) {
      this.#o.ha?.records.forget(jobId);
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** The `jobId` of a request body, as sent (checked by the one who answers). */
function decodeJobId(m: TransportMessage): unknown {
  return (decode(m.data) as { jobId?: unknown } | null)?.jobId;
}
