/**
 * OVER aggregation: Flink's `OverAggregate` over event time
 * (`RowTimeRowsBoundedPrecedingFunction`, `RowTimeRangeBoundedPrecedingFunction`,
 * `RowTimeRowsUnboundedPrecedingFunction`, `RowTimeRangeUnboundedPrecedingFunction`),
 * the plan of
 *
 * ```sql
 * SELECT *, AVG(price) OVER (
 *   PARTITION BY item ORDER BY rowtime
 *   ROWS BETWEEN 10 PRECEDING AND CURRENT ROW   -- or RANGE BETWEEN INTERVAL '1' HOUR PRECEDING,
 * ) AS avg_price FROM bids                      --    or UNBOUNDED PRECEDING
 * ```
 *
 * It is a KeyedProcessFunction keyed by the PARTITION BY keys. Each output
 * row is its input row followed by one value per aggregate call: the
 * aggregate over the row's frame. The output is append-only (`+I`).
 *
 * ## Event time, as Flink
 *
 * A row is buffered (keyed MapState by rowtime) and an event-time timer is
 * registered at its rowtime. When the watermark passes it, the rows of that
 * rowtime are processed in arrival order, so rows are aggregated in
 * rowtime order however out of order they arrived. A row whose rowtime is
 * not after the last rowtime the key processed is late: it is dropped and
 * counted in {@linkcode OverAggregateFunction.numLateRecordsDropped}, with a
 * warning on stderr for the first one of each subtask (Flink drops it and
 * counts `numLateRecordsDropped`).
 *
 * ## Frames (the decision is {@linkcode decideOver}, pure)
 *
 * | frame | a row's aggregate covers |
 * |---|---|
 * | `ROWS BETWEEN n PRECEDING AND CURRENT ROW` | the `n` rows before it (in rowtime, then arrival order) and itself |
 * | `ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW` | every row before it and itself |
 * | `RANGE BETWEEN d PRECEDING AND CURRENT ROW` | every row with rowtime in `[t - d, t]`, its peers of equal rowtime included |
 * | `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW` (the default) | every row with rowtime ≤ `t` |
 *
 * Aggregates are the retractable ones of `aggregates.ts` (COUNT, SUM, AVG,
 * MIN, MAX): a bounded frame accumulates the new row and retracts the row
 * that leaves the frame, keeping the frame's arguments in keyed state.
 *
 * Input must be append-only: any other kind is an error naming the row.
 * With idle state retention (`table.exec.state.ttl`) the key's processed
 * history (frame and accumulators) expires when it was not written for
 * that long (Flink cleans it with processing-time timers; here the state
 * TTL does it): the key's next row starts a new frame. Rows still waiting
 * for the watermark never expire (Flink, too, cleans no state while rows
 * are pending), so no row is dropped by the retention.
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
import {
  type MapState,
  MapStateDescriptor,
  type ValueState,
  ValueStateDescriptor,
} from "../api/state.ts";
import { SuppressRestartsError } from "../failure.ts";
import { type Accumulator, createAggregate, type RetractableAggregate } from "./aggregates.ts";
import { copyAccumulator } from "./group_aggregate.ts";
import type { AggregateCall } from "./plan.ts";
import { formatRow, type Row, type SqlValue } from "./row.ts";
import type { OverFrame } from "./sql_ast.ts";
import { stateTtlConfig } from "./state_retention.ts";
import { timeAttributeMillis } from "./time_attribute.ts";
import { compareBySortKeys, type SortKey } from "./rank.ts";

/** What an OVER aggregation computes. */
export interface OverAggregateSpec {
  /** The index of the ORDER BY rowtime column in the input row. */
  readonly rowtimeIndex: number;
  /** The rowtime column's name, for messages. */
  readonly rowtimeName: string;
  /** The frame: ROWS or RANGE, `preceding` rows or ms (`null`: UNBOUNDED). */
  readonly frame: OverFrame;
  /** The aggregate calls; their values follow the input's fields in each output row. */
  readonly calls: readonly AggregateCall[];
  /**
   * How rows of one rowtime are ordered before they are processed (the
   * further ORDER BY keys of a temporal sort); default arrival order.
   */
  readonly peerOrder?: readonly SortKey[];
}

