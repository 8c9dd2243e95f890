/**
 * Top-N: Flink's `Rank` (`AppendOnlyTopNFunction`,
 * `RetractableTopNFunction`), the plan of
 *
 * ```sql
 * SELECT * FROM (
 *   SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY x DESC) AS rn FROM src
 * ) WHERE rn <= N      -- or rn < N + 1, rn BETWEEN a AND b, rn = a
 * ```
 *
 * It is a KeyedProcessFunction keyed by the PARTITION BY keys. Per key it
 * keeps the rows in keyed ValueState, sorted by the ORDER BY keys; rows
 * that compare equal keep their arrival order (so ROW_NUMBER among ties
 * follows arrival, as Flink's `TopNBuffer`).
 *
 * - **Append-only input** (`AppendOnlyTopNFunction`): only the first
 *   `rankEnd` rows are kept; a row sorted after them can never rise again.
 * - **Updating input** (`RetractableTopNFunction`): every row of the key
 *   is kept (a multiset), since retracting a row of the top N lifts the
 *   next one into it. `-U`/`-D` remove one row with equal fields.
 *
 * ## Output (the decision is {@linkcode decideRank}, pure)
 *
 * The ranks `rankStart..rankEnd` before and after the change are compared:
 *
 * - with the rank number (`outputRankNumber`, the `rn` column last): per
 *   rank whose row changed, `-U(old, r)` then `+U(new, r)`; a rank that
 *   appears is `+I(new, r)`, one that disappears `-D(old, r)`;
 * - without it (Flink's rank-number optimization, when `rn` is not
 *   selected): the rows that left the range are `-D`, the rows that
 *   entered it `+I`, whatever their new positions.
 *
 * So the output is a retract changelog whose fold is, at every moment, the
 * batch Top-N of the input so far. Without `generateUpdateBefore` (upsert
 * mode, with the rank number and partition keys as the unique key) the
 * `-U` rows are left out.
 *
 * A `-U`/`-D` of a row the key does not hold is an error naming the row
 * (the changelog retracts what it never inserted), unless idle state
 * retention is on: then the row's state may have expired and the change
 * is ignored, as Flink does with `stateCleaningEnabled`.
 *
 * Costs: O(rows of the key) per input row for updating input (the sorted
 * list is copied and searched), O(N) for append-only input.
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
import { compareValues } from "./aggregates.ts";
import { formatRow, isAccumulate, type Row, type SqlValue } from "./row.ts";
import { stateTtlConfig } from "./state_retention.ts";

/** One ORDER BY key of a ranking: an input column and its direction. */
export interface SortKey {
  /** The column's index in the input row. */
  readonly index: number;
  /** `DESC` (NULLs last) rather than `ASC` (NULLs first), as Flink's default null order. */
  readonly descending: boolean;
}

/** What a Top-N computes. */
export interface RankSpec {
  /** The ORDER BY keys, most significant first. */
  readonly sortKeys: readonly SortKey[];
  /** The first rank emitted (1-based, ≥ 1). */
  readonly rankStart: number;
  /** The last rank emitted (≥ rankStart). */
  readonly rankEnd: number;
  /** Append the rank number (`rn`) to each output row. */
  readonly outputRankNumber: boolean;
  /** Whether the input is append-only (keep only `rankEnd` rows) or updating (keep every row). */
  readonly appendOnlyInput: boolean;
  /** Emit `-U` before `+U` (retract mode) rather than only `+U` (upsert). */
  readonly generateUpdateBefore: boolean;
}

/** What one input row does to a key's sorted rows. */
export interface RankDecision {
  /** The key's rows afterwards, sorted; `null` when none is left (clear the state). */
  readonly rows: SqlValue[][] | null;
  /** The changes to emit, in order. */
  readonly emit: Row[];
}

/**
 * Checks a rank range, as the planner derives it from the WHERE on `rn`.
 * @throws {RangeError} when `rankStart` < 1, `rankEnd` < `rankStart`, or
 *   either is not an integer, stating the values.
 */
