/**
 * How a job taken over from the job store looks to `list` and to waiting
 * clients (the cluster coordinator's `recover`): its status rebuilt from
 * the stored record, the outcome of an ended one, and the failure of one
 * that cannot be resumed (`job_recovery.ts`). Pure: no I/O.
 *
 * @module
 */

import { errorInfo } from "../../task/messages.ts";
import { JobFailedError } from "../job_result.ts";
import type { JobOutcome, JobStatus } from "../cluster_protocol.ts";
import type { StoredJob } from "./job_store.ts";

/** The status of a stored job as the store recorded it. */
export function storedJobStatus(stored: StoredJob): JobStatus {
  const request = stored.request;
  return {
    jobId: request.jobId,
    name: request.graph.name,
    status: stored.status,
    attempt: stored.attempt,
    startedAt: stored.submittedAt,
    endedAt: stored.endedAt,
    moduleUrl: request.moduleUrl,
    args: request.args,
    defaultParallelism: request.defaultParallelism,
    parallelism: Math.max(0, ...request.graph.vertices.map((v) => v.parallelism)),
    error: stored.error,
  };
}

/** The outcome of an ended stored job (a record without one: a failure naming its status). */
export function storedOutcome(stored: StoredJob): JobOutcome {
  return stored.outcome ??
    {
      t: "failed",
      error: errorInfo(
        new JobFailedError(stored.error ?? `job ${stored.request.jobId} ended ${stored.status}`),
      ),
    };
}

/** A stored job that cannot be resumed for `reason`, failed at `endedAt` (epoch ms). */
export function failedRecovery(stored: StoredJob, reason: string, endedAt: number): {
  readonly status: JobStatus;
  readonly outcome: JobOutcome;
  readonly error: string;
} {
  const error = new JobFailedError(reason);
  const text = `${error.name}: ${error.message}`;
  return {
    status: { ...storedJobStatus(stored), status: "FAILED", endedAt, error: text },
    outcome: { t: "failed", error: errorInfo(error) },
    error: text,
  };
}

/** Why a resumed job's current attempt exists (its status' `restartedAfter`). */
export function takeoverReason(epoch: number, previousAttempt: number): string {
  return `the leading coordinator changed (leader epoch ${epoch} took the job over at ` +
    `attempt ${previousAttempt})`;
}
