/**
 * The time of a row read from its time attribute column (Flink's rowtime
 * attribute), in epoch milliseconds, for the operators that order rows by
 * event time (row-time deduplication, OVER aggregation, window Top-N).
 *
 * A time attribute is a `TIMESTAMP` column (a string
 * `YYYY-MM-DD HH:MM:SS[.fff]`, read as UTC, as Flink's `TIMESTAMP(3)`
 * without a time zone) or a `BIGINT` of epoch milliseconds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { timeAttributeMillis } from "./time_attribute.ts";
 *
 * assert.equal(timeAttributeMillis("1970-01-01 00:00:01.5", "ts"), 1500);
 * assert.equal(timeAttributeMillis(1500, "ts"), 1500);
 * ```
 *
 * @module
 */

import type { SqlValue } from "./row.ts";

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$/;

/**
 * The epoch milliseconds of a time attribute's value.
 *
 * @param value a `TIMESTAMP` string (UTC) or a number of epoch milliseconds.
 * @param column names the column for messages.
 * @returns milliseconds since the epoch (fractions of a millisecond are cut).
 * @throws {TypeError} for NULL (a time attribute cannot be NULL, as in
 *   Flink), a string that is not a timestamp, or any other value, naming
 *   the column and the value.
 */
export function timeAttributeMillis(value: SqlValue, column: string): number {
  if (typeof value === "number" && Number.isFinite(value)) return Math.trunc(value);
  if (typeof value === "string") {
    const m = TIMESTAMP.exec(value.trim());
    if (m !== null) {
      const millis = Date.UTC(
        Number(m[1]),
        Number(m[2]) - 1,
        Number(m[3]),
        Number(m[4]),
        Number(m[5]),
        Number(m[6] ?? 0),
        Number((m[7] ?? "0").padEnd(3, "0").slice(0, 3)),
      );
      if (Number.isFinite(millis)) return millis;
    }
  }
  throw new TypeError(
    `time attribute '${column}' needs a TIMESTAMP or epoch milliseconds: current value is ${
      JSON.stringify(value)
    }`,
  );
}

/**
 * A `TIMESTAMP(3)` value for epoch milliseconds, as window TVFs produce
 * `window_start`/`window_end`: `YYYY-MM-DD HH:MM:SS.fff` in UTC (the
 * inverse of {@linkcode timeAttributeMillis} for whole milliseconds).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { timestampText } from "./time_attribute.ts";
 *
 * assert.equal(timestampText(3_600_000), "1970-01-01 01:00:00.000");
 * ```
 *
 * @throws {RangeError} for a value that is not a finite number, naming it.
 */
export function timestampText(millis: number): string {
  if (!Number.isFinite(millis)) {
    throw new RangeError(`a TIMESTAMP needs finite epoch milliseconds: current value is ${millis}`);
  }
  return new Date(millis).toISOString().replace("T", " ").replace("Z", "");
}
