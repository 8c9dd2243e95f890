/**
 * The coordinator process (`cli.ts coordinator`): accepts job submissions,
 * runs one {@linkcode JobCoordinator} per job, tracks live workers by their
 * heartbeats, and answers `list` and `cancel`.
 *
 * ## Failure detection
 *
 * Each worker publishes a heartbeat every `heartbeatIntervalMs`. A worker
 * not heard from for `heartbeatTimeoutMs` is dead: its slots leave the pool,
 * and every job whose current attempt had a subtask on one of them fails
 * that attempt. The job's restart strategy then restarts it from its latest
 * completed checkpoint on the workers that are left (Flink's heartbeat
 * timeout between JobManager and TaskManagers; full failover). A worker that
 * comes back (a new process) joins the pool for later deployments.
 *
 * Limitation: the coordinator keeps its jobs in memory. A restarted
 * coordinator process does not resume the jobs of the one before it (their
 * checkpoints stay in the bucket and can be resumed with `resumeFrom`).
 *
 * @module
 */

import type { Subscription, Transport, TransportMessage } from "../actor/types.ts";
import { decode, encode } from "../actor/codec.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import { JobCoordinator } from "./coordinator.ts";
import { JobFailedError } from "./job_result.ts";
import { checkRestorable, resolveResume, ResumeError } from "./local_executor.ts";
import {
  OBJECT_STORE_SAVEPOINT_SCHEME,
  parseSavepointPath,
  readSavepointMetadata,
} from "../checkpoint/savepoint_storage.ts";
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
  type JobSpecReply,
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
}

interface WorkerEntry {
  heartbeat: Heartbeat;
  lastSeen: number;
}

interface JobEntry {
  readonly request: SubmitRequest;
  readonly coordinator: JobCoordinator;
  status: JobStatus;
  outcome?: JobOutcome;
}

/** Runs the jobs of a cluster (see the module docs). */
export class ClusterCoordinator {
  readonly #o: ClusterCoordinatorOptions;
  readonly #workers = new Map<string, WorkerEntry>();
  readonly #jobs = new Map<string, JobEntry>();
  readonly #subscriptions: Subscription[] = [];
  #sweeper: ReturnType<typeof setInterval> | undefined;

