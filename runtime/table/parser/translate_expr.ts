/**
 * Translates the FlinkSQL grammar's expressions (`expression`,
 * `booleanExpression`, `valueExpression`, `primaryExpression`...) into
 * `sql_ast.ts`'s {@link Expr} (literals and column types are in
 * `translate_literal.ts`).
 *
 * Precedence is Flink's (Calcite's `SqlStdOperatorTable`): unary `-`/`+`
 * 80; `* / % ||` 60; `+ -` 40; BETWEEN, LIKE, IN 32; comparisons 30;
 * IS [NOT] NULL/TRUE/FALSE 28; NOT 26; AND 24; OR 22. Mostly it comes
 * from the grammar (ANTLR's left-recursive rules bind earlier
 * alternatives tighter); where the grammar groups differently, the
 * translation regroups:
 *
 * - `||`: the grammar puts it beside `+` and `-`, so a run of arithmetic
 *   operators is flattened into its operands and operators, in order, and
 *   rebuilt with Flink's two levels ({@link arithmeticRun}):
 *   `a + b || c` is `a + (b || c)`, `a || b * c` is `(a || b) * c`.
 * - BETWEEN, LIKE, IN: the grammar applies them to a whole comparison and
 *   lets a comparison end a LIKE pattern or a BETWEEN's upper bound; the
 *   predicate takes the operands next to it instead: `x = a LIKE p` is
 *   `x = (a LIKE p)`, `a BETWEEN 1 AND 2 = x` is `(a BETWEEN 1 AND 2) = x`.
 *   (A comparison after `IN (...)` or between two predicates does not
 *   parse at all; `grammar_rewrites.ts` explains that error.)
 * - IS after a condition: the grammar's IS binds looser than NOT, AND
 *   and OR; `NOT x IN (1) IS NULL` is `NOT ((x IN (1)) IS NULL)`.
 *
 * Shapes that
 * `sql_ast.ts` has no node for are encoded as follows, and everything else
 * it cannot express is refused with a {@link SqlParseError} at its position:
 *
 * | SQL | `Expr` |
 * |---|---|
 * | `a LIKE p`, `a NOT LIKE p` | `binary` `LIKE`, under `not` |
 * | `x IS [NOT] UNKNOWN` | `isNull` |
 * | `x IS TRUE` / `IS FALSE` (and `NOT`) | `case` (`CASE WHEN x THEN TRUE ELSE FALSE END`...) |
 * | `TIMESTAMP '2020-01-01 00:00:00'` | `cast` of the string to `TIMESTAMP` (checked here) |
 * | `EXTRACT(HOUR FROM ts)` | `call` `EXTRACT('HOUR', ts)` |
 * | `POSITION(a IN b)` | `call` `POSITION(a, b)` |
 * | a time unit argument, e.g. `TIMESTAMPADD(HOUR, 1, ts)` | a string literal `'HOUR'` |
 * | `-5` (a number after unary minus) | a negative number literal |
 * | `` `name` `` (back-quoted) | `column` |
 * | `COUNT(*)` | `aggregate` `COUNT_STAR` |
 * | `SUM(x) FILTER (WHERE c)` | `SUM(CASE WHEN c THEN x END)` (`COUNT(*)`: `COUNT(CASE WHEN c THEN 1 END)`) |
 *
 * Function names are upper-cased (Flink resolves functions
 * case-insensitively); column and table names are kept as written.
 *
 * @module
 */

import type { AggregateName } from "../aggregates.ts";
import type { Expr } from "../sql_ast.ts";
import { castValue, dataTypeOf } from "../types.ts";
import type { PNode, RuleNode, TokenNode } from "./parse_tree.ts";
import {
  child,
  children,
  isRule,
  isToken,
  kids,
  nameParts,
  need,
  stringValue,
  token,
  type TranslateContext,
} from "./translate_context.ts";
import { translateInterval } from "./translate_interval.ts";
import { constant, constantInteger, dataType, stringOrName } from "./translate_literal.ts";

const AGGREGATES: Readonly<Record<string, AggregateName>> = {
  COUNT: "COUNT",
  SUM: "SUM",
  AVG: "AVG",
  MIN: "MIN",
  MAX: "MAX",
};

const PASS_THROUGH = new Set([
  "expression",
  "computedColumnExpression",
  "selectExpressionColumnName",
  "dateTimeExpression",
  "valueDefinition",
]);

