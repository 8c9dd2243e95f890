/**
 * Parsing and printing of `TIMESTAMP(3)` values with a one-entry memo, for
 * the window operators: consecutive rows of a window carry the same
 * `window_start`/`window_end` strings, and consecutive windows print the
 * same bounds, so remembering the last conversion skips most of the regex
 * parse and ISO print (measured on Nexmark q5 in SQL: about 10% of the
 * job's CPU went to them before).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { MillisMemo, TextMemo } from "./timestamp_cache.ts";
 *
 * const millis = new MillisMemo("window_end");
 * assert.equal(millis.of("1970-01-01 00:00:10.000"), 10_000);
 * assert.equal(new TextMemo().of(10_000), "1970-01-01 00:00:10.000");
 * ```
 *
 * @module
 */

import type { SqlValue } from "./row.ts";
import { timeAttributeMillis, timestampText } from "./time_attribute.ts";

const digit = (s: string, i: number): number => {
  const d = s.charCodeAt(i) - 48;
  return d >= 0 && d <= 9 ? d : Number.NaN;
};
const num = (s: string, from: number, to: number): number => {
  let n = 0;
  for (let i = from; i < to; i++) n = n * 10 + digit(s, i);
  return n;
};

/**
 * The epoch milliseconds of a canonical `YYYY-MM-DD HH:MM:SS[.f[f[f]]]`
 * string, read by position (no regex), or `NaN` for anything else (the
 * caller then takes the general parse).
 */
export function canonicalTimestampMillis(s: string): number {
  const n = s.length;
  if (
    n < 19 || n > 23 || n === 20 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 ||
    s.charCodeAt(10) !== 32 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58 ||
    (n > 19 && s.charCodeAt(19) !== 46)
  ) {
    return Number.NaN;
  }
  let ms = 0;
  for (let i = 20; i < 23; i++) ms = ms * 10 + (i < n ? digit(s, i) : 0);
  return Date.UTC(
    num(s, 0, 4),
    num(s, 5, 7) - 1,
    num(s, 8, 10),
    num(s, 11, 13),
    num(s, 14, 16),
    num(s, 17, 19),
    ms,
  );
}

/** `timeAttributeMillis` of one column, remembering the last value. */
export class MillisMemo {
  readonly #column: string;
  #value: SqlValue | undefined = undefined;
  #millis = 0;

  /** @param column names the column in errors. */
  constructor(column: string) {
    this.#column = column;
  }

  /**
   * The epoch milliseconds of `value`.
   * @throws {TypeError} as `timeAttributeMillis` (NULL or not a timestamp).
   */
  of(value: SqlValue): number {
    if (value !== this.#value || value === undefined) {
      const fast = typeof value === "string" ? canonicalTimestampMillis(value) : Number.NaN;
      this.#millis = Number.isNaN(fast) ? timeAttributeMillis(value, this.#column) : fast;
      this.#value = value;
    }
    return this.#millis;
  }
}

/** `timestampText`, remembering the last value. */
export class TextMemo {
  #millis = Number.NaN;
  #text = "";

  /**
   * The `TIMESTAMP(3)` text of `millis`.
   * @throws {RangeError} as `timestampText`.
   */
  of(millis: number): string {
    if (millis !== this.#millis) {
      this.#text = timestampText(millis);
      this.#millis = millis;
    }
    return this.#text;
  }
}
