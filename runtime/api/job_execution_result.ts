/**
 * What a finished job reports to `execute()`: its
 * {@linkcode JobExecutionResult} (Flink's `JobExecutionResult`) with per-vertex
 * {@linkcode VertexMetrics}. Plain data in the API layer, so that the
 * environment can name its result without importing the runtime that
 * produces it (DESIGN §16); `runtime/cluster` fills it in.
 *
 * @module
 */

import type { CompletedCheckpointStats } from "../checkpoint/pending.ts";
import type { CheckpointCounts } from "../checkpoint/tracker.ts";

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
