/**
 * The operator functions of a window aggregation (Flink's
 * `WindowAggregate` / `SlicingWindowOperator`, here on the runtime's
 * window operator): `keyBy(group keys).window(assigner).aggregate(
 * WindowAggregateAccumulator, WindowAggregateResult)`.
 *
 * - {@linkcode rowtimeWindows}: the window TVF's assigner (TUMBLE, HOP,
 *   CUMULATE, SESSION) placing each row by its rowtime *column* (not the
 *   record's timestamp), so a window always holds the rows whose time
 *   column falls in it; {@linkcode attachedWindows} for rows that carry
 *   their window already (an aggregation over a window aggregation).
 * - {@linkcode WindowAggregateAccumulator}: one accumulator per aggregate
 *   call (the retractable aggregates of `aggregates.ts`, accumulated only
 *   and in place; MIN/MAX keep only the extreme value, as Flink's
 *   non-retracting `MaxAggFunction`), merged for merging SESSION windows.
 * - {@linkcode WindowAggregateResult}: when the window fires (the
 *   watermark passes `window_end - 1`), one `+I` row: the GROUP BY items
 *   in order (window columns as `TIMESTAMP(3)` strings, `window_time` is
 *   `window_end - 1 ms`) then the aggregates.
 *
 * Late rows (their every window already fired) are dropped and counted in
 * the window operator's `numLateRecordsDropped`, as Flink's.
 *
 * @module
 */

import type { AggregateFunction, Collector } from "../api/functions.ts";
import type { ProcessWindowContext, ProcessWindowFunction } from "../api/window_functions.ts";
import { SuppressRestartsError } from "../failure.ts";
import {
  type MergeCallback,
  WindowAssigner,
  type WindowAssignerContext,
} from "../time/windows/window_assigner.ts";
import { CumulativeEventTimeWindows } from "../time/windows/cumulative_windows.ts";
import { EventTimeSessionWindows } from "../time/windows/session_windows.ts";
import { SlidingEventTimeWindows } from "../time/windows/sliding_windows.ts";
import type { Trigger } from "../time/windows/trigger.ts";
import { EventTimeTrigger } from "../time/windows/triggers.ts";
import { TumblingEventTimeWindows } from "../time/windows/tumbling_windows.ts";
import { TimeWindow } from "../time/windows/window.ts";
import {
  type Accumulator,
  compareValues,
  createAggregate,
  type Multiset,
  multisetAdd,
  type RetractableAggregate,
} from "./aggregates.ts";
import { copyAccumulator } from "./group_aggregate.ts";
import type { AggregateCall } from "./plan.ts";
import type { WindowKeySlot, WindowSpec } from "./plan_window.ts";
import { formatRow, type Row, type SqlValue } from "./row.ts";
import { MillisMemo, TextMemo } from "./timestamp_cache.ts";

/** The runtime assigner of a window spec, in event time. */
function innerAssigner(spec: WindowSpec): WindowAssigner<unknown, TimeWindow> {
  switch (spec.fn) {
    case "TUMBLE":
      return TumblingEventTimeWindows.of(spec.size);
    case "HOP":
      return SlidingEventTimeWindows.of(spec.size, spec.slide!);
    case "CUMULATE":
      return CumulativeEventTimeWindows.of(spec.size, spec.slide!);
    case "SESSION":
      return EventTimeSessionWindows.withGap(spec.size);
  }
}

/** Places rows by their rowtime column, through the spec's runtime assigner. */
class RowtimeWindows extends WindowAssigner<Row, TimeWindow> {
  private readonly inner: WindowAssigner<unknown, TimeWindow>;
  private readonly timeIndex: number;
  private readonly millis: MillisMemo;

  constructor(spec: WindowSpec) {
    super();
    this.inner = innerAssigner(spec);
    this.timeIndex = spec.timeIndex;
    this.millis = new MillisMemo(spec.timeColumn);
  }

  assignWindows(
    row: Row,
    _timestamp: number | undefined,
    ctx: WindowAssignerContext,
  ): TimeWindow[] {
    const time = this.millis.of(row.fields[this.timeIndex] ?? null);
    return this.inner.assignWindows(row, time, ctx);
  }

