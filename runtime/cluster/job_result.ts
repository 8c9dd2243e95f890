/**
 * What a job ends with: its {@linkcode JobExecutionResult} when it finishes,
 * or one of the errors the coordinator ends or fails an attempt with.
 *
 * @module
 */

import type { CompletedCheckpointStats } from "../checkpoint/pending.ts";
import type { CheckpointCounts } from "../checkpoint/tracker.ts";
import type { CheckpointFailureCode, CheckpointId } from "../checkpoint/types.ts";
import type { ErrorInfo } from "../task/messages.ts";
import { SuppressRestartsError } from "./restart_strategy.ts";

/** What a finished job reports. */
export interface JobExecutionResult {
  /** The job's id. */
  readonly jobId: string;
  /** The job's name. */
  readonly jobName: string;
  /** Wall time from submission to finish, in ms. */
  readonly durationMs: number;
  /** Number of restarts (failovers). */
  readonly restarts: number;
  /** Checkpoint counters. */
  readonly checkpoints: CheckpointCounts;
  /** The latest completed checkpoint, if any. */
  readonly latestCheckpoint: CompletedCheckpointStats | undefined;
  /** One line: checkpoints completed/failed, the latest one's size and duration, restarts. */
  readonly summary: string;
  /**
   * What each vertex's subtasks measured in the last attempt, by vertex id:
   * records summed, back pressure as the average over its subtasks.
   */
  readonly metrics: Readonly<Record<string, VertexMetrics>>;
}

/** A vertex's metrics in a {@linkcode JobExecutionResult}. */
export interface VertexMetrics {
  /** The vertex's name (its chained operators). */
  readonly name: string;
  /** Records its subtasks consumed. */
  readonly numRecordsIn: number;
  /** Records its subtasks wrote to network outputs. */
  readonly numRecordsOut: number;
  /** Average over its subtasks of Flink's `backPressuredTimeMsPerSecond` (0 to 1000). */
  readonly backPressuredTimeMsPerSecond: number;
  /**
   * The counters of its operators that keep their own, summed over its
   * subtasks: by operator uid, then Flink metric name, e.g.
   * `operators["counts"].numLateRecordsDropped` of a window operator with
   * uid `counts`. Empty when none of its operators keeps counters.
   */
  readonly operators: Readonly<Record<string, Readonly<Record<string, number>>>>;
}

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