const COLUMN_RULES = new Set([
  "columnName",
  "columnNamePath",
  "columnNamePathAllowEmpty",
  "uid",
  "uidAllowEmpty",
  "dereferenceDefinition",
  "selectLiteralColumnName",
  "timeAttrColumn",
]);

/**
 * Translates an expression node (any of the grammar's expression rules).
 * @throws {SqlParseError} for what `sql_ast.ts` cannot express, naming it
 *   and where.
 */
export function translateExpr(ctx: TranslateContext, node: PNode): Expr {
  if (node.rule !== null && PASS_THROUGH.has(node.rule)) return translateExpr(ctx, only(ctx, node));
  if (node.rule !== null && COLUMN_RULES.has(node.rule)) return column(ctx, node);
  switch (node.rule) {
    case "booleanExpression":
      return booleanExpr(ctx, node);
    case "valueExpression":
      return valueExpr(ctx, node);
    case "primaryExpression":
      return primary(ctx, node);
    case "constant":
      return constant(ctx, node);
    case "functionCallExpression":
      return functionCall(ctx, node);
    case "timeIntervalExpression":
      return translateInterval(ctx, node);
    default:
      return ctx.unsupported(node, `the expression ${ctx.text(node)}`);
  }
}

function only(ctx: TranslateContext, node: RuleNode): PNode {
  const first = node.children[0];
  if (first === undefined || node.children.length !== 1) {
    return ctx.unsupported(node, `the expression ${ctx.text(node)}`);
  }
  return first;
}

/** A column reference from a dotted name: `name` or `table.name`. */
export function column(ctx: TranslateContext, node: PNode): Expr {
  // The grammar lets a quoted identifier be any STRING_LITERAL: 'text' in
  // an expression is a string.
  const text = ctx.text(node);
  if (text.startsWith("'") || text.startsWith('"')) return stringOrName(ctx, node);
  // ... and a number may be an identifier (DIG_LITERAL): `SELECT 1 FROM t`.
  if (/^\d+$/.test(text)) return constantInteger(ctx, node, text);
  const parts = nameParts(ctx, node);
  if (parts.length === 1) return { k: "column", table: null, name: parts[0]! };
  if (parts.length === 2) return { k: "column", table: parts[0]!, name: parts[1]! };
  return ctx.unsupported(node, `the name ${ctx.text(node)} (at most table.column)`);
}

function booleanExpr(ctx: TranslateContext, node: RuleNode): Expr {
  const [first, second, third] = node.children;
  if (isToken(first, "KW_NOT")) return { k: "not", expr: translateExpr(ctx, second!) };
  if (isToken(first, "KW_EXISTS")) return ctx.unsupported(node, "EXISTS (subquery)");
  if (isRule(first, "valueExpression")) {
    if (!isRule(second, "predicate")) return valueExpr(ctx, first);
    // BETWEEN, IN and LIKE bind tighter than comparisons in Flink, but the
    // grammar applies them to a whole comparison (`x = a LIKE b` as
    // `(x = a) LIKE b`) and lets a comparison end them (`a LIKE b = c`
    // as `a LIKE (b = c)`): the predicate takes the operands next to it.
    const [left, op, right] = first.children;
    const tighter = token(second, "KW_BETWEEN") !== undefined ||
      token(second, "KW_IN") !== undefined || child(second, "likePredicate") !== undefined;
    const after: [string, Expr][] = [];
    let e: Expr;
    if (tighter && isRule(op, "comparisonOperator") && isRule(right, "valueExpression")) {
      e = {
        k: "binary",
        op: comparison(ctx, op),
        left: valueExpr(ctx, left as RuleNode),
        right: predicate(ctx, valueExpr(ctx, right), second, after),
      };
    } else {
      e = predicate(ctx, valueExpr(ctx, first), second, after);
    }
    for (const [op, right] of after) e = { k: "binary", op, left: e, right };
    return e;
  }
  if (isRule(first, "booleanExpression")) {
    if (isToken(second, "KW_IS")) return isAfter(ctx, first, node);
    const left = booleanExpr(ctx, first);
    if (isToken(second, "KW_AND") || isToken(second, "KW_OR")) {
      return {
        k: "binary",
        op: second.token === "KW_AND" ? "AND" : "OR",
        left,
        right: translateExpr(ctx, third!),
      };
    }
  }
  return ctx.unsupported(node, `the condition ${ctx.text(node)}`);
}

