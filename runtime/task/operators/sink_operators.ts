/**
 * The operator for `SinkFunction`s, {@linkcode SimpleSinkOperator}. Sinks
 * with a writer and a committer (`SinkV2`), and `TwoPhaseCommitSink`s
 * through their adapter, run in `SinkWriterOperator`
 * (`sink_writer_operator.ts`).
 *
 * Asynchronous writes are queued in record order and awaited at buffer
 * boundaries and before every snapshot (`quiesce`).
 *
 * @module
 */

import type { SinkContext, SinkFunction } from "../../api/sink.ts";
import { OrderedCalls } from "./_ordered_calls.ts";
import type { OperatorSnapshotResults } from "./operator.ts";
import type { SnapshotType } from "../../checkpoint/snapshot_contract.ts";
import { OneInputUdfOperator } from "./udf_operator.ts";

/** Calls `invoke` per record (at-least-once at best; see the sink's docs). */
export class SimpleSinkOperator extends OneInputUdfOperator<SinkFunction<unknown>> {
  #calls = new OrderedCalls();
  /** Invokes the sink for `value`, in order with pending asynchronous invocations. */
  protected processRecord(value: unknown, timestamp: number | undefined): void {
    const fn = this.fn;
    const context: SinkContext = { timestamp };
    // The common case, a synchronous sink, allocates no closure.
    if (!this.#calls.busy) this.#calls.settle(fn.invoke(value, context));
    else this.#calls.run(() => fn.invoke(value, context));
  }
  /** Resolves when queued invocations are done; rejects with the first error. */
  override quiesce(): Promise<void> {
    return this.#calls.quiesce();
  }
  /** Awaits pending invocations, then the sink's `finish`. */
  override async endInput(): Promise<void> {
    await this.quiesce();
    await this.fn.finish?.();
  }
  /** Awaits pending invocations, then snapshots the function's state. */
  override async snapshotState(
    checkpointId: number,
    timestamp: number,
    type: SnapshotType,
  ): Promise<OperatorSnapshotResults> {
    await this.quiesce();
    return await super.snapshotState(checkpointId, timestamp, type);
  }
  /** Sinks ignore watermarks. */
  override processWatermark(): void {}
}
