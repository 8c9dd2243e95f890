/**
 * The executor interface: how `StreamExecutionEnvironment.execute()` hands a
 * described job to the runtime that runs it (Flink's `PipelineExecutor` /
 * `PipelineExecutorFactory`, found there through a service loader).
 *
 * `runtime/api` describes a job and runs none (DESIGN §16): the environment
 * builds a {@linkcode JobExecutionRequest} and passes it to the
 * {@linkcode JobExecutor} registered with {@linkcode registerJobExecutor}.
 * `runtime/cluster/default_executor.ts` implements it (local run, cluster
 * submission or a worker's slot thread) and registers itself when imported;
 * `mod.ts` imports it, so a job importing `mod.ts` needs nothing more.
 *
 * This module and the plain data it names import no runtime: types only.
 *
 * @module
 */

import type { JobGraph } from "../graph/job_graph.ts";
import type { Clock } from "../time/clock.ts";
import type { FaultInjector, TaskConfig } from "../task/stream_task.ts";
import type { FailoverStrategy, RestartStrategyConfig } from "./restart_strategy_config.ts";
import type { JobExecutionResult } from "./job_execution_result.ts";

/** Checkpointing settings (Flink's `CheckpointConfig`). Times in ms. */
export interface CheckpointConfig {
  /** Period of checkpoints; 0 disables periodic checkpoints. */
  readonly intervalMs: number;
  /** A checkpoint not complete after this long is aborted. */
  readonly timeoutMs: number;
  /** Least time from one completion to the next trigger. */
  readonly minPauseBetweenCheckpointsMs: number;
  /** Most checkpoints in progress at once. */
  readonly maxConcurrentCheckpoints: number;
  /** Completed checkpoints kept in storage. */
  readonly retainedCheckpoints: number;
  /** Keep the job's checkpoints after it finishes (default false: they are deleted). */
  readonly retainOnFinish: boolean;
  /**
   * Consecutive failed checkpoints tolerated before the attempt fails (Flink's
   * `execution.checkpointing.tolerable-failed-checkpoints`): a non-negative
   * integer or `Infinity`. Default 0.
   */
  readonly tolerableCheckpointFailures?: number | undefined;
  /**
   * Whether keyed state checkpoints are incremental (a changelog over the
   * state backend, FLIP-158; see `runtime/state/changelog/`). Default false.
   */
  readonly incrementalCheckpoints?: boolean | undefined;
  /** With incremental checkpoints: the longest time between two materializations, ms. */
  readonly materializationIntervalMs?: number | undefined;
  /**
   * Unaligned checkpoints (FLIP-76; Flink's `execution.checkpointing.unaligned`):
   * barriers overtake in-flight data, stored as channel state. The tasks
   * read it from `TaskConfig.unalignedCheckpoints`. Default false.
   */
  readonly unalignedCheckpoints?: boolean | undefined;
  /**
   * With unaligned checkpoints: how long a checkpoint aligns before it
   * switches to unaligned, ms (0: unaligned from the start); the tasks read
   * it from `TaskConfig.alignedCheckpointTimeoutMs`.
   */
  readonly alignedCheckpointTimeoutMs?: number | undefined;
  /**
   * Private state blobs smaller than this many bytes are kept inline in the
   * checkpoint metadata (Flink's `state.storage.fs.memory-threshold`); the
   * tasks read it from `TaskConfig.memoryThresholdBytes`. Default 20 480.
   */
  readonly memoryThresholdBytes?: number | undefined;
}

/** Coordinator-side fault points (chaos hooks for tests). */
export type CoordinatorFaultPoint = "before-notify-complete";

/**
 * The role `execute()` takes in this thread: `"slot"` on a worker's slot
 * thread, `"client"` when cluster mode is asked for, else `"local"`.
 */
export type ExecutionRole = "local" | "client" | "slot";

