/**
 * Plans ROW_NUMBER queries (Flink's `FlinkLogicalRank` and its rules
 * `StreamPhysicalRankRule`, `StreamPhysicalDeduplicateRule`,
 * `StreamPhysicalWindowRankRule`): a subquery whose SELECT list has
 * `ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) AS rn`, read by an
 * outer query whose WHERE bounds `rn`:
 *
 * ```sql
 * SELECT ... FROM (
 *   SELECT ..., ROW_NUMBER() OVER (PARTITION BY k ORDER BY x DESC) AS rn FROM t
 * ) WHERE rn <= 3 [AND ...]
 * ```
 *
 * The bound may be `rn <= N`, `rn < N`, `rn = N`, `rn BETWEEN a AND b`,
 * `rn >= a`, `rn > a` (either side, ANDed with other conditions, which
 * stay in the outer WHERE); an upper bound is required (Flink refuses an
 * unbounded ROW_NUMBER in streaming too).
 *
 * ## Which operator
 *
 * | shape | node | operator |
 * |---|---|---|
 * | PARTITION BY includes `window_start` and `window_end` of a window TVF or window aggregation | `WindowRank` | `window_rank.ts` (append-only) |
 * | `rn` not selected, `rn <= 1` (or `= 1`), ORDER BY one rowtime attribute (or `PROCTIME()`), append-only input | `Deduplicate` | `deduplicate.ts` |
 * | otherwise | `Rank` | `rank.ts` (retract) |
 *
 * The rank number is emitted only when the outer query reads `rn` (Flink's
 * rank-number optimization). A Top-N over an updating input keeps every
 * row of the partition (`RetractableTopNFunction`); over an append-only
 * input only the best N.
 *
 * ## How it plugs into `plan.ts`
 *
 * {@linkcode rewriteTopN} plans the subquery (its ROW_NUMBER item
 * replaced by hidden columns for the PARTITION BY and ORDER BY
 * expressions) and the ranking node over it, and returns the outer query
 * reading that plan as a view, so the planner plans the outer query (its
 * WHERE, GROUP BY, SELECT list) as any other.
 *
 * ## ORDER BY ... LIMIT
 *
 * `ORDER BY ... LIMIT`, `LIMIT` and `TemporalSort` are planned in
 * `plan_sort.ts` (a `SortLimit` / `Limit` is a {@linkcode RankNode}
 * without PARTITION BY, printed by {@linkcode describeRankingNode}).
 *
 * ## Simplifications
 *
 * - `RANK()` and `DENSE_RANK()` are refused (only `ROW_NUMBER()`).
 * - ORDER BY names columns of the SELECT list.
 * - Weir has no processing-time attribute column yet: processing-time
 *   deduplication is written `ORDER BY PROCTIME()` in the OVER clause.
 * - The outer query reads the subquery through its alias only (a view).
 *
 * @module
 */

import { type ChangelogMode, PlanningError } from "./changelog_mode.ts";
import type { CompiledExpr } from "./expressions.ts";
import type { PlannerContext, PlanNode, Relation } from "./plan.ts";
import type { DeduplicateSpec } from "./deduplicate.ts";
import type { RankSpec } from "./rank.ts";
import type { Expr, OrderItem, SelectItem, SelectQuery } from "./sql_ast.ts";
import { exprText } from "./sql_text.ts";
import { type Column, TYPES } from "./types.ts";
import type { WindowRankSpec } from "./window_rank.ts";

/** A Top-N (Flink's `Rank`): retract output, keyed by the partition keys. */
export interface RankNode {
  /** The node kind. */
  readonly op: "Rank";
  /** The input. */
  readonly input: PlanNode;
  /** The PARTITION BY keys (the keyBy). */
  readonly partitionKeys: readonly CompiledExpr[];
  /** The ranking. */
  readonly spec: RankSpec;
  /** The ORDER BY as written, for explain. */
  readonly orderText: string;
  /** The input's columns, then the rank number when it is output. */
  readonly columns: readonly Column[];
  /** `retract` (`append` for `LIMIT n` alone over an append-only input). */
  readonly mode: ChangelogMode;
  /** Printed as Flink's `SortLimit` / `Limit` (ORDER BY ... LIMIT) rather than `Rank`. */
  readonly display?: "SortLimit" | "Limit";
}