/**
 * `subject IS [NOT] NULL|...` where the grammar parsed `subject` as a
 * condition (`NOT x`, `x AND y`, `x IN (...)`): its IS binds looser than
 * NOT, AND and OR, but Flink's (Calcite precedence 28) binds tighter than
 * all three (26, 24, 22), so `NOT x IS NULL` is `NOT (x IS NULL)` and
 * `x AND y IS NULL` is `x AND (y IS NULL)`: the IS goes down to the
 * operand next to it.
 */
function isAfter(ctx: TranslateContext, subject: RuleNode, node: RuleNode): Expr {
  return isChainAfter(ctx, subject, [node]);
}

/** {@link isAfter} for the IS nodes `chain` (innermost first) applied in turn. */
function isChainAfter(ctx: TranslateContext, subject: RuleNode, chain: RuleNode[]): Expr {
  const [first, second, third] = subject.children;
  if (isToken(first, "KW_NOT") && isRule(second, "booleanExpression")) {
    return { k: "not", expr: isChainAfter(ctx, second, chain) };
  }
  if (isRule(first, "booleanExpression") && isToken(second, "KW_IS")) {
    return isChainAfter(ctx, first, [subject, ...chain]);
  }
  if (
    isRule(first, "booleanExpression") && (isToken(second, "KW_AND") || isToken(second, "KW_OR")) &&
    isRule(third, "booleanExpression")
  ) {
    return {
      k: "binary",
      op: second.token === "KW_AND" ? "AND" : "OR",
      left: booleanExpr(ctx, first),
      right: isChainAfter(ctx, third, chain),
    };
  }
  return chain.reduce((e, node) => isKind(ctx, e, node), booleanExpr(ctx, subject));
}

/** `x IS [NOT] NULL|UNKNOWN|TRUE|FALSE`, from the node holding `IS`. */
function isKind(ctx: TranslateContext, subject: Expr, node: RuleNode): Expr {
  const negated = token(node, "KW_NOT") !== undefined;
  const kind = kids(node)[kids(node).length - 1]!;
  if (isToken(kind, "KW_NULL") || isToken(kind, "KW_UNKNOWN")) {
    return { k: "isNull", expr: subject, negated };
  }
  if (isToken(kind, "KW_TRUE") || isToken(kind, "KW_FALSE")) {
    const when = kind.token === "KW_TRUE" ? subject : { k: "not" as const, expr: subject };
    return {
      k: "case",
      operand: null,
      whens: [{ when, then: { k: "literal", value: !negated } }],
      otherwise: { k: "literal", value: negated },
    };
  }
  return ctx.unsupported(node, `IS ${ctx.text(kind).toUpperCase()}`);
}

/**
 * A `valueExpression` as a left-associative chain of comparisons: for
 * `a = b < c`, `first` is `a` and `rest` is `=` b, `<` c; for a node that
 * is no comparison, `first` is the node and `rest` is empty.
 */
function comparisonChain(
  ctx: TranslateContext,
  node: RuleNode,
): { first: RuleNode; rest: [string, Expr][] } {
  const [left, op, right] = node.children;
  if (!isRule(left, "valueExpression") || !isRule(op, "comparisonOperator")) {
    return { first: node, rest: [] };
  }
  const chain = comparisonChain(ctx, left);
  chain.rest.push([comparison(ctx, op), valueExpr(ctx, right as RuleNode)]);
  return chain;
}

/** The operator of a `comparisonOperator` node (`!=` as `<>`). */
function comparison(ctx: TranslateContext, node: RuleNode): string {
  const op = node.children.map((c) => ctx.text(c)).join("");
  if (!COMPARISONS.has(op)) return ctx.unsupported(node, `the comparison ${op}`);
  return op === "!=" ? "<>" : op;
}

/**
 * `subject` with the predicate `node` applied. A comparison chain that
 * ends a BETWEEN or LIKE (`a LIKE b = c`) is split: the predicate takes
 * its first operand, and the comparisons after it are pushed to
 * `trailing`, for the caller to apply to the predicate's result.
 */
