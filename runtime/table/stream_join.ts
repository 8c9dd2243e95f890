/**
 * The regular streaming join with retraction (Flink's
 * `StreamingJoinOperator` with `JoinRecordStateView`s): a keyed
 * two-input operator, keyed by the equi-join keys, that keeps each side's
 * rows as a multiset and joins every change against the other side.
 *
 * ## Per input row (the decision is {@linkcode decideJoin}, pure)
 *
 * A side is *outer* when its unmatched rows appear null-padded (the left
 * side of a LEFT or FULL join, the right side of a RIGHT or FULL join).
 * Each stored row counts its *associations*: how many rows of the other
 * side it joins with now.
 *
 * - `+I`/`+U` (accumulate): for every matching row `m` of the other side
 *   (equi-keys equal, non-NULL, and the join's filter TRUE), emit
 *   `+I(joined)` once per copy of `m`; when `m`'s side is outer and `m`
 *   had no association, first retract its null-padded row (`-D`). Without
 *   a match on an outer input side, emit `+I(row, NULL...)`. Store the row.
 * - `-U`/`-D` (retract): the mirror image: `-D(joined)` per match, a
 *   matched outer row whose last association goes is emitted null-padded
 *   again (`+I`), an unmatched outer row retracts its null-padded row.
 *   A retraction of a row the side does not hold is an error naming it
 *   (the input changelog is wrong), and ends the job.
 *
 * So the output is `+I`/`-D` only: retract mode, or append-only for an
 * inner join of append-only inputs (nothing is retracted then). Rows with
 * a NULL key never match (SQL's `=`); an inner join does not even store them.
 *
 * State: per key and side, a `MapState` from the row's JSON to
 * `{ fields, count, associations }`. It grows with the distinct rows per
 * key, unless idle state retention (`table.exec.state.ttl`,
 * `state_retention.ts`) is given: then a stored row expires when it was
 * not written for that long (processing time, as Flink's join state TTL),
 * a retraction of an expired row is ignored instead of failing the job,
 * and results become approximate (a row no longer joins with expired
 * rows), the trade Flink's option makes too.
 *
 * @module
 */

import type {
  Collector,
  KeyedCoProcessFunction,
  KeyedProcessContext,
  RuntimeContext,
} from "../api/functions.ts";
import { type MapState, MapStateDescriptor } from "../api/state.ts";
import { SuppressRestartsError } from "../failure.ts";
import type { CompiledExpr } from "./expressions.ts";
import type { JoinType } from "./plan_join.ts";
import { formatRow, isAccumulate, type Row, type SqlValue } from "./row.ts";
import { stateTtlConfig } from "./state_retention.ts";

/** A stored row of one side: its fields, copies and associations. */
export interface JoinRecord {
  /** The row's fields. */
  readonly fields: readonly SqlValue[];
  /** How many copies of the row the side holds (>= 1). */
  readonly count: number;
  /** How many rows of the other side each copy joins with now. */
  readonly associations: number;
}

/** The shape of a join, fixed at planning. */
export interface JoinShape {
  /** Inner or which outer join. */
  readonly joinType: JoinType;
  /** The filter over the joined fields (left then right), or `null`. */
  readonly filter: ((fields: readonly SqlValue[]) => SqlValue) | null;
  /** Columns of the left input. */
  readonly leftArity: number;
  /** Columns of the right input. */
  readonly rightArity: number;
}

/** What one input row does: the stored records to write (`null` removes) and the rows to emit. */
export interface JoinDecision {
  /** The input row's own record after the change (`null`: remove it). */
  readonly own: JoinRecord | null;
  /** Changed records of the other side, by their state key (`null`: unchanged is not listed). */
  readonly others: readonly (readonly [string, JoinRecord])[];
  /** The changes to emit, in order. */
  readonly emit: readonly Row[];
}

/** Whether the given side's unmatched rows are emitted null-padded. */
export function isOuterSide(joinType: JoinType, left: boolean): boolean {
  if (joinType === "FullOuterJoin") return true;
  return left ? joinType === "LeftOuterJoin" : joinType === "RightOuterJoin";
}

/**
 * Decides what one row does (see the module docs). Pure.
 *
 * @param shape the join.
 * @param row the input row.
 * @param inputIsLeft whether it came from the left input.
 * @param own its record in its side's state, or `undefined`.
 * @param others the other side's records under the same key, with their state keys.
 * @param keyHasNull whether the row's equi-key has a NULL (no match then).
 * @param stateCleaning idle state retention is on: a retraction of a row
 *   its side does not hold (expired) is ignored rather than an error.
 * @throws {Error} when a retraction finds no stored copy of its row.
 */