/** A deduplication (Flink's `Deduplicate`), keyed by the partition keys. */
export interface DeduplicateNode {
  /** The node kind. */
  readonly op: "Deduplicate";
  /** The input (append-only). */
  readonly input: PlanNode;
  /** The PARTITION BY keys (the keyBy). */
  readonly partitionKeys: readonly CompiledExpr[];
  /** Which row is kept. */
  readonly spec: DeduplicateSpec;
  /** The input's columns. */
  readonly columns: readonly Column[];
  /** `append` for processing-time keep-first, else `retract`. */
  readonly mode: ChangelogMode;
}

/** A window Top-N (Flink's `WindowRank`); append-only. */
export interface WindowRankNode {
  /** The node kind. */
  readonly op: "WindowRank";
  /** The input (append-only, with window columns). */
  readonly input: PlanNode;
  /** The PARTITION BY keys (the keyBy), window_start and window_end among them. */
  readonly partitionKeys: readonly CompiledExpr[];
  /** The ranking. */
  readonly spec: WindowRankSpec;
  /** The ORDER BY as written, for explain. */
  readonly orderText: string;
  /** The input's columns, then the rank number when it is output. */
  readonly columns: readonly Column[];
  /** `append`. */
  readonly mode: ChangelogMode;
}

/** A node this file plans. */
export type RankingNode = RankNode | DeduplicateNode | WindowRankNode;

/** The outer query to plan instead, reading the ranking's plan as a view. */
export interface TopNRewrite {
  /** The outer query, its FROM a view of the ranking and its WHERE without the bound on `rn`. */
  readonly query: SelectQuery;
  /** The context in which the view resolves. */
  readonly context: PlannerContext;
}

const RANKING = new Set(["ROW_NUMBER", "RANK", "DENSE_RANK"]);

type OverExpr = Extract<Expr, { k: "over" }>;

/** Whether a SELECT item is a ranking function call (`ROW_NUMBER() OVER (...)`...). */
export function isRankingItem(item: SelectItem): boolean {
  return item.k === "expr" && item.expr.k === "over" && RANKING.has(item.expr.fn);
}

/**
 * Plans a ROW_NUMBER query (see the module docs).
 *
 * @param query the outer query.
 * @param context the catalog.
 * @param planSelect plans a SELECT into a relation (plan.ts's).
 * @returns the outer query to plan instead, or `null` when `query` does
 *   not read a subquery with a ranking function.
 * @param upsert the consumer takes upserts (no `-U`): a Rank or
 *   Deduplicate whose changes reach it emits none, keyed by its partition
 *   keys (and the rank number), which the SELECT list must then keep.
 * @throws {PlanningError} for RANK/DENSE_RANK, two ranking functions, no
 *   ORDER BY, no upper bound on the rank number, a bound that is not an
 *   integer literal, a window Top-N over an updating input, or upsert
 *   mode without the upsert key in the SELECT list or with a filter after
 *   the ranking.
 */
