/**
 * What the REST API, `weir info` and the Prometheus endpoint read from the
 * coordinator: a {@linkcode JobFacts} per job and the
 * {@linkcode RestBackend} that serves them and acts on jobs. A leaf module
 * of types, so views, the server and the coordinator import it without
 * cycles.
 *
 * @module
 */

import type { JobGraphSummary } from "../../graph/job_graph_summary.ts";
import type { CheckpointConfig } from "../../api/executor.ts";
import type { MetricStore } from "../../metrics/metric_store.ts";
import type { CheckpointStatsTracker } from "../../metrics/checkpoint_stats.ts";
import type { CancelReply, ClusterOverview, JobStatus } from "../cluster_protocol.ts";
import type { FailoverRecord } from "../job_failover.ts";

/** Everything the views show of one job (read, never changed, by them). */
export interface JobFacts {
  /** Status, attempt, times, failures (as `weir list` shows them). */
  readonly status: JobStatus;
  /** The submitted graph: vertices with names, parallelism and operators. */
  readonly graph: JobGraphSummary;
  /** Checkpointing settings as submitted. */
  readonly checkpointing: CheckpointConfig;
  /** Latest per-second samples of the current attempt's subtasks. */
  readonly metrics: MetricStore;
  /** Checkpoint counts, history, latest and summary. */
  readonly checkpoints: CheckpointStatsTracker;
  /** Slot id of each subtask of the current attempt, by `vertexId#subtask`. */
  readonly placement: ReadonlyMap<string, string>;
  /** Restarts so far (Flink's `numRestarts`). */
  readonly restarts: number;
  /**
   * The attempt each subtask (`vertexId#subtask`) runs as: a region failover
   * renumbers only its region's subtasks; one of a region being restarted
   * has none.
   */
  readonly subtaskAttempts: ReadonlyMap<string, number>;
  /** The latest failovers, oldest first (the exception history). */
  readonly failovers: readonly FailoverRecord[];
}

/** A savepoint or stop-with-savepoint to take, as the REST API asks for it. */
export interface SavepointOrder {
  /** The job. */
  readonly jobId: string;
  /** The savepoint directory; absent: the cluster's checkpoint bucket. */
  readonly directory?: string | undefined;
  /** Stop the job with the savepoint (Flink's `POST /jobs/:jobid/stop`). */
  readonly stop: boolean;
  /** With `stop`: emit `MAX_WATERMARK` first (Flink's `drain`). */
  readonly drain: boolean;
  /** The REST trigger id it answers to, recorded with its location once it completed. */
  readonly triggerId?: string | undefined;
}

/** What the REST server needs of the coordinator (`ClusterCoordinator` implements it). */
export interface RestBackend {
  /** Jobs (running first) and live workers. */
  overview(): ClusterOverview;
  /** The facts of job `jobId`, or `undefined` when the coordinator does not know it. */
  jobFacts(jobId: string): JobFacts | undefined;
  /** Cancels job `jobId`; the reply says why not when it cannot. */
  cancelJob(jobId: string): CancelReply;
  /**
   * Takes a savepoint (or stops the job with one).
   * @returns the savepoint's path, once stored.
   * @throws (rejects) when the job is unknown or not running, or the savepoint fails.
   */
  savepoint(order: SavepointOrder): Promise<string>;
  /**
   * The leader epoch of this coordinator (high availability; 0 without),
   * stamped on the trigger ids it issues. Absent: 0.
   */
  leaderEpoch?(): number;
  /**
   * The location of savepoint operation `triggerId` of job `jobId`, when it
   * completed and was recorded in the job store (also by an earlier leader).
   */
  savepointLocation?(jobId: string, triggerId: string): string | undefined;
}

/**
 * The coordinator cannot answer yet: it is taking over the leadership (the
 * REST API answers 503).
 */
export class CoordinatorNotReadyError extends Error {
  /** The error class name. */
  override name = "CoordinatorNotReadyError";
}
