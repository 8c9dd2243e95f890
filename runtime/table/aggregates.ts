/**
 * Retractable aggregate functions of SQL's GROUP BY: `COUNT`, `COUNT(*)`,
 * `COUNT(DISTINCT)`, `SUM`, `AVG`, `MIN` and `MAX`, each with
 * `accumulate`, `retract` and `getValue` (Flink's `AggregateFunction` with
 * `retract`, as its planner's `*WithRetractAggFunction`s).
 *
 * Pure code: no I/O, no clocks. An accumulator is plain data (arrays and
 * numbers), so the GROUP BY operator keeps it in keyed ValueState and it is
 * checkpointed with MessagePack. `accumulate` and `retract` change the
 * accumulator in place.
 *
 * ## Semantics (SQL's, as Flink's)
 *
 * - NULL arguments are ignored by every function but `COUNT(*)`.
 * - `SUM`, `AVG`, `MIN`, `MAX` of no (non-NULL) values are NULL; `COUNT` is 0.
 * - `AVG` of an integer column is an integer, truncated toward zero, as
 *   Flink's `AVG` on `INT`/`BIGINT`.
 * - `MIN` and `MAX` keep the multiset of values (sorted `[value, count]`
 *   pairs), so retracting the current minimum finds the next one:
 *   O(log n) to find, O(n) to insert or remove a distinct value.
 *   `COUNT(DISTINCT)` keeps the same multiset (Flink keeps a MapView).
 * - `SUM` and `AVG` over doubles add and subtract in arrival order, so a
 *   retraction may leave rounding residue (as in Flink); over integers
 *   they are exact up to 2^53.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createAggregate } from "./aggregates.ts";
 *
 * const max = createAggregate({ fn: "MAX", distinct: false, integral: true });
 * const acc = max.createAccumulator();
 * max.accumulate(acc, 3);
 * max.accumulate(acc, 7);
 * max.retract(acc, 7);
 * assert.equal(max.getValue(acc), 3);
 * ```
 *
 * @module
 */

import type { SqlValue } from "./row.ts";
import { userDefinedAggregate, type UserDefinedAggregateSpec } from "./udf_aggregate.ts";

/** The aggregate functions this module implements (`COUNT_STAR` is `COUNT(*)`). */
export type AggregateName = "COUNT" | "COUNT_STAR" | "SUM" | "AVG" | "MIN" | "MAX";

/**
 * Which aggregate to create: a built-in one, or a user-defined aggregate
 * function (`udf_aggregate.ts`, `fn: "UDF"`).
 */
export type AggregateSpec = BuiltinAggregateSpec | UserDefinedAggregateSpec;

/** Which built-in aggregate to create. */
export interface BuiltinAggregateSpec {
  /** The function. */
  readonly fn: AggregateName;
  /** `COUNT(DISTINCT x)`; only `COUNT` takes it in this slice. */
  readonly distinct: boolean;
  /** Whether the argument is of an integer type (`AVG` truncates then). */
  readonly integral: boolean;
  /**
   * The input is append-only (never retracts): `MIN`/`MAX` then keep only
   * the current extreme, one `[value, 1]` pair (Flink's `MaxAggFunction`
   * rather than `MaxWithRetractAggFunction`), so an update costs O(1)
   * instead of O(distinct values) to insert and to copy; a retraction then
   * throws. Other functions ignore it.
   */
  readonly appendOnly?: boolean;
}

/**
 * An accumulator: plain data, MessagePack-encodable (a user-defined
 * aggregate's is boxed, `[{ udf: acc }]`: see `udf_aggregate.ts`).
 */
export type Accumulator = number[] | Multiset | [{ readonly udf: unknown }];

/** A multiset of values as sorted `[value, count]` pairs (count ≥ 1). */
export type Multiset = [SqlValue, number][];

/**
 * A retractable aggregate function (Flink's `AggregateFunction` with
 * `retract`).
 */
export interface RetractableAggregate {
  /** A new, empty accumulator. */
  createAccumulator(): Accumulator;
  /** Adds `value` (a `+I`/`+U` row's argument) to `acc`, in place. */
  accumulate(acc: Accumulator, value: SqlValue): void;
  /**
   * Removes `value` (a `-U`/`-D` row's argument) from `acc`, in place.
   * @throws {Error} for MIN/MAX/COUNT DISTINCT when `value` was never
   *   accumulated (a changelog retracting what it never inserted).
   */
  retract(acc: Accumulator, value: SqlValue): void;
  /** The aggregate's current value. */
  getValue(acc: Accumulator): SqlValue;
  /**
   * Folds `other` into `acc`, in place (merging session windows). The
   * built-ins leave it out: their accumulators merge by shape (sums add,
   * multisets unite); a user-defined aggregate merges with its own `merge`.
   */
  merge?(acc: Accumulator, other: Accumulator): void;
}

/**
 * Orders SQL values: NULL first, then numbers by value, strings by UTF-16
 * code units, `false` before `true`; values of different types by type name.
 * @returns negative, zero or positive.
 */