export function rewriteTopN(
  query: SelectQuery,
  context: PlannerContext,
  planSelect: (query: SelectQuery, context: PlannerContext) => Relation,
  upsert = false,
): TopNRewrite | null {
  const from = query.from;
  if (from.k !== "subquery") return null;
  const inner = from.query;
  const ranking = inner.items.filter(isRankingItem);
  if (ranking.length === 0) return null;
  const fail = (message: string, at: string): never => {
    throw new PlanningError(`${message}${context.locate(at)}`);
  };
  if (ranking.length > 1) fail("only one ranking function per SELECT is supported", "OVER");
  const item = ranking[0] as Extract<SelectItem, { k: "expr" }>;
  const over = item.expr as OverExpr;
  if (over.fn !== "ROW_NUMBER") {
    fail(`${over.fn}() is not supported yet; use ROW_NUMBER()`, over.fn);
  }
  if (over.orderBy.length === 0) fail("ROW_NUMBER() OVER needs an ORDER BY", "ROW_NUMBER");
  if (over.frame !== null) fail("ROW_NUMBER() OVER takes no window frame", "ROW_NUMBER");
  const rn = item.alias ?? `EXPR$${inner.items.indexOf(item)}`;
  const { start, end, rest } = rankRange(query.where, rn, context);
  const outputRankNumber = readsColumn(query, rest, rn);

  // The subquery without the ranking; a PARTITION BY / ORDER BY expression
  // that is not one of its output columns becomes a hidden column.
  const proctime = over.orderBy.map((o) => isProctime(o.expr));
  const items = inner.items.filter((i) => i !== item);
  const visibleNames = planSelect({ ...inner, items }, context).node.columns.map((c) => c.name);
  const own = (e: Expr): boolean =>
    e.k === "column" && visibleNames.filter((n) => n === e.name).length === 1;
  const hidden: SelectItem[] = [
    ...over.partitionBy.flatMap((e, i): SelectItem[] =>
      own(e) ? [] : [{ k: "expr", expr: e, alias: `$partition$${i}` }]
    ),
    ...over.orderBy.flatMap((o, i): SelectItem[] =>
      proctime[i] || own(o.expr) ? [] : [{ k: "expr", expr: o.expr, alias: `$order$${i}` }]
    ),
  ];
  const rel = hidden.length === 0
    ? planSelect({ ...inner, items }, context)
    : planSelect({ ...inner, items: [...items, ...hidden] }, context);
  const input = rel.node;
  const visible = input.columns.length - hidden.length;
  const position = (name: string) => input.columns.findIndex((c) => c.name === name);
  const indexOf = (e: Expr, hiddenName: string) =>
    own(e) ? position((e as Extract<Expr, { k: "column" }>).name) : position(hiddenName);
  const partitionKeys: CompiledExpr[] = over.partitionBy.map((e, i) => {
    const index = indexOf(e, `$partition$${i}`);
    return {
      evaluate: (f) => f[index] ?? null,
      type: input.columns[index]!.type,
      text: exprText(e),
    };
  });
  const orderText = over.orderBy.map(orderItemText).join(", ");
  const rankColumn: Column[] = outputRankNumber ? [{ name: rn, type: TYPES.BIGINT }] : [];

  let node: RankingNode;
  const window = rel.window;
  // By position, not name: a PARTITION BY column the subquery does not
  // select is a hidden column ($partition$i), still window_start/end
  // (Flink's StreamPhysicalWindowRankRule reads the PARTITION BY only).
  const partitionIndices = over.partitionBy.map((e, i) => indexOf(e, `$partition$${i}`));
  const windowed = window !== null && partitionIndices.includes(window.start) &&
    partitionIndices.includes(window.end);
  const orderIndex = (i: number) => indexOf(over.orderBy[i]!.expr, `$order$${i}`);
  if (windowed) {
    if (input.mode !== "append") {
      fail(
        `a window Top-N needs an append-only input, but its input produces updates (${input.op})`,
        "ROW_NUMBER",
      );
    }
    if (proctime.some((p) => p)) fail("a window Top-N cannot ORDER BY PROCTIME()", "PROCTIME");
    node = {
      op: "WindowRank",
      input,
      partitionKeys,
      spec: {
        sortKeys: over.orderBy.map((o, i) => ({ index: orderIndex(i), descending: o.descending })),
        rankStart: start,
        rankEnd: end,
        outputRankNumber,
        windowEndIndex: window!.end,
      },
      orderText,
      columns: [...input.columns, ...rankColumn],
      mode: "append",
    };
  } else if (
    !outputRankNumber && start === 1 && end === 1 && over.orderBy.length === 1 &&
    input.mode === "append" &&
    (proctime[0] || input.columns[orderIndex(0)]?.type.timeAttribute === "rowtime")
  ) {
    const spec: DeduplicateSpec = proctime[0]
      ? { keepLastRow: over.orderBy[0]!.descending, rowtimeIndex: null, generateUpdateBefore: true }
      : {
        keepLastRow: over.orderBy[0]!.descending,
        rowtimeIndex: orderIndex(0),
        rowtimeName: exprText(over.orderBy[0]!.expr),
        generateUpdateBefore: true,
      };
    node = {
      op: "Deduplicate",
      input,
      partitionKeys,
      spec,
      columns: input.columns,
      mode: !spec.keepLastRow && spec.rowtimeIndex === null ? "append" : "retract",
    };
  } else {
    if (proctime.some((p) => p)) {
      fail(
        "ORDER BY PROCTIME() is supported only in a deduplication (rn <= 1, rn not selected, append-only input)",
        "PROCTIME",
      );
    }
    node = {
      op: "Rank",
      input,
      partitionKeys,
      spec: {
        sortKeys: over.orderBy.map((o, i) => ({ index: orderIndex(i), descending: o.descending })),
        rankStart: start,
        rankEnd: end,
        outputRankNumber,
        appendOnlyInput: input.mode === "append",
        generateUpdateBefore: true,
      },
      orderText,
      columns: [...input.columns, ...rankColumn],
      mode: "retract",
    };
  }
  const grouped = query.groupBy.length > 0 || query.having !== null || query.distinct ||
    query.items.some((i) => i.k === "expr" && hasAggregate(i.expr));
  if (upsert && node.op !== "WindowRank" && node.mode !== "append" && !grouped) {
    const partitionNames = over.partitionBy.map((e) => e.k === "column" ? e.name : null);
    node = upsertNode(node, query, rest, partitionNames, rn, context);
  }
  // Drop the hidden columns; the rank number (when output) comes last.
  const kept = [...Array(visible).keys(), ...(outputRankNumber ? [input.columns.length] : [])];
  const view: PlanNode = {
    op: "Calc",
    input: node,
    projections: kept.map((index) => ({
      evaluate: (f) => f[index] ?? null,
      type: node.columns[index]!.type,
      text: node.columns[index]!.name,
    })),
    filter: null,
    columns: kept.map((index) => node.columns[index]!),
    mode: node.mode,
  };
  const identity = kept.length === node.columns.length && kept.every((k, i) => k === i);
  const planned: PlanNode = identity ? node : view;
  const name = from.alias ?? "$topn";
  return {
    query: { ...query, from: { k: "table", name, alias: null, at: from.at }, where: rest },
    context: {
      lookup: (n) => n === name ? { columns: planned.columns, plan: planned } : context.lookup(n),
      locate: context.locate,
      ...(context.names === undefined ? {} : { names: context.names }),
    },
  };
}

