/**
 * Translates the FlinkSQL grammar's queries (`queryStatement`,
 * `selectStatement`, `tableExpression`...) into `sql_ast.ts`'s
 * {@link SelectQuery} and {@link TableRef}.
 *
 * FROM: a comma list is a left-deep chain of `CROSS` joins (the condition
 * stays in WHERE); `a JOIN b JOIN c` is `(a JOIN b) JOIN c`. Window TVFs
 * come as `TABLE(TUMBLE|HOP|CUMULATE(TABLE t, DESCRIPTOR(c), ...))` with
 * positional or named (`SIZE =>`, `SLIDE =>`, `STEP =>`) intervals, and
 * SESSION through the rewrite of `parse_tree.ts`.
 *
 * One ambiguity of the grammar is mended here: a SELECT item that starts
 * with a column and continues with `+` or `-` (`SELECT a - 1 FROM t`), or
 * a call of a function with one argument whose name can be a column
 * (`SELECT f(x) FROM t`), parses as the column (`a`, `f`) followed by a
 * stray "alias expression" (`-1`, `(x)`); {@link mendLeadingColumn}
 * rebuilds `a - 1` (with the precedence of the binary operator) and
 * `f(x)` before they are translated. The same holds for a product with a
 * signed factor, `SELECT a * -b FROM t`: the grammar reads `a` and a stray
 * `(*) - b`, taking `*` for the star; it is rebuilt as `a * (-b)`.
 *
 * @module
 */

import type { Expr, SelectItem, SelectQuery, TableRef } from "../sql_ast.ts";
import type { PNode, RuleNode, TokenNode } from "./parse_tree.ts";
import {
  child,
  children,
  identifierName,
  isRule,
  isToken,
  kids,
  nameParts,
  need,
  token,
  type TranslateContext,
} from "./translate_context.ts";
import { translateExpr } from "./translate_expr.ts";
import { orderItems, overExpr } from "./translate_over.ts";

/**
 * Translates a `queryStatement`.
 * @throws {SqlParseError} for a query shape `sql_ast.ts` cannot express
 *   (WITH, UNION/INTERSECT/EXCEPT, VALUES as a query, SELECT without FROM,
 *   MATCH_RECOGNIZE, WINDOW clauses...), naming it and where.
 */
export function translateQuery(ctx: TranslateContext, node: RuleNode): SelectQuery {
  const [first, second] = node.children;
  if (isRule(first, "valuesClause")) {
    return ctx.unsupported(node, "VALUES as a query (INSERT INTO t VALUES ... is supported)");
  }
  if (isRule(first, "withClause")) return ctx.unsupported(first, "WITH (common table expressions)");
  if (isToken(first, "LR_BRACKET")) return translateQuery(ctx, need(node, "queryStatement"));
  if (isRule(first, "queryStatement")) {
    return ctx.unsupported(second!, (second as TokenNode).text.toUpperCase());
  }
  if (isRule(first, "selectClause")) return ctx.unsupported(node, "SELECT without FROM");
  const select = need(node, "selectStatement");
  const order = child(node, "orderByClause");
  const limitNode = child(node, "limitClause");
  return { ...selectStatement(ctx, select), ...orderAndLimit(ctx, order, limitNode) };
}

function orderAndLimit(
  ctx: TranslateContext,
  order: RuleNode | undefined,
  limitNode: RuleNode | undefined,
): Pick<SelectQuery, "orderBy" | "limit"> {
  let limit: number | null = null;
  if (limitNode !== undefined && token(limitNode, "KW_ALL") === undefined) {
    const e = translateExpr(ctx, need(limitNode, "expression"));
    if (
      e.k !== "literal" || typeof e.value !== "number" || !Number.isInteger(e.value) || e.value < 0
    ) {
      return ctx.fail(limitNode, `LIMIT needs a whole number of rows, got ${ctx.text(limitNode)}`);
    }
    limit = e.value;
  }
  return { orderBy: order === undefined ? [] : orderItems(ctx, order), limit };
}

