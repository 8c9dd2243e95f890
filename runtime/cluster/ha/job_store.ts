/**
 * The job store of a highly available cluster (Flink's `JobGraphStore`,
 * now `ExecutionPlanStore`, together with its `JobResultStore`): one NATS
 * KV key per job (bucket `weir-jobs` by default, key = job id) holding a
 * {@linkcode StoredJob}: the submission (module URL, arguments, graph
 * summary, checkpointing, restart strategy, resume request), the resolved
 * restore point it started from, its status, the highest attempt deployed,
 * the latest completed checkpoint id and, once ended, its outcome.
 *
 * The leader writes a job's record on submission (before it answers the
 * client), before it deploys each attempt, on each completed checkpoint
 * (within one sweep of the coordinator, off the record path) and when the
 * job ends. A new leader reads every record to resume running jobs and to
 * answer for ended ones.
 *
 * ## Fencing
 *
 * Each record names the leader epoch that wrote it. A write is a
 * compare-and-set on the revision just read, and is refused when the record
 * was written by a higher epoch ({@linkcode JobStoreFencedError}): a deposed
 * leader cannot overwrite what the new leader wrote. Writes of one job are
 * serialized in call order.
 *
 * Values are MessagePack (the codec of every Weir message); a record is
 * bounded by the KV value limit (NATS `max_payload`, 1 MiB by default),
 * which a graph summary stays far below.
 *
 * @module
 */

import type { kvApi, NatsConnection } from "../../actor/nats_deps.ts";
import { decode, encode } from "../../actor/codec.ts";
import type { RestorePoint } from "../../task/messages.ts";
import type { RestoreMode } from "../../api/executor.ts";
import type { JobOutcome, JobStatusName, SubmitRequest } from "../cluster_protocol.ts";
import { casWrite, openBucket, readKey } from "./kv_cas.ts";

/** How a stored job's `restoreFrom` is to be restored (see `RestoreMode`). */
export interface StoredRestoreSettings {
  /** Whether the restore point is a checkpoint or a savepoint. */
  readonly kind: "checkpoint" | "savepoint";
  /** Who owns the restored snapshot. */
  readonly mode: RestoreMode;
}

/** One job as the store keeps it. */
export interface StoredJob {
  /** The submission as the client sent it. */
  readonly request: SubmitRequest;
  /** The restore point resolved at submission (`null`: from scratch). */
  readonly restoreFrom: RestorePoint | null;
  /** How `restoreFrom` is restored. */
  readonly restoreSettings: StoredRestoreSettings;
  /** The job's status (Flink's names). */
  readonly status: JobStatusName;
  /** The highest attempt number deployed (written before its deployment). */
  readonly attempt: number;
  /** The latest completed checkpoint id the leader knew of, if any. */
  readonly latestCheckpointId?: number | undefined;
  /** Submission time, in ms since the epoch. */
  readonly submittedAt: number;
  /** End time, in ms since the epoch, once ended. */
  readonly endedAt?: number | undefined;
  /** Why it failed, once it did (`name: message`). */
  readonly error?: string | undefined;
  /** How it ended, once it did. */
  readonly outcome?: JobOutcome | undefined;
  /** The leader epoch that wrote this record. */
  readonly leaderEpoch: number;
  /**
   * Savepoints of the job completed through REST triggers, newest last (at
   * most {@linkcode MAX_STORED_SAVEPOINTS}), so a new leader still answers
   * `GET /jobs/:jobid/savepoints/:triggerid` for them.
   */
  readonly savepoints?: readonly StoredSavepoint[] | undefined;
}

/** A completed savepoint operation as the job store keeps it. */
export interface StoredSavepoint {
  /** The REST trigger id (`request-id`). */
  readonly triggerId: string;
  /** The savepoint's path. */
  readonly location: string;
  /** When it completed, in ms since the epoch. */
  readonly completedAt: number;
}

/** How many completed savepoint operations a job record keeps (the oldest go first). */
export const MAX_STORED_SAVEPOINTS = 20;

/** A write was refused: a leader of a higher epoch wrote the record (this leader was deposed). */
export class JobStoreFencedError extends Error {
  /** The error class name. */
  override name = "JobStoreFencedError";
}

/** The job store over one KV bucket; see the module docs. */
export class JobStore {
  readonly #kv: kvApi.KV;
  /** The bucket's name. */
  readonly bucket: string;
  readonly #queues = new Map<string, Promise<unknown>>();

  private constructor(bucket: string, kv: kvApi.KV) {
    this.bucket = bucket;
    this.#kv = kv;
  }

  /**
   * Opens KV bucket `bucket`, creating it when missing.
   * @throws {Error} naming the bucket when it can be neither created nor opened.
   */
  static async open(connection: NatsConnection, bucket: string): Promise<JobStore> {
    return new JobStore(bucket, await openBucket(connection, bucket));
  }

