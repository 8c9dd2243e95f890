/**
 * Shapes shared by the checkpoint protocol: ids, state handles, subtask
 * acknowledgements, the completed-checkpoint metadata and the reasons a
 * checkpoint fails.
 *
 * This is a leaf module: it imports only the types of the leaf
 * `snapshot_contract.ts` (state handles, snapshot types), so the coordinator side
 * (`pending.ts`), the task side (`../task/barrier_handler.ts`) and the
 * storages (`storage.ts`) can all depend on it without cycles.
 *
 * ## Invariants
 *
 * - A {@linkcode CheckpointId} is a positive integer. Ids increase strictly
 *   over the whole life of a job, across attempts and coordinator restarts:
 *   a larger id is always a later checkpoint.
 * - A subtask is named by the pair `(vertexId, subtask)`, written
 *   `"<vertexId>#<subtask>"` by {@linkcode subtaskKey} wherever a string key is
 *   needed.
 * - Key-group ranges are inclusive at both ends, as Flink's `KeyGroupRange`.
 *
 * @module
 */

import type { SnapshotType, StateHandle } from "./snapshot_contract.ts";

export type { SnapshotType, StateHandle, StateHandleKind } from "./snapshot_contract.ts";

/**
 * Identifier of one checkpoint or savepoint of a job: a positive integer,
 * strictly increasing across all attempts of the job (Flink's
 * `CheckpointIDCounter`). The first checkpoint of a fresh job is 1.
 */
export type CheckpointId = number;

/**
 * Reference to one blob as a checkpoint storage wrote it (`storage.ts`):
 * where it is and how big. Flink's `StreamStateHandle`, reduced to what Weir
 * needs. What the blob holds, and whose state it is, is said by the
 * {@linkcode StateHandle} a state participant's write returns (it extends
 * this shape).
 */
export interface StoredBlob {
  /**
   * Location of the blob, relative to the storage's directory of the job,
   * with `/` separators, e.g. `"chk-7/v1-0-a2.keyed-count"`. Never absolute,
   * never containing `..`.
   */
  readonly path: string;
  /** Size of the blob, in bytes. */
  readonly bytes: number;
}

/** Names one parallel instance of a vertex. */
export interface SubtaskRef {
  /** The JobGraph vertex id. */
  readonly vertexId: string;
  /** The subtask index, `0 <= subtask < parallelism`. */
  readonly subtask: number;
}

/**
 * What a subtask reports to the coordinator once its snapshot for a
 * checkpoint is durable (Flink's `AcknowledgeCheckpoint` message with its
 * `CheckpointMetrics`).
 */
export interface SubtaskAck {
  /** The vertex the subtask belongs to. */
  readonly vertexId: string;
  /** The subtask index within the vertex. */
  readonly subtask: number;
  /** The execution attempt that took the snapshot; acks of other attempts are fenced off. */
  readonly attempt: number;
  /** The checkpoint this acknowledges. */
  readonly checkpointId: CheckpointId;
  /**
   * Every blob its state participants wrote or (incremental snapshots)
   * still refer to, each tagged with its kind, operator uid, shared flag and,
   * for keyed kinds, key-group range; empty when the subtask holds no state.
   */
  readonly handles: readonly StateHandle[];
  /**
   * Uids of the operators of this subtask that had state (any handle but a
   * watermark floor), for the `allowNonRestoredState` check of a resume.
   */
  readonly stateUids: readonly string[];
  /** Duration of the synchronous part of the snapshot, in ms. */
  readonly syncDurationMs: number;
  /** Duration of the asynchronous upload, in ms. */
  readonly asyncDurationMs: number;
  /** Time the subtask spent aligning barriers for this checkpoint, in ms (0 when not aligned). */
  readonly alignmentDurationMs: number;
  /** Size of the blobs this snapshot wrote (shared blobs written earlier excluded), in bytes. */
  readonly stateBytes: number;
  /**
   * Time from the checkpoint's trigger (wall clock of the coordinator) to
   * the start of this subtask's snapshot, less its alignment, in ms
   * (Flink's `checkpointStartDelayNanos`, in ms); absent from older senders.
   */
  readonly startDelayMs?: number;
}