function selectStatement(ctx: TranslateContext, node: RuleNode): SelectQuery {
  const match = child(node, "matchRecognizeClause");
  if (match !== undefined) return ctx.unsupported(match, "MATCH_RECOGNIZE");
  const window = child(node, "windowClause");
  if (window !== undefined) {
    return ctx.unsupported(window, "the WINDOW clause (named OVER windows)");
  }
  const selectClause = need(node, "selectClause");
  const from = child(node, "fromClause");
  if (from === undefined) return ctx.unsupported(node, "SELECT without FROM");
  const where = child(node, "whereClause");
  const group = child(node, "groupByClause");
  const having = child(node, "havingClause");
  const items = children(need(selectClause, "selectList"), "columnProjectItem")
    .map((item) => selectItem(ctx, item));
  return {
    items,
    distinct: child(selectClause, "setQuantifier") !== undefined,
    from: tableExpression(ctx, need(from, "tableExpression")),
    where: where === undefined ? null : translateExpr(ctx, where.children[1]!),
    groupBy: group === undefined
      ? []
      : children(group, "groupItemDefinition").flatMap((g) => groupItem(ctx, g)),
    having: having === undefined ? null : translateExpr(ctx, having.children[1]!),
    orderBy: [],
    limit: null,
  };
}

function selectItem(ctx: TranslateContext, node: RuleNode): SelectItem {
  const [first, second, third] = node.children;
  if (isRule(first, "selectWindowItemColumnName")) {
    const over = need(first, "overWindowItem");
    const spec = child(over, "windowSpec");
    if (spec === undefined) return ctx.unsupported(over, "named windows (OVER w)");
    const aliasNode = over.children[over.children.length - 1]!;
    return {
      k: "expr",
      expr: overExpr(ctx, need(over, "primaryExpression"), spec),
      alias: identifierName(ctx, aliasNode),
    };
  }
  if (isRule(first, "tableAllColumns")) {
    if (second !== undefined) return ctx.fail(second, `* cannot have an alias (${ctx.text(node)})`);
    const qualifier = nameParts(ctx, { ...first, children: first.children.slice(0, -1) });
    if (qualifier.length > 1) return ctx.unsupported(first, `the qualifier ${ctx.text(first)}`);
    return qualifier.length === 0 ? { k: "star" } : { k: "star", table: qualifier[0]! };
  }
  if (isRule(first, "selectLiteralColumnName")) {
    if (second === undefined) return { k: "expr", expr: translateExpr(ctx, first), alias: null };
    if (isRule(second, "columnAlias")) {
      return { k: "expr", expr: translateExpr(ctx, first), alias: alias(ctx, second) };
    }
    const rest = isRule(second, "expression") ? second : third;
    if (isToken(second, "KW_AS") || !isRule(rest, "expression")) {
      return ctx.fail(second, `expected a name after AS in ${ctx.text(node)}`);
    }
    const mended = mendLeadingColumn(first, rest);
    if (mended === undefined) {
      return ctx.fail(rest, `expected ',' or FROM after ${ctx.text(first)}, got ${ctx.text(rest)}`);
    }
    return { k: "expr", expr: translateExpr(ctx, mended), alias: null };
  }
  if (isRule(first, "selectExpressionColumnName")) {
    const expr = translateExpr(ctx, first);
    if (second === undefined) return { k: "expr", expr, alias: null };
    if (isRule(second, "columnAlias")) return { k: "expr", expr, alias: alias(ctx, second) };
    const name = isRule(second, "columnName") ? second : third;
    return { k: "expr", expr, alias: identifierName(ctx, name!) };
  }
  return ctx.unsupported(node, `the SELECT item ${ctx.text(node)}`);
}

function alias(ctx: TranslateContext, node: RuleNode): string {
  return identifierName(ctx, need(node, "identifier"));
}

const TIGHTER_THAN_ADDITION = new Set(["ASTERISK_SIGN", "SLASH_SIGN", "PERCENT_SIGN", "KW_DIV"]);

