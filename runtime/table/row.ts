/**
 * Rows of a dynamic table and their kinds of change: Flink's `Row` and
 * `RowKind` (`org.apache.flink.types.RowKind`).
 *
 * A continuous query's result is a dynamic table; what flows between its
 * operators is the table's changelog, one {@linkcode Row} per change:
 *
 * | kind | short | meaning |
 * |---|---|---|
 * | `INSERT` | `+I` | a new row |
 * | `UPDATE_BEFORE` | `-U` | the old version of an updated row (retract mode only) |
 * | `UPDATE_AFTER` | `+U` | the new version of an updated row |
 * | `DELETE` | `-D` | a row removed |
 *
 * A row is plain data (no class instance), so it crosses a keyBy and a
 * checkpoint through MessagePack unchanged.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatRow, insertRow } from "./row.ts";
 *
 * assert.equal(formatRow(insertRow(["Mary", 1])), "+I(Mary,1)");
 * ```
 *
 * @module
 */

/** One field of a row: SQL NULL is `null`; numbers are JS doubles (exact integers to 2^53). */
export type SqlValue = string | number | boolean | null;

/** Flink's `RowKind`: the kind of change a row carries in a changelog. */
export type RowKind = "INSERT" | "UPDATE_BEFORE" | "UPDATE_AFTER" | "DELETE";

/** A row of a dynamic table with the kind of change it carries (Flink's `Row`). */
export interface Row {
  /** The kind of change. */
  readonly kind: RowKind;
  /** The field values, in the schema's column order. */
  readonly fields: readonly SqlValue[];
}

const SHORT: Readonly<Record<RowKind, string>> = {
  INSERT: "+I",
  UPDATE_BEFORE: "-U",
  UPDATE_AFTER: "+U",
  DELETE: "-D",
};

/**
 * The short string of a kind, as Flink's `RowKind.shortString()`.
 * @returns `+I`, `-U`, `+U` or `-D`.
 */
export function shortString(kind: RowKind): string {
  return SHORT[kind];
}

/**
 * Whether a change adds its row to the table (`+I`, `+U`) rather than
 * removing it (`-U`, `-D`); Flink's "accumulate" versus "retract" messages.
 */
export function isAccumulate(kind: RowKind): boolean {
  return kind === "INSERT" || kind === "UPDATE_AFTER";
}

/** A `+I` row of `fields`. */
export function insertRow(fields: readonly SqlValue[]): Row {
  return { kind: "INSERT", fields };
}

/** `row` with its kind replaced by `kind`. */
export function withKind(row: Row, kind: RowKind): Row {
  return { kind, fields: row.fields };
}

/**
 * Prints one field as the seeds print it: strings as they are, `null` as
 * `null`, numbers with `String()` (so `2.5`, `3`), booleans as `TRUE`/`FALSE`
 * as Flink's SQL client does.
 */
export function formatValue(value: SqlValue): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  return String(value);
}

/**
 * Prints a row as the seeds print changelogs: `+I(Mary,1)`. (Flink's
 * `Row.toString` prints `+I[Mary, 1]`; the seed's form is the one users
 * of Weir compare against.)
 */
export function formatRow(row: Row): string {
  return `${SHORT[row.kind]}(${row.fields.map(formatValue).join(",")})`;
}

/**
 * Applies a changelog to a multiset of rows, as a retract or upsert sink
 * would (used by tests and by the batch comparison): `+I`/`+U` add a copy
 * of the row, `-U`/`-D` remove one equal copy.
 *
 * @param table the rows so far, by `JSON.stringify(fields)`, with counts; changed in place.
 * @param row the change.
 * @throws {Error} when `-U`/`-D` removes a row the table does not hold,
 *   naming the row (a changelog that retracts what it never inserted is wrong).
 */
export function applyChange(table: Map<string, number>, row: Row): void {
  const key = JSON.stringify(row.fields);
  const count = table.get(key) ?? 0;
  if (isAccumulate(row.kind)) {
    table.set(key, count + 1);
  } else if (count === 0) {
    throw new Error(`changelog retracts ${formatRow(row)}, which the table does not hold`);
  } else if (count === 1) {
    table.delete(key);
  } else {
    table.set(key, count - 1);
  }
}
