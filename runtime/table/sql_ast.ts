/**
 * Weir's own syntax tree of the SQL it plans: the statements and
 * expressions of this slice, independent of the parser library that
 * produces them (`parser.ts` translates the library's tree into this one,
 * so the planner never sees the library's shapes and a parser can be
 * swapped by rewriting one file).
 *
 * Every node that the planner may refuse carries `at`: the 0-based offset
 * in the script where its keyword or name was found, for messages with a
 * line and a column.
 *
 * @module
 */

import type { AggregateName } from "./aggregates.ts";
import type { SqlValue } from "./row.ts";
import type { DataType } from "./types.ts";

/** A scalar or aggregate expression. */
export type Expr =
  | { readonly k: "column"; readonly table: string | null; readonly name: string }
  | { readonly k: "literal"; readonly value: SqlValue }
  | { readonly k: "binary"; readonly op: string; readonly left: Expr; readonly right: Expr }
  | { readonly k: "not"; readonly expr: Expr }
  | { readonly k: "negate"; readonly expr: Expr }
  | { readonly k: "isNull"; readonly expr: Expr; readonly negated: boolean }
  | { readonly k: "cast"; readonly expr: Expr; readonly type: DataType }
  | {
    readonly k: "case";
    readonly operand: Expr | null;
    readonly whens: readonly { readonly when: Expr; readonly then: Expr }[];
    readonly otherwise: Expr | null;
  }
  | { readonly k: "call"; readonly name: string; readonly args: readonly Expr[] }
  | {
    readonly k: "aggregate";
    readonly fn: AggregateName;
    readonly distinct: boolean;
    readonly arg: Expr | null;
  }
  /** `INTERVAL '10' SECOND` (day-time intervals only): its length in milliseconds and its text. */
  | { readonly k: "interval"; readonly millis: number; readonly text: string }
  /** `expr [NOT] IN (a, b, ...)` with a list of expressions (no subquery). */
  | {
    readonly k: "in";
    readonly expr: Expr;
    readonly list: readonly Expr[];
    readonly negated: boolean;
  }
  /** `expr [NOT] BETWEEN low AND high` (both ends included). */
  | {
    readonly k: "between";
    readonly expr: Expr;
    readonly low: Expr;
    readonly high: Expr;
    readonly negated: boolean;
  }
  /**
   * An OVER aggregation: `ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...)`
   * (also `RANK`, `DENSE_RANK`) or `agg(arg) OVER (... [ROWS|RANGE BETWEEN
   * ... PRECEDING AND CURRENT ROW])`. `fn` is upper-case; `args` are the
   * call's arguments (none for the ranking functions).
   */
  | {
    readonly k: "over";
    readonly fn: string;
    readonly args: readonly Expr[];
    readonly partitionBy: readonly Expr[];
    readonly orderBy: readonly OrderItem[];
    readonly frame: OverFrame | null;
    readonly at: number;
  };

/** One `ORDER BY` item. */
export interface OrderItem {
  /** What is ordered by. */
  readonly expr: Expr;
  /** `DESC`. */
  readonly descending: boolean;
}

/**
 * The frame of an OVER window, always ending at the current row (Flink
 * supports no other end): `ROWS BETWEEN n PRECEDING AND CURRENT ROW`
 * (`preceding` a row count), `RANGE BETWEEN INTERVAL ... PRECEDING AND
 * CURRENT ROW` (milliseconds), or `UNBOUNDED PRECEDING` (`null`).
 */
export interface OverFrame {
  /** `ROWS` counts rows; `RANGE` measures the ORDER BY time attribute. */
  readonly unit: "ROWS" | "RANGE";
  /** Rows (ROWS) or milliseconds (RANGE) before the current row; `null` is `UNBOUNDED`. */
  readonly preceding: number | null;
}

/**
 * Something a FROM clause reads (Calcite's `SqlNode` kinds for FROM):
 *
 * - `table`: a table or view by name;
 * - `subquery`: `( SELECT ... ) [AS] alias`;
 * - `join`: `left [INNER|LEFT|RIGHT|FULL|CROSS] JOIN right [ON cond]`
 *   (a comma join is `CROSS` with the condition left in WHERE);
 * - `windowTvf`: a windowing table-valued function,
 *   `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))`,
 *   `HOP(..., slide, size)`, `CUMULATE(..., step, size)`,
 *   `SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap)`; `intervals` are
 *   in that order, in milliseconds; its output adds `window_start`,
 *   `window_end` and `window_time` to the input's columns (Flink's window
 *   TVFs);
 * - `lateral`: `LATERAL TABLE(f(args)) [AS] alias(col, ...)`, a
 *   user-defined table function, joined to the rows on its left.
 */
