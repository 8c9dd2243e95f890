/**
 * OVER aggregation over an updating input, beyond Flink (whose streaming
 * OVER consumes only inserts): the plan of Nexmark q6's
 * `AVG(price) OVER (PARTITION BY seller ORDER BY dateTime ROWS BETWEEN 10
 * PRECEDING AND CURRENT ROW)` over the changelog of a Top-N.
 *
 * Each output row is an input row followed by its frame's aggregates, as
 * {@linkcode OverAggregateFunction}; but a `-U`/`-D` can remove a row that
 * other rows' frames contain, and a late `+I` can enter them, so earlier
 * results change. This function keeps, per partition, every live row in
 * rowtime order with the result it emitted, and on each change:
 *
 * 1. inserts or removes the row (a `-U`/`-D` removes one row with equal fields);
 * 2. recomputes the result of every row whose frame contains the changed
 *    position (`ROWS n`: the next `n` rows; `RANGE d`: the rows of rowtime
 *    in `[t, t + d]`; UNBOUNDED: every later row), each from its frame;
 * 3. emits `+I` for the new row, `-D` for the removed one, and `-U`/`+U`
 *    for each row whose result changed.
 *
 * Rows of equal rowtime (peers) are ordered by their fields (compared
 * column by column as SQL values), not by arrival: the changes of an
 * updating input reach this operator in an order that parallel exchanges
 * do not fix, and a ROWS frame's result must not depend on it. (Nexmark's
 * q6 orders winners of one millisecond by auction id, its first column.)
 *
 * So the output is a retract changelog whose fold is, after every change,
 * the batch OVER query over the rows so far (the property
 * `retract_over_aggregate_test.ts` checks). Rows are not held back until
 * a watermark: results are final only when no more changes come, as with
 * any updating result.
 *
 * Costs: per change, O(rows of the partition) to copy the state and
 * O(affected rows x frame size) to recompute; an UNBOUNDED frame makes a
 * change near the start of a long partition cost O(rows²). A retraction of
 * a row the partition does not hold is an error naming the row, unless
 * idle state retention is on (then it is ignored, as Flink's
 * `stateCleaningEnabled`).
 *
 * @module
 */

import type {
  Collector,
  KeyedProcessContext,
  KeyedProcessFunction,
  RuntimeContext,
} from "../api/functions.ts";
import { type ValueState, ValueStateDescriptor } from "../api/state.ts";
import { SuppressRestartsError } from "../failure.ts";
import { compareValues, createAggregate, type RetractableAggregate } from "./aggregates.ts";
import type { OverAggregateSpec } from "./over_aggregate.ts";
import { formatRow, isAccumulate, type Row, type SqlValue } from "./row.ts";
import { stateTtlConfig } from "./state_retention.ts";
import { timeAttributeMillis } from "./time_attribute.ts";

/** One live row of a partition: `[rowtime ms, fields, arguments per call, emitted results]`. */
export type OverEntry = [number, SqlValue[], SqlValue[], SqlValue[]];

/** What one change does to a partition: its rows afterwards and the rows to emit. */
export interface RetractOverDecision {
  /** The partition's live rows afterwards, or `null` when none is left. */
  readonly entries: OverEntry[] | null;
  /** The changes to emit, in order. */
  readonly emit: Row[];
}

/** The aggregates over the frame of row `i`. */
function frameValues(
  spec: OverAggregateSpec,
  aggregates: readonly RetractableAggregate[],
  entries: readonly OverEntry[],
  i: number,
): SqlValue[] {
  const { unit, preceding } = spec.frame;
  const t = entries[i]![0];
  let from = 0;
  let to = i;
  if (unit === "ROWS") {
    if (preceding !== null) from = Math.max(0, i - preceding);
  } else {
    while (to + 1 < entries.length && entries[to + 1]![0] === t) to++; // peers of equal rowtime
    if (preceding !== null) {
      while (from < i && entries[from]![0] < t - preceding) from++;
    }
  }
  const accumulators = aggregates.map((a) => a.createAccumulator());
  for (let j = from; j <= to; j++) {
    aggregates.forEach((a, k) => a.accumulate(accumulators[k]!, entries[j]![2][k] ?? null));
  }
  return aggregates.map((a, k) => a.getValue(accumulators[k]!));
}

/** The indices of the rows whose frame may contain a row at rowtime `t` placed at index `p`. */
function affected(spec: OverAggregateSpec, entries: readonly OverEntry[], p: number, t: number) {
  const { unit, preceding } = spec.frame;
  let from = p;
  if (unit === "RANGE") { while (from > 0 && entries[from - 1]![0] === t) from--; // peers
   }
  let to = entries.length - 1;
  if (preceding !== null) {
    if (unit === "ROWS") to = Math.min(to, p + preceding);
    else {
      to = p;
      while (to + 1 < entries.length && entries[to + 1]![0] <= t + preceding) to++;
    }
  }
  return { from, to };
}

