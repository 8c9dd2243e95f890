/**
 * The operator contract a StreamTask drives, and the output an operator
 * emits into (Flink's `StreamOperator` and `Output`).
 *
 * ## Call order, all on the subtask's mailbox loop
 *
 * `initializeState` -> `open` -> (`processElement` | `processWatermark` |
 * `processWatermarkStatus` | `onProcessingTime` | `snapshotState` |
 * `notifyCheckpoint*`)* ->
 * `endInput` (bounded input only) -> `close`.
 *
 * `processElement` is synchronous: it is the hot path. An operator whose
 * work is asynchronous (a sink's write) queues it in order and reports it
 * through `quiesce()`, which the task awaits after each input buffer and
 * before each snapshot.
 *
 * @module
 */

import type {
  SnapshotResult,
  SnapshotType,
  StateHandle,
} from "../../checkpoint/snapshot_contract.ts";
import type { StateReader } from "../../state/keyed_state_backend.ts";
import type { OperatorStateSnapshot } from "../../state/operator_state.ts";
import type { TimerServiceSnapshot } from "../../state/timer_service.ts";
import type { KeyGroupRange } from "../../state/key_group.ts";
import type { StateBackendConfig } from "../../state/state_backend_factory.ts";
import type { Clock } from "../../time/clock.ts";
import type { WatermarkStatus } from "../../time/watermark.ts";
import type { CheckpointingMode } from "../../api/sink_v2.ts";

/** Where an operator's records, side outputs and watermarks go. */
export interface Output {
  /** Emits a record on the main output. */
  collect(value: unknown, timestamp: number | undefined): void;
  /** Emits a record on side output `tagId`; dropped when nothing consumes that side output. */
  collectSide(tagId: string, value: unknown, timestamp: number | undefined): void;
  /** Forwards a watermark (ms). */
  emitWatermark(watermark: number): void;
  /**
   * Forwards a watermark status (Flink's `emitWatermarkStatus`): `"idle"`
   * leaves this output out of the minimum watermark downstream until
   * `"active"` follows.
   */
  emitWatermarkStatus(status: WatermarkStatus): void;
}

/**
 * One operator's answer to a snapshot request: a {@linkcode SnapshotResult}
 * per state participant (keyed state, timers, operator state, source splits,
 * sink committables, watermark floor), each already captured; the subtask
 * checkpointer runs their `write`s off the record path.
 */
export type OperatorSnapshotResults = SnapshotResult[];

/**
 * What an operator restores from: the handles of the restored checkpoint
 * that concern this operator's uid, keyed ones still to be read by its
 * backend, the small kinds already decoded.
 */
export interface OperatorRestore {
  /** The checkpoint restored from. */
  readonly checkpointId: number;
  /**
   * Keyed-state handles (`keyed`, `keyed-incremental`) of every old subtask
   * whose key groups overlap this subtask's, for
   * `KeyedStateBackend.restore(handles, read)`.
   */
  readonly keyedHandles: readonly StateHandle[];
  /** Reads a handle's blob from checkpoint storage (for {@linkcode keyedHandles}). */
  readonly read: StateReader;
  /** Timer parts of every old subtask whose key groups overlap this subtask's. */
  readonly timers: TimerServiceSnapshot[];
  /**
   * This subtask's share of the operator state (kinds `operator`,
   * `source-splits`, `sink-committables`), already redistributed: split lists
   * evenly, union lists whole.
   */
  readonly operator: OperatorStateSnapshot | undefined;
  /**
   * The watermark floor (ms): this subtask's own watermark at the checkpoint
   * when the parallelism is unchanged, else the minimum over the old
   * subtasks; `undefined` when none was checkpointed.
   */
  readonly watermark?: number | undefined;
}

