/**
 * Translates OVER windows (`call OVER (PARTITION BY ... ORDER BY ...
 * [frame])`) and ORDER BY lists of the FlinkSQL grammar into `sql_ast.ts`'s
 * `over` expression and {@link OrderItem}s. Frames end at the current row
 * (Flink supports no other end); `ROWS BETWEEN n PRECEDING`, `RANGE
 * BETWEEN INTERVAL ... PRECEDING` and `UNBOUNDED PRECEDING` are kept.
 *
 * @module
 */

import type { Expr, OrderItem, OverFrame } from "../sql_ast.ts";
import type { RuleNode } from "./parse_tree.ts";
import { child, children, need, token, type TranslateContext } from "./translate_context.ts";
import { translateExpr } from "./translate_expr.ts";

/**
 * An OVER aggregation from the select item `call OVER (window)`: `fn` is
 * the call's upper-cased name (`COUNT(*)` gives `COUNT` with no arguments).
 */
export function overExpr(ctx: TranslateContext, call: RuleNode, spec: RuleNode): Expr {
  const e = translateExpr(ctx, call);
  let fn: string;
  let args: readonly Expr[];
  if (e.k === "aggregate") {
    if (e.distinct) return ctx.unsupported(call, "DISTINCT in an OVER aggregation");
    fn = e.fn === "COUNT_STAR" ? "COUNT" : e.fn;
    args = e.arg === null ? [] : [e.arg];
  } else if (e.k === "call") {
    fn = e.name;
    args = e.args;
  } else {
    return ctx.fail(call, `${ctx.text(call)} OVER: OVER needs a function call before it`);
  }
  if (spec.children[0]?.rule !== null || token(spec, "LR_BRACKET") === undefined) {
    return ctx.unsupported(spec, "named windows (OVER w)");
  }
  const partition = child(spec, "partitionByClause");
  const order = child(spec, "orderByClause");
  const frameNode = child(spec, "windowFrame");
  return {
    k: "over",
    fn,
    args,
    partitionBy: partition === undefined
      ? []
      : partition.children.filter((c) => c.rule !== null).map((c) => translateExpr(ctx, c)),
    orderBy: order === undefined ? [] : orderItems(ctx, order),
    frame: frameNode === undefined ? null : frame(ctx, frameNode),
    at: call.start,
  };
}

/** The items of an `orderByClause`. */
export function orderItems(ctx: TranslateContext, node: RuleNode): OrderItem[] {
  return children(node, "orderItemDefinition").map((item) => {
    if (token(item, "KW_NULLS") !== undefined) return ctx.unsupported(item, "NULLS FIRST/LAST");
    const what = item.children[0]!;
    return { expr: translateExpr(ctx, what), descending: token(item, "KW_DESC") !== undefined };
  });
}

function frame(ctx: TranslateContext, node: RuleNode): OverFrame {
  const unitName = token(node, "KW_ROWS") !== undefined ? "ROWS" : "RANGE";
  const interval = child(node, "timeIntervalExpression");
  if (interval !== undefined) {
    const e = translateExpr(ctx, interval);
    return { unit: "RANGE", preceding: e.k === "interval" ? e.millis : 0 };
  }
  const bound = child(node, "frameBound");
  if (bound !== undefined) {
    return { unit: "ROWS", preceding: Number(token(node, "DIG_LITERAL")!.text) };
  }
  const start = need(node, "frameStart");
  const end = need(node, "frameEnd");
  if (token(end, "KW_CURRENT") === undefined) {
    return ctx.unsupported(
      end,
      `the frame end ${ctx.text(end).toUpperCase()} (OVER windows end at CURRENT ROW)`,
    );
  }
  if (token(start, "KW_UNBOUNDED") !== undefined) return { unit: unitName, preceding: null };
  if (token(start, "KW_CURRENT") !== undefined) return { unit: unitName, preceding: 0 };
  if (unitName === "RANGE") {
    return ctx.unsupported(
      start,
      "RANGE BETWEEN n PRECEDING (use ROWS, or RANGE BETWEEN INTERVAL ... PRECEDING)",
    );
  }
  return { unit: "ROWS", preceding: Number(token(start, "DIG_LITERAL")!.text) };
}
