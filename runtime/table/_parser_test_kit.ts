/**
 * Helpers shared by the SQL parser's tests (`parser_*_test.ts`): parse one
 * statement or one SELECT, print an expression, build expected column and
 * literal nodes, and assert where a parse error points. Test code only.
 *
 * @module
 */

import assert from "node:assert/strict";
import { parseScript, SqlParseError } from "./parser.ts";
import type { Expr, SelectQuery, Statement, TableRef } from "./sql_ast.ts";
import { exprText } from "./sql_text.ts";

/**
 * The one statement of `sql`.
 * @throws {AssertionError} when `sql` holds another number of statements.
 */
export function one(sql: string): Statement {
  const statements = parseScript(sql);
  assert.equal(statements.length, 1, `one statement in ${sql}`);
  return statements[0]!;
}

/**
 * The query of `sql`, one SELECT statement.
 * @throws {Error} when the statement is not a SELECT.
 */
export function query(sql: string): SelectQuery {
  const s = one(sql);
  if (s.k !== "select") throw new Error(`not a SELECT: ${sql}`);
  return s.query;
}

/** The text of the first SELECT item of `SELECT <e> FROM t`. */
export function expr(e: string): string {
  return exprText(exprOf(e));
}

/**
 * The expression of the first SELECT item of `SELECT <e> FROM t`.
 * @throws {Error} when that item is not an expression (a `*`).
 */
export function exprOf(e: string): Expr {
  const item = query(`SELECT ${e} FROM t`).items[0]!;
  if (item.k !== "expr") throw new Error(`not an expression: ${e}`);
  return item.expr;
}

/** Asserts that `sql` fails to parse at `line`:`column` with a message matching `message`. */
export function parseErrorAt(sql: string, line: number, column: number, message: RegExp): void {
  assert.throws(() => parseScript(sql), (e: unknown) => {
    assert.ok(e instanceof SqlParseError, `${sql}: a SqlParseError, got ${String(e)}`);
    assert.match(e.message, message, sql);
    assert.deepEqual(e.position, { line, column }, `${sql}: ${e.message}`);
    assert.ok(e.message.startsWith(`SQL parse error at line ${line}, column ${column}: `));
    return true;
  });
}

/** The syntax tree of column `name`, qualified by `table` when given. */
export const col = (name: string, table: string | null = null): Expr => ({
  k: "column",
  table,
  name,
});

/** The syntax tree of a literal. */
export const lit = (value: string | number | boolean | null): Expr => ({ k: "literal", value });

/** The shape of a TableRef without offsets, for compact expectations. */
export function shape(ref: TableRef): unknown {
  switch (ref.k) {
    case "table":
      return ref.alias === null ? ref.name : `${ref.name} AS ${ref.alias}`;
    case "subquery":
      return { subquery: ref.query.items.length, alias: ref.alias };
    case "join":
      return [
        shape(ref.left),
        ref.kind,
        shape(ref.right),
        ref.on === null ? null : exprText(ref.on),
      ];
    case "windowTvf":
      return {
        [ref.fn]: shape(ref.input),
        on: ref.timeColumn,
        intervals: ref.intervals,
        partitionBy: ref.partitionBy,
      };
    case "lateral":
      return {
        lateral: ref.fn,
        args: ref.args.map(exprText),
        alias: ref.alias,
        columns: ref.columnAliases,
      };
  }
}
