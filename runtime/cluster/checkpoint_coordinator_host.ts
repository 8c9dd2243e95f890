/**
 * The interfaces between a `JobCoordinator` and its `CheckpointCoordinator`
 * (`checkpoint_coordinator.ts`): the host the checkpoint coordinator calls
 * back into (phase, current attempt, messages to subtasks, failover) and
 * the options it is built with. A leaf file, so either side imports it
 * without a cycle.
 *
 * @module
 */

import type { VertexInfo } from "../checkpoint/pending.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { CheckpointId, SubtaskRef } from "../checkpoint/types.ts";
import type { MessageBody, RestorePoint, TaskControlMessage } from "../task/messages.ts";
import type { CheckpointConfig, CoordinatorFaultPoint, RestoreMode } from "../api/executor.ts";
import type { ExecutionAttempt } from "./execution_attempt.ts";
import type { JobPhase } from "./job_phase.ts";
import type { CheckpointStatsTracker } from "../metrics/checkpoint_stats.ts";

/**
 * What a `CheckpointCoordinator` needs from the job coordinator that owns
 * it: the job's phase and current attempt, a way to message subtasks of the
 * current attempt, and failover.
 */
export interface CheckpointCoordinatorHost {
  /** The job's phase now. */
  phase(): JobPhase;
  /** The current execution attempt (replaced on failover). */
  attempt(): ExecutionAttempt;
  /** Sends `body` to one subtask of the current attempt. */
  toTask(ref: SubtaskRef, body: MessageBody<TaskControlMessage>): void;
  /** Sends `body` to every subtask of the current attempt. */
  toAllTasks(body: MessageBody<TaskControlMessage>): void;
  /** Fails the current attempt (a failover, through the restart strategy); never throws. */
  failover(error: unknown): void;
}

/** Options of `CheckpointCoordinator` (`checkpoint_coordinator.ts`). */
export interface CheckpointCoordinatorOptions {
  /** The coordinator's side of the job. */
  readonly host: CheckpointCoordinatorHost;
  /** The job's id (metadata, log lines, retention). */
  readonly jobId: string;
  /** The job's name, written into checkpoint metadata. */
  readonly jobName: string;
  /** Where checkpoint state and metadata go. */
  readonly storage: CheckpointStorage;
  /** Interval, timeout, concurrency, retention and tolerated failures. */
  readonly checkpointing: CheckpointConfig;
  /** Every subtask of the job (all acknowledge each checkpoint). */
  readonly tasks: readonly SubtaskRef[];
  /** The source subtasks (where checkpoints are triggered). */
  readonly sources: readonly SubtaskRef[];
  /** The vertices' operator uids and parallelism, written into checkpoint metadata. */
  readonly vertexInfos: VertexInfo[];
  /** Checkpoint the job was started from (resume, possibly of another job id), or `null`. */
  readonly restoreFrom: RestorePoint | null;
  /**
   * High availability: every completed checkpoint of this job that its
   * storage held when a new leader took the job over, ascending; the last is
   * `restoreFrom` (Flink's `CompletedCheckpointStore` recovered from
   * storage). All of them up to `restoreFrom` are registered in the shared
   * state registry, and those beyond `retainedCheckpoints` are discarded at
   * once. Default: `restoreFrom` only.
   */
  readonly recoveredCheckpoints?: readonly CheckpointId[] | undefined;
  /** How `restoreFrom` was restored. Default `{ kind: "checkpoint", mode: "NO_CLAIM" }`. */
  readonly restoreSettings?: {
    readonly kind: "checkpoint" | "savepoint";
    readonly mode: RestoreMode;
  } | undefined;
  /** Storage rooted at a savepoint directory; without it, savepoints are refused. */
  readonly savepointStorage?: ((directory: string | undefined) => CheckpointStorage) | undefined;
  /**
   * Receives every trigger, accepted ack, completion, failure and restore,
   * for the REST API and metrics (`runtime/metrics/checkpoint_stats.ts`).
   */
  readonly stats?: CheckpointStatsTracker | undefined;
  /** Test hook: throwing fails the attempt at that point. */
  readonly faults?:
    | ((point: CoordinatorFaultPoint, checkpointId: number, attempt: number) => void)
    | undefined;
}
