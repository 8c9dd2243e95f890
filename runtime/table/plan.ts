/**
 * The logical plan of a continuous query and its changelog modes, planned
 * relationally: every FROM item (`TableRef`: a table or view with an
 * alias, a subquery, a join, a window table-valued function) is planned by
 * {@linkcode planRelation} into a {@linkcode Relation}, a plan node whose
 * output columns know the names that qualify them (`t.c` resolves; a bare
 * name that two inputs share is refused as ambiguous). A SELECT is then
 * planned over its FROM relation: WHERE, GROUP BY (or a window
 * aggregation when it groups by `window_start, window_end` of a window
 * TVF), HAVING and the SELECT list. Nodes are named and printed as Flink's
 * optimized physical plan (`EXPLAIN CHANGELOG_MODE`, `plan_explain.ts`).
 *
 * | node | made by | file |
 * |---|---|---|
 * | `TableSourceScan` | a table (with `watermark` when it has a rowtime) | `plan_scan.ts` |
 * | `Calc` | projection and filter | here, `plan_projection.ts` |
 * | `GroupAggregate` | non-windowed GROUP BY | here, `plan_aggregate_calls.ts` |
 * | `Join`, `IntervalJoin`, `WindowJoin` | `JOIN ... ON` | `plan_join.ts` |
 * | `WindowTableFunction`, `WindowAggregate` | `TABLE(TUMBLE(...))` and its GROUP BY | `plan_window.ts` |
 * | `Rank`, `Deduplicate`, `WindowRank` | `ROW_NUMBER() OVER (...)` read with `WHERE rn <= N` | `plan_rank.ts` |
 * | `SortLimit`, `Limit`, `TemporalSort` | `ORDER BY ... LIMIT n`, `LIMIT n`, `ORDER BY rowtime` | `plan_sort.ts` |
 * | `OverAggregate` | `agg(x) OVER (PARTITION BY ... ORDER BY ... frame)` | `plan_over.ts` |
 * | `GroupAggregate` without aggregates | `SELECT DISTINCT` | `plan_distinct.ts` |
 *
 * Planning is pure: it reads the catalog's schemas and produces nodes whose
 * expressions are compiled closures; `translate.ts` turns a plan into
 * DataStream operators.
 *
 * ## Changelog modes (as Flink's `FlinkChangelogModeInferenceProgram`)
 *
 * - `TableSourceScan`: its source's mode (`append`, or `retract` for a
 *   table made by `fromChangelogStream`);
 * - `Calc`, `WindowTableFunction`: their input's mode;
 * - `GroupAggregate`: `retract` (`-U`/`+U` pairs), or `upsert` (no `-U`,
 *   keyed by the GROUP BY keys) when the consumer asks for upserts and no
 *   filter (HAVING) follows it; a filter after an aggregate needs the
 *   `-U` rows, as in Flink;
 * - `WindowAggregate`, `IntervalJoin`, `WindowJoin`: `append`;
 * - `Join`: `append` for an inner join of append-only inputs, else `retract`.
 *
 * ## Event time
 *
 * A table's rowtime column (from `WATERMARK FOR`) has a type marked
 * `timeAttribute: "rowtime"`; a plain reference keeps the mark, any
 * computation drops it (as Flink materializes a time attribute). Window
 * TVFs and interval joins need a marked column.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseScript } from "./parser.ts";
 * import { explainPlan, planQuery } from "./plan.ts";
 * import { TYPES } from "./types.ts";
 *
 * const [statement] = parseScript("SELECT `user`, COUNT(url) AS cnt FROM clicks GROUP BY `user`");
 * if (statement?.k !== "select") throw new Error("a SELECT");
 * const plan = planQuery(statement.query, {
 *   lookup: () => ({ columns: [{ name: "user", type: TYPES.STRING }, { name: "url", type: TYPES.STRING }] }),
 *   locate: () => "",
 * });
 * assert.equal(plan.mode, "retract");
 * assert.match(explainPlan(plan), /GroupAggregate\(groupBy=\[user\], select=\[user, COUNT\(url\) AS cnt\]/);
 * ```
 *
 * @module
 */

import type { AggregateSpec } from "./aggregates.ts";
import { type ChangelogMode, PlanningError } from "./changelog_mode.ts";
import { type CompiledExpr, compileExpr, type Scope } from "./expressions.ts";
import {
  checkUserAggregatesInWindow,
  collectUserAggregates,
  planUserAggregates,
} from "./plan_udf_aggregate.ts";
import { exprText } from "./sql_text.ts";
import type { SelectQuery, TableRef, WatermarkDefinition } from "./sql_ast.ts";
import type { ComputedColumn } from "./table_connectors.ts";
import { type Column, type DataType, TYPES } from "./types.ts";

