/**
 * SQL data types of this slice and how their values are held (Flink's
 * `LogicalType`s, folded into the families a JS value can represent).
 *
 * | family | SQL names | JS value |
 * |---|---|---|
 * | `STRING` | `VARCHAR[(n)]`, `CHAR[(n)]`, `STRING` | string (the length is not enforced) |
 * | `BIGINT` | `TINYINT`, `SMALLINT`, `INT`, `INTEGER`, `BIGINT` | number, an integer (exact to 2^53) |
 * | `DOUBLE` | `FLOAT`, `DOUBLE`, `DECIMAL[(p,s)]` | number (DECIMAL is held as a double: a simplification) |
 * | `BOOLEAN` | `BOOLEAN` | boolean |
 * | `TIMESTAMP` | `TIMESTAMP[(p)]` | string `YYYY-MM-DD HH:MM:SS[.fff]` (ordered as text) |
 *
 * NULL is `null` in every family.
 *
 * @module
 */

import type { SqlValue } from "./row.ts";

/** The families of SQL types this slice holds. */
export type TypeFamily = "STRING" | "BIGINT" | "DOUBLE" | "BOOLEAN" | "TIMESTAMP";

/** A SQL data type: its family and the name it was written with (for `explain`). */
export interface DataType {
  /** How values are held. */
  readonly family: TypeFamily;
  /** The SQL name, e.g. `VARCHAR` or `TIMESTAMP(3)`. */
  readonly name: string;
  /**
   * `"rowtime"` for an event-time attribute (Flink's `TIMESTAMP(3)
   * *ROWTIME*`): a column declared by `WATERMARK FOR` (or a
   * `fromDataStream` rowtime), kept by plain column references, lost by
   * any computation on it. Window TVFs and interval joins need one.
   */
  readonly timeAttribute?: "rowtime";
}

/** A column of a table's schema. */
export interface Column {
  /** The column's name. */
  readonly name: string;
  /** Its type. */
  readonly type: DataType;
}

const FAMILIES: Readonly<Record<string, TypeFamily>> = {
  VARCHAR: "STRING",
  CHAR: "STRING",
  STRING: "STRING",
  TINYINT: "BIGINT",
  SMALLINT: "BIGINT",
  INT: "BIGINT",
  INTEGER: "BIGINT",
  BIGINT: "BIGINT",
  FLOAT: "DOUBLE",
  DOUBLE: "DOUBLE",
  DECIMAL: "DOUBLE",
  BOOLEAN: "BOOLEAN",
  TIMESTAMP: "TIMESTAMP",
};

/**
 * The type a SQL type name denotes.
 * @param name the base name (`VARCHAR`, `INT`...), any case.
 * @param written how it was written, for messages and `explain` (default `name`).
 * @returns the type, or `undefined` for a type this slice does not hold.
 */
export function dataTypeOf(name: string, written: string = name): DataType | undefined {
  const family = FAMILIES[name.toUpperCase()];
  return family === undefined ? undefined : { family, name: written.toUpperCase() };
}

/** The family names this slice supports, for messages. */
export const SUPPORTED_TYPES: string = Object.keys(FAMILIES).join(", ");

/** A convenient type of each family (for computed columns). */
export const TYPES: Readonly<Record<TypeFamily, DataType>> = {
  STRING: { family: "STRING", name: "STRING" },
  BIGINT: { family: "BIGINT", name: "BIGINT" },
  DOUBLE: { family: "DOUBLE", name: "DOUBLE" },
  BOOLEAN: { family: "BOOLEAN", name: "BOOLEAN" },
  TIMESTAMP: { family: "TIMESTAMP", name: "TIMESTAMP(3)" },
};

/**
 * Converts `value` to `type`, as SQL's CAST does.
 * @throws {TypeError} when the value cannot be converted, naming the value
 *   and the type (`CAST('x' AS INT)`: "cannot cast 'x' to INT").
 */
export function castValue(value: SqlValue, type: DataType): SqlValue {
  if (value === null) return null;
  const fail = (): never => {
    throw new TypeError(`cannot cast ${JSON.stringify(value)} to ${type.name}`);
  };
  switch (type.family) {
    case "STRING":
      return typeof value === "boolean" ? (value ? "TRUE" : "FALSE") : String(value);
    case "BIGINT": {
      const n = typeof value === "number"
        ? value
        : typeof value === "boolean"
        ? (value ? 1 : 0)
        : value.trim() === ""
        ? NaN
        : Number(value.trim());
      return Number.isFinite(n) ? Math.trunc(n) : fail();
    }
    case "DOUBLE": {
      const n = typeof value === "number"
        ? value
        : typeof value === "boolean"
        ? (value ? 1 : 0)
        : value.trim() === ""
        ? NaN
        : Number(value.trim());
      return Number.isNaN(n) ? fail() : n;
    }
    case "BOOLEAN":
      if (typeof value === "boolean") return value;
      if (typeof value === "number") return value !== 0;
      if (/^\s*true\s*$/i.test(value)) return true;
      if (/^\s*false\s*$/i.test(value)) return false;
      return fail();
    case "TIMESTAMP":
      return typeof value === "string" &&
          /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?$/.test(value.trim())
        ? value.trim().replace("T", " ")
        : fail();
  }
}

/**
 * Checks that `value` belongs to `type` (the rows of a `values` table or a
 * stream given to `fromDataStream`).
 * @returns whether it does (NULL belongs to every type).
 */
export function valueFits(value: SqlValue, type: DataType): boolean {
  if (value === null) return true;
  switch (type.family) {
    case "STRING":
    case "TIMESTAMP":
      return typeof value === "string";
    case "BIGINT":
      return typeof value === "number" && Number.isInteger(value);
    case "DOUBLE":
      return typeof value === "number";
    case "BOOLEAN":
      return typeof value === "boolean";
  }
}
