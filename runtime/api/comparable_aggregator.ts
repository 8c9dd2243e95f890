/**
 * The reduce functions behind `KeyedStream.min`, `max`, `minBy` and `maxBy`
 * (Flink's `ComparableAggregator` with its `Comparator`s), as pure functions
 * of (accumulated record, new record).
 *
 * ## Semantics (Flink's)
 *
 * - `min(field)` / `max(field)`: the result is the key's **first** record
 *   with only `field` replaced by the running minimum/maximum; every other
 *   field keeps the first record's value.
 * - `minBy(field)` / `maxBy(field)`: the result is the whole record holding
 *   the minimum/maximum of `field`; on a tie the earlier record is kept
 *   (Flink's default `first = true`).
 *
 * ## Comparison
 *
 * The field must hold a number, string, bigint or boolean, and the same type
 * in every record of the stream. Numbers compare as Java's `Double.compare`
 * does for NaN (NaN is greater than every number, and equal to itself);
 * strings by UTF-16 code units (Java's `String.compareTo`); `false < true`.
 * A missing field or mixed types throw a `TypeError` naming the aggregation,
 * the field and the offending value.
 *
 * Results are new objects (arrays stay arrays); the records given are never
 * changed.
 *
 * @example
 * ```ts
 * import { comparableAggregator } from "./comparable_aggregator.ts";
 * const min = comparableAggregator<{ id: string; t: number }>("min", "t");
 * const r = min({ id: "first", t: 5 }, { id: "second", t: 3 });
 * if (r.id !== "first" || r.t !== 3) throw new Error("unreachable");
 * ```
 *
 * @module
 */

/** Which comparison to make (Flink's `AggregationFunction.AggregationType`). */
export type AggregationType = "min" | "max" | "minBy" | "maxBy";

/** The value types a comparable aggregation accepts in its field. */
export type ComparableValue = number | string | bigint | boolean;

/** -1, 0 or 1 as `a` is below, equal to or above `b`; NaN is the greatest number. */
function compare(a: ComparableValue, b: ComparableValue): number {
  if (typeof a === "number" && typeof b === "number") {
    const an = Number.isNaN(a);
    const bn = Number.isNaN(b);
    if (an || bn) return an && bn ? 0 : an ? 1 : -1;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

function show(value: unknown): string {
  if (typeof value === "bigint") return `${value}n`;
  try {
    return JSON.stringify(value, (_k, v) => typeof v === "bigint" ? `${v}n` : v) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * A reduce function `(accumulated, value) => result` for `type` over
 * `field` (see the module docs).
 *
 * @param type `"min"`, `"max"`, `"minBy"` or `"maxBy"`.
 * @param field a property name (objects) or an index (arrays/tuples).
 * @returns the reduce function; it throws a `TypeError` for a record whose
 *   field is missing, not comparable, or of another type than the
 *   accumulated record's.
 * @throws {TypeError} when `field` is neither a non-empty string nor a
 *   non-negative integer, or `type` is unknown.
 */
export function comparableAggregator<T>(
  type: AggregationType,
  field: string | number,
): (accumulated: T, value: T) => T {
  const what = `${type}(${show(field)})`;
  const named = typeof field === "string" && field.length > 0;
  const indexed = typeof field === "number" && Number.isInteger(field) && field >= 0;
  if (!named && !indexed) {
    throw new TypeError(
      `${type}() needs a field name or a non-negative index: current value is ${show(field)}`,
    );
  }
  if (type !== "min" && type !== "max" && type !== "minBy" && type !== "maxBy") {
    throw new TypeError(
      `Unknown comparable aggregation (expected min, max, minBy or maxBy): current value is ${
        show(type)
      }`,
    );
  }
  const read = (record: T): ComparableValue => {
    const value: unknown = typeof record === "object" && record !== null
      ? (record as Record<string | number, unknown>)[field]
      : undefined;
    switch (typeof value) {
      case "number":
      case "string":
      case "bigint":
      case "boolean":
        return value;
    }
    throw new TypeError(
      `${what} needs a number, string, bigint or boolean in field ${
        show(field)
      }: current value is ${show(value)} in record ${show(record)}`,
    );
  };
  // Flink's Comparator.isExtremal: which side wins; ties keep the accumulated record.
  const wantLower = type === "min" || type === "minBy";
  const byRecord = type === "minBy" || type === "maxBy";
  return (accumulated: T, value: T): T => {
    const a = read(accumulated);
    const b = read(value);
    if (typeof a !== typeof b) {
      throw new TypeError(
        `${what} compares values of one type: field ${show(field)} holds ${typeof a} ${
          show(a)
        } in an earlier record, current value is ${typeof b} ${show(b)} in record ${show(value)}`,
      );
    }
    const c = compare(b, a);
    const better = wantLower ? c < 0 : c > 0;
    if (byRecord) return better ? value : accumulated;
    if (!better) return accumulated;
    const copy = (Array.isArray(accumulated) ? [...accumulated] : { ...accumulated }) as Record<
      string | number,
      unknown
    >;
    copy[field] = b;
    return copy as T;
  };
}

/** A field of records `T` that min/max/minBy/maxBy (and sum) aggregate: an index of a tuple, else a property name. */
export type AggregationField<T> = T extends readonly unknown[] ? number : keyof T & string;