const TIMESTAMP_ROWTIME: DataType = { ...TYPES.TIMESTAMP, timeAttribute: "rowtime" };
import {
  type IntervalJoinNode,
  type JoinNode,
  planJoin,
  type WindowJoinNode,
} from "./plan_join.ts";
import {
  planWindowAggregate,
  planWindowTvf,
  type WindowAggregateNode,
  type WindowProperties,
  type WindowTableFunctionNode,
} from "./plan_window.ts";
import {
  type DeduplicateNode,
  type RankNode,
  rewriteTopN,
  type WindowRankNode,
} from "./plan_rank.ts";
import { planSortLimit } from "./plan_sort.ts";
import {
  type OverAggregateNode,
  overCalls,
  type OverPlanning,
  planOverSelect,
} from "./plan_over.ts";
import { planDistinct } from "./plan_distinct.ts";
import { type CorrelateNode, planLateralJoin } from "./plan_lateral.ts";
import { describeNode, updateProducer } from "./plan_explain.ts";
export { describeNode, explainPlan, updateProducer } from "./plan_explain.ts";
import { planTable } from "./plan_scan.ts";
import {
  columnName,
  columnSource,
  condition,
  keptWindow,
  materialized,
  project,
  sourceOf,
} from "./plan_projection.ts";
import { aggregateType, collectAggregates } from "./plan_aggregate_calls.ts";
export { columnSource, condition, materialized, uniqueNames } from "./plan_projection.ts";

/**
 * The event time of a scan: its rowtime column and the watermark
 * `WATERMARK FOR c AS c - INTERVAL 'n' ...` declares (Flink's
 * `WatermarkAssigner`): the watermark is the highest rowtime seen minus
 * `delayMillis`.
 */
export interface ScanWatermark {
  /** The rowtime column's position. */
  readonly rowtime: number;
  /** How far the watermark trails the highest rowtime, ms (>= 0). */
  readonly delayMillis: number;
  /** The watermark expression's SQL text, for explain. */
  readonly text: string;
  /**
   * When watermarks are emitted (Flink's `scan.watermark.emit.strategy`):
   * every auto-watermark interval (`on-periodic`, the default), or on each
   * row that raises it (`on-event`: deterministic lateness, more traffic).
   */
  readonly emit: "on-periodic" | "on-event";
}

/** Reads a source table (Flink's `TableSourceScan`). */
export interface ScanNode {
  /** The node kind. */
  readonly op: "TableSourceScan";
  /** The table or view read. */
  readonly table: string;
  /** Its columns. */
  readonly columns: readonly Column[];
  /** Its changelog mode. */
  readonly mode: ChangelogMode;
  /** Its event time, when the table declares a watermark. */
  readonly watermark?: ScanWatermark;
}

/**
 * Stamps rows with their rowtime and generates watermarks after the scan
 * (Flink's `WatermarkAssigner`), for a rowtime that is a computed column.
 * (A physical rowtime's watermark is on the `TableSourceScan` itself.)
 */
export interface WatermarkAssignerNode {
  /** The node kind. */
  readonly op: "WatermarkAssigner";
  /** The rows, with their computed columns. */
  readonly input: PlanNode;
  /** The table, for messages. */
  readonly table: string;
  /** The rowtime column and the delay. */
  readonly watermark: ScanWatermark;
  /** The input's columns, the rowtime marked. */
  readonly columns: readonly Column[];
  /** The input's mode. */
  readonly mode: ChangelogMode;
}

/** Projection and filter of each row (Flink's `Calc`); stateless. */
export interface CalcNode {
  /** The node kind. */
  readonly op: "Calc";
  /** The input. */
  readonly input: PlanNode;
  /** One expression per output column. */
  readonly projections: readonly CompiledExpr[];
  /** Rows pass only when this is TRUE; `null` keeps every row. */
  readonly filter: CompiledExpr | null;
  /** The output columns. */
  readonly columns: readonly Column[];
  /** The input's mode. */
  readonly mode: ChangelogMode;
}

/** One aggregate call of a GroupAggregate or WindowAggregate. */
export interface AggregateCall {
  /** Which function. */
  readonly spec: AggregateSpec;
  /** Its argument, or `null` for `COUNT(*)`. */
  readonly arg: CompiledExpr | null;
  /** Its SQL text, e.g. `COUNT(url)`. */
  readonly text: string;
}