  constructor(options: ClusterCoordinatorOptions) {
    this.#o = options;
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
    on(HEARTBEAT_SUBJECT, (m) => this.#onHeartbeat(decode(m.data) as Heartbeat));
    on(SUBMIT_SUBJECT, (m) => this.#onSubmit(m));
    on(LIST_SUBJECT, (m) => this.#reply(m, this.overview()));
    on(CANCEL_SUBJECT, (m) => this.#onCancel(m));
    on(JOB_SPEC_SUBJECT, (m) => this.#onJobSpec(m));
    on(SAVEPOINT_SUBJECT, (m) => this.#onSavepoint(m, false));
    on(STOP_SUBJECT, (m) => this.#onSavepoint(m, true));
    on(JOB_STATUS_SUBJECT, (m) => this.#onJobStatus(m));
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(50, this.#heartbeatTimeoutMs / 4));
  }

  /** The jobs and live workers. */
  overview(): ClusterOverview {
    const now = Date.now();
    const jobs = [...this.#jobs.values()].map((j) => this.#status(j)).sort((a, b) =>
      Number(a.status !== "RUNNING") - Number(b.status !== "RUNNING") ||
      (b.endedAt ?? b.startedAt) - (a.endedAt ?? a.startedAt)
    );
    const workers = [...this.#workers.values()].map((w) => ({
      workerId: w.heartbeat.workerId,
      host: w.heartbeat.host,
      pid: w.heartbeat.pid,
      slots: w.heartbeat.slots.length,
      lastHeartbeatAgoMs: now - w.lastSeen,
    }));
    return { jobs, workers };
  }

  /**
   * Live slots, interleaved across workers (first slot of every worker, then
   * the second, ...), so round-robin deployment spreads a job over processes.
   */
  slots(): string[] {
    const lists = [...this.#workers.values()]
      .sort((a, b) => a.heartbeat.workerId.localeCompare(b.heartbeat.workerId))
      .map((w) => w.heartbeat.slots);
    const out: string[] = [];
    const most = Math.max(0, ...lists.map((l) => l.length));
    for (let i = 0; i < most; i++) for (const l of lists) if (i < l.length) out.push(l[i]!);
    return out;
  }

  /**
   * The coordinator's NATS connection was lost and re-established: core NATS
   * may have dropped control messages (acknowledgements, notifications), so
   * every running job fails its attempt and restarts from its latest
   * checkpoint rather than wait for a checkpoint timeout. Workers are
   * forgotten until their next heartbeat, so the restart deploys only to
   * workers that are connected again.
   */
  connectionRestored(): void {
    // Workers count again once a heartbeat shows they reconnected too: a
    // deployment sent to a worker still disconnected would be lost.
    this.#workers.clear();
    for (const job of this.#jobs.values()) {
      if (job.status.status !== "RUNNING") continue;
      job.coordinator.failAttempt(
        new Error(
          `the coordinator lost its NATS connection and reconnected: messages of job ` +
            `${job.request.jobId} may have been lost`,
        ),
      );
    }
  }

  /** Cancels every running job and stops answering. */
  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    for (const s of this.#subscriptions) s.unsubscribe();
    for (const job of this.#jobs.values()) job.coordinator.cancel();
    await this.#o.transport.flush().catch(() => {});
  }

  #reply(m: TransportMessage, body: unknown): void {
    if (m.reply !== undefined) this.#o.transport.publish(m.reply, encode(body));
  }

  #onHeartbeat(hb: Heartbeat): void {
    if (!/^[A-Za-z0-9_-]+$/.test(hb.workerId)) {
      log.warn(`ignoring a heartbeat with an invalid worker id ${JSON.stringify(hb.workerId)}`);
      return;
    }
    const known = this.#workers.get(hb.workerId);
    if (known && known.heartbeat.instance !== hb.instance) {
      // Another process took the id: the one before it is gone (restarted at
      // once, faster than the heartbeat timeout), or two workers share the id.
      this.#workers.delete(hb.workerId);
      this.#workerLost(
        known,
        `was replaced by another process with the same id (pid ${known.heartbeat.pid} -> ` +
          `${hb.pid}; two live workers must not share an id)`,
      );
    }
    if (!this.#workers.has(hb.workerId)) {
      log.info(
        `worker ${hb.workerId} (${hb.host}, pid ${hb.pid}) joined with ${hb.slots.length} slots`,
        { name: "worker-joined", workerId: hb.workerId, pid: hb.pid, slots: hb.slots.length },
      );
    }
    this.#workers.set(hb.workerId, { heartbeat: hb, lastSeen: Date.now() });
  }
  /** Declares silent workers dead and fails the attempts that used them. */
  #sweep(): void {
    const now = Date.now();
    for (const [id, w] of this.#workers) {
      const silentMs = now - w.lastSeen;
      if (silentMs < this.#heartbeatTimeoutMs) continue;
      this.#workers.delete(id);
      this.#workerLost(w, `sent no heartbeat for ${silentMs} ms`);
    }
  }

  /** Fails the current attempt of every running job with a subtask on `w`'s slots. */
  #workerLost(w: WorkerEntry, why: string): void {
    const hb = w.heartbeat;
    log.warn(`worker ${hb.workerId} (${hb.host}, pid ${hb.pid}) lost: it ${why}`, {
      name: "worker-lost",
      workerId: hb.workerId,
      pid: hb.pid,
      reason: why,
    });
    const lost = new Set(hb.slots);
    for (const job of this.#jobs.values()) {
      if (job.status.status !== "RUNNING") continue;
      if (![...job.coordinator.deployedWorkers].some((s) => lost.has(s))) continue;
      job.coordinator.failAttempt(
        new WorkerLostError(
          `Worker ${hb.workerId} (${hb.host}, pid ${hb.pid}) running subtasks of job ` +
            `${job.request.jobId} ${why}`,
        ),
      );
    }
  }

  async #onSubmit(m: TransportMessage): Promise<void> {
    let request: SubmitRequest;
    try {
      request = decode(m.data) as SubmitRequest;
      if (!/^[A-Za-z0-9_-]+$/.test(request.jobId)) {
        throw new TypeError(`invalid job id ${JSON.stringify(request.jobId)}`);
      }
      if (this.#jobs.has(request.jobId)) {
        throw new Error(`a job with id ${request.jobId} was already submitted`);
      }
    } catch (error) {
      this.#reply(m, { ok: false, error: describe(error) } satisfies SubmitReply);
      return;
    }
    const o = this.#o;
    let restoreFrom: RestorePoint | null = null;
    try {
      if (request.resume?.savepointPath !== undefined) {
        restoreFrom = await this.#resolveSavepoint(request);
      } else if (request.resume) {
        restoreFrom = await resolveResume(o.storage, request.resume, request.graph);
      }
    } catch (error) {
      this.#reply(m, { ok: false, error: describe(error) } satisfies SubmitReply);
      return;
    }
    const coordinator = new JobCoordinator({
      transport: o.transport,
      jobId: request.jobId,
      graph: request.graph,
      storage: o.storage,
      checkpointing: request.checkpointing,
      restartStrategy: request.restartStrategy,
      workers: () => this.slots(),
      restoreFrom,
      deployTimeoutMs: o.deployTimeoutMs ?? 60_000,
      savepointStorage: (directory) => this.#savepointStorage(directory),
      restoreSettings: {
        kind: request.resume?.savepointPath !== undefined ? "savepoint" : "checkpoint",
        mode: request.resume?.restoreMode ?? "NO_CLAIM",
      },
    });
    const entry: JobEntry = {
      request,
      coordinator,
      status: {
        jobId: request.jobId,
        name: request.graph.name,
        status: "RUNNING",
        attempt: 0,
        startedAt: Date.now(),
        moduleUrl: request.moduleUrl,
      },
    };
    this.#jobs.set(request.jobId, entry);
    log.info(`job ${request.jobId} '${request.graph.name}' submitted from ${request.moduleUrl}`, {
      name: "job-submitted",
      jobId: request.jobId,
      jobName: request.graph.name,
    });
    this.#reply(m, { ok: true, jobId: request.jobId } satisfies SubmitReply);
    let outcome: JobOutcome;
    try {
      const result = await coordinator.run();
      entry.status = {
        ...entry.status,
        status: "FINISHED",
        attempt: coordinator.attempt,
        endedAt: Date.now(),
      };
      outcome = { t: "result", result };
    } catch (error) {
      const cancelled = error instanceof JobFailedError && / was cancelled$/.test(error.message);
      entry.status = {
        ...entry.status,
        status: cancelled ? "CANCELED" : "FAILED",
        attempt: coordinator.attempt,
        endedAt: Date.now(),
        error: describe(error),
      };
      outcome = { t: "failed", error: errorInfo(error) };
    }
    entry.outcome = outcome;
    this.#forgetOldJobs();
  }

  #onCancel(m: TransportMessage): void {
    const { jobId } = decode(m.data) as { jobId: string };
    const job = this.#jobs.get(jobId);
    if (!job) return this.#reply(m, { ok: false, error: `no job ${jobId}` } satisfies CancelReply);
    if (job.status.status !== "RUNNING") {
      return this.#reply(
        m,
        {
          ok: false,
          error: `job ${jobId} is already ${job.status.status}`,
        } satisfies CancelReply,
      );
    }
    log.info(`job ${jobId}: cancel requested`);
    job.coordinator.cancel();
    this.#reply(m, { ok: true } satisfies CancelReply);
  }

  /**
   * The storage of a savepoint directory: the checkpoint bucket, the only one
   * every slot thread reads (so a savepoint can be restored on any worker).
   * @throws {RangeError} for any other directory.
   */
  #savepointStorage(directory: string | undefined): CheckpointStorage {
    const bucket = `${OBJECT_STORE_SAVEPOINT_SCHEME}${this.#o.checkpointBucket}`;
    if (directory === undefined || directory.replace(/\/+$/, "") === bucket) {
      return this.#o.storage;
    }
    throw new RangeError(
      `a cluster stores savepoints in its checkpoint bucket, which every worker reads: ` +
        `give no directory, or ${bucket}`,
    );
  }

  /** Finds and checks the savepoint a submission restores (it must be in the checkpoint bucket). */
  async #resolveSavepoint(request: SubmitRequest): Promise<RestorePoint> {
    const path = request.resume!.savepointPath!;
    let where;
    try {
      where = parseSavepointPath(path);
    } catch (error) {
      throw new ResumeError(`Cannot restore savepoint: ${(error as Error).message}`);
    }
    if (where.kind !== "object-store" || where.bucket !== this.#o.checkpointBucket) {
      throw new ResumeError(
        `Cannot restore savepoint ${path} on this cluster: it restores savepoints in its ` +
          `checkpoint bucket (${OBJECT_STORE_SAVEPOINT_SCHEME}${this.#o.checkpointBucket}/…), ` +
          `which every worker reads`,
      );
    }
    let meta;
    try {
      meta = await readSavepointMetadata(this.#o.storage, where.savepointId);
    } catch (error) {
      throw new ResumeError(`Cannot restore savepoint ${path}: ${(error as Error).message}`);
    }
    checkRestorable(meta, request.graph, {
      what: `savepoint ${path}`,
      allowNonRestoredState: request.resume?.allowNonRestoredState ?? false,
    });
    return { jobId: where.savepointId, checkpointId: meta.checkpointId };
  }

  /** Serves a savepoint trigger or a stop-with-savepoint; replies once the savepoint is stored. */
  async #onSavepoint(m: TransportMessage, stop: boolean): Promise<void> {
    const request = decode(m.data) as StopRequest | SavepointRequest;
    const job = this.#jobs.get(request.jobId);
    if (!job || job.status.status !== "RUNNING") {
      const error = job
        ? `job ${request.jobId} is ${job.status.status}`
        : `no job ${request.jobId}`;
      return this.#reply(m, { ok: false, error } satisfies SavepointReply);
    }
    log.info(
      `job ${request.jobId}: ${stop ? "stop with savepoint" : "savepoint"} requested` +
        (request.directory === undefined ? "" : ` into ${request.directory}`),
    );
    try {
      const path = stop
        ? await job.coordinator.stopWithSavepoint({
          directory: request.directory,
          drain: (request as StopRequest).drain === true,
        })
        : await job.coordinator.triggerSavepoint(request.directory);
      this.#reply(m, { ok: true, path } satisfies SavepointReply);
    } catch (error) {
      this.#reply(m, { ok: false, error: describe(error) } satisfies SavepointReply);
    }
  }

