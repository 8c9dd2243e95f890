/**
 * A leader's writes to the job store during one leadership term (epoch):
 * the cluster coordinator calls it at each point of a job's life that a
 * new leader must know about, and it keeps the last record of each job so
 * a write only changes what changed. See `job_store.ts` for the record and
 * its fencing.
 *
 * | When | Written | Awaited by |
 * |---|---|---|
 * | submission accepted | the whole record, RUNNING | the submit reply (a client never waits for a job the store lacks) |
 * | before attempt *n* deploys | `attempt: n` | the deployment (so a new leader's attempts are above it) |
 * | a checkpoint completed | `latestCheckpointId` | nothing (the coordinator's sweep, off the record path) |
 * | the job ended | status, end time, outcome | nothing |
 *
 * Writes that fail because NATS cannot be reached are retried for up to
 * `retryForMs`; a {@linkcode JobStoreFencedError} (a newer leader wrote the
 * record) is never retried.
 *
 * @module
 */

import { delay } from "../../actor/async.ts";
import { logger } from "../../log.ts";
import type { RestorePoint } from "../../task/messages.ts";
import type { JobOutcome, JobStatusName, SubmitRequest } from "../cluster_protocol.ts";
import {
  type JobStore,
  JobStoreFencedError,
  MAX_STORED_SAVEPOINTS,
  type StoredJob,
  type StoredRestoreSettings,
} from "./job_store.ts";

const log = logger("ha");

/** Options of {@linkcode LeaderJobRecords}. */
export interface LeaderJobRecordsOptions {
  /** The job store. */
  readonly store: JobStore;
  /** This leader's epoch, written into every record. */
  readonly epoch: number;
  /** How long a write retries while NATS cannot be reached, in ms. Default 10 000. */
  readonly retryForMs?: number;
}

/** The job store as one leader term writes it; see the module docs. */
export class LeaderJobRecords {
  readonly #o: LeaderJobRecordsOptions;
  readonly #records = new Map<string, StoredJob>();

  /** Keeps the options; no I/O until a write. */
  constructor(options: LeaderJobRecordsOptions) {
    this.#o = options;
  }

  /** This leader's epoch. */
  get epoch(): number {
    return this.#o.epoch;
  }

  /** Remembers a record read from the store (a job this leader took over). */
  adopt(job: StoredJob): void {
    this.#records.set(job.request.jobId, job);
  }

  /**
   * Writes a newly submitted job, RUNNING.
   * @throws {JobStoreFencedError} when a newer leader wrote the record.
   * @throws {Error} when NATS stayed unreachable for `retryForMs`.
   */
  submitted(job: {
    readonly request: SubmitRequest;
    readonly restoreFrom: RestorePoint | null;
    readonly restoreSettings: StoredRestoreSettings;
    readonly submittedAt: number;
  }): Promise<void> {
    return this.#write({
      ...job,
      status: "RUNNING",
      attempt: 0,
      leaderEpoch: this.#o.epoch,
    });
  }

  /**
   * Records that attempt `attempt` of `jobId` is about to deploy; resolves
   * at once when the store already has it (or a higher one).
   * @throws {JobStoreFencedError} when a newer leader wrote the record.
   * @throws {Error} when NATS stayed unreachable for `retryForMs`, or the job is unknown.
   */
  async attemptDeploying(jobId: string, attempt: number): Promise<void> {
    const last = this.#last(jobId);
    if (last.attempt >= attempt) return;
    await this.#write({ ...last, attempt });
  }

  /** Records checkpoint `checkpointId` of `jobId` as completed, in the background, when new. */
  checkpointCompleted(jobId: string, checkpointId: number | undefined): void {
    const last = this.#records.get(jobId);
    if (last === undefined || checkpointId === undefined) return;
    if ((last.latestCheckpointId ?? 0) >= checkpointId) return;
    this.#write({ ...last, latestCheckpointId: checkpointId }).catch((error) =>
      log.warn(`job ${jobId}: cannot record checkpoint ${checkpointId} in the job store: ${error}`)
    );
  }

  /**
   * Records savepoint operation `triggerId` of `jobId` as completed at
   * `location`, in the background (the job record keeps the latest
   * {@linkcode MAX_STORED_SAVEPOINTS}); a write that fails is logged.
   */
  savepointCompleted(
    jobId: string,
    triggerId: string,
    location: string,
    completedAt: number,
  ): void {
    const last = this.#records.get(jobId);
    if (last === undefined) return;
    const savepoints = [...(last.savepoints ?? []), { triggerId, location, completedAt }]
      .slice(-MAX_STORED_SAVEPOINTS);
    this.#write({ ...last, savepoints }).catch((error) =>
      log.warn(
        `job ${jobId}: cannot record savepoint ${location} (trigger ${triggerId}) in the job ` +
          `store: ${error}`,
      )
    );
  }

  /**
   * Records that `jobId` ended.
   * @throws {JobStoreFencedError} when a newer leader wrote the record.
   * @throws {Error} when NATS stayed unreachable for `retryForMs`, or the job is unknown.
   */
  async ended(jobId: string, end: {
    readonly status: Exclude<JobStatusName, "RUNNING">;
    readonly endedAt: number;
    readonly outcome: JobOutcome;
    readonly error?: string | undefined;
  }): Promise<void> {
    await this.#write({ ...this.#last(jobId), ...end });
  }

  /** Deletes the record of an ended job no longer kept, in the background. */
  forget(jobId: string): void {
    this.#records.delete(jobId);
    this.#o.store.remove(jobId).catch((error) =>
      log.warn(`job ${jobId}: cannot delete its record from the job store: ${error}`)
    );
  }

  #last(jobId: string): StoredJob {
    const last = this.#records.get(jobId);
    if (last === undefined) {
      throw new Error(`job ${jobId} has no record in the job store of this leader`);
    }
    return last;
  }

  async #write(job: StoredJob): Promise<void> {
    const record: StoredJob = { ...job, leaderEpoch: this.#o.epoch };
    this.#records.set(record.request.jobId, record);
    const until = Date.now() + (this.#o.retryForMs ?? 10_000);
    for (let pauseMs = 100;; pauseMs = Math.min(1000, pauseMs * 2)) {
      try {
        await this.#o.store.put(record);
        return;
      } catch (error) {
        if (error instanceof JobStoreFencedError || Date.now() >= until) throw error;
        await delay(pauseMs);
      }
    }
  }
}
