/**
 * Translates the FlinkSQL grammar's literals (`constant`, string literals)
 * into `sql_ast.ts` literals, and column types (`columnType`) into
 * {@link DataType}s; split from `translate_expr.ts`.
 *
 * @module
 */

import type { Expr } from "../sql_ast.ts";
import { type DataType, dataTypeOf, SUPPORTED_TYPES } from "../types.ts";
import type { PNode, RuleNode } from "./parse_tree.ts";
import {
  child,
  children,
  isRule,
  isToken,
  stringValue,
  token,
  type TranslateContext,
} from "./translate_context.ts";
import { translateInterval } from "./translate_interval.ts";

const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * A `constant` node: a number, string, boolean, NULL or interval literal.
 * @throws {SqlParseError} for literals `sql_ast.ts` cannot hold (time
 *   point literals other than TIMESTAMP '...', integers beyond 2^53).
 */
export function constant(ctx: TranslateContext, node: RuleNode): Expr {
  const [first, second] = node.children;
  if (first === undefined) return ctx.unsupported(node, "an empty constant");
  if (isRule(first, "timeIntervalExpression")) return translateInterval(ctx, first);
  if (isRule(first, "stringLiteral")) return stringOrName(ctx, first);
  if (isRule(first, "decimalLiteral") || isToken(first, "HYPHEN_SIGN")) {
    const digits = ctx.text(isToken(first, "HYPHEN_SIGN") ? second! : first);
    const e = constantInteger(ctx, node, digits);
    return isToken(first, "HYPHEN_SIGN") && e.k === "literal"
      ? { k: "literal", value: -Number(e.value) }
      : e;
  }
  if (isRule(first, "booleanLiteral")) {
    return { k: "literal", value: isToken(first.children[0], "KW_TRUE") };
  }
  if (isToken(first, "REAL_LITERAL")) return { k: "literal", value: Number(first.text) };
  if (isToken(first, "KW_NULL")) return { k: "literal", value: null };
  if (isRule(first, "timePointLiteral")) {
    return ctx.unsupported(node, `the literal ${ctx.text(node)}`);
  }
  return ctx.unsupported(node, `the literal ${ctx.text(node)}`);
}

/** An integer literal from its digits, refused beyond 2^53 (a JS number would not hold it exactly). */
export function constantInteger(ctx: TranslateContext, node: PNode, digits: string): Expr {
  if (BigInt(digits) > MAX_EXACT) {
    return ctx.unsupported(
      node,
      `the integer ${ctx.text(node)} (beyond 2^53, not exact as a number)`,
    );
  }
  return { k: "literal", value: Number(digits) };
}

/** A `STRING_LITERAL` in an expression: 'text' is a string, `name` a column. */
export function stringOrName(ctx: TranslateContext, node: PNode): Expr {
  const text = ctx.text(node);
  if (text.startsWith("`")) {
    return { k: "column", table: null, name: text.slice(1, -1).replaceAll("``", "`") };
  }
  if (text.startsWith('"')) {
    return ctx.fail(
      node,
      `${text}: double quotes are not allowed; use 'text' for a string and \`name\` for a name`,
    );
  }
  return { k: "literal", value: stringValue(ctx, node) };
}

/**
 * The {@link DataType} of a `columnType` node.
 * @param what names the column (or `CAST`) in messages.
 * @throws {SqlParseError} for a type this slice does not hold, listing those it does.
 */
export function dataType(ctx: TranslateContext, node: RuleNode, what: string): DataType {
  const base = ctx.text(node.children[0]!).toUpperCase();
  if (token(node, "KW_ZONE") !== undefined && token(node, "KW_WITHOUT") === undefined) {
    return ctx.unsupported(node, `the type ${ctx.text(node).toUpperCase()} of ${what}`);
  }
  const dims = child(node, "lengthOneDimension") ?? child(node, "lengthTwoOptionalDimension");
  const written = dims === undefined
    ? base
    : `${base}(${children(dims, "decimalLiteral").map((d) => ctx.text(d)).join(",")})`;
  const type = dataTypeOf(base, written);
  if (type === undefined) {
    return ctx.fail(
      node,
      `${what} has type ${
        ctx.text(node).replace(/\s+/g, " ").replace(/([<(]) /g, "$1").toUpperCase().slice(0, 60)
      }, which is not supported (supported: ${SUPPORTED_TYPES})`,
    );
  }
  return type;
}
