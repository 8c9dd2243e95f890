/**
 * The window join (Flink's `WindowJoin`, `WindowJoinOperator`): joins the
 * rows of two windowed inputs that fall in the same window and have equal
 * keys, once the window is complete.
 *
 * It is a keyed two-input function keyed by the equi-join keys plus
 * `window_start` and `window_end`. Per key it appends both sides' rows of
 * the window to one list state per side (O(1) per row) and registers an event-time timer at the
 * window's last millisecond (`window_end - 1`). When the watermark (the
 * minimum of both inputs') passes it, the window's pairs are joined
 * ({@linkcode windowJoinResult}, pure): for an inner join every pair whose
 * filter is TRUE; an outer side's rows without a match come null-padded.
 * Everything is emitted as `+I` (append-only) and the key's state is cleared.
 *
 * A row whose window the watermark already passed is late: it is dropped
 * and counted in {@linkcode WindowJoinFunction.numLateRecordsDropped} (its
 * operator reports it as the `numLateRecordsDropped` metric), with a
 * warning on stderr for the first one. Inputs must be append-only
 * (window TVFs and window aggregations are); any other kind is an error
 * naming the row.
 *
 * @module
 */

import type {
  Collector,
  KeyedCoProcessFunction,
  KeyedProcessContext,
  OnTimerContext,
  RuntimeContext,
} from "../api/functions.ts";
import { type ListState, ListStateDescriptor } from "../api/state.ts";
import { SuppressRestartsError } from "../failure.ts";
import { formatRow, type Row, type SqlValue } from "./row.ts";
import { isOuterSide, type JoinShape } from "./stream_join.ts";
import { MillisMemo } from "./timestamp_cache.ts";

/** One window's rows of both sides (plain data). */
export interface WindowJoinBuffer {
  /** The left rows, in arrival order. */
  readonly left: readonly (readonly SqlValue[])[];
  /** The right rows, in arrival order. */
  readonly right: readonly (readonly SqlValue[])[];
}

/** The window join's shape: the join's plus where each side keeps `window_end`. */
export interface WindowJoinShape extends JoinShape {
  /** `window_end`'s position in the left rows. */
  readonly leftWindowEnd: number;
  /** `window_end`'s position in the right rows. */
  readonly rightWindowEnd: number;
}

/**
 * The rows a complete window emits (see the module docs). Pure.
 * @param shape the join.
 * @param buffer the window's rows.
 * @returns `+I` rows: pairs in left-then-right arrival order, then the
 *   unmatched left rows, then the unmatched right rows (outer joins).
 */
export function windowJoinResult(shape: JoinShape, buffer: WindowJoinBuffer): Row[] {
  const out: Row[] = [];
  const rightMatched = new Array<boolean>(buffer.right.length).fill(false);
  const unmatchedLeft: (readonly SqlValue[])[] = [];
  for (const l of buffer.left) {
    let matched = false;
    buffer.right.forEach((r, i) => {
      const fields = [...l, ...r];
      if (shape.filter !== null && shape.filter(fields) !== true) return;
      matched = true;
      rightMatched[i] = true;
      out.push({ kind: "INSERT", fields });
    });
    if (!matched) unmatchedLeft.push(l);
  }
  if (isOuterSide(shape.joinType, true)) {
    for (const l of unmatchedLeft) {
      out.push({
        kind: "INSERT",
        fields: [...l, ...new Array<SqlValue>(shape.rightArity).fill(null)],
      });
    }
  }
  if (isOuterSide(shape.joinType, false)) {
    buffer.right.forEach((r, i) => {
      if (rightMatched[i]) return;
      out.push({
        kind: "INSERT",
        fields: [...new Array<SqlValue>(shape.leftArity).fill(null), ...r],
      });
    });
  }
  return out;
}

/**
 * The WindowJoin operator's function (see the module docs). Fields are
 * TypeScript `private`: function objects are copied per subtask.
 */
export class WindowJoinFunction implements KeyedCoProcessFunction<string, Row, Row, Row> {
  private readonly shape: WindowJoinShape;
  private readonly name: string;
  private left: ListState<SqlValue[]> | undefined;
  private right: ListState<SqlValue[]> | undefined;
  private readonly leftEnd = new MillisMemo("window_end");
  private readonly rightEnd = new MillisMemo("window_end");
  private late = 0;

  /**
   * @param shape the join.
   * @param name the node's description, for messages.
   */
  constructor(shape: WindowJoinShape, name: string) {
    this.shape = shape;
    this.name = name;
  }

  /** Late rows dropped by this subtask so far (Flink's `numLateRecordsDropped`). */
  get numLateRecordsDropped(): number {
    return this.late;
  }

  /** Binds the window's rows (`window-join-left`, `window-join-right`). */
  open(ctx: RuntimeContext): void {
    this.left = ctx.getListState(new ListStateDescriptor<SqlValue[]>("window-join-left"));
    this.right = ctx.getListState(new ListStateDescriptor<SqlValue[]>("window-join-right"));
  }

  /** A left row. */
  processElement1(row: Row, ctx: KeyedProcessContext<string>, _out: Collector<Row>): void {
    this.add(row, true, ctx);
  }

  /** A right row. */
  processElement2(row: Row, ctx: KeyedProcessContext<string>, _out: Collector<Row>): void {
    this.add(row, false, ctx);
  }

  private add(row: Row, left: boolean, ctx: KeyedProcessContext<string>): void {
    let fire: number;
    try {
      if (row.kind !== "INSERT") {
        throw new Error("WindowJoin consumes only inserts: its inputs must be append-only");
      }
      const end = left ? this.shape.leftWindowEnd : this.shape.rightWindowEnd;
      fire = (left ? this.leftEnd : this.rightEnd).of(row.fields[end] ?? null) - 1;
    } catch (error) {
      throw new SuppressRestartsError(
        `${this.name} failed on ${formatRow(row)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    const watermark = ctx.timerService().currentWatermark();
    if (fire <= watermark) {
      if (this.late++ === 0) {
        console.warn(
          `${this.name}: dropped late row ${
            formatRow(row)
          } (its window ended at ${fire} ms, the watermark is ${watermark} ms); later ones are counted in numLateRecordsDropped`,
        );
      }
      return;
    }
    (left ? this.left! : this.right!).add(row.fields as SqlValue[]);
    ctx.timerService().registerEventTimeTimer(fire);
  }

  /** Joins the complete window and forgets it. */
  onTimer(_timestamp: number, _ctx: OnTimerContext<string>, out: Collector<Row>): void {
    const buffer = { left: this.left!.get(), right: this.right!.get() };
    if (buffer.left.length === 0 && buffer.right.length === 0) return;
    const result = windowJoinResult(this.shape, buffer);
    this.left!.clear();
    this.right!.clear();
    for (const change of result) out.collect(change);
  }
}