/**
 * The ranking node emitting upserts (no `-U`), keyed by its partition keys
 * and, for a Rank, the rank number (Flink's upsert key of a Rank).
 * @throws {PlanningError} when the outer query filters the ranking's rows
 *   (the filter needs the `-U` rows) or does not select that key.
 */
function upsertNode(
  node: RankNode | DeduplicateNode,
  query: SelectQuery,
  rest: Expr | null,
  partitionNames: readonly (string | null)[],
  rn: string,
  context: PlannerContext,
): RankingNode {
  const keyNames: (string | null)[] = [...partitionNames];
  if (node.op === "Rank") keyNames.push(node.spec.outputRankNumber ? rn : null);
  const selected = (name: string | null) =>
    name !== null && query.items.some((i) =>
      i.k === "star" ||
      (i.expr.k === "column" && i.expr.name === name && (i.alias === null || i.alias === name))
    );
  if (rest !== null || !keyNames.every(selected)) {
    throw new PlanningError(
      `upsert mode over ${node.op} needs its upsert key in the SELECT list (the PARTITION BY columns${
        node.op === "Rank" ? ` and the rank number ${rn}` : ""
      }) and no filter after it (a filter needs the -U rows); use retract mode${
        context.locate(rn)
      }`,
    );
  }
  return node.op === "Rank"
    ? { ...node, spec: { ...node.spec, generateUpdateBefore: false }, mode: "upsert" }
    : { ...node, spec: { ...node.spec, generateUpdateBefore: false }, mode: "upsert" };
}