/** Facts about the running subtask that operators need. */
export interface OperatorEnvironment {
  /** The job's id. */
  readonly jobId: string;
  /** The job's name. */
  readonly jobName: string;
  /** Vertex id (`v<index>`). */
  readonly vertexId: string;
  /** Subtask index. */
  readonly subtaskIndex: number;
  /** Vertex parallelism. */
  readonly parallelism: number;
  /** Number of key groups. */
  readonly maxParallelism: number;
  /** Key groups this subtask owns. */
  readonly keyGroupRange: KeyGroupRange;
  /** Execution attempt. */
  readonly attempt: number;
  /** Processing time. */
  readonly clock: Clock;
  /**
   * The job's checkpointing mode: `"exactly-once"` (aligned barriers),
   * `"at-least-once"` (barriers tracked, never aligned), or `"none"` when
   * checkpointing is off (the job is then at-most-once end to end). Sinks
   * read it to check the delivery guarantee they were asked for (Flink's
   * `CheckpointingMode`, `InitContext#getCheckpointingMode` style).
   */
  readonly checkpointingMode: CheckpointingMode | "none";
  /**
   * The job's keyed state backend (`undefined`: heap), which keyed
   * operators build through `createKeyedStateBackend`.
   */
  readonly stateBackend?: StateBackendConfig | undefined;
  /** Asks the task to call `onProcessingTime` at or after `timeMs`. */
  requestWakeup(timeMs: number): void;
}

/** The operator contract (see the module docs for the call order). */
export interface StreamOperator {
  /** The operator's stable uid. */
  readonly uid: string;
  /** The operator's name. */
  readonly name: string;
  /** Creates state backends, restoring from `restore` when given. */
  initializeState(restore: OperatorRestore | undefined): Promise<void>;
  /** Opens user functions. */
  open(): Promise<void>;
  /**
   * Processes one record. Synchronous; throws on user-code errors.
   * @param keyGroup the record's key group when it arrived on a hash edge
   *   keyed by this operator's key selector (the producer computed it), so a
   *   keyed operator need not hash its key.
   * @param key the record's key, as that same key selector returned it,
   *   when the producer handed it over in-thread (`buffer_dispatch.ts`), so
   *   a keyed operator need not run its key selector again; `undefined`
   *   when not known. Given only with `keyGroup`.
   */
  processElement(
    value: unknown,
    timestamp: number | undefined,
    keyGroup?: number,
    key?: unknown,
  ): void;
  /** Advances event time; fires due event-time timers, then forwards the watermark. */
  processWatermark(watermark: number): void;
  /**
   * The input's watermark status changed (all inputs idle, or one active
   * again). Operators that extend `UdfOperator` forward it; an operator
   * without this method neither reacts to nor forwards status, which only
   * suits operators without outputs (sinks).
   */
  processWatermarkStatus?(status: WatermarkStatus): void;
  /** Fires due processing-time timers. */
  onProcessingTime(nowMs: number): void;
  /**
   * The operator's own counters, by Flink metric name (e.g. the window
   * operator's `numLateRecordsDropped`), read when the subtask finishes and
   * summed per vertex into the job result. Optional.
   */
  metrics?(): Readonly<Record<string, number>>;
  /** Resolves when the operator's queued asynchronous work is done; rejects with its error. */
  quiesce(): Promise<void>;
  /** End of bounded input: flush what is buffered. */
  endInput(): Promise<void>;
  /**
   * The synchronous part of checkpoint (or savepoint) `checkpointId`: runs
   * the operator's own hooks (a sink pre-commits here), then captures every
   * state participant and returns their results; writing them is the
   * checkpointer's. A savepoint's results must be canonical and
   * self-contained (no shared blobs).
   * @param timestamp the checkpoint's trigger time, epoch ms.
   * @throws whatever the operator's hooks throw; the subtask then fails.
   */
  snapshotState(
    checkpointId: number,
    timestamp: number,
    type: SnapshotType,
  ): Promise<OperatorSnapshotResults>;
  /** Checkpoint `checkpointId` completed. */
  notifyCheckpointComplete(checkpointId: number): Promise<void>;
  /** Checkpoint `checkpointId` was aborted. */
  notifyCheckpointAborted(checkpointId: number): Promise<void>;
  /** Releases resources (finish or cancel). Idempotent. */
  close(): Promise<void>;
}
