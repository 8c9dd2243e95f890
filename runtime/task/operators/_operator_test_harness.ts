/**
 * Internal test kit: runs one operator subtask outside a task, with a
 * `ManualClock`, a recording output and checkpoints whose participants
 * write real blobs into memory (`_snapshot_kit.ts`; Flink's
 * `OneInputStreamOperatorTestHarness`). Used by
 * operator tests; not part of the public API.
 *
 * @module
 */

import { restoreOf, type TakenSnapshot, takeSnapshot } from "./_snapshot_kit.ts";
import type { SnapshotType } from "../../checkpoint/snapshot_contract.ts";
import {
  computeKeyGroupRangeForOperatorIndex,
  DEFAULT_MAX_PARALLELISM,
} from "../../state/key_group.ts";
import { ManualClock } from "../../time/manual_clock.ts";
import type { CheckpointingMode } from "../../api/sink_v2.ts";
import type { OperatorEnvironment, OperatorRestore, Output, StreamOperator } from "./operator.ts";

/** A record the operator emitted. */
export interface EmittedRecord {
  /** The record. */
  readonly value: unknown;
  /** Its timestamp, ms, or `undefined`. */
  readonly timestamp: number | undefined;
}

/** Where the harness runs the operator. */
export interface HarnessOptions {
  /** The subtask's index (default 0). */
  readonly subtaskIndex?: number;
  /** The operator's parallelism (default 1). */
  readonly parallelism?: number;
  /** The number of key groups (default 128). */
  readonly maxParallelism?: number;
  /** The clock (default a new `ManualClock` at 0). */
  readonly clock?: ManualClock;
  /** The state to restore, from {@linkcode OperatorTestHarness.restoreFrom}. */
  readonly restore?: OperatorRestore;
  /** The job's checkpointing mode the operator sees (default `"exactly-once"`). */
  readonly checkpointingMode?: CheckpointingMode | "none";
}

/** One operator subtask under test (see the module docs). */
export class OperatorTestHarness<O extends StreamOperator> {
  /** Processing time. */
  readonly clock: ManualClock;
  /** The operator. */
  readonly operator: O;
  /** Main-output records, in emission order. */
  readonly records: EmittedRecord[] = [];
  /** Side-output records by tag id. */
  readonly side: Map<string, EmittedRecord[]> = new Map();
  /** Watermarks forwarded, in order. */
  readonly watermarks: number[] = [];
  /** The environment the operator got. */
  readonly env: OperatorEnvironment;

  private constructor(
    make: (env: OperatorEnvironment, output: Output) => O,
    options: HarnessOptions,
  ) {
    this.clock = options.clock ?? new ManualClock();
    const maxParallelism = options.maxParallelism ?? DEFAULT_MAX_PARALLELISM;
    const parallelism = options.parallelism ?? 1;
    const subtaskIndex = options.subtaskIndex ?? 0;
    this.env = {
      jobId: "harness",
      jobName: "operator test harness",
      vertexId: "v1",
      subtaskIndex,
      parallelism,
      maxParallelism,
      keyGroupRange: computeKeyGroupRangeForOperatorIndex(
        maxParallelism,
        parallelism,
        subtaskIndex,
      ),
      attempt: 0,
      clock: this.clock,
      checkpointingMode: options.checkpointingMode ?? "exactly-once",
      requestWakeup: () => {},
    };
    const output: Output = {
      collect: (value, timestamp) => this.records.push({ value, timestamp }),
      collectSide: (tag, value, timestamp) => {
        const list = this.side.get(tag) ?? [];
        list.push({ value, timestamp });
        this.side.set(tag, list);
      },
      emitWatermark: (wm) => this.watermarks.push(wm),
      emitWatermarkStatus: () => {},
    };
    this.operator = make(this.env, output);
  }

  /** Creates the operator, restores `options.restore` if given, and opens it. */
  static async open<O extends StreamOperator>(
    make: (env: OperatorEnvironment, output: Output) => O,
    options: HarnessOptions = {},
  ): Promise<OperatorTestHarness<O>> {
    const harness = new OperatorTestHarness(make, options);
    await harness.operator.initializeState(options.restore);
    await harness.operator.open();
    return harness;
  }

  /** Processes `value` with `timestamp` (ms, or `undefined`). */
  processElement(value: unknown, timestamp: number | undefined): void {
    this.operator.processElement(value, timestamp);
  }

  /** Advances event time to `watermark` (ms). */
  processWatermark(watermark: number): void {
    this.operator.processWatermark(watermark);
  }

  /** Moves the clock to `timeMs` and fires the operator's due processing-time timers. */
  setProcessingTime(timeMs: number): void {
    this.clock.setTime(timeMs);
    this.operator.onProcessingTime(this.clock.now());
  }

  /** The main-output values, without timestamps. */
  values(): unknown[] {
    return this.records.map((r) => r.value);
  }

  /** Takes checkpoint `checkpointId`: its participants write into memory; returns what they wrote, decoded. */
  async snapshot(checkpointId = 1, type: SnapshotType = "checkpoint"): Promise<TakenSnapshot> {
    const results = await this.operator.snapshotState(checkpointId, 0, type);
    return await takeSnapshot(results, checkpointId, type);
  }

  /** The restore of `snapshots` (one per old subtask) for a new subtask: keyed state, timers, watermark. */
  static restoreFrom(snapshots: readonly TakenSnapshot[], checkpointId = 1): OperatorRestore {
    return restoreOf(snapshots, checkpointId);
  }

  /** Closes the operator. */
  async close(): Promise<void> {
    await this.operator.close();
  }
}
