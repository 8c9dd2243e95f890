/**
 * The event-time interval join of SQL (Flink's `RowTimeIntervalJoin`, for
 * INNER, LEFT, RIGHT and FULL joins): pairs rows whose rowtimes satisfy
 * `lower <= l.rt - r.rt <= upper` (and the join's filter), append-only,
 * and emits an outer side's row null-padded once it can match nothing
 * more. Unlike the DataStream interval join (`runtime/api/interval_join.ts`,
 * on record timestamps, a row at the watermark not late), it reads the
 * rowtime columns and treats a row whose interval the watermark has
 * passed as late, as Flink SQL's strictly ascending watermark means.
 *
 * It is a keyed two-input function keyed by the equi-join keys. Per key
 * and side it buffers rows by rowtime, each with whether it has matched.
 *
 * ## Per row (the pairing is {@linkcode matchInterval}, pure)
 *
 * - A row is joined with every buffered row of the other side in its
 *   interval: a left row at `t` with right rows in `[t - upper, t - lower]`,
 *   a right row at `t` with left rows in `[t + lower, t + upper]`; each
 *   pair whose filter is TRUE is emitted `+I`, both rows marked matched.
 * - A row is buffered until it *expires*: a left row at `t` when the
 *   watermark reaches `t - lower` (later right rows are after the
 *   watermark, so beyond its interval), a right row at `t` at `t + upper`.
 *   An event-time timer at the expiry removes it; an outer side's row that
 *   never matched is then emitted `+I(row, NULL...)` (or mirrored).
 * - A row that has already expired on arrival (late) is still joined with
 *   what is buffered, but not kept: an outer side's unmatched late row is
 *   emitted null-padded at once, as Flink's, and counted in
 *   {@linkcode RowTimeIntervalJoinFunction.numLateRecordsDropped} (the
 *   operator's `numLateRecordsDropped` metric) only on an inner side.
 *
 * Inputs must be append-only (interval joins need them); a row with a NULL
 * key matches nothing. Cost: each row scans the other side's buffered
 * rowtimes of its key (linear in what the key buffers: about the rows of
 * `upper - lower` ms, plus the watermark's delay).
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
import { type MapState, MapStateDescriptor } from "../api/state.ts";
import { SuppressRestartsError } from "../failure.ts";
import { formatRow, type Row, type SqlValue } from "./row.ts";
import { isOuterSide, type JoinShape } from "./stream_join.ts";
import { MillisMemo } from "./timestamp_cache.ts";

/** A buffered row: its fields and whether it has joined with a row of the other side. */
export interface IntervalRow {
  /** The row's fields. */
  readonly fields: readonly SqlValue[];
  /** Whether it has matched. */
  readonly matched: boolean;
}

/** The interval join's shape: the join's, the rowtime positions and the bounds on `l.rt - r.rt`. */
export interface IntervalJoinShape extends JoinShape {
  /** The left rowtime's position. */
  readonly leftTime: number;
  /** The right rowtime's position. */
  readonly rightTime: number;
  /** Least `l.rt - r.rt`, ms. */
  readonly lower: number;
  /** Greatest `l.rt - r.rt`, ms. */
  readonly upper: number;
}

/** What one row's arrival does: the pairs to emit and which buffered rows (by time and index) now matched. */
export interface IntervalMatch {
  /** `+I` rows of the joined pairs, in buffer order. */
  readonly pairs: readonly Row[];
  /** Buffered rows of the other side that matched now for the first time: `[time, index]`. */
  readonly newlyMatched: readonly (readonly [number, number])[];
}

/**
 * Joins one row with the other side's buffer (see the module docs). Pure.
 * @param shape the join.
 * @param fields the arriving row's fields.
 * @param time its rowtime, ms.
 * @param left whether it is a left row.
 * @param other the other side's buffered rows by rowtime.
 */
export function matchInterval(
  shape: IntervalJoinShape,
  fields: readonly SqlValue[],
  time: number,
  left: boolean,
  other: readonly (readonly [number, readonly IntervalRow[]])[],
): IntervalMatch {
  const [from, to] = left
    ? [time - shape.upper, time - shape.lower]
    : [time + shape.lower, time + shape.upper];
  const pairs: Row[] = [];
  const newlyMatched: [number, number][] = [];
  for (const [t, rows] of other) {
    if (t < from || t > to) continue;
    rows.forEach((row, i) => {
      const joined = left ? [...fields, ...row.fields] : [...row.fields, ...fields];
      if (shape.filter !== null && shape.filter(joined) !== true) return;
      pairs.push({ kind: "INSERT", fields: joined });
      if (!row.matched) newlyMatched.push([t, i]);
    });
  }
  return { pairs, newlyMatched };
}