function hasAggregate(e: Expr): boolean {
  switch (e.k) {
    case "aggregate":
      return true;
    case "binary":
      return hasAggregate(e.left) || hasAggregate(e.right);
    case "not":
    case "negate":
    case "isNull":
    case "cast":
      return hasAggregate(e.expr);
    case "case":
      return (e.operand !== null && hasAggregate(e.operand)) ||
        e.whens.some((w) => hasAggregate(w.when) || hasAggregate(w.then)) ||
        (e.otherwise !== null && hasAggregate(e.otherwise));
    case "call":
      return e.args.some(hasAggregate);
    case "in":
      return hasAggregate(e.expr) || e.list.some(hasAggregate);
    case "between":
      return hasAggregate(e.expr) || hasAggregate(e.low) || hasAggregate(e.high);
    default:
      return false;
  }
}

function isProctime(e: Expr): boolean {
  return e.k === "call" && e.name.toUpperCase() === "PROCTIME" && e.args.length === 0;
}

/** An ORDER BY item as Flink's plan prints it: `expr ASC` or `expr DESC`. */
export function orderItemText(o: OrderItem): string {
  return `${exprText(o.expr)} ${o.descending ? "DESC" : "ASC"}`;
}

/** The AND-ed conditions of a WHERE. */
function conjuncts(e: Expr | null): Expr[] {
  if (e === null) return [];
  if (e.k === "binary" && e.op.toUpperCase() === "AND") {
    return [...conjuncts(e.left), ...conjuncts(e.right)];
  }
  return [e];
}

const isRn = (e: Expr, rn: string) => e.k === "column" && e.name === rn;

/**
 * The rank range a WHERE bounds `rn` to, and the rest of the WHERE.
 * @throws {PlanningError} without an upper bound, or for a bound that is
 *   not an integer literal, or a condition on `rn` of another form.
 */
export function rankRange(
  where: Expr | null,
  rn: string,
  context: Pick<PlannerContext, "locate">,
): { start: number; end: number; rest: Expr | null } {
  let start = 1;
  let end = Infinity;
  const rest: Expr[] = [];
  const literal = (e: Expr): number => {
    if (e.k === "literal" && typeof e.value === "number" && Number.isSafeInteger(e.value)) {
      return e.value;
    }
    throw new PlanningError(
      `the bound on ${rn} must be an integer literal, got ${exprText(e)}${context.locate(rn)}`,
    );
  };
  const FLIP: Record<string, string> = { "<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=" };
  for (const c of conjuncts(where)) {
    if (c.k === "between" && isRn(c.expr, rn) && !c.negated) {
      start = Math.max(start, literal(c.low));
      end = Math.min(end, literal(c.high));
      continue;
    }
    if (c.k === "binary" && FLIP[c.op] !== undefined && (isRn(c.left, rn) || isRn(c.right, rn))) {
      const op = isRn(c.left, rn) ? c.op : FLIP[c.op]!;
      const n = literal(isRn(c.left, rn) ? c.right : c.left);
      if (op === "<=" || op === "=") end = Math.min(end, n);
      if (op === "<") end = Math.min(end, n - 1);
      if (op === ">=" || op === "=") start = Math.max(start, n);
      if (op === ">") start = Math.max(start, n + 1);
      continue;
    }
    if (columnNames(c).has(rn)) {
      throw new PlanningError(
        `the condition ${
          exprText(c)
        } on ${rn} is not a bound of the rank number (use ${rn} <= N, ${rn} < N, ${rn} = N or ${rn} BETWEEN a AND b)${
          context.locate(rn)
        }`,
      );
    }
    rest.push(c);
  }
  if (end === Infinity) {
    throw new PlanningError(
      `ROW_NUMBER needs an upper bound on its result ${rn} in the outer WHERE (e.g. ${rn} <= 10): an unbounded ranking is not supported in streaming${
        context.locate(rn)
      }`,
    );
  }
  if (end < start || start < 1) {
    throw new PlanningError(
      `the bounds on ${rn} select no rank (from ${start} to ${end})${context.locate(rn)}`,
    );
  }
  const and = (a: Expr, b: Expr): Expr => ({ k: "binary", op: "AND", left: a, right: b });
  return { start, end, rest: rest.length === 0 ? null : rest.reduce(and) };
}