export function checkRankRange(rankStart: number, rankEnd: number): void {
  if (!Number.isSafeInteger(rankStart) || rankStart < 1) {
    throw new RangeError(
      `a Top-N's first rank must be an integer >= 1: current value is ${rankStart}`,
    );
  }
  if (!Number.isSafeInteger(rankEnd) || rankEnd < rankStart) {
    throw new RangeError(
      `a Top-N's last rank must be an integer >= its first rank ${rankStart}: current value is ${rankEnd}`,
    );
  }
}

/** Compares two rows by the sort keys (negative: `a` ranks first). */
export function compareBySortKeys(
  sortKeys: readonly SortKey[],
  a: readonly SqlValue[],
  b: readonly SqlValue[],
): number {
  for (const key of sortKeys) {
    const c = compareValues(a[key.index] ?? null, b[key.index] ?? null);
    if (c !== 0) return key.descending ? -c : c;
  }
  return 0;
}

const sameFields = (a: readonly SqlValue[], b: readonly SqlValue[]) =>
  a.length === b.length && a.every((v, i) => v === b[i]);

/** The first index whose row sorts after `fields` (ties stay before: arrival order). */
function upperBound(spec: RankSpec, rows: readonly SqlValue[][], fields: readonly SqlValue[]) {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareBySortKeys(spec.sortKeys, rows[mid]!, fields) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The index of a row with equal fields, searched among the rows of an equal sort key. */
function indexOfRow(spec: RankSpec, rows: readonly SqlValue[][], fields: readonly SqlValue[]) {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareBySortKeys(spec.sortKeys, rows[mid]!, fields) < 0) lo = mid + 1;
    else hi = mid;
  }
  for (let i = lo; i < rows.length; i++) {
    if (compareBySortKeys(spec.sortKeys, rows[i]!, fields) !== 0) break;
    if (sameFields(rows[i]!, fields)) return i;
  }
  return -1;
}

const ranked = (spec: RankSpec, fields: readonly SqlValue[], rank: number): SqlValue[] =>
  spec.outputRankNumber ? [...fields, rank] : [...fields];

/**
 * Applies one row to a key's sorted rows and decides the output (see the
 * module docs). Pure: `rows` is not changed.
 *
 * @param spec the Top-N.
 * @param rows the key's rows, sorted (`undefined` when the key has none).
 * @param row the input row.
 * @param stateCleaning idle state retention is on: a retraction of a row
 *   not held is ignored rather than an error.
 * @throws {Error} when a `-U`/`-D` retracts a row the key does not hold
 *   (without `stateCleaning`), or an updating row reaches an append-only
 *   Top-N, naming the row.
 */
export function decideRank(
  spec: RankSpec,
  rows: readonly SqlValue[][] | undefined,
  row: Row,
  stateCleaning = false,
): RankDecision {
  const before = rows ?? [];
  let after: SqlValue[][];
  if (isAccumulate(row.kind)) {
    if (spec.appendOnlyInput && row.kind !== "INSERT") {
      throw new Error(`an append-only Top-N got ${formatRow(row)}: its input must be append-only`);
    }
    const at = upperBound(spec, before, row.fields);
    if (spec.appendOnlyInput && at >= spec.rankEnd) {
      // sorted after the N best of an append-only input: it can never rise (state unchanged)
      return { rows: before.length === 0 ? null : (rows as SqlValue[][]), emit: [] };
    }
    after = before.slice();
    after.splice(at, 0, [...row.fields]);
    if (spec.appendOnlyInput && after.length > spec.rankEnd) after.length = spec.rankEnd;
  } else {
    if (spec.appendOnlyInput) {
      throw new Error(`an append-only Top-N got ${formatRow(row)}: its input must be append-only`);
    }
    after = before.slice();
    const at = indexOfRow(spec, after, row.fields);
    if (at === -1) {
      if (stateCleaning) return { rows: before.length === 0 ? null : after, emit: [] };
      throw new Error(
        `Top-N got ${
          formatRow(row)
        }, which its partition does not hold: the input changelog retracts a row it never inserted`,
      );
    }
    after.splice(at, 1);
  }
  return { rows: after.length === 0 ? null : after, emit: diffRanks(spec, before, after) };
}