/** A non-windowed GROUP BY (Flink's `GroupAggregate`); keyed state per group. */
export interface GroupAggregateNode {
  /** The node kind. */
  readonly op: "GroupAggregate";
  /** The input. */
  readonly input: PlanNode;
  /** The GROUP BY key expressions (the first output columns). */
  readonly keys: readonly CompiledExpr[];
  /** The aggregates (the output columns after the keys). */
  readonly aggregates: readonly AggregateCall[];
  /** The output columns: keys, then aggregates. */
  readonly columns: readonly Column[];
  /** `retract` (emits `-U` before `+U`) or `upsert` (only `+U`). */
  readonly mode: ChangelogMode;
  /** Flink's `generateUpdateBefore`: whether updates emit the `-U` row. */
  readonly generateUpdateBefore: boolean;
}

/** A node of a plan. */
export type PlanNode =
  | ScanNode
  | WatermarkAssignerNode
  | CalcNode
  | GroupAggregateNode
  | JoinNode
  | IntervalJoinNode
  | WindowJoinNode
  | WindowTableFunctionNode
  | WindowAggregateNode
  | RankNode
  | DeduplicateNode
  | WindowRankNode
  | OverAggregateNode
  | CorrelateNode;

/**
 * A planned FROM item: its plan node, and per output column the names
 * that qualify it (the table's name and alias, or a subquery's alias).
 */
export interface Relation {
  /** The plan of the item. */
  readonly node: PlanNode;
  /** Per column of `node.columns`, the qualifiers `q` of `q.column` (maybe none). */
  readonly qualifiers: readonly (readonly string[])[];
  /**
   * Where `window_start`, `window_end` (and `window_time`) are, when the
   * relation is a window TVF or keeps the window columns of a window
   * aggregation (what a WindowAggregate or WindowJoin reads); else `null`.
   */
  readonly window: WindowProperties | null;
}

/** What the catalog tells the planner about a table or view. */
export interface CatalogTableInfo {
  /** The columns. */
  readonly columns: readonly Column[];
  /** For a view defined by a query: that query's plan (planned in place of a scan). */
  readonly plan?: PlanNode;
  /** The source's changelog mode (default `append`). */
  readonly mode?: ChangelogMode;
  /** `WATERMARK FOR ...` of the table, making its column a rowtime attribute. */
  readonly watermark?: WatermarkDefinition | null;
  /** Its computed columns (`name AS expr`), computed after the scan of `columns`. */
  readonly computed?: readonly ComputedColumn[];
  /** When its watermarks are emitted (default `on-periodic`; see {@linkcode ScanWatermark}). */
  readonly watermarkEmit?: "on-periodic" | "on-event";
}

/** What the planner needs from the catalog. */
export interface PlannerContext {
  /** The table or view `name`, or `undefined` when there is none. */
  lookup(name: string): CatalogTableInfo | undefined;
  /** Where `name` first appears in the statement, for messages (`" at line 1, column 8"`, or `""`). */
  locate(name: string): string;
  /**
   * The names of the catalog's tables and views, listed when a FROM names
   * none of them; absent: the message lists nothing.
   */
  names?(): readonly string[];
}

/** Options of {@linkcode planQuery}. */
export interface PlanOptions {
  /** The consumer takes upserts keyed by the GROUP BY keys: the aggregate emits no `-U`. */
  readonly upsert?: boolean;
}

/**
 * Plans a SELECT.
 * @returns the plan's root.
 * @throws {PlanningError} for an unknown table or column, an ambiguous
 *   column, a bad expression, `*` in a grouped query, a SELECT item that is
 *   neither a key nor an aggregate, a join without an equality, or upsert
 *   mode with HAVING or without the keys selected.
 */
export function planQuery(
  query: SelectQuery,
  context: PlannerContext,
  options: PlanOptions = {},
): PlanNode {
  return planSelect(query, context, options).node;
}

/**
 * Plans one FROM item (see the module docs).
 * @throws {PlanningError} as {@linkcode planQuery}.
 */
export function planRelation(ref: TableRef, context: PlannerContext): Relation {
  switch (ref.k) {
    case "table":
      return planTable(ref, context);
    case "subquery": {
      const inner = planSelect(ref.query, context, {});
      const q = ref.alias === null ? [] : [ref.alias];
      return {
        node: inner.node,
        qualifiers: inner.node.columns.map(() => q),
        window: inner.window,
      };
    }
    case "join":
      if (ref.right.k === "lateral") return planLateralJoin(ref, context, planRelation);
      return planJoin(ref, context, planRelation);
    case "windowTvf":
      return planWindowTvf(ref, context, planRelation(ref.input, context));
    case "lateral":
      throw new PlanningError(
        `LATERAL TABLE(${ref.fn}(...)) needs a table on its left to join to (FROM t, LATERAL TABLE(${ref.fn}(t.c)) AS T(a))${
          context.locate(ref.fn)
        }`,
      );
  }
}

