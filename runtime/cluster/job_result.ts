/**
 * What a job ends with: its {@linkcode JobExecutionResult} when it finishes,
 * or one of the errors the coordinator ends or fails an attempt with.
 *
 * @module
 */

import type { CheckpointFailureCode, CheckpointId } from "../checkpoint/types.ts";
import type { ErrorInfo } from "../task/messages.ts";
import { SuppressRestartsError } from "./restart_strategy.ts";
import { RELAYED_ERROR } from "../error_chain.ts";

export type { JobExecutionResult, VertexMetrics } from "../api/job_execution_result.ts";

/** The job failed for good (the restart strategy gave up), or was cancelled. */
export class JobFailedError extends Error {
  /** The error class name. */
  override name = "JobFailedError";
  /**
   * Whether the job completed a checkpoint of its own that `weir resume
   * <job>` (or `resumeFrom({ jobId })`) can restore: `false` when it has
   * none, `undefined` when not known (the failure came from elsewhere).
   */
  readonly resumable: boolean | undefined;

  /**
   * Creates the error.
   * @param message what failed.
   * @param options the cause, and whether the job has a completed checkpoint to resume from.
   */
  constructor(message: string, options?: ErrorOptions & { readonly resumable?: boolean }) {
    super(message, options);
    this.resumable = options?.resumable;
  }
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

/**
 * A subtask's failure as its worker reported it to the coordinator (Flink's
 * task failure, `TaskExecutionState` FAILED): `<name>: <message> (<vertex>#<subtask>,
 * attempt <n>)`, without the parenthesis when the message names them already. Local mode fails attempts with this class; cluster mode, where
 * the worker is another process, with its subclass {@linkcode RemoteTaskError}.
 * When the report says restarts are suppressed, the `cause` is a
 * `SuppressRestartsError` carrying the name and message of the one the task
 * threw (e.g. `MariaDbRejectedError`), so the restart strategy fails the job
 * and its message names that class.
 */
export class TaskFailureError extends Error {
  /** The error class name. */
  override name = "TaskFailureError";
  /** A relay of the worker's report: texts show the reported name, not this class's. */
  readonly [RELAYED_ERROR] = true;
  /** The failing subtask's vertex id. */
  readonly vertexId: string;
  /** The failing subtask's index. */
  readonly subtask: number;
  /**
   * Creates the error from a worker's report.
   * @param vertexId the failing subtask's vertex id.
   * @param subtask the failing subtask's index.
   * @param attempt the attempt the subtask ran in (0 first).
   * @param info the reported error.
   */
  constructor(vertexId: string, subtask: number, attempt: number, info: ErrorInfo) {
    // The task's own message usually names the subtask and attempt already.
    const where = `${vertexId}#${subtask}, attempt ${attempt}`;
    const message = info.message.includes(where)
      ? `${info.name}: ${info.message}`
      : `${info.name}: ${info.message} (${where})`;
    super(message, info.suppressRestarts ? { cause: suppressionOf(info) } : undefined);
    this.vertexId = vertexId;
    this.subtask = subtask;
    if (info.stack) this.stack = info.stack;
  }
}

/** A subtask's failure as reported by a worker in another process (cluster mode); see {@linkcode TaskFailureError}. */
export class RemoteTaskError extends TaskFailureError {
  /** The error class name. */
  override name = "RemoteTaskError";
}

function suppressionOf(info: ErrorInfo): SuppressRestartsError {
  const by = info.suppressedBy;
  const error = new SuppressRestartsError(by?.message ?? info.message);
  if (by !== undefined) error.name = by.name;
  return error;
}

/**
 * Cluster mode: NATS or the coordinator could not be reached, or the
 * coordinator refused a request (an invalid submission, an unknown job).
 */
export class ClusterRequestError extends Error {
  /** The error class name. */
  override name = "ClusterRequestError";
}
