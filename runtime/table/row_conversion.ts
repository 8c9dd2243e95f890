/**
 * Rows from outside a query: the literal rows of `INSERT INTO t VALUES`,
 * fitted to the table's columns at planning time, and the records of a
 * DataStream given to `fromDataStream`, checked per record while the job
 * runs (Flink's `DataStructureConverter`s, reduced to plain values).
 *
 * @module
 */

import { SuppressRestartsError } from "../failure.ts";
import { PlanningError } from "./changelog_mode.ts";
import { compileExpr } from "./expressions.ts";
import { positionOf } from "./parser.ts";
import type { Row, SqlValue } from "./row.ts";
import type { Expr } from "./sql_ast.ts";
import type { ConnectorTable } from "./table_connectors.ts";
import { castValue, type Column, valueFits } from "./types.ts";

/** Evaluates one VALUES row and fits it to the table's columns. */
/**
 * @param row the row's expressions (constants).
 * @param r the row's 0-based index, for messages.
 * @param table the target table.
 * @param sql the script, for the statement's line and column.
 * @param at the statement's offset in `sql`.
 * @returns the row's values.
 * @throws {PlanningError} for a wrong number of values, or a value that does
 *   not fit its column, naming the row, the column and the value.
 */
export function valuesRow(
  row: readonly Expr[],
  r: number,
  table: ConnectorTable,
  sql: string,
  at: number,
): SqlValue[] {
  const p = positionOf(sql, at);
  const where = `row ${r + 1} of INSERT INTO ${table.name} at line ${p.line}, column ${p.column}`;
  if (row.length !== table.columns.length) {
    throw new PlanningError(
      `${where} has ${row.length} value(s); the table has ${table.columns.length} column(s)`,
    );
  }
  return row.map((expr, i) => {
    const column = table.columns[i]!;
    const value = compileExpr(expr, {
      columns: [],
      inputName: "VALUES",
      locate: () => "",
      aggregatesAllowed: false,
    }).evaluate([]);
    const fitted = column.type.family === "TIMESTAMP" ||
        (column.type.family === "DOUBLE" && typeof value === "number")
      ? (() => {
        try {
          return castValue(value, column.type);
        } catch (error) {
          throw new PlanningError(`${where}: column ${column.name}: ${(error as Error).message}`);
        }
      })()
      : value;
    if (!valueFits(fitted, column.type)) {
      throw new PlanningError(
        `${where}: column ${column.name} is ${column.type.name}, got ${JSON.stringify(value)}`,
      );
    }
    return fitted;
  });
}

/**
 * A DataStream record as a row's fields (see `fromDataStream`): an array by
 * position, an object by column name (every column must be a property;
 * `null` is SQL NULL; other properties are ignored).
 * @throws {SuppressRestartsError} for a record that does not fit the
 *   columns, naming the column, the value and the record: the same record
 *   would fail again after a restart.
 */
export function toFields(value: unknown, columns: readonly Column[], name: string): SqlValue[] {
  let fields: unknown[];
  if (Array.isArray(value)) {
    if (value.length !== columns.length) {
      throw new SuppressRestartsError(
        `${name}: a record has ${value.length} field(s), the schema ${columns.length}: ${
          JSON.stringify(value)
        }`,
      );
    }
    fields = value;
  } else if (value !== null && typeof value === "object") {
    const missing = columns.find((c) => !(c.name in value));
    if (missing !== undefined) {
      throw new SuppressRestartsError(
        `${name}: a record has no property '${missing.name}' (write null for SQL NULL): ${
          JSON.stringify(value)
        }`,
      );
    }
    fields = columns.map((c) => (value as Record<string, unknown>)[c.name]);
  } else {
    throw new SuppressRestartsError(
      `${name}: a record must be an array or an object: current value is ${JSON.stringify(value)}`,
    );
  }
  return fields.map((f, i) => {
    const column = columns[i]!;
    const v = f === undefined ? null : f;
    if (
      !(v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") ||
      !valueFits(v, column.type)
    ) {
      throw new SuppressRestartsError(
        `${name}: column ${column.name} is ${column.type.name}, got ${
          JSON.stringify(v)
        } in record ${JSON.stringify(value)}`,
      );
    }
    return v;
  });
}

const KINDS: ReadonlySet<string> = new Set(["INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"]);

/**
 * A change of a DataStream given to `fromChangelogStream`: a `Row` whose
 * kind is a RowKind and whose fields fit the columns.
 * @throws {SuppressRestartsError} naming what does not fit, as {@linkcode toFields}.
 */
export function changeOf(value: unknown, columns: readonly Column[], name: string): Row {
  const row = value as Partial<Row> | null;
  if (
    row === null || typeof row !== "object" || !KINDS.has(String(row.kind)) ||
    !Array.isArray(row.fields)
  ) {
    throw new SuppressRestartsError(
      `${name}: a change must be a Row { kind: INSERT | UPDATE_BEFORE | UPDATE_AFTER | DELETE, fields: [...] }: current value is ${
        JSON.stringify(value)
      }`,
    );
  }
  return { kind: row.kind!, fields: toFields(row.fields, columns, name) };
}
