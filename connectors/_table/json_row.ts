/**
 * Rows as JSON objects, the `json` format of the table connectors
 * (`filesystem`, `jetstream`; Flink's `json` format): one object per row
 * with a property per column. Pure: no I/O.
 *
 * - Reading: a missing property or `null` is NULL; other properties are
 *   ignored; a value must have its column's JSON type (numbers for
 *   `BIGINT`/`DOUBLE`, an integer for `BIGINT`, `true`/`false` for
 *   `BOOLEAN`, strings for `VARCHAR` and `TIMESTAMP`, a timestamp as
 *   `YYYY-MM-DD HH:MM:SS[.fff]` or with a `T`).
 * - Writing: every column, NULL as `null`, in column order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { jsonRow, rowJson } from "./json_row.ts";
 *
 * const columns = [{ name: "n", type: { family: "BIGINT", name: "BIGINT" } }] as const;
 * assert.deepEqual(jsonRow('{"n": 3}', columns).fields, [3]);
 * assert.equal(rowJson({ kind: "INSERT", fields: [3] }, columns), '{"n":3}');
 * ```
 *
 * @module
 */

import type { Row, SqlValue } from "../../runtime/table/row.ts";
import { castValue, type Column, valueFits } from "../../runtime/table/types.ts";

/**
 * The `+I` row of one JSON object (text, or an already parsed value).
 * @throws {TypeError} for text that is not JSON, a value that is not an
 *   object, or a property that does not fit its column, naming the column
 *   and the value.
 */
export function jsonRow(json: string | unknown, columns: readonly Column[]): Row {
  let value: unknown = json;
  if (typeof json === "string") {
    try {
      value = JSON.parse(json);
    } catch (error) {
      throw new TypeError(`not JSON: ${(error as Error).message}`);
    }
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(
      `a row must be a JSON object: current value is ${JSON.stringify(value)?.slice(0, 80)}`,
    );
  }
  const object = value as Record<string, unknown>;
  return {
    kind: "INSERT",
    fields: columns.map((c) => {
      const v = object[c.name] ?? null;
      if (
        !(v === null || typeof v === "string" || typeof v === "number" ||
          typeof v === "boolean") || !valueFits(v, c.type)
      ) {
        throw new TypeError(`column ${c.name} is ${c.type.name}, got ${JSON.stringify(v)}`);
      }
      if (c.type.family !== "TIMESTAMP" || v === null) return v;
      try {
        return castValue(v, c.type);
      } catch {
        throw new TypeError(`column ${c.name} is ${c.type.name}, got ${JSON.stringify(v)}`);
      }
    }),
  };
}

/** The JSON object text of a row's fields, by column name. */
export function rowJson(row: Row, columns: readonly Column[]): string {
  const object: Record<string, SqlValue> = {};
  for (let i = 0; i < columns.length; i++) object[columns[i]!.name] = row.fields[i] ?? null;
  return JSON.stringify(object);
}