/**
 * Rebuilds `column` followed by a stray expression as the expression it
 * was meant to be: a stray expression that starts with a unary `+`/`-`
 * (`a` and `- 2 * b > 0`) gives `a - 2 * b > 0` (the sign becomes a binary
 * operator whose right operand takes the multiplicative operators above
 * it); one that starts with a parenthesized expression (`f` and `(x) + 1`)
 * gives the call `f(x) + 1`; one that starts with the star and a sign
 * (`a` and `* -b * c`, parsed `(*) - (b * c)`) gives `(a * (-b)) * c`.
 * @returns the mended `expression` node, or `undefined` when `rest` starts
 *   with neither.
 */
export function mendLeadingColumn(column: RuleNode, rest: RuleNode): RuleNode | undefined {
  // The left spine from `rest` down to the unary node.
  const spine: RuleNode[] = [rest];
  for (;;) {
    const last = spine[spine.length - 1]!;
    const first = last.children[0];
    if (first === undefined || first.rule === null) break;
    spine.push(first);
  }
  const replaceUp = (i: number, replacement: RuleNode): RuleNode => {
    if (i === 0) return replacement;
    const parent = spine[i - 1]!;
    return replaceUp(i - 1, {
      ...parent,
      children: [replacement, ...parent.children.slice(1)],
      start: replacement.start,
    });
  };
  const leaf = spine[spine.length - 1]!;
  if (
    leaf.rule === "primaryExpression" && isToken(leaf.children[0], "LR_BRACKET") &&
    isRule(leaf.children[1], "expression")
  ) {
    // `f` and `(x)`: the call f(x).
    const span = { start: column.start, end: leaf.end };
    const call: RuleNode = {
      rule: "primaryExpression",
      children: [{
        rule: "functionCallExpression",
        children: [
          {
            rule: "functionNameWithParams",
            children: [{ rule: "uid", children: [column], start: column.start, end: column.end }],
            start: column.start,
            end: column.end,
          },
          leaf.children[0]!,
          { ...leaf.children[1], rule: "functionParam", children: [leaf.children[1]] },
          leaf.children[2]!,
        ],
        ...span,
      }],
      ...span,
    };
    return replaceUp(spine.length - 1, call);
  }
  if (
    leaf.rule === "primaryExpression" && leaf.children.length === 1 &&
    isToken(leaf.children[0], "ASTERISK_SIGN")
  ) {
    // `a` and `* -b ...`: the grammar read `*` as the star primary and the
    // unary sign as a binary one, `(*) - b`; the product `a * (-b)` is meant.
    const product = spine.length - 3;
    const parent = spine[product];
    const sign = parent?.children[1];
    const operand = parent?.children[2];
    if (
      parent === undefined || parent.rule !== "valueExpression" ||
      parent.children.length !== 3 || parent.children[0] !== spine[spine.length - 2] ||
      !(isToken(sign, "HYPHEN_SIGN") || isToken(sign, "ADD_SIGN")) ||
      !isRule(operand, "valueExpression")
    ) return undefined;
    return replaceUp(product, signedProduct(column, leaf.children[0]!, sign, operand));
  }
  let unary = spine.findLastIndex((n) =>
    n.rule === "valueExpression" && n.children.length === 2 &&
    (isToken(n.children[0], "HYPHEN_SIGN") || isToken(n.children[0], "ADD_SIGN"))
  );
  let sign: PNode | undefined = unary === -1 ? undefined : spine[unary]!.children[0]!;
  let operand: PNode | undefined = unary === -1 ? undefined : spine[unary]!.children[1]!;
  if (leaf.rule === "constant" && isToken(leaf.children[0], "HYPHEN_SIGN")) {
    // `- 1` is a signed constant: the sign goes, from the innermost valueExpression down.
    const v = spine.findLastIndex((n) => n.rule === "valueExpression");
    if (v > unary) {
      const unsigned: RuleNode = {
        ...leaf,
        children: leaf.children.slice(1),
        start: leaf.children[1]!.start,
      };
      const rebuild = (i: number): PNode => {
        if (i === spine.length - 1) return unsigned;
        const inner = rebuild(i + 1);
        return {
          ...spine[i]!,
          children: [inner, ...spine[i]!.children.slice(1)],
          start: inner.start,
        };
      };
      unary = v;
      sign = leaf.children[0]!;
      operand = rebuild(v);
    }
  }
  if (unary === -1 || sign === undefined || operand === undefined) return undefined;
  let top = unary;
  while (top - 1 >= 0) {
    const parent = spine[top - 1]!;
    const op = parent.children[1];
    if (
      parent.rule === "valueExpression" && parent.children.length === 3 && op !== undefined &&
      op.rule === null && TIGHTER_THAN_ADDITION.has(op.token)
    ) top -= 1;
    else break;
  }
  // The absorbed subtree with the unary node replaced by its operand.
  const replaceDown = (i: number): PNode => {
    if (i === unary) return operand!;
    const n = spine[i]!;
    const inner = replaceDown(i + 1);
    return { ...n, children: [inner, ...n.children.slice(1)], start: inner.start };
  };
  const right = replaceDown(top);
  const binary: RuleNode = {
    rule: "valueExpression",
    children: [columnValue(column), sign, right],
    start: column.start,
    end: right.end,
  };
  return replaceUp(top, binary);
}