/** A scope over a relation's columns, for compiling expressions. */
export function relationScope(
  relation: Relation,
  context: PlannerContext,
  inputName: string,
): Scope {
  return {
    columns: relation.node.columns,
    qualifiers: relation.qualifiers,
    inputName,
    locate: context.locate,
    aggregatesAllowed: false,
  };
}

/** A SELECT planned as a relation (its output qualified by nothing; window columns tracked). */
function planSelect(query: SelectQuery, context: PlannerContext, options: PlanOptions): Relation {
  // ORDER BY ... LIMIT, SELECT DISTINCT, ROW_NUMBER Top-N and OVER aggregations:
  // plan_sort.ts, plan_distinct.ts, plan_rank.ts, plan_over.ts
  if (query.orderBy.length > 0 || query.limit !== null) {
    return planSortLimit(query, context, (q) => planSelect(q, context, {}));
  }
  if (query.distinct) return planDistinct(planSelect({ ...query, distinct: false }, context, {}));
  const topN = rewriteTopN(query, context, (q, c) => planSelect(q, c, {}), options.upsert);
  if (topN !== null) return planSelect(topN.query, topN.context, options);
  if (overCalls(query).length > 0) return planOverSelect(query, context, OVER_PLANNING);
  // A comma join (`FROM a, b WHERE a.k = b.k`) is an inner join on WHERE.
  let from = query.from;
  let whereExpr = query.where;
  if (from.k === "join" && from.kind === "CROSS" && from.on === null && whereExpr !== null) {
    from = { ...from, kind: "INNER", on: whereExpr };
    whereExpr = null;
  } else if (from.k === "join" && from.kind === "INNER" && from.on !== null && whereExpr !== null) {
    // WHERE over an inner join is part of its condition (then pushed to an input where it can).
    from = { ...from, on: { k: "binary", op: "AND", left: from.on, right: whereExpr } };
    whereExpr = null;
  }
  const rel = planRelation(from, context);
  const inputName = from.k === "table" ? `table ${from.name}` : "the FROM clause";
  const inputScope = relationScope(rel, context, inputName);
  const where = whereExpr === null ? null : condition(whereExpr, inputScope, "WHERE", context);
  const aggregates = collectAggregates(query);
  const userAggregates = collectUserAggregates(query);
  const grouped = query.groupBy.length > 0 || aggregates.length > 0 ||
    userAggregates.length > 0;
  if (!grouped) {
    if (query.having !== null) {
      throw new PlanningError(`HAVING needs GROUP BY or an aggregate${context.locate("HAVING")}`);
    }
    if (rel.window?.tvf?.window.fn === "SESSION") {
      throw new PlanningError(
        `SESSION windows need a window aggregation (GROUP BY window_start, window_end, ...)${
          context.locate("SESSION")
        }`,
      );
    }
    const { projections, columns, sources } = project(query, inputScope, context);
    const input = rel.node;
    const trivial = where === null && columns.length === input.columns.length &&
      columns.every((c, i) => c.name === input.columns[i]!.name && sources[i] === i);
    if (trivial) {
      return { node: input, qualifiers: input.columns.map(() => []), window: rel.window };
    }
    const node: CalcNode = {
      op: "Calc",
      input,
      projections,
      filter: where,
      columns,
      mode: input.mode,
    };
    return { node, qualifiers: columns.map(() => []), window: keptWindow(rel.window, sources) };
  }
  const keys = query.groupBy.map((e) => compileExpr(e, inputScope));
  const calls: AggregateCall[] = aggregates.map((a) => {
    const arg = a.arg === null ? null : compileExpr(a.arg, inputScope);
    if (
      arg !== null && (a.fn === "SUM" || a.fn === "AVG") && arg.type.family !== "BIGINT" &&
      arg.type.family !== "DOUBLE"
    ) {
      throw new PlanningError(
        `${exprText(a)} needs a numeric argument, got ${arg.type.name}${context.locate(a.fn)}`,
      );
    }
    return {
      spec: { fn: a.fn, distinct: a.distinct, integral: arg?.type.family === "BIGINT" },
      arg,
      text: exprText(a),
    };
  });
  calls.push(...planUserAggregates(userAggregates, inputScope, rel.node.mode, context));
  const aliasOf = (text: string): string | null => {
    for (const item of query.items) {
      if (item.k === "expr" && item.alias !== null && exprText(item.expr) === text) {
        return item.alias;
      }
    }
    return null;
  };
  const columns: Column[] = [
    ...keys.map((k, i) => ({
      name: aliasOf(k.text) ?? columnName(query.groupBy[i]!) ?? `EXPR$${i}`,
      type: materialized(k.type),
    })),
    ...calls.map((c, i) => ({
      name: aliasOf(c.text) ?? `EXPR$${keys.length + i}`,
      type: aggregateType(c),
    })),
  ];
  const keySources = query.groupBy.map((e) => e.k === "column" ? sourceOf(keys, e) : null);
  const windowed = rel.window !== null &&
    keySources.includes(rel.window.start) && keySources.includes(rel.window.end);
  const upsert = options.upsert === true && !windowed;
  if (upsert && query.having !== null) {
    throw new PlanningError(
      `upsert mode after HAVING is not supported yet (the filter needs the -U rows)${
        context.locate("HAVING")
      }`,
    );
  }
  let aggregate: PlanNode;
  let window: WindowProperties | null = null;
  if (windowed) {
    // A window aggregate's window_time stays a rowtime attribute (its rows'
    // timestamps are the window's last millisecond), so windows cascade.
    const time = rel.window!.time;
    keySources.forEach((source, i) => {
      if (time !== null && source === time) {
        columns[i] = { name: columns[i]!.name, type: { ...TIMESTAMP_ROWTIME } };
      }
    });
    checkUserAggregatesInWindow(userAggregates, rel.window!.spec.fn, context);
    const planned = planWindowAggregate({
      relation: rel,
      where,
      whereExpr,
      groupBy: query.groupBy,
      keys,
      keySources: keySources.map((s) => s ?? -1),
      aggregates: [...aggregates, ...userAggregates],
      calls,
      columns,
      context,
    });
    aggregate = planned.node;
    window = planned.window;
  } else {
    let input: PlanNode = rel.node;
    if (where !== null) {
      input = {
        op: "Calc",
        input,
        projections: input.columns.map((c, i) => ({
          evaluate: (f) => f[i] ?? null,
          type: c.type,
          text: c.name,
        })),
        filter: where,
        columns: input.columns,
        mode: input.mode,
      };
    }
    aggregate = {
      op: "GroupAggregate",
      input,
      keys,
      // An append-only input never retracts: MIN/MAX keep only the extreme.
      aggregates: input.mode === "append" ? calls.map(appendOnlyCall) : calls,
      columns,
      mode: upsert ? "upsert" : "retract",
      generateUpdateBefore: !upsert,
    };
  }
  const computed = new Map<string, number>();
  keys.forEach((k, i) => computed.set(k.text, i));
  calls.forEach((c, i) => computed.set(c.text, keys.length + i));
  const outputScope: Scope = {
    columns,
    inputName: "the GROUP BY's keys and aggregates",
    computed,
    locate: context.locate,
    aggregatesAllowed: true,
  };
  const having = query.having === null
    ? null
    : condition(query.having, outputScope, "HAVING", context);
  const { projections, columns: outColumns, sources } = project(query, outputScope, context);
  if (upsert) {
    keys.forEach((k, i) => {
      if (!projections.some((p) => p.text === columns[i]!.name)) {
        throw new PlanningError(
          `upsert mode needs every GROUP BY key in the SELECT list (the upsert key); ${k.text} is missing`,
        );
      }
    });
  }
  const identity = having === null && projections.length === columns.length &&
    projections.every((p, i) =>
      p.text === columns[i]!.name && outColumns[i]!.name === columns[i]!.name
    );
  if (identity) return { node: aggregate, qualifiers: columns.map(() => []), window };
  const node: CalcNode = {
    op: "Calc",
    input: aggregate,
    projections,
    filter: having,
    columns: outColumns,
    mode: aggregate.mode,
  };
  return { node, qualifiers: outColumns.map(() => []), window: keptWindow(window, sources) };
}

/** `call` over an append-only input (`BuiltinAggregateSpec.appendOnly`; a UDF is kept). */
function appendOnlyCall(call: AggregateCall): AggregateCall {
  return call.spec.fn === "UDF" ? call : { ...call, spec: { ...call.spec, appendOnly: true } };
}

const OVER_PLANNING: OverPlanning = {
  planRelation,
  relationScope,
  condition,
  columnSource,
  updateProducer: (node) => {
    const producer = updateProducer(node);
    return producer === undefined ? undefined : describeNode(producer);
  },
};