/**
 * The interval join's function (see the module docs). Fields are
 * TypeScript `private`: function objects are copied per subtask.
 */
export class RowTimeIntervalJoinFunction implements KeyedCoProcessFunction<string, Row, Row, Row> {
  private readonly shape: IntervalJoinShape;
  private readonly name: string;
  private left: MapState<number, IntervalRow[]> | undefined;
  private right: MapState<number, IntervalRow[]> | undefined;
  private readonly leftMillis = new MillisMemo("the left rowtime");
  private readonly rightMillis = new MillisMemo("the right rowtime");
  private late = 0;

  /**
   * @param shape the join.
   * @param name the node's description, for messages.
   */
  constructor(shape: IntervalJoinShape, name: string) {
    this.shape = shape;
    this.name = name;
  }

  /** Late rows of an inner side dropped by this subtask so far (Flink's `numLateRecordsDropped`). */
  get numLateRecordsDropped(): number {
    return this.late;
  }

  /** Binds the two sides' buffers (`interval-join-left`, `interval-join-right`). */
  open(ctx: RuntimeContext): void {
    this.left = ctx.getMapState(
      new MapStateDescriptor<number, IntervalRow[]>("interval-join-left"),
    );
    this.right = ctx.getMapState(
      new MapStateDescriptor<number, IntervalRow[]>("interval-join-right"),
    );
  }

  /** A left row. */
  processElement1(row: Row, ctx: KeyedProcessContext<string>, out: Collector<Row>): void {
    this.process(row, true, ctx, out);
  }

  /** A right row. */
  processElement2(row: Row, ctx: KeyedProcessContext<string>, out: Collector<Row>): void {
    this.process(row, false, ctx, out);
  }

  private padded(fields: readonly SqlValue[], left: boolean): Row {
    const nulls = new Array<SqlValue>(left ? this.shape.rightArity : this.shape.leftArity)
      .fill(null);
    return { kind: "INSERT", fields: left ? [...fields, ...nulls] : [...nulls, ...fields] };
  }

  private expiry(time: number, left: boolean): number {
    return left ? time - this.shape.lower : time + this.shape.upper;
  }

  private process(
    row: Row,
    left: boolean,
    ctx: KeyedProcessContext<string>,
    out: Collector<Row>,
  ): void {
    let time: number;
    let match: IntervalMatch;
    const own = left ? this.left! : this.right!;
    const other = left ? this.right! : this.left!;
    const keyHasNull = ctx.getCurrentKey().includes("null") &&
      (JSON.parse(ctx.getCurrentKey()) as SqlValue[]).includes(null);
    try {
      if (row.kind !== "INSERT") {
        throw new Error("an interval join consumes only inserts: its inputs must be append-only");
      }
      const at = left ? this.shape.leftTime : this.shape.rightTime;
      time = (left ? this.leftMillis : this.rightMillis).of(row.fields[at] ?? null);
      match = keyHasNull
        ? { pairs: [], newlyMatched: [] }
        : matchInterval(this.shape, row.fields, time, left, other.entries());
    } catch (error) {
      throw new SuppressRestartsError(
        `${this.name} failed on ${formatRow(row)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    for (const [t, i] of match.newlyMatched) {
      const rows = other.get(t)!;
      other.put(t, rows.map((r, j) => j === i ? { fields: r.fields, matched: true } : r));
    }
    for (const pair of match.pairs) out.collect(pair);
    const matched = match.pairs.length > 0;
    const expiry = this.expiry(time, left);
    if (expiry <= ctx.timerService().currentWatermark()) {
      if (isOuterSide(this.shape.joinType, left)) {
        if (!matched) out.collect(this.padded(row.fields, left));
      } else {
        this.late++;
      }
      return;
    }
    own.put(time, [...(own.get(time) ?? []), { fields: row.fields, matched }]);
    ctx.timerService().registerEventTimeTimer(expiry);
  }

  /** Removes the rows that expired, emitting an outer side's unmatched ones null-padded. */
  onTimer(timestamp: number, _ctx: OnTimerContext<string>, out: Collector<Row>): void {
    for (const left of [true, false]) {
      const state = left ? this.left! : this.right!;
      const outer = isOuterSide(this.shape.joinType, left);
      for (const [t, rows] of state.entries()) {
        if (this.expiry(t, left) > timestamp) continue;
        state.remove(t);
        if (!outer) continue;
        for (const r of rows) if (!r.matched) out.collect(this.padded(r.fields, left));
      }
    }
  }
}