/** Which checkpoint `execute()` resumes from. */
export interface ResumeOptions {
  /** The earlier job's id (it names the job's checkpoint directory, and is in the logs and errors). */
  readonly jobId: string;
  /** The completed checkpoint to restore; default: the job's latest completed checkpoint. */
  readonly checkpointId?: number;
  /**
   * Resume even when the checkpoint holds state of operator uids this job
   * does not have, dropping that state (Flink's `--allowNonRestoredState`).
   * Default false: such a resume fails with a `ResumeError` naming the uids.
   */
  readonly allowNonRestoredState?: boolean;
  /**
   * Who owns the restored checkpoint's files (Flink's `RestoreMode`,
   * FLIP-193). Default `"NO_CLAIM"`, as in Flink 1.15+.
   */
  readonly restoreMode?: RestoreMode;
}

/**
 * Who owns a restored snapshot's files (Flink's `RestoreMode`, FLIP-193):
 *
 * - `"NO_CLAIM"` (the default, as in Flink 1.15+): the new job never deletes
 *   them, and its first checkpoint is a full one (every Weir checkpoint is
 *   full today);
 * - `"CLAIM"`: the new job owns a restored *checkpoint* and discards it by
 *   its retention, once it completed `retainedCheckpoints` checkpoints of its
 *   own. A savepoint is never deleted, claimed or not.
 */
export type RestoreMode = "NO_CLAIM" | "CLAIM";

/**
 * Which savepoint `execute()` restores (Flink's `SavepointRestoreSettings`,
 * `flink run -s <path> [--allowNonRestoredState]`).
 */
export interface SavepointRestoreSettings {
  /** The savepoint path `triggerSavepoint` / `stopWithSavepoint` returned. */
  readonly path: string;
  /**
   * Drop state of operator uids this job does not have instead of refusing
   * to start (Flink's `--allowNonRestoredState`). Default false.
   */
  readonly allowNonRestoredState?: boolean;
  /** See {@linkcode RestoreMode}; a savepoint is never deleted either way. Default `"NO_CLAIM"`. */
  readonly restoreMode?: RestoreMode;
}

/**
 * A handle on a running job (Flink's `JobClient`, from `executeAsync`).
 */
export interface JobClient {
  /** The job's id. */
  readonly jobId: string;
  /**
   * Triggers a savepoint (Flink's `JobClient.triggerSavepoint`): a forced
   * checkpoint in the canonical, self-contained format, stored in its own
   * directory and never deleted by retention.
   *
   * @param directory the savepoint directory; default: local mode
   *   `.weir/savepoints`, cluster mode the cluster's checkpoint bucket
   *   (`nats-object-store://<bucket>`, the only target a cluster accepts).
   * @returns the savepoint's path, to restore with `fromSavepoint(path)` or `weir run -s path`.
   * @throws {Error} (rejects) when the job is not running, the savepoint
   *   fails or expires, the job fails over meanwhile, or the target is refused.
   */
  triggerSavepoint(directory?: string): Promise<string>;
  /**
   * Stops the job with a final savepoint (Flink's `stopWithSavepoint`,
   * FLIP-34): sources stop (with `drain`, they first emit `MAX_WATERMARK` so
   * event-time windows fire), the savepoint is taken, sinks commit it, and
   * the job ends FINISHED.
   *
   * @returns the savepoint's path.
   * @throws {Error} (rejects) when the job is not running, a stop is already
   *   in progress, or the savepoint fails (the job then keeps running or
   *   restarts by its restart strategy).
   */
  stopWithSavepoint(options?: { directory?: string; drain?: boolean }): Promise<string>;
  /** Cancels the job; its result then rejects with a `JobFailedError`. */
  cancel(): Promise<void>;
  /**
   * The job's result once it ended (Flink's `getJobExecutionResult`).
   * @throws {Error} (rejects) as `execute()` throws.
   */
  result(): Promise<JobExecutionResult>;
}