/** The changes between the ranks `rankStart..rankEnd` of two sorted lists (see the module docs). */
function diffRanks(
  spec: RankSpec,
  before: readonly SqlValue[][],
  after: readonly SqlValue[][],
): Row[] {
  const from = spec.rankStart - 1;
  const oldTop = before.slice(from, spec.rankEnd);
  const newTop = after.slice(from, spec.rankEnd);
  const emit: Row[] = [];
  if (spec.outputRankNumber) {
    const n = Math.max(oldTop.length, newTop.length);
    for (let i = 0; i < n; i++) {
      const rank = spec.rankStart + i;
      const o = oldTop[i];
      const nw = newTop[i];
      if (o !== undefined && nw !== undefined) {
        if (o === nw || sameFields(o, nw)) continue;
        if (spec.generateUpdateBefore) {
          emit.push({ kind: "UPDATE_BEFORE", fields: ranked(spec, o, rank) });
        }
        emit.push({ kind: "UPDATE_AFTER", fields: ranked(spec, nw, rank) });
      } else if (o !== undefined) {
        emit.push({ kind: "DELETE", fields: ranked(spec, o, rank) });
      } else if (nw !== undefined) {
        emit.push({ kind: "INSERT", fields: ranked(spec, nw, rank) });
      }
    }
    return emit;
  }
  // The lists share their row objects (a change copies the list, not the
  // rows), so rows that stayed are the same objects: diff by identity.
  const kept = new Set(newTop);
  const had = new Set(oldTop);
  for (const r of oldTop) if (!kept.has(r)) emit.push({ kind: "DELETE", fields: [...r] });
  for (const r of newTop) if (!had.has(r)) emit.push({ kind: "INSERT", fields: [...r] });
  return emit;
}

/**
 * The Rank operator's function (see the module docs), applied after
 * `keyBy` on the PARTITION BY keys. Fields are TypeScript `private`:
 * function objects are copied per subtask.
 */
export class RankFunction implements KeyedProcessFunction<string, Row, Row> {
  private readonly spec: RankSpec;
  private readonly stateTtlMs: number;
  private state: ValueState<SqlValue[][]> | undefined;

  /**
   * @param spec the Top-N.
   * @param stateTtlMs idle state retention in ms (`table.exec.state.ttl`); 0 keeps state forever.
   * @throws {RangeError} for a bad rank range ({@linkcode checkRankRange}).
   */
  constructor(spec: RankSpec, stateTtlMs = 0) {
    checkRankRange(spec.rankStart, spec.rankEnd);
    this.spec = spec;
    this.stateTtlMs = stateTtlMs;
  }

  /** Binds the sorted rows' state (`rank-state`). */
  open(ctx: RuntimeContext): void {
    const ttl = stateTtlConfig(this.stateTtlMs);
    this.state = ctx.getState(
      new ValueStateDescriptor<SqlValue[][]>("rank-state", ttl ? { ttl } : {}),
    );
  }

  /** Applies one row to its partition and emits the changed ranks. */
  processElement(row: Row, _ctx: KeyedProcessContext<string>, out: Collector<Row>): void {
    const state = this.state!;
    let decision: RankDecision;
    try {
      decision = decideRank(this.spec, state.value(), row, this.stateTtlMs > 0);
    } catch (error) {
      throw new SuppressRestartsError(
        `Rank failed on ${formatRow(row)}: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    if (decision.rows === null) state.clear();
    else if (decision.emit.length > 0 || decision.rows !== state.value()) {
      state.update(decision.rows);
    }
    for (const change of decision.emit) out.collect(change);
  }
}
