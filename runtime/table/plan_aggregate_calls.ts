/**
 * The aggregate calls of a grouped SELECT: every aggregate of the SELECT
 * list and HAVING once by its text ({@linkcode collectAggregates}, over the
 * walk {@linkcode collectSelectCalls} that user-defined aggregates share), and
 * each call's result type ({@linkcode aggregateType}).
 *
 * @module
 */

import type { AggregateCall } from "./plan.ts";
import { materialized } from "./plan_projection.ts";
import { exprText } from "./sql_text.ts";
import type { Expr, SelectQuery } from "./sql_ast.ts";
import { type DataType, TYPES } from "./types.ts";

/** The result type of an aggregate call: BIGINT for counts, else its argument's (materialized). */
export function aggregateType(call: AggregateCall): DataType {
  switch (call.spec.fn) {
    case "COUNT":
    case "COUNT_STAR":
      return TYPES.BIGINT;
    case "UDF":
      return call.spec.resultType;
    default:
      return materialized(call.arg?.type ?? TYPES.BIGINT);
  }
}

/** Every aggregate call of the SELECT list and HAVING, once each by text, in order. */
export function collectAggregates(query: SelectQuery): Extract<Expr, { k: "aggregate" }>[] {
  return collectSelectCalls(
    query,
    (e): e is Extract<Expr, { k: "aggregate" }> => e.k === "aggregate",
  );
}

/**
 * The subexpressions of the SELECT list and HAVING that `pick` accepts,
 * once each by text ({@linkcode exprText}), in order of first appearance.
 * The walk does not descend into an accepted expression, nor into a
 * built-in aggregate's arguments or a subquery; it descends through
 * operators, CASE, IN, BETWEEN and function-call arguments. Shared by the
 * built-in ({@linkcode collectAggregates}) and user-defined
 * (`plan_udf_aggregate.ts`) aggregate planning.
 * @param pick which expressions to collect (a type guard).
 */
export function collectSelectCalls<T extends Expr>(
  query: SelectQuery,
  pick: (e: Expr) => e is T,
): T[] {
  const found = new Map<string, T>();
  const visit = (e: Expr): void => {
    if (pick(e)) {
      if (!found.has(exprText(e))) found.set(exprText(e), e);
      return;
    }
    switch (e.k) {
      case "binary":
        visit(e.left);
        visit(e.right);
        return;
      case "not":
      case "negate":
      case "isNull":
      case "cast":
        visit(e.expr);
        return;
      case "case":
        if (e.operand !== null) visit(e.operand);
        for (const w of e.whens) {
          visit(w.when);
          visit(w.then);
        }
        if (e.otherwise !== null) visit(e.otherwise);
        return;
      case "call":
        e.args.forEach(visit);
        return;
      case "in":
        visit(e.expr);
        e.list.forEach(visit);
        return;
      case "between":
        visit(e.expr);
        visit(e.low);
        visit(e.high);
        return;
      default:
        return;
    }
  };
  for (const item of query.items) if (item.k === "expr") visit(item.expr);
  if (query.having !== null) visit(query.having);
  return [...found.values()];
}