/** What one subtask contributed to a completed checkpoint. */
export interface SubtaskStateMetadata {
  /** The subtask index within its vertex. */
  readonly subtask: number;
  /** Its state handles, as its ack listed them (see {@linkcode SubtaskAck.handles}). */
  readonly handles: readonly StateHandle[];
  /** Uids of the operators of this subtask that had state (any handle but a watermark floor). */
  readonly stateUids: readonly string[];
}

/** What one vertex contributed to a completed checkpoint. */
export interface VertexStateMetadata {
  /** The JobGraph vertex id. */
  readonly vertexId: string;
  /** The stable `uid`s of the operators chained in this vertex, head first. */
  readonly operatorUids: readonly string[];
  /** Parallelism the vertex ran with when the checkpoint was taken. */
  readonly parallelism: number;
  /** Max parallelism (number of key groups) of the vertex; fixed for the job's lifetime. */
  readonly maxParallelism: number;
  /** One entry per subtask, sorted by subtask index. */
  readonly subtasks: readonly SubtaskStateMetadata[];
}

/**
 * The `_metadata` of a completed checkpoint or savepoint (Flink's
 * `CheckpointMetadata`). Writing it is the commit point of the checkpoint:
 * a checkpoint without a readable `_metadata` does not exist.
 */
export interface CheckpointMetadata {
  /**
   * Format version: 2 (a list of kind-tagged handles per subtask). Version 1
   * (one keyed and one operator file per subtask) is still read, and
   * converted to version 2 by `parseCheckpointMetadata` (`metadata.ts`).
   */
  readonly version: 2;
  /** The job the checkpoint belongs to. */
  readonly jobId: string;
  /** The job's human-readable name. */
  readonly jobName: string;
  /** The checkpoint's id. */
  readonly checkpointId: CheckpointId;
  /**
   * Periodic checkpoint, or user-triggered savepoint (canonical and
   * self-contained: it refers to no shared blob; never discarded by retention).
   */
  readonly kind: SnapshotType;
  /** When the coordinator triggered it, in epoch ms. */
  readonly triggeredAt: number;
  /** When the last acknowledgement arrived and the metadata was built, in epoch ms. */
  readonly completedAt: number;
  /** The job attempt that took it. */
  readonly attempt: number;
  /** Per-vertex state, sorted by vertex id. */
  readonly vertices: readonly VertexStateMetadata[];
  /** Sum of all subtasks' `stateBytes` (blobs written for this checkpoint), in bytes. */
  readonly totalBytes: number;
}

/** The code of a {@linkcode CheckpointFailureReason}. */
export type CheckpointFailureCode =
  | "DISABLED"
  | "TOO_MANY_PENDING"
  | "TASKS_NOT_RUNNING"
  | "TRIGGER_FAILED"
  | "TIMEOUT"
  | "DECLINED"
  | "SUBSUMED"
  | "BARRIER_SUBSUMED"
  | "ABORTED_BY_COORDINATOR"
  | "INPUT_ENDED"
  | "TASK_FAILURE"
  | "JOB_FAILING"
  | "COORDINATOR_SHUTDOWN"
  | "FINALIZE_FAILED"
  | "IO_ERROR";

/**
 * Why a checkpoint failed or was not triggered: a code plus the message shown
 * in logs and the dashboard. Compare reasons by `code`.
 *
 * Modelled on Flink's `CheckpointFailureReason` enum, whose constants carry
 * their message.
 */
export interface CheckpointFailureReason {
  /** Stable identifier, for comparisons and metrics. */
  readonly code: CheckpointFailureCode;
  /** Human-readable explanation. */
  readonly message: string;
  /**
   * `true` when the failure happened before the checkpoint was triggered on
   * any task (Flink's `isPreFlight`): nothing was written, nothing to clean.
   */
  readonly preFlight: boolean;
}

