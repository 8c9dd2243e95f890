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
  };

/** One item of a SELECT list: `expr [AS alias]`, or `*`. */
export type SelectItem =
  | { readonly k: "expr"; readonly expr: Expr; readonly alias: string | null }
  | { readonly k: "star" };

/** `SELECT ... FROM table [WHERE ...] [GROUP BY ...] [HAVING ...]`. */
export interface SelectQuery {
  /** The SELECT list. */
  readonly items: readonly SelectItem[];
  /** The one table or view read. */
  readonly from: string;
  /** Offset of the FROM table's name. */
  readonly fromAt: number;
  /** The WHERE condition. */
  readonly where: Expr | null;
  /** The GROUP BY expressions (empty without GROUP BY). */
  readonly groupBy: readonly Expr[];
  /** The HAVING condition. */
  readonly having: Expr | null;
}

/** A column of `CREATE TABLE`. */
export interface ColumnDefinition {
  /** The column's name. */
  readonly name: string;
  /** Its type. */
  readonly type: DataType;
}

/** A statement of a script. */
export type Statement =
  | {
    readonly k: "createTable";
    readonly name: string;
    readonly columns: readonly ColumnDefinition[];
    readonly options: Readonly<Record<string, string>>;
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