  #onJobSpec(m: TransportMessage): void {
    const { jobId } = decode(m.data) as { jobId: string };
    const job = this.#jobs.get(jobId);
    if (!job || job.status.status !== "RUNNING") {
      return this.#reply(m, { ok: false, error: `no running job ${jobId}` } satisfies JobSpecReply);
    }
    const r = job.request;
    this.#reply(
      m,
      {
        ok: true,
        spec: {
          jobId,
          moduleUrl: r.moduleUrl,
          args: r.args,
          fingerprint: r.graph.fingerprint,
          checkpointBucket: this.#o.checkpointBucket,
        },
      } satisfies JobSpecReply,
    );
  }

  #status(job: JobEntry): JobStatus {
    const c = job.coordinator;
    const lastFailure = c.lastFailure;
    const restartedAfter = c.restartedAfter;
    return job.status.status === "RUNNING"
      ? {
        ...job.status,
        attempt: c.attempt,
        lastFailure,
        restartedAfter,
        waitingForSlots: c.waitingForSlots,
      }
      : { ...job.status, lastFailure, restartedAfter };
  }

  #onJobStatus(m: TransportMessage): void {
    const { jobId } = decode(m.data) as { jobId: string };
    const job = this.#jobs.get(jobId);
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
    const keep = this.#o.retainedEndedJobs ?? 100;
    const ended = [...this.#jobs.values()].filter((j) => j.status.status !== "RUNNING")
      .sort((a, b) => (a.status.endedAt ?? 0) - (b.status.endedAt ?? 0));
    for (const j of ended.slice(0, Math.max(0, ended.length - keep))) {
      this.#jobs.delete(j.request.jobId);
    }
  }
}

/** A worker stopped heartbeating while it ran subtasks of a job. */
export class WorkerLostError extends Error {
  /** The error class name. */
  override name = "WorkerLostError";
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
