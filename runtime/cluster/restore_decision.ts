/**
 * The restore decision of a failover, as pure code: which checkpoint the
 * next attempt restores, and what to do when reading its metadata fails
 * (the JobManager's choice Flink makes in `CheckpointCoordinator
 * .restoreLatestCheckpointedStateToAll`). The coordinator gathers the facts,
 * does the I/O (reading the metadata) and executes the decision.
 *
 * ## Rules
 *
 * - The target is the latest checkpoint whose metadata this coordinator
 *   wrote, in any attempt; when it wrote none, the checkpoint the job started
 *   from (a resume); when there is none either, no checkpoint (`null`: start
 *   from scratch). Never anything older: once a checkpoint's metadata is
 *   written, sinks may commit its transactions, so restoring an older one
 *   could commit records twice.
 * - Readable metadata: restore it.
 * - Storage out of reach (a `CheckpointStorageError` with code `IO`, e.g.
 *   while NATS restarts): a failed restart, not a lost checkpoint; the
 *   restart strategy decides whether and when to try again.
 * - Any other read error (metadata gone or corrupt): the job fails for good,
 *   with a `SuppressRestartsError` as the cause.
 *
 * @module
 */

import type { CheckpointId } from "../checkpoint/types.ts";
import { CheckpointStorageError } from "../checkpoint/storage.ts";
import type { RestorePoint } from "../task/messages.ts";
import { SuppressRestartsError } from "../failure.ts";
import { describeError } from "../error_chain.ts";

/** What the coordinator knows when it picks the checkpoint a failover restores. */
export interface RestoreFacts {
  /** The job's id. */
  readonly jobId: string;
  /** The latest checkpoint whose metadata this coordinator wrote, in any attempt. */
  readonly latestWritten: CheckpointId | undefined;
  /** The checkpoint the job started from (a resume), or `null`. */
  readonly restoreFrom: RestorePoint | null;
}

/**
 * The checkpoint a failover restores (see the module docs), or `null` to
 * start from scratch.
 */
export function restoreTarget(facts: RestoreFacts): RestorePoint | null {
  return facts.latestWritten === undefined
    ? facts.restoreFrom
    : { jobId: facts.jobId, checkpointId: facts.latestWritten };
}

/** What a failover does after reading the target's metadata. */
export type RestoreDecision =
  /** Deploy the next attempt from `point` (`null`: from scratch). */
  | { readonly kind: "restore"; readonly point: RestorePoint | null }
  /**
   * Storage is out of reach: count `failure` as another failed restart
   * (the restart strategy decides) and log `warning`.
   */
  | { readonly kind: "retry"; readonly failure: CheckpointStorageError; readonly warning: string }
  /** The job fails for good: a `JobFailedError` with `message`, caused by `cause`. */
  | { readonly kind: "fail"; readonly message: string; readonly cause: SuppressRestartsError };

/** The facts of {@linkcode decideRestore}. */
export interface RestoreOutcomeFacts extends RestoreFacts {
  /** The job's name, for the error message. */
  readonly jobName: string;
  /** The target, from {@linkcode restoreTarget}. */
  readonly target: RestorePoint | null;
  /** Whether reading the target's metadata failed, and with what (absent: it was read, or there is no target). */
  readonly readError?: { readonly error: unknown } | undefined;
  /** The failure the job is restarting after, for the error message. */
  readonly restartingAfter: unknown;
}

/**
 * Decides a failover's restore from the read of its target's metadata (see
 * the module docs).
 *
 * @returns `restore`, `retry` (storage out of reach) or `fail` (the
 *   checkpoint is lost; the message names it, the read error and the
 *   failure being recovered from).
 */
export function decideRestore(facts: RestoreOutcomeFacts): RestoreDecision {
  const { target, readError, jobId } = facts;
  if (target === null || readError === undefined) return { kind: "restore", point: target };
  const e = readError.error;
  if (e instanceof CheckpointStorageError && e.code === "IO") {
    return {
      kind: "retry",
      failure: e,
      warning: `job ${jobId}: cannot read ${describeRestorePoint(target, jobId)} to restore it: ` +
        `${describeError(e)}; the restart strategy decides when to try again`,
    };
  }
  const what = `cannot restore ${describeRestorePoint(target, jobId)}, ` +
    (facts.latestWritten === undefined
      ? "the checkpoint it started from"
      : "the latest checkpoint it completed") +
    `: ${describeError(e)}. Restoring an older checkpoint could commit records twice ` +
    `(it was restarting after ${describeError(facts.restartingAfter)})`;
  return {
    kind: "fail",
    message: `Job ${jobId} '${facts.jobName}' failed for good: ${what}`,
    cause: new SuppressRestartsError(`Job ${jobId}: ${what}`, { cause: e }),
  };
}

/** `checkpoint <id>`, with `of job <id>` when it is another job's. */
export function describeRestorePoint(point: RestorePoint, jobId: string): string {
  return point.jobId === jobId
    ? `checkpoint ${point.checkpointId}`
    : `checkpoint ${point.checkpointId} of job ${point.jobId}`;
}

/** Re-exported from the leaf `runtime/error_chain.ts`, so existing imports keep working. */
export { describeError };