/** The `selectLiteralColumnName` `column` as a `valueExpression`. */
function columnValue(column: RuleNode): RuleNode {
  return {
    rule: "valueExpression",
    children: [{
      rule: "primaryExpression",
      children: [{
        rule: "columnNamePath",
        children: column.children,
        start: column.start,
        end: column.end,
      }],
      start: column.start,
      end: column.end,
    }],
    start: column.start,
    end: column.end,
  };
}

/**
 * `column * sign operand`, where the grammar parsed `operand` as the right
 * side of a binary `sign` (so it holds the multiplicative operators after
 * it: `* -b * c` gave `(*) - (b * c)`): unary signs bind tighter than `*`,
 * so the sign takes only the leftmost factor of `operand`, and the product
 * continues with the rest, left to right: `(column * (-b)) * c`.
 */
function signedProduct(
  column: RuleNode,
  star: PNode,
  sign: PNode,
  operand: RuleNode,
): RuleNode {
  const chain: RuleNode[] = [];
  let factor = operand;
  for (;;) {
    const [left, op] = factor.children;
    if (
      factor.children.length !== 3 || !isRule(left, "valueExpression") || op === undefined ||
      op.rule !== null || !TIGHTER_THAN_ADDITION.has(op.token)
    ) break;
    chain.push(factor);
    factor = left;
  }
  const negated: RuleNode = {
    rule: "valueExpression",
    children: [sign, factor],
    start: sign.start,
    end: factor.end,
  };
  let product: RuleNode = {
    rule: "valueExpression",
    children: [columnValue(column), star, negated],
    start: column.start,
    end: negated.end,
  };
  for (const outer of chain.reverse()) {
    product = { ...outer, children: [product, ...outer.children.slice(1)], start: column.start };
  }
  return product;
}

function groupItem(ctx: TranslateContext, node: RuleNode): Expr[] {
  const [first] = node.children;
  if (isRule(first, "groupWindowFunction")) {
    const name = ctx.text(need(first, "groupWindowFunctionName")).toUpperCase();
    return [{
      k: "call",
      name,
      args: [
        translateExpr(ctx, need(first, "timeAttrColumn")),
        translateExpr(ctx, need(first, "timeIntervalExpression")),
      ],
    }];
  }
  if (isRule(first, "groupingSets") || isRule(first, "groupingSetsNotationName")) {
    return ctx.unsupported(node, "GROUPING SETS, CUBE and ROLLUP");
  }
  if (isToken(first, "LR_BRACKET")) {
    const list = children(node, "expression");
    if (list.length === 0) return ctx.unsupported(node, "the empty grouping set ()");
    return list.map((e) => translateExpr(ctx, e));
  }
  return [translateExpr(ctx, first!)];
}

