/**
 * What a job ends with: its {@linkcode JobExecutionResult} when it finishes,
 * or one of the errors the coordinator ends or fails an attempt with.
 *
 * @module
 */

import type { CheckpointFailureCode, CheckpointId } from "../checkpoint/types.ts";
import type { ErrorInfo } from "../task/messages.ts";
import { SuppressRestartsError } from "./restart_strategy.ts";

export type { JobExecutionResult, VertexMetrics } from "../api/job_execution_result.ts";

/** The job failed for good (the restart strategy gave up), or was cancelled. */
export class JobFailedError extends Error {
  /** The error class name. */
  override name = "JobFailedError";
}

/**
 * More consecutive checkpoints failed than the job tolerates (Flink's
 * "Exceeded checkpoint tolerable failure threshold"). The coordinator fails
 * the attempt with it; the restart strategy decides what follows.
 */
export class CheckpointFailureThresholdError extends Error {
  /** The error class name. */
  override name = "CheckpointFailureThresholdError";
  /** The job. */
  readonly jobId: string;
  /** The checkpoint whose failure exceeded the threshold. */
  readonly checkpointId: CheckpointId;
  /** Why that checkpoint failed. */
  readonly reason: CheckpointFailureCode;

  /**
   * Creates the error.
   * @param message the failure manager's message, e.g. `Exceeded checkpoint
   *   tolerable failure threshold (0): checkpoint 7 expired before completing`.
   */
  constructor(
    message: string,
    options: { jobId: string; checkpointId: CheckpointId; reason: CheckpointFailureCode },
  ) {
    super(`Job ${options.jobId}: ${message}`);
    this.jobId = options.jobId;
    this.checkpointId = options.checkpointId;
    this.reason = options.reason;
  }
}

/** A subtask's failure as reported by its worker. */
export class RemoteTaskError extends Error {
  /** The error class name. */
  override name = "RemoteTaskError";
  /** The failing subtask's vertex id. */
  readonly vertexId: string;
  /** The failing subtask's index. */
  readonly subtask: number;
  /**
   * @param info the reported error; when it suppresses restarts, the cause is
   *   a `SuppressRestartsError` so the restart strategy fails the job.
   */
  constructor(vertexId: string, subtask: number, attempt: number, info: ErrorInfo) {
    const message = `${info.name}: ${info.message} (${vertexId}#${subtask}, attempt ${attempt})`;
    super(
      message,
      info.suppressRestarts ? { cause: new SuppressRestartsError(info.message) } : undefined,
    );
    this.vertexId = vertexId;
    this.subtask = subtask;
    if (info.stack) this.stack = info.stack;
  }
}

/**
 * Cluster mode: NATS or the coordinator could not be reached, or the
 * coordinator refused a request (an invalid submission, an unknown job).
 */
export class ClusterRequestError extends Error {
  /** The error class name. */
  override name = "ClusterRequestError";
}
