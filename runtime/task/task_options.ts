/**
 * What a `StreamTask` (`stream_task.ts`) is given: the data plane and time tuning
 * ({@linkcode TaskConfig}), its options, the chaos hooks of tests
 * ({@linkcode FaultInjector}) and the error a failed subtask ends with.
 *
 * @module
 */

import type { Transport } from "../actor/types.ts";
import type { JobGraph, JobVertex } from "../graph/job_graph.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { TaskLocalStateStore } from "./local_state_store.ts";
import type { Clock } from "../time/clock.ts";
import type { CheckpointingMode } from "../api/sink_v2.ts";
import type { RestorePoint } from "./messages.ts";
import type { StateBackendConfig } from "../state/state_backend_factory.ts";

/** Tuning of the data plane and of time. */
export interface TaskConfig {
  /** Records per network buffer. */
  readonly bufferSize: number;
  /** Longest a partially filled buffer waits while the task is busy, in ms. */
  readonly bufferTimeoutMs: number;
  /** Buffers in flight per channel (credits granted at start). */
  readonly initialCredits: number;
  /** Period of source watermark generation, in ms. */
  readonly autoWatermarkIntervalMs: number;
  /**
   * The job's checkpointing mode (`"none"` when checkpointing is off). It
   * picks the barrier handler (aligned for exactly-once and none, a tracker
   * without alignment for at-least-once) and reaches every operator as
   * `OperatorEnvironment.checkpointingMode`.
   */
  readonly checkpointingMode: CheckpointingMode | "none";
  /**
   * Whether a network edge whose consumer shares the producer's thread hands
   * records over as they are (default `true`; Flink's `enableObjectReuse`):
   * records must then not be changed after `collect`. `false` encodes every
   * buffer, as a cross-thread edge does (see `record_writer.ts`).
   */
  readonly objectReuse?: boolean;
  /**
   * The keyed state backend of keyed operators (default heap); reaches every
   * operator as `OperatorEnvironment.stateBackend`.
   */
  readonly stateBackend?: StateBackendConfig;
  /**
   * Unaligned checkpoints (FLIP-76; Flink's
   * `execution.checkpointing.unaligned`), exactly-once mode only: barriers
   * overtake in-flight buffers, which are stored as channel state
   * (`channel_state.ts`). Default `false`.
   */
  readonly unalignedCheckpoints?: boolean;
  /**
   * With `unalignedCheckpoints`: how long a checkpoint aligns before it
   * switches to unaligned, in ms, measured from the arrival of its first barrier at each
   * subtask (Flink's `execution.checkpointing.aligned-checkpoint-timeout`);
   * `0` (default): unaligned from the start.
   */
  readonly alignedCheckpointTimeoutMs?: number;
  /**
   * Private state blobs smaller than this many bytes are kept inline in the
   * checkpoint metadata instead of storage (Flink's
   * `state.storage.fs.memory-threshold`; `subtask_checkpointer.ts`). An
   * integer in 0..524 288; 0 writes every blob. Default 20 480 (20 KiB).
   */
  readonly memoryThresholdBytes?: number;
}

/** Where a fault can be injected in tests (chaos hooks; no effect unless an injector is set). */
export type FaultPoint =
  | "before-snapshot"
  | "after-snapshot"
  | "alignment"
  | "before-commit";

/** Where a fault point was reached. */
export interface FaultSite {
  /** Vertex id (`v<n>`). */
  readonly vertexId: string;
  /** Vertex name (its chained operators). */
  readonly vertexName: string;
  /** Subtask index. */
  readonly subtask: number;
  /** Execution attempt. */
  readonly attempt: number;
  /** The checkpoint concerned (0 when none). */
  readonly checkpointId: number;
}

/** Where subtask `o` is, at checkpoint `checkpointId` (0 when none), for a {@linkcode FaultInjector}. */
export function faultSite(o: StreamTaskOptions, checkpointId: number): FaultSite {
  return {
    vertexId: o.vertex.id,
    vertexName: o.vertex.name,
    subtask: o.subtask,
    attempt: o.attempt,
    checkpointId,
  };
}

/** A test hook called at each {@linkcode FaultPoint}; it fails the subtask by throwing. */
export type FaultInjector = (point: FaultPoint, site: FaultSite) => void;

/** A subtask failed (`StreamTask.run`); the message names job, vertex, subtask and attempt. */
export class TaskFailedError extends Error {
  /** The error class name. */
  override name = "TaskFailedError";

  /**
   * `error` as the failure of subtask `where` (`Subtask <name> of job <id>`),
   * the cause attached; a `TaskFailedError` is returned as it is. A
   * `TypeError` about a private member gets a hint: function objects are
   * copied per subtask, and `#private` fields cannot be copied.
   */
  static of(error: unknown, where: string): TaskFailedError {
    if (error instanceof TaskFailedError) return error;
    let message = error instanceof Error ? error.message : String(error);
    if (error instanceof TypeError && /private member/.test(message)) {
      message += " (function objects are copied per subtask, and ECMAScript #private fields " +
        "cannot be copied: use TypeScript `private` fields in function classes)";
    }
    return new TaskFailedError(`${where} failed: ${message}`, { cause: error });
  }
}

/** Options of `StreamTask` (`stream_task.ts`). */
export interface StreamTaskOptions {
  /** Carries the subtask's mailbox, its channels and its reports. */
  readonly transport: Transport;
  /** The job's id. */
  readonly jobId: string;
  /** The execution attempt; messages of other attempts are fenced off. */
  readonly attempt: number;
  /** The job graph. */
  readonly graph: JobGraph;
  /** The vertex this subtask belongs to. */
  readonly vertex: JobVertex;
  /** The subtask's index, `0 <= subtask < vertex.parallelism`. */
  readonly subtask: number;
  /** Data plane and time tuning. */
  readonly config: TaskConfig;
  /** Where checkpoints are read and written. */
  readonly storage: CheckpointStorage;
  /** Checkpoint to restore from, or `null` for a fresh start. */
  readonly restore: RestorePoint | null;
  /**
   * Local recovery: the worker-local copies of this subtask's snapshots
   * (`local_state_store.ts`), written beside checkpoint storage and read
   * first on restore. Absent: checkpoint storage only.
   */
  readonly localState?: TaskLocalStateStore | undefined;
  /** Processing time. */
  readonly clock: Clock;
  /** Test hook: fails the subtask at fault points. */
  readonly faults?: FaultInjector | undefined;
}