  getDefaultTrigger(): Trigger<Row, TimeWindow> {
    return this.inner.getDefaultTrigger() as Trigger<Row, TimeWindow>;
  }

  isEventTime(): boolean {
    return true;
  }

  windowFromNamespace(namespace: string): TimeWindow {
    return this.inner.windowFromNamespace(namespace);
  }
}

/** SESSION: merging (the window operator recognizes `mergeWindows`), as `EventTimeSessionWindows`. */
class SessionRowtimeWindows extends RowtimeWindows {
  mergeWindows(windows: TimeWindow[], callback: MergeCallback<TimeWindow>): void {
    TimeWindow.mergeWindows(windows, callback);
  }
}

/**
 * The assigner of a window TVF over rows (see the module docs): merging
 * for SESSION, aligned otherwise.
 * @throws {RangeError} for bad sizes (planning checks them first).
 */
export function rowtimeWindows(spec: WindowSpec): WindowAssigner<Row, TimeWindow> {
  return spec.fn === "SESSION" ? new SessionRowtimeWindows(spec) : new RowtimeWindows(spec);
}

/** The window a row carries in its `window_start`/`window_end` columns. */
class AttachedWindows extends WindowAssigner<Row, TimeWindow> {
  private readonly start: number;
  private readonly end: number;
  private readonly startMillis = new MillisMemo("window_start");
  private readonly endMillis = new MillisMemo("window_end");

  constructor(start: number, end: number) {
    super();
    this.start = start;
    this.end = end;
  }

  assignWindows(row: Row): TimeWindow[] {
    return [
      new TimeWindow(
        this.startMillis.of(row.fields[this.start] ?? null),
        this.endMillis.of(row.fields[this.end] ?? null),
      ),
    ];
  }

  getDefaultTrigger(): Trigger<Row, TimeWindow> {
    return EventTimeTrigger.create() as Trigger<Row, TimeWindow>;
  }

  isEventTime(): boolean {
    return true;
  }

  windowFromNamespace(namespace: string): TimeWindow {
    return TimeWindow.fromNamespace(namespace);
  }
}

/**
 * The assigner of rows that carry their window (a window aggregation's
 * output): the window `[window_start, window_end)` of each row's columns,
 * fired by event time at its end as any window.
 * @param start `window_start`'s position in the rows.
 * @param end `window_end`'s position.
 */
export function attachedWindows(start: number, end: number): WindowAssigner<Row, TimeWindow> {
  return new AttachedWindows(start, end);
}

/**
 * MIN/MAX over append-only rows: the multiset keeps only the extreme value
 * (nothing is ever retracted from a window), so a row costs O(1), not a
 * multiset insert; `getValue` of the retractable MIN/MAX reads it as is.
 */
function keepExtreme(acc: Multiset, value: SqlValue, fn: "MIN" | "MAX"): void {
  if (value === null) return;
  const best = acc[0];
  if (best === undefined) {
    acc.push([value, 1]);
    return;
  }
  const c = compareValues(value, best[0]);
  if (fn === "MIN" ? c < 0 : c > 0) acc[0] = [value, 1];
}

/** Merges accumulator `b` into a copy of `a` (sums add, multisets unite). */
function mergeAccumulator(a: Accumulator, b: Accumulator): Accumulator {
  const out = copyAccumulator(a);
  const multiset = (x: Accumulator) => x.length > 0 && Array.isArray(x[0]);
  if (multiset(b) || multiset(out)) {
    for (const [value, count] of b as Multiset) {
      for (let i = 0; i < count; i++) multisetAdd(out as Multiset, value);
    }
    return out;
  }
  (b as number[]).forEach((n, i) => {
    (out as number[])[i] = ((out as number[])[i] ?? 0) + n;
  });
  return out;
}

/**
 * The incremental part of a window aggregate: one accumulator per call,
 * changed in place (the window operator's aggregating state copies one a
 * snapshot still shares before handing it here).
 */