/**
 * A key's processed history (plain data, in keyed ValueState): the last
 * rowtime processed, the accumulators of the current frame and, for a
 * bounded frame, the rowtimes and arguments of the rows in it (oldest first).
 */
export interface OverHistory {
  /** The last rowtime processed, ms. */
  readonly lastTs: number;
  /** One accumulator per call. */
  readonly accumulators: Accumulator[];
  /** `[rowtime, arguments]` of the frame's rows, oldest first; empty for UNBOUNDED. */
  readonly frame: [number, SqlValue[]][];
}

/** What processing the rows of one rowtime does: the next history and the rows to emit. */
export interface OverDecision {
  /** The history afterwards. */
  readonly history: OverHistory;
  /** The `+I` rows, in order. */
  readonly emit: Row[];
}

/**
 * Processes the rows of rowtime `ts` of one key, in arrival order (see the
 * module docs). Pure: `history` is not changed.
 *
 * @param spec the OVER aggregation.
 * @param aggregates one aggregate function per call.
 * @param history the key's history, or `undefined` for a new key.
 * @param ts the rowtime, ms (greater than `history.lastTs`).
 * @param rows the input rows' fields.
 * @param args each row's argument per call.
 * @throws {Error} from an aggregate (a non-numeric SUM argument...).
 */
export function decideOver(
  spec: OverAggregateSpec,
  aggregates: readonly RetractableAggregate[],
  history: OverHistory | undefined,
  ts: number,
  rows: readonly (readonly SqlValue[])[],
  args: readonly SqlValue[][],
): OverDecision {
  const accumulators = history === undefined
    ? aggregates.map((a) => a.createAccumulator())
    : history.accumulators.map(copyAccumulator);
  const bounded = spec.frame.preceding !== null;
  const frame: [number, SqlValue[]][] = bounded ? [...(history?.frame ?? [])] : [];
  const accumulate = (a: SqlValue[]) =>
    aggregates.forEach((agg, i) => agg.accumulate(accumulators[i]!, a[i] ?? null));
  const retract = (a: SqlValue[]) =>
    aggregates.forEach((agg, i) => agg.retract(accumulators[i]!, a[i] ?? null));
  const values = () => aggregates.map((agg, i) => agg.getValue(accumulators[i]!));
  const emit: Row[] = [];
  if (spec.frame.unit === "ROWS") {
    const preceding = spec.frame.preceding;
    rows.forEach((fields, r) => {
      accumulate(args[r]!);
      if (preceding !== null) {
        frame.push([ts, args[r]!]);
        while (frame.length > preceding + 1) retract(frame.shift()![1]);
      }
      emit.push({ kind: "INSERT", fields: [...fields, ...values()] });
    });
  } else {
    for (const a of args) {
      accumulate(a);
      if (bounded) frame.push([ts, a]);
    }
    if (bounded) {
      const limit = ts - spec.frame.preceding!;
      while (frame.length > 0 && frame[0]![0] < limit) retract(frame.shift()![1]);
    }
    const result = values();
    for (const fields of rows) emit.push({ kind: "INSERT", fields: [...fields, ...result] });
  }
  return { history: { lastTs: ts, accumulators, frame }, emit };
}

/**
 * The OverAggregate operator's function (see the module docs), applied
 * after `keyBy` on the PARTITION BY keys (or on a constant without
 * PARTITION BY). Fields are TypeScript `private`: function objects are
 * copied per subtask.
 */
export class OverAggregateFunction implements KeyedProcessFunction<string, Row, Row> {
  private readonly spec: OverAggregateSpec;
  private readonly stateTtlMs: number;
  private readonly name: string;
  private aggregates: RetractableAggregate[] = [];
  private pending: MapState<number, SqlValue[][]> | undefined;
  private history: ValueState<OverHistory> | undefined;
  private late = 0;