function predicate(
  ctx: TranslateContext,
  subject: Expr,
  node: RuleNode,
  trailing: [string, Expr][],
): Expr {
  const lastOperand = (n: RuleNode): Expr => {
    const chain = comparisonChain(ctx, n);
    trailing.push(...chain.rest);
    return valueExpr(ctx, chain.first);
  };
  const negated = isToken(node.children[0], "KW_NOT");
  if (token(node, "KW_BETWEEN") !== undefined) {
    if (token(node, "KW_SYMMETRIC") !== undefined) {
      return ctx.unsupported(node, "BETWEEN SYMMETRIC");
    }
    const [low, high] = children(node, "valueExpression");
    return {
      k: "between",
      expr: subject,
      low: valueExpr(ctx, low!),
      high: lastOperand(high!),
      negated,
    };
  }
  if (token(node, "KW_IN") !== undefined) {
    if (child(node, "queryStatement") !== undefined) {
      return ctx.unsupported(node, "IN (subquery)");
    }
    const list = children(node, "expression").map((e) => translateExpr(ctx, e));
    return { k: "in", expr: subject, list, negated };
  }
  const like = child(node, "likePredicate");
  if (like !== undefined) {
    if (token(like, "KW_ANY") !== undefined || token(like, "KW_ALL") !== undefined) {
      return ctx.unsupported(like, "LIKE ANY/ALL");
    }
    if (token(like, "KW_ESCAPE") !== undefined) return ctx.unsupported(like, "LIKE ... ESCAPE");
    const e: Expr = {
      k: "binary",
      op: "LIKE",
      left: subject,
      right: lastOperand(need(like, "valueExpression")),
    };
    return isToken(like.children[0], "KW_NOT") ? { k: "not", expr: e } : e;
  }
  if (token(node, "KW_IS") !== undefined) {
    if (token(node, "KW_DISTINCT") !== undefined) {
      return ctx.unsupported(node, "IS [NOT] DISTINCT FROM");
    }
    if (token(node, "KW_JSON") !== undefined) return ctx.unsupported(node, "IS JSON");
    return isKind(ctx, subject, node);
  }
  const keyword = node.children.find((c) => c.rule === null && c.token !== "KW_NOT");
  return ctx.unsupported(
    node,
    `the predicate ${keyword === undefined ? ctx.text(node) : ctx.text(keyword).toUpperCase()}`,
  );
}

const ARITHMETIC: Readonly<Record<string, string>> = {
  ASTERISK_SIGN: "*",
  SLASH_SIGN: "/",
  PERCENT_SIGN: "%",
  ADD_SIGN: "+",
  HYPHEN_SIGN: "-",
  DOUBLE_VERTICAL_SIGN: "||",
};

const COMPARISONS = new Set(["=", ">", "<", "<=", ">=", "<>", "!="]);

function valueExpr(ctx: TranslateContext, node: RuleNode): Expr {
  const [first, second, third] = node.children;
  if (isRule(first, "primaryExpression") && second === undefined) return primary(ctx, first);
  if (first !== undefined && first.rule === null && isRule(second, "valueExpression")) {
    const inner = valueExpr(ctx, second);
    if (first.token === "ADD_SIGN") return inner;
    if (first.token === "HYPHEN_SIGN") {
      return inner.k === "literal" && typeof inner.value === "number"
        ? { k: "literal", value: -inner.value }
        : { k: "negate", expr: inner };
    }
    return ctx.unsupported(first, `the operator ${first.text}`);
  }
  if (isArithmetic(ctx, node)) return arithmeticRun(ctx, node);
  if (isRule(first, "valueExpression") && third !== undefined && isRule(third, "valueExpression")) {
    const left = valueExpr(ctx, first);
    const right = valueExpr(ctx, third);
    if (isRule(second, "comparisonOperator")) {
      return { k: "binary", op: comparison(ctx, second), left, right };
    }
    if (second !== undefined && second.rule === null) {
      return ctx.unsupported(second, `the operator ${second.text.toUpperCase()}`);
    }
  }
  return ctx.unsupported(node, `the expression ${ctx.text(node)}`);
}

/** Whether `node` is a binary `valueExpression` of an operator of {@link ARITHMETIC} (or a FILTER's `*`). */
function isArithmetic(ctx: TranslateContext, node: PNode | undefined): node is RuleNode {
  if (!isRule(node, "valueExpression") || node.children.length !== 3) return false;
  const op = node.children[1]!;
  return op.rule === null && (ARITHMETIC[op.token] !== undefined || ctx.filters.has(op.start));
}

/** Operators that Flink binds as tightly as `*` (Calcite precedence 60; `+` and `-` are 40). */
const MULTIPLICATIVE = new Set(["*", "/", "%", "||"]);

/**
 * A run of arithmetic operators (`a + b || c * d`), whatever the grammar's
 * grouping of it: its operands (unary expressions, primaries) and
 * operators in order, rebuilt left-associatively with Flink's precedence,
 * `* / % ||` over `+ -`. A FILTER's `*` applies to the operand before it.
 */