/**
 * All {@linkcode CheckpointFailureReason}s, by code (Flink's
 * `CheckpointFailureReason` constants, renamed for Weir):
 *
 * | code | Flink counterpart |
 * |---|---|
 * | `DISABLED` | `PERIODIC_SCHEDULER_SHUTDOWN` |
 * | `TOO_MANY_PENDING` | `TOO_MANY_CONCURRENT_CHECKPOINTS` |
 * | `TASKS_NOT_RUNNING` | `NOT_ALL_REQUIRED_TASKS_RUNNING` |
 * | `TRIGGER_FAILED` | `TRIGGER_CHECKPOINT_FAILURE` |
 * | `TIMEOUT` | `CHECKPOINT_EXPIRED` |
 * | `DECLINED` | `CHECKPOINT_DECLINED` |
 * | `SUBSUMED` | `CHECKPOINT_SUBSUMED` |
 * | `BARRIER_SUBSUMED` | `CHECKPOINT_DECLINED_SUBSUMED` |
 * | `ABORTED_BY_COORDINATOR` | `notifyCheckpointAborted` on the task |
 * | `INPUT_ENDED` | `CHECKPOINT_DECLINED_INPUT_END_OF_STREAM` |
 * | `TASK_FAILURE` | `TASK_FAILURE` |
 * | `JOB_FAILING` | `JOB_FAILOVER_REGION` / `JOB_FAILURE` |
 * | `COORDINATOR_SHUTDOWN` | `CHECKPOINT_COORDINATOR_SHUTDOWN` |
 * | `FINALIZE_FAILED` | `FINALIZE_CHECKPOINT_FAILURE` |
 * | `IO_ERROR` | `IO_EXCEPTION` |
 *
 * @example
 * ```ts
 * import { CheckpointFailureReason } from "./types.ts";
 * const reason = CheckpointFailureReason.TIMEOUT;
 * console.assert(reason.message === "Checkpoint expired before completing");
 * ```
 */
export const CheckpointFailureReason: {
  readonly [C in CheckpointFailureCode]: CheckpointFailureReason & { readonly code: C };
} = Object.freeze({
  DISABLED: reason("DISABLED", "Periodic checkpointing is disabled or stopped", true),
  TOO_MANY_PENDING: reason(
    "TOO_MANY_PENDING",
    "The maximum number of concurrent checkpoints is in progress",
    true,
  ),
  TASKS_NOT_RUNNING: reason("TASKS_NOT_RUNNING", "Not all required tasks are running", true),
  TRIGGER_FAILED: reason("TRIGGER_FAILED", "Triggering the checkpoint on the sources failed", true),
  TIMEOUT: reason("TIMEOUT", "Checkpoint expired before completing", false),
  DECLINED: reason("DECLINED", "A task declined the checkpoint", false),
  SUBSUMED: reason("SUBSUMED", "A newer checkpoint completed first", false),
  BARRIER_SUBSUMED: reason(
    "BARRIER_SUBSUMED",
    "A barrier of a newer checkpoint arrived before alignment finished",
    false,
  ),
  ABORTED_BY_COORDINATOR: reason(
    "ABORTED_BY_COORDINATOR",
    "The coordinator aborted the checkpoint",
    false,
  ),
  INPUT_ENDED: reason("INPUT_ENDED", "An input stream of a task has ended", false),
  TASK_FAILURE: reason("TASK_FAILURE", "A task failed while the checkpoint was in progress", false),
  JOB_FAILING: reason("JOB_FAILING", "The job is failing over", false),
  COORDINATOR_SHUTDOWN: reason(
    "COORDINATOR_SHUTDOWN",
    "The checkpoint coordinator shut down",
    false,
  ),
  FINALIZE_FAILED: reason(
    "FINALIZE_FAILED",
    "Writing the metadata of the completed checkpoint failed",
    false,
  ),
  IO_ERROR: reason("IO_ERROR", "An I/O error occurred while writing checkpoint state", false),
});

function reason<C extends CheckpointFailureCode>(
  code: C,
  message: string,
  preFlight: boolean,
): CheckpointFailureReason & { readonly code: C } {
  return Object.freeze({ code, message, preFlight });
}

/**
 * The string key of a subtask, `"<vertexId>#<subtask>"`, used in sets and
 * maps and in log lines.
 *
 * @param vertexId the JobGraph vertex id.
 * @param subtask the subtask index.
 * @returns e.g. `"map-1#0"`.
 *
 * @example
 * ```ts
 * import { subtaskKey } from "./types.ts";
 * console.assert(subtaskKey("map-1", 3) === "map-1#3");
 * ```
 */
export function subtaskKey(vertexId: string, subtask: number): string {
  return `${vertexId}#${subtask}`;
}