export type TableRef =
  | {
    readonly k: "table";
    readonly name: string;
    readonly alias: string | null;
    readonly at: number;
  }
  | {
    readonly k: "subquery";
    readonly query: SelectQuery;
    readonly alias: string | null;
    readonly at: number;
  }
  | {
    readonly k: "join";
    readonly kind: "INNER" | "LEFT" | "RIGHT" | "FULL" | "CROSS";
    readonly left: TableRef;
    readonly right: TableRef;
    readonly on: Expr | null;
    readonly at: number;
  }
  | {
    readonly k: "windowTvf";
    readonly fn: "TUMBLE" | "HOP" | "CUMULATE" | "SESSION";
    readonly input: TableRef;
    readonly timeColumn: string;
    readonly intervals: readonly number[];
    readonly partitionBy: readonly string[];
    readonly alias: string | null;
    readonly at: number;
  }
  | {
    readonly k: "lateral";
    readonly fn: string;
    readonly args: readonly Expr[];
    readonly alias: string | null;
    readonly columnAliases: readonly string[];
    readonly at: number;
  };

/**
 * One item of a SELECT list: `expr [AS alias]`, or `*`, or `t.*` (`table`
 * is the qualifier: a table name or alias of the FROM clause).
 */
export type SelectItem =
  | { readonly k: "expr"; readonly expr: Expr; readonly alias: string | null }
  | { readonly k: "star"; readonly table?: string };

/**
 * `SELECT [DISTINCT] ... FROM ... [WHERE ...] [GROUP BY ...] [HAVING ...]
 * [ORDER BY ...] [LIMIT n]`.
 */
export interface SelectQuery {
  /** The SELECT list. */
  readonly items: readonly SelectItem[];
  /** `SELECT DISTINCT`. */
  readonly distinct: boolean;
  /** What is read. */
  readonly from: TableRef;
  /** The WHERE condition. */
  readonly where: Expr | null;
  /** The GROUP BY expressions (empty without GROUP BY). */
  readonly groupBy: readonly Expr[];
  /** The HAVING condition. */
  readonly having: Expr | null;
  /** The ORDER BY items (empty without ORDER BY). */
  readonly orderBy: readonly OrderItem[];
  /** `LIMIT n`, or `null`. */
  readonly limit: number | null;
}

/** A column of `CREATE TABLE`. */
export interface ColumnDefinition {
  /** The column's name. */
  readonly name: string;
  /** Its type (for a computed column, the expression's type is checked against nothing: `type` is `null`). */
  readonly type: DataType | null;
  /** `name AS expr`: a computed column (Flink's computed columns), or `null`. */
  readonly computed: Expr | null;
}

/** `WATERMARK FOR column AS expr` of `CREATE TABLE`. */
export interface WatermarkDefinition {
  /** The event-time (rowtime) column. */
  readonly column: string;
  /** The watermark expression, e.g. `ts - INTERVAL '5' SECOND`. */
  readonly expr: Expr;
  /** Offset of `WATERMARK`. */
  readonly at: number;
}

/** A statement of a script. */
export type Statement =
  | {
    readonly k: "createTable";
    readonly name: string;
    readonly columns: readonly ColumnDefinition[];
    readonly watermark: WatermarkDefinition | null;
    /** `PRIMARY KEY (...) NOT ENFORCED`, or `null`. */
    readonly primaryKey: readonly string[] | null;
    readonly options: Readonly<Record<string, string>>;
    readonly at: number;
  }
  | {
    readonly k: "createView";
    readonly name: string;
    readonly query: SelectQuery;
    readonly at: number;
  }
  /** `EXPLAIN [CHANGELOG_MODE] statement` of a SELECT or INSERT. */
  | { readonly k: "explain"; readonly statement: Statement; readonly at: number }
  /** `SET 'key' = 'value'` (`value` `null`: `SET 'key'` shows it; both `null`: `SET` lists all). */
  | {
    readonly k: "set";
    readonly key: string | null;
    readonly value: string | null;
    readonly at: number;
  }
  | {
    readonly k: "insertValues";
    readonly table: string;
    readonly rows: readonly (readonly Expr[])[];
    readonly at: number;
  }
  | {
    readonly k: "insertSelect";
    readonly table: string;
    readonly query: SelectQuery;
    readonly at: number;
  }
  | { readonly k: "select"; readonly query: SelectQuery; readonly at: number };