function arithmeticRun(ctx: TranslateContext, node: RuleNode): Expr {
  const operands: Expr[] = [];
  const ops: string[] = [];
  const flatten = (n: PNode): void => {
    if (!isArithmetic(ctx, n)) {
      operands.push(
        isRule(n, "valueExpression")
          ? valueExpr(ctx, n)
          : ctx.unsupported(n, `the operand ${ctx.text(n)}`),
      );
      return;
    }
    const [left, op, right] = n.children as [PNode, TokenNode, RuleNode];
    flatten(left);
    if (ctx.filters.has(op.start)) {
      operands.push(filtered(ctx, operands.pop()!, valueExpr(ctx, right), left));
      return;
    }
    ops.push(ARITHMETIC[op.token]!);
    flatten(right);
  };
  flatten(node);
  let sum: Expr | undefined;
  let sumOp = "";
  let term = operands[0]!;
  ops.forEach((op, i) => {
    const operand = operands[i + 1]!;
    if (MULTIPLICATIVE.has(op)) {
      term = { k: "binary", op, left: term, right: operand };
      return;
    }
    sum = sum === undefined ? term : { k: "binary", op: sumOp, left: sum, right: term };
    sumOp = op;
    term = operand;
  });
  return sum === undefined ? term : { k: "binary", op: sumOp, left: sum, right: term };
}

/**
 * `agg(x) FILTER (WHERE cond)` (rewritten to `agg(x) * (cond)` before
 * parsing) as `agg(CASE WHEN cond THEN x END)`: the same result for
 * COUNT, SUM, AVG, MIN and MAX, which skip NULLs (`COUNT(*)` counts
 * `CASE WHEN cond THEN 1 END`).
 */
function filtered(ctx: TranslateContext, aggregate: Expr, cond: Expr, at: PNode): Expr {
  if (aggregate.k === "binary" && ["*", "/", "%"].includes(aggregate.op)) {
    // `2 * COUNT(*) FILTER (...)` parsed as `(2 * COUNT(*)) * (...)`: the FILTER is COUNT's.
    return { ...aggregate, right: filtered(ctx, aggregate.right, cond, at) };
  }
  if (aggregate.k !== "aggregate") {
    return ctx.fail(
      at,
      `FILTER (WHERE ...) must follow an aggregate call (COUNT, SUM, AVG, MIN or MAX), got ${
        ctx.text(at)
      }`,
    );
  }
  const then = aggregate.arg ?? { k: "literal" as const, value: 1 };
  return {
    k: "aggregate",
    fn: aggregate.fn === "COUNT_STAR" ? "COUNT" : aggregate.fn,
    distinct: aggregate.distinct,
    arg: { k: "case", operand: null, whens: [{ when: cond, then }], otherwise: null },
  };
}

function primary(ctx: TranslateContext, node: RuleNode): Expr {
  const [first, second] = node.children;
  if (first === undefined) return ctx.unsupported(node, "an empty expression");
  if (first.rule === null) {
    switch (first.token) {
      case "KW_CASE":
        return caseExpr(ctx, node);
      case "KW_CAST":
        return {
          k: "cast",
          expr: translateExpr(ctx, need(node, "expression")),
          type: dataType(ctx, need(node, "columnType"), "CAST"),
        };
      case "KW_POSITION": {
        const [needle, haystack] = children(node, "valueExpression");
        return {
          k: "call",
          name: "POSITION",
          args: [valueExpr(ctx, needle!), valueExpr(ctx, haystack!)],
        };
      }
      case "KW_EXTRACT": {
        const field = need(node, "identifier");
        return {
          k: "call",
          name: "EXTRACT",
          args: [
            { k: "literal", value: ctx.text(field).toUpperCase() },
            valueExpr(ctx, need(node, "valueExpression")),
          ],
        };
      }
      case "ASTERISK_SIGN":
        return ctx.fail(first, "* is only allowed as a SELECT item and in COUNT(*)");
      case "LR_BRACKET":
        if (isRule(second, "queryStatement")) {
          return ctx.unsupported(node, "a subquery as an expression (scalar subquery)");
        }
        return translateExpr(ctx, need(node, "expression"));
      default:
        return ctx.unsupported(node, `${first.text.toUpperCase()}(...)`);
    }
  }
  switch (first.rule) {
    case "constant":
      return constant(ctx, first);
    case "functionCallExpression":
      return functionCall(ctx, first);
    case "columnNamePath":
    case "dereferenceDefinition":
      return column(ctx, first);
    case "uid":
      if (token(node, "ASTERISK_SIGN") !== undefined) {
        return ctx.fail(node, `${ctx.text(node)} is only allowed as a SELECT item`);
      }
      return column(ctx, first);
    case "primaryExpression":
      return ctx.unsupported(node, "subscripts (x[i])");
    default:
      return ctx.unsupported(node, `the expression ${ctx.text(node)}`);
  }
}

