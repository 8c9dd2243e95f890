/**
 * `CAST(x AS type)` between every pair of type families (Flink's casts,
 * as far as this slice's families go), decided at planning time from the
 * source and target types.
 *
 * | from \ to | STRING | BIGINT | DOUBLE | BOOLEAN | TIMESTAMP |
 * |---|---|---|---|---|---|
 * | STRING | = | parsed, truncated | parsed | `true`/`false` | parsed |
 * | BIGINT | text | = | widened | `x <> 0` | epoch seconds |
 * | DOUBLE | text | truncated toward zero | = | `x <> 0` | epoch seconds (fraction to ms) |
 * | BOOLEAN | `TRUE`/`FALSE` | 1/0 | 1/0 | = | refused |
 * | TIMESTAMP | its text | epoch seconds | epoch seconds | refused | TIMESTAMP(3) |
 *
 * - NULL casts to NULL.
 * - A string that does not parse fails the job naming the value and the
 *   type (Flink's CAST throws too; it has TRY_CAST for NULL instead).
 * - TIMESTAMP and numbers convert through epoch seconds, UTC, as Flink's
 *   legacy casts and `UNIX_TIMESTAMP`/`FROM_UNIXTIME` do (current Flink
 *   allows this only for TIMESTAMP_LTZ, which this slice folds into
 *   TIMESTAMP).
 * - A cast to TIMESTAMP writes TIMESTAMP(3) text (`2026-01-01
 *   12:00:00.000`), so values of one column compare as text.
 * - A refused pair is a planning error naming both types.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { castFunction } from "./scalar_functions_cast.ts";
 * import { TYPES } from "./types.ts";
 *
 * const toTimestamp = castFunction(TYPES.BIGINT, TYPES.TIMESTAMP);
 * if (typeof toTimestamp === "string") throw new Error(toTimestamp);
 * assert.equal(toTimestamp(86_400), "1970-01-02 00:00:00.000");
 * ```
 *
 * @module
 */

import type { SqlValue } from "./row.ts";
import { formatTimestamp, parseTimestamp } from "./scalar_functions_time.ts";
import { castValue, type DataType } from "./types.ts";

/**
 * The conversion of values of `from` to `to`.
 * @returns the function (it throws a `TypeError` naming the value and the
 *   type for a value that does not convert), or a message for a pair of
 *   types that never converts.
 */
export function castFunction(
  from: DataType,
  to: DataType,
): ((value: SqlValue) => SqlValue) | string {
  const refused = `cannot cast ${from.name} to ${to.name}`;
  if (to.family === "TIMESTAMP") {
    switch (from.family) {
      case "BOOLEAN":
        return refused;
      case "BIGINT":
      case "DOUBLE":
        return (v) => (v === null ? null : formatTimestamp(Math.round(Number(v) * 1000)));
      default:
        return (v) => {
          if (v === null) return null;
          const ms = parseTimestamp(String(v));
          if (ms === null) throw new TypeError(`cannot cast ${JSON.stringify(v)} to ${to.name}`);
          return formatTimestamp(ms);
        };
    }
  }
  if (from.family === "TIMESTAMP") {
    switch (to.family) {
      case "BOOLEAN":
        return refused;
      case "BIGINT":
      case "DOUBLE":
        return (v) => {
          if (v === null) return null;
          const ms = parseTimestamp(String(v));
          if (ms === null) throw new TypeError(`cannot cast ${JSON.stringify(v)} to ${to.name}`);
          return to.family === "BIGINT" ? Math.floor(ms / 1000) : ms / 1000;
        };
      default:
        return (v) => v;
    }
  }
  return (v) => castValue(v, to);
}
