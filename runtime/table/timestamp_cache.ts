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
      this.#millis = timeAttributeMillis(value, this.#column);
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
