/**
 * The options of a job coordinator (`JobCoordinator` in `coordinator.ts`,
 * Flink's JobManager for one job): what it runs, where its checkpoints go,
 * how it restarts, where it deploys and how long it waits.
 *
 * @module
 */

import type { Transport } from "../actor/types.ts";
import type { JobGraphShape } from "../graph/job_graph_summary.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { RestorePoint } from "../task/messages.ts";
import type { CheckpointConfig, CoordinatorFaultPoint, RestoreMode } from "../api/executor.ts";
import type { RestartStrategyConfig } from "./restart_strategy.ts";
import type { FailoverStrategy } from "../api/restart_strategy_config.ts";

/** Options of `JobCoordinator` (`coordinator.ts`). */
export interface JobCoordinatorOptions {
  /** The transport its messages to and from subtasks and workers go through. */
  readonly transport: Transport;
  /** The job's id: subjects, checkpoint paths and log lines carry it. */
  readonly jobId: string;
  /** The graph to run: a full `JobGraph` or its plain summary (cluster mode). */
  readonly graph: JobGraphShape;
  /** Where checkpoint state and metadata go (the job's checkpoint storage). */
  readonly storage: CheckpointStorage;
  /** Checkpoint interval, timeout, concurrency, retention and tolerated failures. */
  readonly checkpointing: CheckpointConfig;
  /** Whether and when a failed attempt restarts (Flink's restart strategies). */
  readonly restartStrategy: RestartStrategyConfig;
  /**
   * Which subtasks a failure restarts (Flink's
   * `jobmanager.execution.failover-strategy`; see `FailoverStrategy`).
   * Default `"region"`.
   */
  readonly failoverStrategy?: FailoverStrategy | undefined;
  /**
   * Ids of the workers (slots, in cluster mode) to deploy on, round-robin.
   * When it is empty at deployment, the coordinator waits for workers until
   * `deployTimeoutMs` has passed (as Flink waits for slots), then fails the
   * attempt.
   */
  readonly workers: () => string[];
  /** Checkpoint to start from (resume, possibly of another job id), or `null`. */
  readonly restoreFrom: RestorePoint | null;
  /**
   * High availability: every completed checkpoint of this job in storage
   * when a new leader took it over, ascending (the last is `restoreFrom`).
   * Retention registers their shared blobs and discards those beyond
   * `retainedCheckpoints` (see `CheckpointCoordinatorOptions`). Default:
   * `restoreFrom` only.
   */
  readonly recoveredCheckpoints?: readonly number[] | undefined;
  /** How long subtasks may take to become ready, in ms. */
  readonly deployTimeoutMs: number;
  /**
   * True when the workers run in this process (local mode): task failures
   * are then `TaskFailureError`s, not `RemoteTaskError`s. Default false.
   */
  readonly local?: boolean;
  /**
   * How long a failover waits for the failed attempt's subtasks to end
   * before it deploys the next attempt anyway (logging the workers and
   * subtasks still running), in ms; like Flink's `task.cancellation.timeout`.
   * Default 10 000.
   * @throws {RangeError} (from the constructor) when negative or not finite.
   */
  readonly cancellationTimeoutMs?: number;
  /**
   * The storage rooted at a savepoint directory (`undefined`: the default
   * one), for `triggerSavepoint` and `stopWithSavepoint`; it throws for a
   * directory this deployment cannot serve. Without it, savepoints are refused.
   */
  readonly savepointStorage?: ((directory: string | undefined) => CheckpointStorage) | undefined;
  /**
   * How `restoreFrom` was restored: its kind and the restore mode (see
   * `RestoreMode`). Default `{ kind: "checkpoint", mode: "NO_CLAIM" }`.
   */
  readonly restoreSettings?: {
    readonly kind: "checkpoint" | "savepoint";
    readonly mode: RestoreMode;
  } | undefined;
  /**
   * The leader epoch of the coordinator process that runs this job (high
   * availability, `ha/`): every message to workers carries it, so workers
   * refuse messages of a deposed leader (`ha/epoch_fence.ts`). Absent: no
   * epoch is sent (workers treat it as 0).
   */
  readonly leaderEpoch?: number | undefined;
  /**
   * The first attempt's number. Default 0. A leader that takes over a job
   * starts above every attempt the previous leader deployed; the job's
   * restart count starts at this number (each earlier attempt ended).
   */
  readonly firstAttempt?: number | undefined;
  /**
   * Called before each attempt deploys, with its number; the deployment
   * waits for it (high availability records the attempt in the job store
   * first). A rejection fails the attempt (a failover, through the restart
   * strategy). Absent: deploy at once.
   */
  readonly beforeDeploy?: ((attempt: number) => Promise<void>) | undefined;
  /** Test hook: throwing fails the job at that point. */
  readonly faults?:
    | ((point: CoordinatorFaultPoint, checkpointId: number, attempt: number) => void)
    | undefined;
}