  /**
   * Every stored job, in submission order, and the records that cannot be
   * decoded (each with why, naming bucket and key; they stay in the store).
   * @throws {Error} when NATS cannot be reached.
   */
  async list(): Promise<{ jobs: StoredJob[]; unreadable: { key: string; error: string }[] }> {
    const keys: string[] = [];
    for await (const key of await this.#kv.keys()) keys.push(key);
    const jobs: StoredJob[] = [];
    const unreadable: { key: string; error: string }[] = [];
    for (const key of keys) {
      const read = await readKey(this.#kv, key);
      if (read === undefined) continue;
      try {
        jobs.push(decodeStoredJob(read.data, key, this.bucket));
      } catch (error) {
        unreadable.push({ key, error: (error as Error).message });
      }
    }
    return { jobs: jobs.sort((a, b) => a.submittedAt - b.submittedAt), unreadable };
  }

  /**
   * Writes `job` (its `request.jobId` is the key), unless a higher epoch
   * wrote the record. Serialized per job, in call order.
   * @throws {JobStoreFencedError} when the stored record has a higher `leaderEpoch`.
   * @throws {Error} when NATS cannot be reached.
   */
  put(job: StoredJob): Promise<void> {
    const key = job.request.jobId;
    const previous = this.#queues.get(key) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(() => this.#write(key, job));
    this.#queues.set(key, next);
    next.finally(() => {
      if (this.#queues.get(key) === next) this.#queues.delete(key);
    }).catch(() => {});
    return next;
  }

  /**
   * Deletes the record of `jobId` (an ended job no longer kept).
   * @throws {Error} when NATS cannot be reached.
   */
  async remove(jobId: string): Promise<void> {
    await this.#kv.delete(jobId);
  }

  async #write(key: string, job: StoredJob): Promise<void> {
    for (let round = 0;; round++) {
      const read = await readKey(this.#kv, key);
      if (read !== undefined) {
        const stored = decodeStoredJob(read.data, key, this.bucket);
        if (stored.leaderEpoch > job.leaderEpoch) {
          throw new JobStoreFencedError(
            `job ${key}: the job store holds a record of leader epoch ${stored.leaderEpoch}; ` +
              `this leader (epoch ${job.leaderEpoch}) was deposed and may not overwrite it`,
          );
        }
      }
      const outcome = await casWrite(this.#kv, key, encode(job), read?.revision ?? "absent");
      if (outcome.kind === "written") return;
      if (round >= 10) {
        throw new Error(
          `job ${key}: cannot write its record in KV bucket ${this.bucket}: ` +
            `it changed under 10 compare-and-set rounds in a row`,
        );
      }
    }
  }
}

/**
 * Decodes a record read from `bucket`'s key `key`.
 * @throws {TypeError} naming the bucket, key and field when it is not a stored job.
 */
export function decodeStoredJob(data: Uint8Array, key: string, bucket: string): StoredJob {
  const where = `job record ${key} in KV bucket ${bucket}`;
  let v: Record<string, unknown>;
  try {
    v = decode(data) as Record<string, unknown>;
  } catch (error) {
    throw new TypeError(`${where} cannot be decoded: ${error}`);
  }
  const request = v?.request as SubmitRequest | undefined;
  if (typeof request !== "object" || request === null || typeof request.jobId !== "string") {
    throw new TypeError(`${where} has no submission (request.jobId)`);
  }
  if (request.jobId !== key) {
    throw new TypeError(`${where} holds job ${JSON.stringify(request.jobId)}`);
  }
  for (const field of ["attempt", "submittedAt", "leaderEpoch"] as const) {
    if (!Number.isInteger(v[field]) || (v[field] as number) < 0) {
      throw new TypeError(`${where}: ${field} must be a non-negative integer, got ${v[field]}`);
    }
  }
  const statuses = ["WAITING_FOR_RESOURCES", "RUNNING", "FINISHED", "FAILED", "CANCELED"];
  if (!statuses.includes(v.status as string)) {
    throw new TypeError(`${where}: unknown status ${JSON.stringify(v.status)}`);
  }
  if (v.savepoints !== undefined) {
    const list = v.savepoints;
    const valid = Array.isArray(list) &&
      list.every((sp) =>
        typeof sp === "object" && sp !== null && typeof sp.triggerId === "string" &&
        typeof sp.location === "string" && Number.isInteger(sp.completedAt)
      );
    if (!valid) {
      throw new TypeError(
        `${where}: savepoints must be a list of {triggerId, location, completedAt}, got ` +
          JSON.stringify(list).slice(0, 200),
      );
    }
  }
  return v as unknown as StoredJob;
}