  /**
   * @param spec the OVER aggregation.
   * @param stateTtlMs idle state retention in ms (`table.exec.state.ttl`); 0 keeps state forever.
   * @param name names the operator in messages (its plan description).
   */
  constructor(spec: OverAggregateSpec, stateTtlMs = 0, name = "OverAggregate") {
    if (spec.frame.preceding !== null && !(spec.frame.preceding >= 0)) {
      throw new RangeError(
        `an OVER frame's PRECEDING must be >= 0 ${
          spec.frame.unit === "ROWS" ? "rows" : "ms"
        }: current value is ${spec.frame.preceding}`,
      );
    }
    this.spec = spec;
    this.stateTtlMs = stateTtlMs;
    this.name = name;
  }

  /** Late rows dropped by this subtask so far (Flink's `numLateRecordsDropped`). */
  get numLateRecordsDropped(): number {
    return this.late;
  }

  /** Creates the aggregates and binds the state (`over-pending`, `over-history`). */
  open(ctx: RuntimeContext): void {
    this.aggregates = this.spec.calls.map((c) => createAggregate(c.spec));
    const ttl = stateTtlConfig(this.stateTtlMs);
    // pending rows have no TTL: each is processed when the watermark passes it
    this.pending = ctx.getMapState(new MapStateDescriptor<number, SqlValue[][]>("over-pending"));
    this.history = ctx.getState(
      new ValueStateDescriptor<OverHistory>("over-history", ttl ? { ttl } : {}),
    );
  }

  /** Buffers a row until the watermark passes its rowtime, or drops it as late. */
  processElement(row: Row, ctx: KeyedProcessContext<string>, _out: Collector<Row>): void {
    const ts = this.guard(row, () => {
      if (row.kind !== "INSERT") {
        throw new Error(`OverAggregate consumes only inserts: its input must be append-only`);
      }
      return timeAttributeMillis(row.fields[this.spec.rowtimeIndex] ?? null, this.spec.rowtimeName);
    });
    const lastTs = this.history!.value()?.lastTs ?? -Infinity;
    if (ts <= lastTs) {
      if (this.late++ === 0) {
        console.warn(
          `${this.name}: dropped late row ${
            formatRow(row)
          } (rowtime ${ts} ms is not after ${lastTs} ms, the last rowtime its partition processed); later ones are counted in numLateRecordsDropped`,
        );
      }
      return;
    }
    const pending = this.pending!;
    pending.put(ts, [...(pending.get(ts) ?? []), [...row.fields]]);
    ctx.timerService().registerEventTimeTimer(ts);
  }

  /** Processes the rows of rowtime `timestamp` once the watermark passed it. */
  onTimer(timestamp: number, _ctx: OnTimerContext<string>, out: Collector<Row>): void {
    const pending = this.pending!;
    const rows = pending.get(timestamp);
    if (rows === undefined) return; // none left (a timer restored beside its processed rows)
    pending.remove(timestamp);
    const peerOrder = this.spec.peerOrder;
    if (peerOrder !== undefined && peerOrder.length > 0) {
      rows.sort((a, b) => compareBySortKeys(peerOrder, a, b)); // stable: ties keep arrival order
    }
    const decision = this.guard({ kind: "INSERT", fields: rows[0]! }, () => {
      const args = rows.map((fields) =>
        this.spec.calls.map((c) => c.arg === null ? null : c.arg.evaluate(fields))
      );
      return decideOver(this.spec, this.aggregates, this.history!.value(), timestamp, rows, args);
    });
    this.history!.update(decision.history);
    for (const change of decision.emit) out.collect(change);
  }

  private guard<T>(row: Row, f: () => T): T {
    try {
      return f();
    } catch (error) {
      throw new SuppressRestartsError(
        `${this.name} failed on ${formatRow(row)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
  }
}
