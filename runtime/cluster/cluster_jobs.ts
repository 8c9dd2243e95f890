/**
 * The cluster coordinator's job table (Flink's `Dispatcher` view of its
 * jobs: running ones with their `JobMaster`, ended ones kept for `list`):
 * the jobs this coordinator runs or ran, the jobs that ended under an
 * earlier leader (served from the job store), and the locations of
 * completed REST savepoint operations. It decides what a job's status looks
 * like now; it sends nothing and stores nothing.
 *
 * ## Invariants
 *
 * - A job id is in the table at most once: running or ended here, or ended
 *   under an earlier leader (never both: a new leader serves a stored ended
 *   job and runs the others).
 * - A job whose `awaitingWorkers` is set has not run yet: its status is
 *   WAITING_FOR_RESOURCES, whatever its coordinator says.
 * - At most `retainedEndedJobs` ended jobs run here are kept; the oldest
 *   ended go first, with their savepoint locations.
 *
 * @module
 */

import type { JobCoordinator } from "./coordinator.ts";
import type { JobOutcome, JobStatus, SubmitRequest } from "./cluster_protocol.ts";

/** One job of the table: its submission, coordinator, status and outcome. */
export interface ClusterJob {
  /** The submission. */
  readonly request: SubmitRequest;
  /** Its coordinator (one for the job's life under this leader). */
  readonly coordinator: JobCoordinator;
  /** The status as last recorded (the coordinator's live facts are added by `statusOf`). */
  status: JobStatus;
  /** How it ended, once it did. */
  outcome?: JobOutcome;
  /** Not run yet: it waits for workers to register with this leader. */
  awaitingWorkers?: boolean;
  /** Cancelled while it waited for workers: cancelled as soon as it runs. */
  cancelRequested?: boolean;
}

/** A job that ended under an earlier leader: its status and outcome from the job store. */
export interface StoredEndedJob {
  /** Its status. */
  readonly status: JobStatus;
  /** How it ended. */
  readonly outcome: JobOutcome;
}

/** While jobs wait for workers to register with a new leader: when that ends, and the epoch. */
export interface WorkerRegistrationFacts {
  /** When the registration window ends, in epoch ms. */
  readonly until: number;
  /** The leader epoch workers register with. */
  readonly epoch: number;
}

/** The job table (see the module docs). */
export class ClusterJobs {
  readonly #jobs = new Map<string, ClusterJob>();
  readonly #storedEnded = new Map<string, StoredEndedJob>();
  /** Completed REST savepoint operations: job id -> trigger id -> location. */
  readonly #savepoints = new Map<string, Map<string, string>>();

  /** The job `jobId` run here, if known. */
  get(jobId: string): ClusterJob | undefined {
    return this.#jobs.get(jobId);
  }

  /** Whether `jobId` is a job run here. */
  has(jobId: string): boolean {
    return this.#jobs.has(jobId);
  }

  /** Adds a job run here. */
  add(job: ClusterJob): void {
    this.#jobs.set(job.request.jobId, job);
  }

  /** The jobs run here, in the order they were added. */
  values(): IterableIterator<ClusterJob> {
    return this.#jobs.values();
  }

  /** Serves `jobId`, which ended under an earlier leader (or cannot be resumed). */
  serveEnded(jobId: string, ended: StoredEndedJob): void {
    this.#storedEnded.set(jobId, ended);
  }

  /** The stored ended job `jobId`, if served. */
  storedEnded(jobId: string): StoredEndedJob | undefined {
    return this.#storedEnded.get(jobId);
  }

  /** Remembers that savepoint operation `triggerId` of `jobId` stored its savepoint at `location`. */
  rememberSavepoint(jobId: string, triggerId: string, location: string): void {
    const byTrigger = this.#savepoints.get(jobId) ??
      this.#savepoints.set(jobId, new Map()).get(jobId)!;
    byTrigger.set(triggerId, location);
  }

  /** Where savepoint operation `triggerId` of `jobId` stored its savepoint, if it completed. */
  savepointLocation(jobId: string, triggerId: string): string | undefined {
    return this.#savepoints.get(jobId)?.get(triggerId);
  }

  /**
   * The status of `job` now: as recorded for an ended one; for a running
   * one, its coordinator's attempt, last failure and wait for slots
   * (WAITING_FOR_RESOURCES while it waits), or, while it waits for workers
   * to register with a new leader (`registration`), WAITING_FOR_RESOURCES
   * saying so.
   *
   * @param now the current time, in epoch ms.
   */
  statusOf(job: ClusterJob, registration: WorkerRegistrationFacts, now: number): JobStatus {
    const c = job.coordinator;
    if (job.awaitingWorkers && job.status.status === "RUNNING") {
      const leftMs = Math.max(0, registration.until - now);
      return {
        ...job.status,
        status: "WAITING_FOR_RESOURCES",
        waitingForSlots: `waiting for workers to register with the leading coordinator ` +
          `(epoch ${registration.epoch}) before deploying attempt ${c.attempt} (${leftMs} ms left)`,
      };
    }
    const lastFailure = c.lastFailure;
    const restartedAfter = c.restartedAfter ?? job.status.restartedAfter;
    const waitingForSlots = c.waitingForSlots;
    return job.status.status === "RUNNING"
      ? {
        ...job.status,
        status: waitingForSlots === undefined ? "RUNNING" : "WAITING_FOR_RESOURCES",
        attempt: c.attempt,
        lastFailure,
        restartedAfter,
        waitingForSlots,
      }
      : { ...job.status, lastFailure, restartedAfter };
  }

  /**
   * Every job's status for `list`: running ones first, then ended ones, each
   * group newest first (by end, else start time).
   */
  statuses(registration: WorkerRegistrationFacts, now: number): JobStatus[] {
    const ended = (j: JobStatus) => Number(j.endedAt !== undefined);
    const stored = [...this.#storedEnded.values()].map((j) => j.status);
    return [...this.#jobs.values()].map((j) => this.statusOf(j, registration, now)).concat(stored)
      .sort((a, b) =>
        ended(a) - ended(b) ||
        (b.endedAt ?? b.startedAt) - (a.endedAt ?? a.startedAt)
      );
  }

  /**
   * Drops the oldest ended jobs run here beyond `keep`, with their savepoint locations.
   * @returns the ids dropped.
   */
  forgetEnded(keep: number): string[] {
    const ended = [...this.#jobs.values()].filter((j) => j.status.status !== "RUNNING")
      .sort((a, b) => (a.status.endedAt ?? 0) - (b.status.endedAt ?? 0));
    const dropped = ended.slice(0, Math.max(0, ended.length - keep)).map((j) => j.request.jobId);
    for (const jobId of dropped) {
      this.#jobs.delete(jobId);
      this.#savepoints.delete(jobId);
    }
    return dropped;
  }
}