/** A `tableExpression` as a {@link TableRef}. */
function tableExpression(ctx: TranslateContext, node: RuleNode): TableRef {
  const [first] = node.children;
  if (isRule(first, "tableReference")) {
    const refs = children(node, "tableReference").map((r) => tableReference(ctx, r));
    return refs.slice(1).reduce<TableRef>(
      (left, right) => ({ k: "join", kind: "CROSS", left, right, on: null, at: right.at }),
      refs[0]!,
    );
  }
  if (isRule(first, "windowTVFClause")) return windowTvf(ctx, first);
  if (isRule(first, "inlineDataValueClause")) return ctx.unsupported(first, "VALUES in FROM");
  if (isRule(first, "tableExpression")) return join(ctx, node);
  return ctx.unsupported(node, `the FROM item ${ctx.text(node)}`);
}

function join(ctx: TranslateContext, node: RuleNode): TableRef {
  const [leftNode, rightNode] = children(node, "tableExpression");
  const joinToken = token(node, "KW_JOIN")!;
  if (token(node, "KW_NATURAL") !== undefined) return ctx.unsupported(node, "NATURAL JOIN");
  const kind = token(node, "KW_CROSS") !== undefined
    ? "CROSS"
    : token(node, "KW_LEFT") !== undefined
    ? "LEFT"
    : token(node, "KW_RIGHT") !== undefined
    ? "RIGHT"
    : token(node, "KW_FULL") !== undefined
    ? "FULL"
    : "INNER";
  const condition = child(node, "joinCondition");
  let on: Expr | null = null;
  if (condition !== undefined) {
    if (token(condition, "KW_USING") !== undefined) {
      return ctx.unsupported(condition, "JOIN ... USING");
    }
    const [, body, eq, other] = condition.children;
    on = eq === undefined ? translateExpr(ctx, body!) : {
      k: "binary",
      op: "=",
      left: translateExpr(ctx, body!),
      right: translateExpr(ctx, other!),
    };
  } else if (kind !== "CROSS") {
    return ctx.fail(joinToken, `${kind} JOIN needs an ON condition (or write CROSS JOIN)`);
  }
  const at = kids(node).find((c) => c.rule === null)!.start;
  return {
    k: "join",
    kind,
    left: tableExpression(ctx, leftNode!),
    right: tableExpression(ctx, rightNode!),
    on,
    at,
  };
}

function tableReference(ctx: TranslateContext, node: RuleNode): TableRef {
  const primary = need(node, "tablePrimary");
  const aliasNode = child(node, "tableAlias");
  const aliasName = aliasNode === undefined
    ? null
    : identifierName(ctx, need(aliasNode, "identifier"));
  const columnAliases = aliasNode === undefined
    ? []
    : (child(aliasNode, "identifierList") === undefined
      ? []
      : children(need(need(aliasNode, "identifierList"), "identifierSeq"), "identifier")
        .map((i) => identifierName(ctx, i)));
  const [first] = primary.children;
  const lateral = child(primary, "atomFunctionTable");
  if (lateral !== undefined) {
    const call = translateExpr(ctx, need(lateral, "functionCallExpression"));
    if (call.k !== "call") {
      return ctx.fail(
        lateral,
        `LATERAL TABLE needs a table function call, got ${ctx.text(lateral)}`,
      );
    }
    return {
      k: "lateral",
      fn: call.name,
      args: call.args,
      alias: aliasName,
      columnAliases,
      at: lateral.start,
    };
  }
  if (columnAliases.length > 0) {
    return ctx.unsupported(
      aliasNode!,
      "column aliases on a table (AS t(a, b)) other than LATERAL TABLE",
    );
  }
  const subquery = child(primary, "atomExpressionTable");
  if (subquery !== undefined) {
    if (token(subquery, "KW_UNNEST") !== undefined) return ctx.unsupported(subquery, "UNNEST");
    if (token(subquery, "KW_LATERAL") !== undefined) {
      return ctx.unsupported(subquery, "LATERAL (subquery)");
    }
    return {
      k: "subquery",
      query: translateQuery(ctx, need(subquery, "queryStatement")),
      alias: aliasName,
      at: subquery.start,
    };
  }
  const period = child(primary, "systemTimePeriod");
  if (period !== undefined) {
    return ctx.unsupported(period, "FOR SYSTEM_TIME AS OF (temporal joins)");
  }
  const path = child(primary, "tablePath") ?? child(primary, "viewPath");
  if (path === undefined) return ctx.unsupported(primary, `the FROM item ${ctx.text(primary)}`);
  if (isToken(first, "KW_TABLE")) {
    return ctx.unsupported(first, "TABLE t in FROM (write the name alone)");
  }
  return { k: "table", name: nameParts(ctx, path).join("."), alias: aliasName, at: path.start };
}