/** Whether `entry` sorts after a row of rowtime `t` and `fields`: by rowtime, then fields. */
function entryAfter(entry: OverEntry, t: number, fields: readonly SqlValue[]): boolean {
  if (entry[0] !== t) return entry[0] > t;
  for (let i = 0; i < fields.length; i++) {
    const c = compareValues(entry[1][i] ?? null, fields[i] ?? null);
    if (c !== 0) return c > 0;
  }
  return false; // an equal row: after it
}

const sameFields = (a: readonly SqlValue[], b: readonly SqlValue[]) =>
  a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * Applies one change of the input to a partition (see the module docs). Pure.
 *
 * @param spec the OVER aggregation (its `rowtimeIndex` orders the rows).
 * @param aggregates one aggregate per call.
 * @param entries the partition's rows, or `undefined` for none.
 * @param row the change.
 * @param args the row's argument per call.
 * @param stateCleaning idle state retention is on: a retraction of a row not held is ignored.
 * @throws {Error} for a retraction of a row the partition does not hold
 *   (without `stateCleaning`), or a rowtime that is not a time.
 */
export function decideRetractOver(
  spec: OverAggregateSpec,
  aggregates: readonly RetractableAggregate[],
  entries: readonly OverEntry[] | undefined,
  row: Row,
  args: readonly SqlValue[],
  stateCleaning = false,
): RetractOverDecision {
  const t = timeAttributeMillis(row.fields[spec.rowtimeIndex] ?? null, spec.rowtimeName);
  const next: OverEntry[] = (entries ?? []).slice();
  const emit: Row[] = [];
  let p: number;
  if (isAccumulate(row.kind)) {
    p = next.length;
    while (p > 0 && entryAfter(next[p - 1]!, t, row.fields)) p--;
    next.splice(p, 0, [t, [...row.fields], [...args], []]);
  } else {
    p = next.findIndex((e) => e[0] === t && sameFields(e[1], row.fields));
    if (p === -1) {
      if (stateCleaning) return { entries: next.length === 0 ? null : next, emit: [] };
      throw new Error(
        `OverAggregate got ${
          formatRow(row)
        }, which its partition does not hold: the input changelog retracts a row it never inserted`,
      );
    }
    const [removed] = next.splice(p, 1);
    emit.push({ kind: "DELETE", fields: [...removed![1], ...removed![3]] });
  }
  if (next.length === 0) return { entries: null, emit };
  const { from, to } = affected(spec, next, Math.min(p, next.length - 1), t);
  for (let i = from; i <= to; i++) {
    const entry = next[i]!;
    const values = frameValues(spec, aggregates, next, i);
    const fresh = entry[3].length === 0;
    if (!fresh && sameFields(entry[3], values)) continue;
    if (fresh) {
      emit.push({ kind: "INSERT", fields: [...entry[1], ...values] });
    } else {
      emit.push({ kind: "UPDATE_BEFORE", fields: [...entry[1], ...entry[3]] });
      emit.push({ kind: "UPDATE_AFTER", fields: [...entry[1], ...values] });
    }
    next[i] = [entry[0], entry[1], entry[2], values];
  }
  return { entries: next, emit };
}

/**
 * The function of an OverAggregate over an updating input (see the module
 * docs), applied after `keyBy` on the PARTITION BY keys. Fields are
 * TypeScript `private`: function objects are copied per subtask.
 */
export class RetractOverAggregateFunction implements KeyedProcessFunction<string, Row, Row> {
  private readonly spec: OverAggregateSpec;
  private readonly stateTtlMs: number;
  private readonly name: string;
  private aggregates: RetractableAggregate[] = [];
  private state: ValueState<OverEntry[]> | undefined;

  /**
   * @param spec the OVER aggregation.
   * @param stateTtlMs idle state retention in ms (`table.exec.state.ttl`); 0 keeps state forever.
   * @param name names the operator in messages (its plan description).
   */
  constructor(spec: OverAggregateSpec, stateTtlMs = 0, name = "OverAggregate") {
    this.spec = spec;
    this.stateTtlMs = stateTtlMs;
    this.name = name;
  }

  /** Creates the aggregates and binds the partition's rows (`over-rows`). */
  open(ctx: RuntimeContext): void {
    this.aggregates = this.spec.calls.map((c) => createAggregate(c.spec));
    const ttl = stateTtlConfig(this.stateTtlMs);
    this.state = ctx.getState(
      new ValueStateDescriptor<OverEntry[]>("over-rows", ttl ? { ttl } : {}),
    );
  }

  /** Applies one change to its partition and emits the changed results. */
  processElement(row: Row, _ctx: KeyedProcessContext<string>, out: Collector<Row>): void {
    let decision: RetractOverDecision;
    try {
      const args = this.spec.calls.map((c) => c.arg === null ? null : c.arg.evaluate(row.fields));
      decision = decideRetractOver(
        this.spec,
        this.aggregates,
        this.state!.value(),
        row,
        args,
        this.stateTtlMs > 0,
      );
    } catch (error) {
      throw new SuppressRestartsError(
        `${this.name} failed on ${formatRow(row)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    if (decision.entries === null) this.state!.clear();
    else this.state!.update(decision.entries);
    for (const change of decision.emit) out.collect(change);
  }
}