export function compareValues(a: SqlValue, b: SqlValue): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  if (typeof a !== typeof b) return typeof a < typeof b ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The index of `value` in `set`, or `-(insertion point) - 1`. */
function search(set: Multiset, value: SqlValue): number {
  let lo = 0;
  let hi = set.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareValues(set[mid]![0], value);
    if (c === 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -lo - 1;
}

/** Adds one `value` to `set`. */
export function multisetAdd(set: Multiset, value: SqlValue): void {
  const i = search(set, value);
  if (i >= 0) set[i]![1] += 1;
  else set.splice(-i - 1, 0, [value, 1]);
}

/**
 * Removes one `value` from `set`.
 * @throws {Error} when `set` does not hold `value`.
 */
export function multisetRemove(set: Multiset, value: SqlValue, fn: string): void {
  const i = search(set, value);
  if (i < 0) {
    throw new Error(`${fn} retracts ${JSON.stringify(value)}, which it never accumulated`);
  }
  const entry = set[i]!;
  if (entry[1] === 1) set.splice(i, 1);
  else entry[1] -= 1;
}

function asNumber(value: SqlValue, fn: string): number {
  if (typeof value !== "number") {
    throw new TypeError(
      `${fn} needs a numeric argument: current value is ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** `[count]`: counts every row (`COUNT(*)`) or every non-NULL argument (`COUNT(x)`). */
function count(star: boolean): RetractableAggregate {
  return {
    createAccumulator: () => [0],
    accumulate(acc, value) {
      if (star || value !== null) (acc as number[])[0]! += 1;
    },
    retract(acc, value) {
      if (star || value !== null) (acc as number[])[0]! -= 1;
    },
    getValue: (acc) => (acc as number[])[0]!,
  };
}

/** The multiset of non-NULL arguments; `value` picks the result from it. */
function overMultiset(fn: string, value: (set: Multiset) => SqlValue): RetractableAggregate {
  return {
    createAccumulator: () => [],
    accumulate(acc, v) {
      if (v !== null) multisetAdd(acc as Multiset, v);
    },
    retract(acc, v) {
      if (v !== null) multisetRemove(acc as Multiset, v, fn);
    },
    getValue: (acc) => value(acc as Multiset),
  };
}

/**
 * MIN (`sign` -1) or MAX (1) of an append-only input: the multiset holds
 * only the current extreme (see `BuiltinAggregateSpec.appendOnly`).
 */
function extreme(fn: string, sign: 1 | -1): RetractableAggregate {
  return {
    createAccumulator: () => [],
    accumulate(acc, v) {
      if (v === null) return;
      const set = acc as Multiset;
      // The extreme is where the sorted multiset of MIN/MAX with retraction
      // keeps it, so an accumulator of theirs (an older checkpoint) reads right.
      const current = set[sign > 0 ? set.length - 1 : 0];
      if (current === undefined || sign * compareValues(v, current[0]) > 0) {
        set.length = 0;
        set.push([v, 1]);
      }
    },
    retract(_acc, v) {
      throw new Error(
        `${fn} over an append-only input got a retraction of ${
          JSON.stringify(v)
        }: the planner took the input for append-only`,
      );
    },
    getValue: (acc) => {
      const set = acc as Multiset;
      return set.length === 0 ? null : set[sign > 0 ? set.length - 1 : 0]![0];
    },
  };
}

/** `[sum, count]` of non-NULL arguments; `result` turns them into the value. */
function sumAndCount(
  fn: string,
  result: (sum: number, n: number) => SqlValue,
): RetractableAggregate {
  return {
    createAccumulator: () => [0, 0],
    accumulate(acc, v) {
      if (v === null) return;
      const a = acc as number[];
      a[0]! += asNumber(v, fn);
      a[1]! += 1;
    },
    retract(acc, v) {
      if (v === null) return;
      const a = acc as number[];
      a[0]! -= asNumber(v, fn);
      a[1]! -= 1;
    },
    getValue(acc) {
      const a = acc as number[];
      return a[1] === 0 ? null : result(a[0]!, a[1]!);
    },
  };
}

/**
 * Creates the retractable aggregate `spec` names.
 * @throws {RangeError} for DISTINCT on anything but `COUNT`.
 */
export function createAggregate(spec: AggregateSpec): RetractableAggregate {
  if (spec.fn === "UDF") return userDefinedAggregate(spec);
  if (spec.distinct && spec.fn !== "COUNT") {
    throw new RangeError(
      `DISTINCT is supported only in COUNT(DISTINCT ...) for now, not ${spec.fn}`,
    );
  }
  switch (spec.fn) {
    case "COUNT_STAR":
      return count(true);
    case "COUNT":
      return spec.distinct ? overMultiset("COUNT(DISTINCT)", (s) => s.length) : count(false);
    case "SUM":
      return sumAndCount("SUM", (sum) => sum);
    case "AVG":
      return sumAndCount("AVG", (sum, n) => spec.integral ? Math.trunc(sum / n) : sum / n);
    case "MIN":
      if (spec.appendOnly === true) return extreme("MIN", -1);
      return overMultiset("MIN", (s) => s.length === 0 ? null : s[0]![0]);
    case "MAX":
      if (spec.appendOnly === true) return extreme("MAX", 1);
      return overMultiset("MAX", (s) => s.length === 0 ? null : s[s.length - 1]![0]);
  }
}
