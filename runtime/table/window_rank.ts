/**
 * Window Top-N: Flink's `WindowRank` (`WindowRankOperator`), the plan of
 *
 * ```sql
 * SELECT * FROM (
 *   SELECT *, ROW_NUMBER() OVER (
 *     PARTITION BY window_start, window_end [, k] ORDER BY x DESC) AS rn
 *   FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTES))  -- or a window aggregation
 * ) WHERE rn <= N
 * ```
 *
 * It is a KeyedProcessFunction keyed by the PARTITION BY keys (which
 * include the window's start and end). Per key it keeps the best `rankEnd`
 * rows of the window in keyed ValueState, sorted by the ORDER BY keys
 * (ties in arrival order, as {@linkcode RankFunction}), and registers an
 * event-time timer at the window's last millisecond (`window_end - 1`,
 * Flink's `TimeWindow.maxTimestamp()`). When the watermark passes it, the
 * ranks `rankStart..rankEnd` are emitted as `+I` rows (with the rank number
 * last when `outputRankNumber`) and the key's state is cleared. The output
 * is append-only: a window's ranks are final when emitted.
 *
 * A row of a window the watermark has already passed (`window_end - 1 <=
 * watermark` on arrival) is late: it is dropped and counted in
 * {@linkcode WindowRankFunction.numLateRecordsDropped}, with a warning on
 * stderr for the first one of each subtask (Flink drops it and counts
 * `numLateRecordsDropped`). Input must be append-only (window TVFs and
 * window aggregations are): any other kind is an error naming the row.
 *
 * Window state is cleaned when the window fires, so idle state retention
 * does not apply (as Flink's window operators).
 *
 * @module
 */

import type {
  Collector,
  KeyedProcessContext,
  KeyedProcessFunction,
  OnTimerContext,
  RuntimeContext,
} from "../api/functions.ts";
import { type ValueState, ValueStateDescriptor } from "../api/state.ts";
import { SuppressRestartsError } from "../failure.ts";
import { checkRankRange, decideRank, type SortKey } from "./rank.ts";
import { formatRow, type Row, type SqlValue } from "./row.ts";
import { timeAttributeMillis } from "./time_attribute.ts";

/** What a window Top-N computes. */
export interface WindowRankSpec {
  /** The ORDER BY keys, most significant first. */
  readonly sortKeys: readonly SortKey[];
  /** The first rank emitted (1-based, ≥ 1). */
  readonly rankStart: number;
  /** The last rank emitted (≥ rankStart). */
  readonly rankEnd: number;
  /** Append the rank number (`rn`) to each output row. */
  readonly outputRankNumber: boolean;
  /** The index of the `window_end` column in the input row. */
  readonly windowEndIndex: number;
}

/**
 * The rows a window's Top-N emits when the window fires. Pure.
 * @param spec the window Top-N.
 * @param rows the window's best rows, sorted.
 * @returns `+I` rows of ranks `rankStart..rankEnd`.
 */
export function windowRankResult(spec: WindowRankSpec, rows: readonly SqlValue[][]): Row[] {
  return rows.slice(spec.rankStart - 1, spec.rankEnd).map((fields, i) => ({
    kind: "INSERT",
    fields: spec.outputRankNumber ? [...fields, spec.rankStart + i] : [...fields],
  }));
}

/**
 * The WindowRank operator's function (see the module docs), applied after
 * `keyBy` on the PARTITION BY keys. Fields are TypeScript `private`:
 * function objects are copied per subtask.
 */
export class WindowRankFunction implements KeyedProcessFunction<string, Row, Row> {
  private readonly spec: WindowRankSpec;
  private readonly name: string;
  private state: ValueState<SqlValue[][]> | undefined;
  private late = 0;

  /**
   * @param spec the window Top-N.
   * @param name names the operator in messages (its plan description).
   * @throws {RangeError} for a bad rank range.
   */
  constructor(spec: WindowRankSpec, name = "WindowRank") {
    checkRankRange(spec.rankStart, spec.rankEnd);
    this.spec = spec;
    this.name = name;
  }

  /** Late rows dropped by this subtask so far (Flink's `numLateRecordsDropped`). */
  get numLateRecordsDropped(): number {
    return this.late;
  }

  /** Binds the window's rows (`window-rank-state`). */
  open(ctx: RuntimeContext): void {
    this.state = ctx.getState(new ValueStateDescriptor<SqlValue[][]>("window-rank-state"));
  }

  /** Keeps a row among its window's best, or drops it as late. */
  processElement(row: Row, ctx: KeyedProcessContext<string>, _out: Collector<Row>): void {
    const state = this.state!;
    let fire: number;
    let rows: SqlValue[][] | null;
    try {
      if (row.kind !== "INSERT") {
        throw new Error("WindowRank consumes only inserts: its input must be append-only");
      }
      fire = timeAttributeMillis(row.fields[this.spec.windowEndIndex] ?? null, "window_end") - 1;
      if (fire <= ctx.timerService().currentWatermark()) {
        if (this.late++ === 0) {
          console.warn(
            `${this.name}: dropped late row ${
              formatRow(row)
            } (its window ended at ${fire} ms, the watermark is ${ctx.timerService().currentWatermark()} ms); later ones are counted in numLateRecordsDropped`,
          );
        }
        return;
      }
      rows = decideRank(
        { ...this.spec, appendOnlyInput: true, generateUpdateBefore: false },
        state.value(),
        row,
      ).rows;
    } catch (error) {
      throw new SuppressRestartsError(
        `${this.name} failed on ${formatRow(row)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    if (rows !== null) state.update(rows);
    ctx.timerService().registerEventTimeTimer(fire);
  }

  /** Emits the window's ranks once the watermark passed its end, and forgets the window. */
  onTimer(_timestamp: number, _ctx: OnTimerContext<string>, out: Collector<Row>): void {
    const rows = this.state!.value();
    if (rows === undefined) return;
    this.state!.clear();
    for (const change of windowRankResult(this.spec, rows)) out.collect(change);
  }
}