/** Whether the outer query reads column `name` anywhere but in its bound (`*` reads it). */
function readsColumn(query: SelectQuery, rest: Expr | null, name: string): boolean {
  const exprs: Expr[] = [
    ...(rest === null ? [] : [rest]),
    ...query.groupBy,
    ...(query.having === null ? [] : [query.having]),
    ...query.orderBy.map((o) => o.expr),
  ];
  for (const item of query.items) {
    if (item.k === "star") return true;
    exprs.push(item.expr);
  }
  return exprs.some((e) => columnNames(e).has(name));
}

/** The names of the columns an expression reads. */
export function columnNames(e: Expr): Set<string> {
  const names = new Set<string>();
  const visit = (x: Expr): void => {
    switch (x.k) {
      case "column":
        names.add(x.name);
        return;
      case "binary":
        visit(x.left);
        visit(x.right);
        return;
      case "not":
      case "negate":
      case "isNull":
      case "cast":
        visit(x.expr);
        return;
      case "case":
        if (x.operand !== null) visit(x.operand);
        for (const w of x.whens) {
          visit(w.when);
          visit(w.then);
        }
        if (x.otherwise !== null) visit(x.otherwise);
        return;
      case "call":
        x.args.forEach(visit);
        return;
      case "aggregate":
        if (x.arg !== null) visit(x.arg);
        return;
      case "in":
        visit(x.expr);
        x.list.forEach(visit);
        return;
      case "between":
        visit(x.expr);
        visit(x.low);
        visit(x.high);
        return;
      case "over":
        x.args.forEach(visit);
        x.partitionBy.forEach(visit);
        x.orderBy.forEach((o) => visit(o.expr));
        return;
      case "literal":
      case "interval":
        return;
    }
  };
  visit(e);
  return names;
}

/** Describes a ranking node as Flink's plan prints it (without the mode). */
export function describeRankingNode(node: RankingNode): string {
  const partition = node.partitionKeys.map((k) => k.text).join(", ");
  const select = node.columns.map((c) => c.name).join(", ");
  switch (node.op) {
    case "Rank":
      if (node.display === "Limit") return `Limit(offset=[0], fetch=[${node.spec.rankEnd}])`;
      if (node.display === "SortLimit") {
        return `SortLimit(orderBy=[${node.orderText}], offset=[0], fetch=[${node.spec.rankEnd}])`;
      }
      return `Rank(strategy=[${
        node.spec.appendOnlyInput ? "AppendFastStrategy" : "RetractStrategy"
      }], rankType=[ROW_NUMBER], rankRange=[rankStart=${node.spec.rankStart}, rankEnd=${node.spec.rankEnd}], partitionBy=[${partition}], orderBy=[${node.orderText}], select=[${select}])`;
    case "WindowRank":
      return `WindowRank(rankType=[ROW_NUMBER], rankRange=[rankStart=${node.spec.rankStart}, rankEnd=${node.spec.rankEnd}], partitionBy=[${partition}], orderBy=[${node.orderText}], select=[${select}])`;
    case "Deduplicate":
      return `Deduplicate(keep=[${
        node.spec.keepLastRow ? "LastRow" : "FirstRow"
      }], key=[${partition}], order=[${node.spec.rowtimeIndex === null ? "PROCTIME" : "ROWTIME"}])`;
  }
}
