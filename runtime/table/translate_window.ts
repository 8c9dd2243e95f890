/**
 * Translation of event time and windows (see `translate.ts` for the
 * table of every node):
 *
 * | plan node | DataStream operator | uid |
 * |---|---|---|
 * | `TableSourceScan` with a watermark | the source, then `assignTimestampsAndWatermarks` ({@linkcode SqlWatermarkGenerator}) | `<prefix>-watermarks-<n>` |
 * | `WindowTableFunction` | `flatMap` adding the window columns, one row per window | `<prefix>-window-tvf-<n>` |
 * | `WindowAggregate` | `keyBy(keys).window(rowtime assigner).aggregate(...)` (`window_aggregate.ts`) | `<prefix>-window-aggregate-<n>` |
 *
 * @module
 */

import type { DataStream } from "../api/datastream.ts";
import type { Collector } from "../api/functions.ts";
import { SuppressRestartsError } from "../failure.ts";
import {
  type WatermarkGenerator,
  type WatermarkOutput,
  WatermarkStrategy,
} from "../time/watermark.ts";
import { groupKeyOf } from "./group_aggregate.ts";
import { keepInputParallelism } from "./translate_parallelism.ts";
import { describeNode, type ScanNode, type WatermarkAssignerNode } from "./plan.ts";
import type { WindowAggregateNode, WindowTableFunctionNode } from "./plan_window.ts";
import { formatRow, type Row } from "./row.ts";
import { MillisMemo, TextMemo } from "./timestamp_cache.ts";
import {
  attachedWindows,
  rowtimeWindows,
  WindowAggregateAccumulator,
  WindowAggregateResult,
} from "./window_aggregate.ts";

/**
 * The watermark of `WATERMARK FOR c AS c - INTERVAL 'd'` (Flink's
 * `WatermarkAssignerOperator`): the highest rowtime seen minus `d`,
 * emitted periodically (every auto-watermark interval), or at once on
 * each event that raises it when `onEvent` is set (Flink's
 * `scan.watermark.emit.strategy = on-event`). Its state is the highest
 * rowtime seen.
 */
export class SqlWatermarkGenerator implements WatermarkGenerator<Row> {
  #max = Number.NEGATIVE_INFINITY;
  readonly #delay: number;
  readonly #onEvent: boolean;

  /**
   * @param delayMillis how far the watermark trails the highest rowtime, ms.
   * @param onEvent emit on each event that raises it, not only periodically.
   */
  constructor(delayMillis: number, onEvent: boolean) {
    this.#delay = delayMillis;
    this.#onEvent = onEvent;
  }

  /** Sees a row's rowtime. */
  onEvent(_row: Row, timestamp: number, output: WatermarkOutput): void {
    if (timestamp <= this.#max) return;
    this.#max = timestamp;
    if (this.#onEvent) output.emitWatermark(timestamp - this.#delay);
  }

  /** Emits the current watermark, once a row was seen. */
  onPeriodicEmit(output: WatermarkOutput): void {
    if (this.#max !== Number.NEGATIVE_INFINITY) output.emitWatermark(this.#max - this.#delay);
  }

  /** The highest rowtime seen. */
  snapshotState(): number {
    return this.#max;
  }

  /**
   * Restores the highest rowtime seen.
   * @throws {Error} for anything but a number.
   */
  restoreState(state: unknown): void {
    if (typeof state !== "number") {
      throw new Error(
        `Cannot restore a SQL watermark generator: its state is the highest rowtime seen (a number), current value is ${
          JSON.stringify(state)
        }`,
      );
    }
    if (state > this.#max) this.#max = state;
  }
}

/**
 * Stamps a scan's rows with their rowtime and generates its watermarks.
 * A row whose rowtime is NULL or no timestamp ends the job, naming it.
 * With `idleTimeoutMs` above 0 (`table.exec.source.idle-timeout`), a split
 * without records for that long is marked idle (`withIdleness`).
 */
export function withScanWatermarks(
  stream: DataStream<Row>,
  node: ScanNode | WatermarkAssignerNode,
  uid: string,
  idleTimeoutMs = 0,
): DataStream<Row> {
  const wm = node.watermark!;
  const column = node.columns[wm.rowtime]!.name;
  const onEvent = wm.emit === "on-event";
  const millis = new MillisMemo(column);
  const strategy = WatermarkStrategy.forGenerator<Row>(() =>
    new SqlWatermarkGenerator(wm.delayMillis, onEvent)
  ).withTimestampAssigner((row) => {
    try {
      return millis.of(row.fields[wm.rowtime] ?? null);
    } catch (error) {
      throw new SuppressRestartsError(
        `table ${node.table}: ${formatRow(row)} has no valid rowtime: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
  });
  const idle = idleTimeoutMs > 0 ? strategy.withIdleness(idleTimeoutMs) : strategy;
  return keepInputParallelism(stream, stream.assignTimestampsAndWatermarks(idle)).uid(uid)
    .name(`WatermarkAssigner(rowtime=[${column}], watermark=[${wm.text}])`);
}

/** The rows of a window TVF with their window columns, one row per window. */
export function translateWindowTableFunction(
  input: DataStream<Row>,
  node: WindowTableFunctionNode,
  uid: string,
): DataStream<Row> {
  const assigner = rowtimeWindows(node.window);
  const name = describeNode(node);
  const context = { currentProcessingTime: () => 0 };
  const [start, end, time] = [new TextMemo(), new TextMemo(), new TextMemo()];
  return keepInputParallelism(
    input,
    input.flatMap((row: Row, out: Collector<Row>) => {
      let windows;
      try {
        windows = assigner.assignWindows(row, undefined, context);
      } catch (error) {
        throw new SuppressRestartsError(
          `${name} failed on ${formatRow(row)}: ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
      for (const w of windows) {
        out.collect({
          kind: row.kind,
          fields: [
            ...row.fields,
            start.of(w.start),
            end.of(w.end),
            time.of(w.end - 1),
          ],
        });
      }
    }),
  ).uid(uid).name(name);
}

/** A window aggregation on the runtime's window operator. */
export function translateWindowAggregate(
  input: DataStream<Row>,
  node: WindowAggregateNode,
  uid: string,
): DataStream<Row> {
  const name = describeNode(node);
  return input.keyBy(groupKeyOf(node.groupKeys))
    .window(
      node.attached === null
        ? rowtimeWindows(node.window)
        : attachedWindows(node.attached.start, node.attached.end),
    )
    .aggregate(
      new WindowAggregateAccumulator(node.aggregates, name),
      new WindowAggregateResult(node.aggregates, node.keySlots),
    )
    .uid(uid)
    .name(name);
}
