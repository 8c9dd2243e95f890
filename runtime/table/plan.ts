/**
 * The logical plan of a continuous query and its changelog modes: a tree
 * of `TableSourceScan`, `Calc` (projection and filter) and `GroupAggregate`
 * nodes, named and printed as Flink's optimized physical plan
 * (`EXPLAIN CHANGELOG_MODE`).
 *
 * Planning is pure: it reads the catalog's schemas and produces nodes whose
 * expressions are compiled closures; `translate.ts` turns a plan into
 * DataStream operators.
 *
 * ## Changelog modes (as Flink's `FlinkChangelogModeInferenceProgram`)
 *
 * - `TableSourceScan`: its source's mode (`append`, or `retract` for a
 *   table made by `fromChangelogStream`);
 * - `Calc`: its input's mode;
 * - `GroupAggregate`: `retract` (`-U`/`+U` pairs), or `upsert` (no `-U`,
 *   keyed by the GROUP BY keys) when the consumer asks for upserts and no
 *   filter (HAVING) follows it; a filter after an aggregate needs the
 *   `-U` rows, as in Flink.
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
import {
  type ChangelogMode,
  changelogModeString,
  isUpdating,
  PlanningError,
} from "./changelog_mode.ts";
import { type CompiledExpr, compileExpr, type Scope } from "./expressions.ts";
import { exprText } from "./sql_text.ts";
import type { Expr, SelectQuery, TableRef } from "./sql_ast.ts";
import { type Column, TYPES } from "./types.ts";

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

/** One aggregate call of a GroupAggregate. */
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
export type PlanNode = ScanNode | CalcNode | GroupAggregateNode;

/** What the planner needs from the catalog. */
export interface PlannerContext {
  /**
   * The columns of table `name` and, for a view defined by a query, that
   * query's plan (planned in place of a scan), or `undefined` when there is none.
   */
  lookup(
    name: string,
  ):
    | {
      readonly columns: readonly Column[];
      readonly plan?: PlanNode;
      readonly mode?: ChangelogMode;
    }
    | undefined;
  /** Where `name` first appears in the statement, for messages (`" at line 1, column 8"`, or `""`). */
  locate(name: string): string;
}

/** Options of {@linkcode planQuery}. */
export interface PlanOptions {
  /** The consumer takes upserts keyed by the GROUP BY keys: the aggregate emits no `-U`. */
  readonly upsert?: boolean;
}

/**
 * Plans a SELECT.
 * @returns the plan's root.
 * @throws {PlanningError} for an unknown table or column, a bad expression,
 *   `*` in a grouped query, a SELECT item that is neither a key nor an
 *   aggregate, or upsert mode with HAVING or without the keys selected.
 */
export function planQuery(
  query: SelectQuery,
  context: PlannerContext,
  options: PlanOptions = {},
): PlanNode {
  if (query.from.k !== "table" || query.from.alias !== null) {
    throw new PlanningError(
      `${FROM_KINDS[query.from.k]} in FROM is not supported yet${context.locate("FROM")}`,
    );
  }
  if (query.distinct || query.orderBy.length > 0 || query.limit !== null) {
    throw new PlanningError(
      `${
        query.distinct ? "SELECT DISTINCT" : query.orderBy.length > 0 ? "ORDER BY" : "LIMIT"
      } is not supported yet${context.locate(query.distinct ? "DISTINCT" : "ORDER")}`,
    );
  }
  const from = query.from.name;
  const table = context.lookup(from);
  if (table === undefined) {
    throw new PlanningError(`Object '${from}' not found${context.locate(from)}`);
  }
  const scan: PlanNode = table.plan ??
    {
      op: "TableSourceScan",
      table: from,
      columns: table.columns,
      mode: table.mode ?? "append",
    };
  const inputScope: Scope = {
    columns: scan.columns,
    inputName: `table ${from}`,
    locate: context.locate,
    aggregatesAllowed: false,
  };
  const where = query.where === null ? null : condition(query.where, inputScope, "WHERE", context);
  const aggregates = collectAggregates(query);
  const grouped = query.groupBy.length > 0 || aggregates.length > 0;
  if (!grouped) {
    if (query.having !== null) {
      throw new PlanningError(`HAVING needs GROUP BY or an aggregate${context.locate("HAVING")}`);
    }
    const { projections, columns } = project(query, inputScope, context);
    const trivial = where === null && columns.length === scan.columns.length &&
      columns.every((c, i) => c.name === scan.columns[i]!.name && projections[i]!.text === c.name);
    if (trivial) return scan; // SELECT * (or every column in order): no Calc, as Flink's planner
    return { op: "Calc", input: scan, projections, filter: where, columns, mode: scan.mode };
  }
  let input: PlanNode = scan;
  if (where !== null) {
    input = {
      op: "Calc",
      input: scan,
      projections: scan.columns.map((c, i) => ({
        evaluate: (f) => f[i] ?? null,
        type: c.type,
        text: c.name,
      })),
      filter: where,
      columns: scan.columns,
      mode: scan.mode,
    };
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
      name: aliasOf(k.text) ?? (query.groupBy[i]!.k === "column" ? k.text : `EXPR$${i}`),
      type: k.type,
    })),
    ...calls.map((c, i) => ({
      name: aliasOf(c.text) ?? `EXPR$${keys.length + i}`,
      type: aggregateType(c),
    })),
  ];
  const upsert = options.upsert === true;
  if (upsert && query.having !== null) {
    throw new PlanningError(
      `upsert mode after HAVING is not supported yet (the filter needs the -U rows)${
        context.locate("HAVING")
      }`,
    );
  }
  const aggregate: GroupAggregateNode = {
    op: "GroupAggregate",
    input,
    keys,
    aggregates: calls,
    columns,
    mode: upsert ? "upsert" : "retract",
    generateUpdateBefore: !upsert,
  };
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
  const { projections, columns: outColumns } = project(query, outputScope, context);
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
  if (identity) return aggregate;
  return {
    op: "Calc",
    input: aggregate,
    projections,
    filter: having,
    columns: outColumns,
    mode: aggregate.mode,
  };
}