export class WindowAggregateAccumulator
  implements AggregateFunction<Row, Accumulator[], Accumulator[]> {
  private readonly calls: readonly AggregateCall[];
  private readonly name: string;
  private aggregates: RetractableAggregate[] | undefined;

  /**
   * @param calls the aggregate calls (arguments over the input rows).
   * @param name the node's description, for errors.
   */
  constructor(calls: readonly AggregateCall[], name: string) {
    this.calls = calls;
    this.name = name;
  }

  private functions(): RetractableAggregate[] {
    return this.aggregates ??= this.calls.map((c) => createAggregate(c.spec));
  }

  /** Empty accumulators. */
  createAccumulator(): Accumulator[] {
    return this.functions().map((a) => a.createAccumulator());
  }

  /**
   * Accumulates one row's arguments.
   * @throws {SuppressRestartsError} when the row is not an insert or an
   *   argument fails, naming the row.
   */
  add(row: Row, accumulators: Accumulator[]): Accumulator[] {
    const fns = this.functions();
    try {
      if (row.kind !== "INSERT") {
        throw new Error("a window aggregate consumes only inserts: its input must be append-only");
      }
      // In place: the aggregating state hands out a copy of an accumulator
      // that a snapshot still shares (the heap backend's copy-on-write).
      accumulators.forEach((acc, i) => {
        const call = this.calls[i]!;
        const value = call.arg === null ? null : call.arg.evaluate(row.fields);
        const fn = call.spec.fn;
        if (fn === "MIN" || fn === "MAX") keepExtreme(acc as Multiset, value, fn);
        else fns[i]!.accumulate(acc, value);
      });
      return accumulators;
    } catch (error) {
      throw new SuppressRestartsError(
        `${this.name} failed on ${formatRow(row)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
  }

  /** The accumulators themselves (the result function reads them). */
  getResult(accumulators: Accumulator[]): Accumulator[] {
    return accumulators;
  }

  /** Merges two windows' accumulators (SESSION windows). */
  merge(a: Accumulator[], b: Accumulator[]): Accumulator[] {
    const fns = this.functions();
    return a.map((acc, i) => {
      const own = fns[i]!.merge;
      if (own === undefined) return mergeAccumulator(acc, b[i]!);
      const out = copyAccumulator(acc);
      own.call(fns[i], out, b[i]!);
      return out;
    });
  }
}

/** Emits one `+I` row per key and fired window (see the module docs). */
export class WindowAggregateResult
  implements ProcessWindowFunction<Accumulator[], Row, string, TimeWindow> {
  private readonly calls: readonly AggregateCall[];
  private readonly keySlots: readonly WindowKeySlot[];
  private aggregates: RetractableAggregate[] | undefined;
  private readonly startText = new TextMemo();
  private readonly endText = new TextMemo();
  private readonly timeText = new TextMemo();

  /**
   * @param calls the aggregate calls.
   * @param keySlots per GROUP BY item, a window column or an index into the key values.
   */
  constructor(calls: readonly AggregateCall[], keySlots: readonly WindowKeySlot[]) {
    this.calls = calls;
    this.keySlots = keySlots;
  }

  /** Builds the window's row from its key and accumulators. */
  process(
    key: string,
    context: ProcessWindowContext<TimeWindow>,
    elements: readonly Accumulator[][],
    out: Collector<Row>,
  ): void {
    const fns = this.aggregates ??= this.calls.map((c) => createAggregate(c.spec));
    const accumulators = elements[0];
    if (accumulators === undefined) return;
    const values = JSON.parse(key) as SqlValue[];
    const w = context.window();
    const fields: SqlValue[] = this.keySlots.map((slot) => {
      if (slot === "window_start") return this.startText.of(w.start);
      if (slot === "window_end") return this.endText.of(w.end);
      if (slot === "window_time") return this.timeText.of(w.end - 1);
      return values[slot] ?? null;
    });
    accumulators.forEach((acc, i) => fields.push(fns[i]!.getValue(acc)));
    out.collect({ kind: "INSERT", fields });
  }
}
