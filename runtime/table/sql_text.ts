/**
 * The SQL text of an expression of Weir's syntax tree (`sql_ast.ts`), as
 * the planner names things in plans and messages: `(a + b)`, `COUNT(url)`,
 * `INTERVAL '10' SECOND`. The same expression always gives the same text,
 * which is how the planner matches a SELECT item to its GROUP BY key.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { exprText } from "./sql_text.ts";
 *
 * assert.equal(
 *   exprText({ k: "binary", op: "+", left: { k: "column", table: null, name: "a" }, right: { k: "literal", value: 1 } }),
 *   "(a + 1)",
 * );
 * ```
 *
 * @module
 */

import type { SqlValue } from "./row.ts";
import type { Expr, OrderItem } from "./sql_ast.ts";

/** The SQL text of `e` (see the module docs). */
export function exprText(e: Expr): string {
  switch (e.k) {
    case "column":
      return e.table === null ? e.name : `${e.table}.${e.name}`;
    case "literal":
      return typeof e.value === "string"
        ? `'${e.value.replaceAll("'", "''")}'`
        : literalText(e.value);
    case "binary":
      return `(${exprText(e.left)} ${e.op} ${exprText(e.right)})`;
    case "not":
      return `NOT ${exprText(e.expr)}`;
    case "negate":
      return `-${exprText(e.expr)}`;
    case "isNull":
      return `${exprText(e.expr)} IS ${e.negated ? "NOT " : ""}NULL`;
    case "cast":
      return `CAST(${exprText(e.expr)} AS ${e.type.name})`;
    case "case":
      return `CASE ${e.operand === null ? "" : exprText(e.operand) + " "}${
        e.whens.map((w) => `WHEN ${exprText(w.when)} THEN ${exprText(w.then)}`).join(" ")
      }${e.otherwise === null ? "" : ` ELSE ${exprText(e.otherwise)}`} END`;
    case "call":
      return `${e.name}(${e.args.map(exprText).join(", ")})`;
    case "aggregate":
      return e.fn === "COUNT_STAR"
        ? "COUNT(*)"
        : `${e.fn}(${e.distinct ? "DISTINCT " : ""}${e.arg === null ? "" : exprText(e.arg)})`;
    case "interval":
      return e.text;
    case "in":
      return `${exprText(e.expr)} ${e.negated ? "NOT " : ""}IN (${
        e.list.map(exprText).join(", ")
      })`;
    case "between":
      return `${exprText(e.expr)} ${e.negated ? "NOT " : ""}BETWEEN ${exprText(e.low)} AND ${
        exprText(e.high)
      }`;
    case "over": {
      const parts: string[] = [];
      if (e.partitionBy.length > 0) {
        parts.push(`PARTITION BY ${e.partitionBy.map(exprText).join(", ")}`);
      }
      if (e.orderBy.length > 0) parts.push(`ORDER BY ${e.orderBy.map(orderText).join(", ")}`);
      if (e.frame !== null) {
        const amount = e.frame.preceding === null
          ? "UNBOUNDED"
          : e.frame.unit === "ROWS"
          ? String(e.frame.preceding)
          : `INTERVAL '${e.frame.preceding / 1000}' SECOND`;
        parts.push(`${e.frame.unit} BETWEEN ${amount} PRECEDING AND CURRENT ROW`);
      }
      return `${e.fn}(${e.args.map(exprText).join(", ")}) OVER (${parts.join(" ")})`;
    }
  }
}

/** The SQL text of an ORDER BY item: `expr [DESC]`. */
export function orderText(item: OrderItem): string {
  return `${exprText(item.expr)}${item.descending ? " DESC" : ""}`;
}

function literalText(value: SqlValue): string {
  if (value === null) return "NULL";
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  return String(value);
}