/** Everything an executor needs to run one job, as the environment configured it. */
export interface JobExecutionRequest {
  /** The job to run. */
  readonly graph: JobGraph;
  /** Checkpointing settings. */
  readonly checkpointing: CheckpointConfig;
  /** Directory of local checkpoint storage. */
  readonly checkpointDirectory: string;
  /**
   * Whether `checkpointDirectory` is the environment's default one, which a
   * local run removes (with its parent `.weir`) when it is left empty.
   */
  readonly defaultCheckpointDirectory: boolean;
  /** The restart strategy, validated. */
  readonly restartStrategy: RestartStrategyConfig;
  /** Which subtasks a failure restarts (Flink's `jobmanager.execution.failover-strategy`). Default `"region"`. */
  readonly failoverStrategy?: FailoverStrategy | undefined;
  /** Settings of every subtask. */
  readonly taskConfig: TaskConfig;
  /** The clock of processing time. */
  readonly clock: Clock;
  /** The checkpoint to resume from, if any. */
  readonly resume?: ResumeOptions | undefined;
  /** The savepoint to restore, if any (exclusive with `resume`). */
  readonly savepoint?: SavepointRestoreSettings | undefined;
  /** Task-side fault hooks (chaos tests). */
  readonly faults?: FaultInjector | undefined;
  /** Coordinator-side fault hooks (chaos tests). */
  readonly coordinatorFaults?:
    | ((point: CoordinatorFaultPoint, checkpointId: number, attempt: number) => void)
    | undefined;
}

/**
 * Runs described jobs (Flink's `PipelineExecutor`). Implemented by
 * `runtime/cluster/default_executor.ts`.
 */
export interface JobExecutor {
  /**
   * The role `execute()` takes in this thread. On a `"slot"` thread the
   * environment skips the checks and warnings the job's client already made.
   */
  role(): ExecutionRole;
  /**
   * Called by `execute()` and `executeAsync()` before they build and check
   * the job graph, in every role. The default executor installs there its
   * report of uncaught expected failures (`job_failure_report.ts`), so a
   * job refused by those checks (`DeliveryGuaranteeError`, …) prints one
   * `error:` line instead of an uncaught stack.
   */
  prepare?(): void;
  /**
   * Runs the job to its end.
   *
   * @returns the job's result.
   * @throws what the run throws: `JobFailedError`, `ResumeError`,
   *   `ClusterRequestError`, … (see `StreamExecutionEnvironment.execute`).
   */
  execute(request: JobExecutionRequest): Promise<JobExecutionResult>;
  /**
   * Starts the job and returns at once with a handle on it (Flink's
   * `PipelineExecutor.execute`, which returns a `JobClient`).
   *
   * @returns a client of the running job.
   * @throws what starting throws (`ResumeError`, `ClusterRequestError`, …).
   */
  submit?(request: JobExecutionRequest): Promise<JobClient>;
  /**
   * The client-level default parallelism (Flink's `parallelism.default`, set
   * by `flink run -p N`): what operators run at when neither they nor the
   * environment (`setParallelism`) set one. `undefined`: 1.
   *
   * @returns a positive integer, or `undefined` when none was given.
   * @throws {RangeError} when the value given is not a positive integer.
   */
  defaultParallelism?(): number | undefined;
}

let registered: JobExecutor | undefined;

/**
 * Makes `executor` the one `execute()` uses in this thread (the last one
 * registered wins). `runtime/cluster/default_executor.ts` calls it when
 * imported.
 */
export function registerJobExecutor(executor: JobExecutor): void {
  registered = executor;
}

/**
 * No {@linkcode JobExecutor} was registered when `execute()` ran: the job
 * imported `runtime/api/environment.ts` without `mod.ts` (or
 * `runtime/cluster/default_executor.ts`), which register the default one.
 */
export class NoJobExecutorError extends Error {
  /** The error class name. */
  override name = "NoJobExecutorError";
}

/**
 * The registered executor.
 *
 * @throws {NoJobExecutorError} when none was registered.
 */
export function jobExecutor(): JobExecutor {
  if (registered === undefined) {
    throw new NoJobExecutorError(
      "execute() found no job executor registered: import mod.ts (or runtime/cluster/default_executor.ts) " +
        "before executing a job; current value is undefined",
    );
  }
  return registered;
}