function caseExpr(ctx: TranslateContext, node: RuleNode): Expr {
  const simple = isRule(node.children[1], "expression");
  const operand = simple ? translateExpr(ctx, node.children[1]!) : null;
  const whens = children(node, "whenClause").map((w) => {
    const [when, then] = children(w, "expression");
    return { when: translateExpr(ctx, when!), then: translateExpr(ctx, then!) };
  });
  const elseAt = node.children.findIndex((c) => isToken(c, "KW_ELSE"));
  const otherwise = elseAt === -1 ? null : translateExpr(ctx, node.children[elseAt + 1]!);
  return { k: "case", operand, whens, otherwise };
}

/** The upper-cased name of a function call's `functionNameWithParams` (dotted names joined). */
function functionName(ctx: TranslateContext, node: RuleNode): string {
  const renamed = ctx.functions.get(node.start);
  if (renamed !== undefined) return renamed;
  const uid = child(node, "uid");
  return (uid === undefined ? ctx.text(node) : nameParts(ctx, uid).join(".")).toUpperCase();
}

function functionCall(ctx: TranslateContext, node: RuleNode): Expr {
  const first = node.children[0]!;
  if (isRule(first, "reservedKeywordsNoParamsUsedAsFuncName")) {
    return { k: "call", name: ctx.text(first).toUpperCase(), args: [] };
  }
  if (isRule(first, "functionNameAndParams")) {
    const interval = child(first, "timeIntervalExpression");
    if (interval !== undefined) return translateExpr(ctx, interval);
    const kind = ctx.text(need(first, "reservedKeywordsFollowParamsUsedAsFuncName")).toUpperCase();
    const literal = token(first, "STRING_LITERAL")!;
    if (kind !== "TIMESTAMP") {
      return ctx.unsupported(first, `${kind} literals (only TIMESTAMP '...' is)`);
    }
    const value = stringValue(ctx, literal);
    const type = dataTypeOf("TIMESTAMP")!;
    try {
      castValue(value, type);
    } catch {
      return ctx.fail(
        literal,
        `TIMESTAMP ${literal.text} is not a timestamp (expected 'YYYY-MM-DD HH:MM:SS[.fff]')`,
      );
    }
    return { k: "cast", expr: { k: "literal", value }, type };
  }
  const name = functionName(ctx, need(node, "functionNameWithParams"));
  const distinct = child(node, "setQuantifier") !== undefined;
  // `f()` parses with one empty parameter (the grammar's JSON parameters may be empty).
  const params = children(node, "functionParam").filter((p) => p.end > p.start);
  const star = params.some((p) => ctx.text(p).trim() === "*");
  const fn = AGGREGATES[name];
  if (fn !== undefined) {
    if (star) {
      if (fn !== "COUNT" || params.length !== 1 || distinct) {
        return ctx.fail(node, `${ctx.text(node)}: only COUNT(*) takes *`);
      }
      return { k: "aggregate", fn: "COUNT_STAR", distinct: false, arg: null };
    }
    if (params.length !== 1) {
      return ctx.fail(
        node,
        `${name} takes one argument, got ${params.length} in ${ctx.text(node)}`,
      );
    }
    return { k: "aggregate", fn, distinct, arg: functionParam(ctx, params[0]!) };
  }
  if (distinct) {
    return ctx.unsupported(
      node,
      `DISTINCT in ${name}(...) (only COUNT, SUM, AVG, MIN and MAX take DISTINCT)`,
    );
  }
  if (star) return ctx.fail(node, `${ctx.text(node)}: only COUNT(*) takes *`);
  return { k: "call", name, args: params.map((p) => functionParam(ctx, p)) };
}

function functionParam(ctx: TranslateContext, node: RuleNode): Expr {
  const first = node.children[0]!;
  if (isRule(first, "expression")) return translateExpr(ctx, first);
  if (isRule(first, "timeIntervalUnit") || isRule(first, "timePointUnit")) {
    return { k: "literal", value: ctx.text(first).toUpperCase() };
  }
  return ctx.unsupported(node, `the argument ${ctx.text(node)}`);
}