const NAMED_INTERVALS: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  TUMBLE: { SIZE: 0 },
  HOP: { SLIDE: 0, SIZE: 1 },
  CUMULATE: { STEP: 0, SIZE: 1 },
  SESSION: { SIZE: 0 },
};

const INTERVAL_COUNT: Readonly<Record<string, number>> = {
  TUMBLE: 1,
  HOP: 2,
  CUMULATE: 2,
  SESSION: 1,
};

function windowTvf(ctx: TranslateContext, node: RuleNode): TableRef {
  const call = need(node, "windowTVFExpression");
  const nameNode = need(call, "windowTVFName");
  const session = ctx.sessions.get(nameNode.start);
  const fn = session === undefined
    ? ctx.text(nameNode).toUpperCase() as "TUMBLE" | "HOP" | "CUMULATE"
    : "SESSION";
  let input: TableRef | undefined;
  let timeColumn: string | undefined;
  const positional: number[] = [];
  const named = new Map<number, number>();
  for (const param of children(call, "windowTVFParam")) {
    const table = child(param, "timeAttrColumn");
    const descriptor = child(param, "columnDescriptor");
    const interval = child(param, "timeIntervalExpression");
    const paramName = child(param, "timeIntervalParamName");
    if (table !== undefined) {
      input = { k: "table", name: nameParts(ctx, table).join("."), alias: null, at: table.start };
    } else if (descriptor !== undefined) {
      const columnExpr = translateExpr(ctx, need(descriptor, "columnName"));
      if (columnExpr.k !== "column" || columnExpr.table !== null) {
        return ctx.fail(
          descriptor,
          `DESCRIPTOR needs one column name, got ${ctx.text(descriptor)}`,
        );
      }
      timeColumn = columnExpr.name;
    } else if (interval !== undefined) {
      const e = translateExpr(ctx, interval);
      if (e.k !== "interval") {
        return ctx.fail(interval, `expected an INTERVAL, got ${ctx.text(interval)}`);
      }
      if (paramName === undefined) {
        positional.push(e.millis);
      } else {
        const key = ctx.text(paramName).toUpperCase();
        if (key === "OFFSET") return ctx.unsupported(param, `the OFFSET of ${fn} windows`);
        const slot = NAMED_INTERVALS[fn]![key];
        if (slot === undefined) return ctx.fail(paramName, `${fn} has no parameter ${key}`);
        named.set(slot, e.millis);
      }
    }
  }
  if (input === undefined) return ctx.fail(call, `${fn} needs its input as TABLE t`);
  if (timeColumn === undefined) {
    return ctx.fail(call, `${fn} needs the time column as DESCRIPTOR(column)`);
  }
  const intervals = positional.length > 0
    ? positional
    : [...named.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]);
  const expected = INTERVAL_COUNT[fn]!;
  if (positional.length > 0 && named.size > 0 || intervals.length !== expected) {
    return ctx.fail(
      call,
      `${fn} takes ${expected === 1 ? "one interval" : "two intervals"} (${
        fn === "HOP"
          ? "slide, size"
          : fn === "CUMULATE"
          ? "step, size"
          : fn === "SESSION"
          ? "gap"
          : "size"
      }), got ${intervals.length}${
        fn !== "SESSION" && intervals.length > expected ? " (an OFFSET is not supported)" : ""
      }`,
    );
  }
  return {
    k: "windowTvf",
    fn,
    input,
    timeColumn,
    intervals,
    partitionBy: session?.partitionBy ?? [],
    alias: null,
    at: nameNode.start,
  };
}