const FROM_KINDS: Readonly<Record<TableRef["k"], string>> = {
  table: "an aliased table",
  subquery: "a subquery",
  join: "a join",
  windowTvf: "a window table-valued function",
  lateral: "a lateral table function",
};

function aggregateType(call: AggregateCall) {
  switch (call.spec.fn) {
    case "COUNT":
    case "COUNT_STAR":
      return TYPES.BIGINT;
    default:
      return call.arg?.type ?? TYPES.BIGINT;
  }
}

function condition(
  expr: Expr,
  scope: Scope,
  clause: string,
  context: PlannerContext,
): CompiledExpr {
  const compiled = compileExpr(expr, scope);
  if (compiled.type.family !== "BOOLEAN") {
    throw new PlanningError(
      `${clause} needs a BOOLEAN condition, got ${compiled.type.name} (${compiled.text})${
        context.locate(clause)
      }`,
    );
  }
  return compiled;
}

function project(
  query: SelectQuery,
  scope: Scope,
  context: PlannerContext,
): { projections: CompiledExpr[]; columns: Column[] } {
  const projections: CompiledExpr[] = [];
  const columns: Column[] = [];
  for (const item of query.items) {
    if (item.k === "star") {
      if (scope.computed !== undefined) {
        throw new PlanningError(`SELECT * in a grouped query is not allowed${context.locate("*")}`);
      }
      scope.columns.forEach((c, i) => {
        projections.push({ evaluate: (f) => f[i] ?? null, type: c.type, text: c.name });
        columns.push(c);
      });
      continue;
    }
    const compiled = compileExpr(item.expr, scope);
    projections.push(compiled);
    const name = item.alias ??
      (item.expr.k === "column" ? item.expr.name : `EXPR$${columns.length}`);
    columns.push({ name, type: compiled.type });
  }
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) {
      throw new PlanningError(
        `the SELECT list names column '${c.name}' twice; give one an alias${
          context.locate(c.name)
        }`,
      );
    }
    seen.add(c.name);
  }
  return { projections, columns };
}

/** Every aggregate call of the SELECT list and HAVING, once each by text, in order. */
function collectAggregates(query: SelectQuery): Extract<Expr, { k: "aggregate" }>[] {
  const found = new Map<string, Extract<Expr, { k: "aggregate" }>>();
  const visit = (e: Expr): void => {
    switch (e.k) {
      case "aggregate":
        if (!found.has(exprText(e))) found.set(exprText(e), e);
        return;
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
      default:
        return;
    }
  };
  for (const item of query.items) if (item.k === "expr") visit(item.expr);
  if (query.having !== null) visit(query.having);
  return [...found.values()];
}

/** A one-line description of a node, as Flink's plan prints it (without the mode). */
export function describeNode(node: PlanNode): string {
  switch (node.op) {
    case "TableSourceScan":
      return `TableSourceScan(table=[[${node.table}]], fields=[${
        node.columns.map((c) => c.name).join(", ")
      }])`;
    case "Calc": {
      const select = node.projections.map((p, i) =>
        p.text === node.columns[i]!.name ? p.text : `${p.text} AS ${node.columns[i]!.name}`
      );
      return `Calc(select=[${select.join(", ")}]${
        node.filter === null ? "" : `, where=[${node.filter.text}]`
      })`;
    }
    case "GroupAggregate": {
      const select = [
        ...node.keys.map((k) => k.text),
        ...node.aggregates.map((a, i) => {
          const name = node.columns[node.keys.length + i]!.name;
          return name.startsWith("EXPR$") ? a.text : `${a.text} AS ${name}`;
        }),
      ];
      return `GroupAggregate(groupBy=[${node.keys.map((k) => k.text).join(", ")}], select=[${
        select.join(", ")
      }])`;
    }
  }
}

/**
 * The node whose output first carries updates (walking from the sources
 * up), for messages of append-only sinks; `undefined` for an append-only plan.
 */
export function updateProducer(node: PlanNode): PlanNode | undefined {
  if (node.op !== "TableSourceScan") {
    const below = updateProducer(node.input);
    if (below !== undefined) return below;
  }
  return isUpdating(node.mode) ? node : undefined;
}

/**
 * Prints a plan as Flink's `EXPLAIN CHANGELOG_MODE` prints its optimized
 * physical plan: one node per line, children indented under `+- `, each
 * with `changelogMode=[...]`; a GroupAggregate's input shows the hash
 * `Exchange` on its keys.
 */
export function explainPlan(root: PlanNode): string {
  const lines: string[] = [];
  const walk = (node: PlanNode, depth: number): void => {
    const indent = depth === 0 ? "" : `${"   ".repeat(depth - 1)}+- `;
    const line = describeNode(node).replace(
      /\)$/,
      `, changelogMode=${changelogModeString(node.mode)})`,
    );
    lines.push(indent + line);
    if (node.op === "TableSourceScan") return;
    if (node.op === "GroupAggregate") {
      lines.push(
        `${"   ".repeat(depth)}+- Exchange(distribution=[hash[${
          node.keys.map((k) => k.text).join(", ")
        }]], changelogMode=${changelogModeString(node.input.mode)})`,
      );
      walk(node.input, depth + 2);
      return;
    }
    walk(node.input, depth + 1);
  };
  walk(root, 0);
  return `== Optimized Physical Plan ==\n${lines.join("\n")}\n`;
}