export function decideJoin(
  shape: JoinShape,
  row: Row,
  inputIsLeft: boolean,
  own: JoinRecord | undefined,
  others: readonly (readonly [string, JoinRecord])[],
  keyHasNull: boolean,
  stateCleaning = false,
): JoinDecision {
  const accumulate = isAccumulate(row.kind);
  if (!accumulate && own === undefined) {
    if (stateCleaning) return { own: null, others: [], emit: [] };
    throw new Error(
      `Join got ${formatRow(row)} on its ${
        inputIsLeft ? "left" : "right"
      } input, which holds no such row: the input changelog retracts a row it never inserted`,
    );
  }
  const joined = (other: readonly SqlValue[]) =>
    inputIsLeft ? [...row.fields, ...other] : [...other, ...row.fields];
  const padded = (fields: readonly SqlValue[], left: boolean) =>
    left
      ? [...fields, ...new Array<SqlValue>(shape.rightArity).fill(null)]
      : [...new Array<SqlValue>(shape.leftArity).fill(null), ...fields];
  const inputOuter = isOuterSide(shape.joinType, inputIsLeft);
  const otherOuter = isOuterSide(shape.joinType, !inputIsLeft);
  const emit: Row[] = [];
  const changed: [string, JoinRecord][] = [];
  let matched = 0;
  if (!keyHasNull) {
    for (const [key, m] of others) {
      const fields = joined(m.fields);
      if (shape.filter !== null && shape.filter(fields) !== true) continue;
      matched += m.count;
      const associations = m.associations + (accumulate ? 1 : -1);
      if (accumulate && otherOuter && m.associations === 0) {
        for (let i = 0; i < m.count; i++) {
          emit.push({ kind: "DELETE", fields: padded(m.fields, !inputIsLeft) });
        }
      }
      for (let i = 0; i < m.count; i++) {
        emit.push({ kind: accumulate ? "INSERT" : "DELETE", fields });
      }
      if (!accumulate && otherOuter && associations === 0) {
        for (let i = 0; i < m.count; i++) {
          emit.push({ kind: "INSERT", fields: padded(m.fields, !inputIsLeft) });
        }
      }
      // Associations only matter on an outer side (they decide its null
      // padding): an inner side's records are not rewritten per match.
      if (otherOuter) changed.push([key, { fields: m.fields, count: m.count, associations }]);
    }
  }
  if (matched === 0 && inputOuter) {
    emit.push({
      kind: accumulate ? "INSERT" : "DELETE",
      fields: padded(row.fields, inputIsLeft),
    });
  }
  const count = (own?.count ?? 0) + (accumulate ? 1 : -1);
  return {
    own: count === 0 ? null : { fields: row.fields, count, associations: matched },
    others: changed,
    emit,
  };
}

/** The JSON of a row's equi-key values: what the join is keyed by. */
export function joinKeyOf(keys: readonly CompiledExpr[]): (row: Row) => string {
  return (row) => JSON.stringify(keys.map((k) => k.evaluate(row.fields)));
}

/**
 * The Join operator's function (see the module docs). Fields are
 * TypeScript `private`, not `#private`: function objects are copied per
 * subtask.
 */
export class StreamingJoinFunction implements KeyedCoProcessFunction<string, Row, Row, Row> {
  private readonly shape: JoinShape;
  private readonly name: string;
  private readonly stateTtlMs: number;
  private left: MapState<string, JoinRecord> | undefined;
  private right: MapState<string, JoinRecord> | undefined;

  /**
   * @param shape the join.
   * @param name the node's description, for errors.
   * @param stateTtlMs idle state retention in ms (`table.exec.state.ttl`); 0 keeps state forever.
   */
  constructor(shape: JoinShape, name: string, stateTtlMs = 0) {
    this.shape = shape;
    this.name = name;
    this.stateTtlMs = stateTtlMs;
  }

  /** Binds the two sides' states (`join-left-records`, `join-right-records`). */
  open(ctx: RuntimeContext): void {
    const ttl = stateTtlConfig(this.stateTtlMs);
    const options = ttl ? { ttl } : {};
    this.left = ctx.getMapState(
      new MapStateDescriptor<string, JoinRecord>("join-left-records", options),
    );
    this.right = ctx.getMapState(
      new MapStateDescriptor<string, JoinRecord>("join-right-records", options),
    );
  }

  /** A left row. */
  processElement1(row: Row, ctx: KeyedProcessContext<string>, out: Collector<Row>): void {
    this.process(row, true, ctx.getCurrentKey(), out);
  }

  /** A right row. */
  processElement2(row: Row, ctx: KeyedProcessContext<string>, out: Collector<Row>): void {
    this.process(row, false, ctx.getCurrentKey(), out);
  }

  private process(row: Row, inputIsLeft: boolean, key: string, out: Collector<Row>): void {
    const keyHasNull = key.includes("null") && (JSON.parse(key) as SqlValue[]).includes(null);
    if (keyHasNull && this.shape.joinType === "InnerJoin") return;
    const ownState = inputIsLeft ? this.left! : this.right!;
    const otherState = inputIsLeft ? this.right! : this.left!;
    const rowKey = JSON.stringify(row.fields);
    let decision: JoinDecision;
    try {
      decision = decideJoin(
        this.shape,
        row,
        inputIsLeft,
        ownState.get(rowKey),
        keyHasNull ? [] : otherState.entries(),
        keyHasNull,
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
    if (decision.own === null) ownState.remove(rowKey);
    else ownState.put(rowKey, decision.own);
    for (const [k, record] of decision.others) otherState.put(k, record);
    for (const change of decision.emit) out.collect(change);
  }
}
