/**
 * Plans OVER aggregations (Flink's `StreamPhysicalOverAggregate`): a
 * SELECT whose items call aggregates over a window of rows,
 *
 * ```sql
 * SELECT auction, price,
 *   AVG(price) OVER (PARTITION BY auction ORDER BY dateTime
 *                    ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_price
 * FROM bid
 * ```
 *
 * into `[Calc (WHERE)] -> OverAggregate (one per distinct OVER window) ->
 * Calc (the SELECT list)`. The OverAggregate appends one column per
 * aggregate call to its input's columns; the SELECT list then reads them
 * by the call's SQL text.
 *
 * ## What is accepted (as Flink's streaming OVER)
 *
 * - ORDER BY exactly one rowtime attribute (a column of a table with
 *   `WATERMARK FOR`), ascending;
 * - frames `ROWS|RANGE BETWEEN n PRECEDING AND CURRENT ROW` or
 *   `UNBOUNDED PRECEDING`; without a frame, `RANGE BETWEEN UNBOUNDED
 *   PRECEDING AND CURRENT ROW` (SQL's default);
 * - `COUNT`, `COUNT(*)`, `SUM`, `AVG`, `MIN`, `MAX`;
 * - an append-only input: rows are buffered until the watermark passes
 *   their rowtime (`over_aggregate.ts`), and the output is append-only.
 *
 * ## Beyond Flink: an updating input
 *
 * Flink refuses an OVER aggregation over an updating input ("doesn't
 * support consuming update changes"), which is why Nexmark q6
 * (`AVG(price) OVER (PARTITION BY seller ...)` over a Top-N) does not run
 * there. Weir plans it with `retract_over_aggregate.ts`: every change
 * re-computes the results of the rows whose frames it touches and emits
 * them as `-U`/`+U`, so the output is a retract changelog that folds to the
 * batch OVER query. The ORDER BY column then need not be a rowtime
 * attribute (no watermark is waited for), only a `TIMESTAMP` or `BIGINT`
 * column: a GROUP BY key, for example, is no longer a time attribute.
 *
 * ## Simplifications
 *
 * - No processing-time OVER (Weir has no processing-time attribute yet).
 * - No OVER in a grouped query (GROUP BY or aggregates in the same SELECT).
 * - `ROW_NUMBER()` is planned only in a Top-N (`plan_rank.ts`).
 *
 * @module
 */

import { type ChangelogMode, PlanningError } from "./changelog_mode.ts";
import { type CompiledExpr, compileExpr, type Scope } from "./expressions.ts";
import type { OverAggregateSpec } from "./over_aggregate.ts";
import type { AggregateCall, PlannerContext, PlanNode, Relation } from "./plan.ts";
import type { AggregateName } from "./aggregates.ts";
import type { Expr, OverFrame, SelectQuery, TableRef } from "./sql_ast.ts";
import { exprText } from "./sql_text.ts";
import { planUserOverAggregate } from "./plan_udf_aggregate.ts";
import { type Column, type DataType, TYPES } from "./types.ts";

/** An OVER aggregation (Flink's `OverAggregate`); append-only, keyed by the partition keys. */
export interface OverAggregateNode {
  /** The node kind. */
  readonly op: "OverAggregate";
  /** The input (append-only). */
  readonly input: PlanNode;
  /** The PARTITION BY keys (the keyBy; none: one partition). */
  readonly partitionKeys: readonly CompiledExpr[];
  /** The aggregation. */
  readonly spec: OverAggregateSpec;
  /** The window as written (`PARTITION BY ... ORDER BY ... ROWS ...`), for explain. */
  readonly windowText: string;
  /** Whether the input is updating (`retract_over_aggregate.ts`) rather than append-only. */
  readonly updating: boolean;
  /**
   * Printed as Flink's `TemporalSort` (`ORDER BY rowtime` without LIMIT:
   * an OverAggregate without calls, `plan_rank.ts`) rather than `OverAggregate`.
   */
  readonly display?: "TemporalSort";
  /** The input's columns, then one per aggregate call. */
  readonly columns: readonly Column[];
  /** `append`, or `retract` over an updating input. */
  readonly mode: ChangelogMode;
}

/** What this file needs from `plan.ts` (passed in, so the two modules don't import each other). */
export interface OverPlanning {
  /** Plans a FROM item. */
  planRelation(ref: TableRef, context: PlannerContext): Relation;
  /** A scope over a relation's columns. */
  relationScope(relation: Relation, context: PlannerContext, inputName: string): Scope;
  /** Compiles a BOOLEAN condition of `clause`. */
  condition(expr: Expr, scope: Scope, clause: string, context: PlannerContext): CompiledExpr;
  /** The input position a plain column reference reads, or `null`. */
  columnSource(expr: CompiledExpr): number | null;
  /** Describes the node whose output first carries updates, for messages. */
  updateProducer(node: PlanNode): string | undefined;
}

type OverExpr = Extract<Expr, { k: "over" }>;

const RANKING = new Set(["ROW_NUMBER", "RANK", "DENSE_RANK"]);
const FUNCTIONS = new Set(["COUNT", "SUM", "AVG", "MIN", "MAX"]);

/** Every OVER call in `e`, outermost first; `aggregate` says whether a plain aggregate occurs outside them. */
function visit(e: Expr, found: OverExpr[], plain: { aggregate: boolean }): void {
  switch (e.k) {
    case "over":
      found.push(e);
      return;
    case "aggregate":
      plain.aggregate = true;
      return;
    case "binary":
      visit(e.left, found, plain);
      visit(e.right, found, plain);
      return;
    case "not":
    case "negate":
    case "isNull":
    case "cast":
      visit(e.expr, found, plain);
      return;
    case "case":
      if (e.operand !== null) visit(e.operand, found, plain);
      for (const w of e.whens) {
        visit(w.when, found, plain);
        visit(w.then, found, plain);
      }
      if (e.otherwise !== null) visit(e.otherwise, found, plain);
      return;
    case "call":
      e.args.forEach((a) => visit(a, found, plain));
      return;
    case "in":
      visit(e.expr, found, plain);
      e.list.forEach((a) => visit(a, found, plain));
      return;
    case "between":
      visit(e.expr, found, plain);
      visit(e.low, found, plain);
      visit(e.high, found, plain);
      return;
    default:
      return;
  }
}

/** The OVER calls of a SELECT list, in order (each once by text). */
export function overCalls(query: SelectQuery): OverExpr[] {
  const found: OverExpr[] = [];
  const plain = { aggregate: false };
  for (const item of query.items) if (item.k === "expr") visit(item.expr, found, plain);
  const byText = new Map<string, OverExpr>();
  for (const o of found) if (!byText.has(exprText(o))) byText.set(exprText(o), o);
  return [...byText.values()];
}

const frameOf = (o: OverExpr): OverFrame => o.frame ?? { unit: "RANGE", preceding: null };

function frameText(frame: OverFrame): string {
  const amount = frame.preceding === null
    ? "UNBOUNDED"
    : frame.unit === "ROWS"
    ? String(frame.preceding)
    : `${frame.preceding} ms`;
  return `${frame.unit} BETWEEN ${amount} PRECEDING AND CURRENT ROW`;
}

function windowTextOf(o: OverExpr): string {
  const parts: string[] = [];
  if (o.partitionBy.length > 0) {
    parts.push(`PARTITION BY ${o.partitionBy.map(exprText).join(", ")}`);
  }
  parts.push(
    `ORDER BY ${
      o.orderBy.map((x) => `${exprText(x.expr)} ${x.descending ? "DESC" : "ASC"}`).join(", ")
    }`,
  );
  parts.push(frameText(frameOf(o)));
  return parts.join(" ");
}

/** A computed value's type: a time attribute becomes a plain TIMESTAMP. */
function plain(type: DataType): DataType {
  return type.timeAttribute === undefined ? type : { family: type.family, name: type.name };
}

/**
 * Plans a SELECT with OVER aggregations (see the module docs).
 * @returns the relation of the SELECT list.
 * @throws {PlanningError} for an OVER in a grouped query, a ranking
 *   function outside a Top-N, an ORDER BY that is not one ascending
 *   rowtime attribute (over an updating input: one ascending TIMESTAMP or
 *   BIGINT column), or an unsupported function or argument type.
 */
export function planOverSelect(
  query: SelectQuery,
  context: PlannerContext,
  deps: OverPlanning,
): Relation {
  const fail = (message: string, at: string): never => {
    throw new PlanningError(`${message}${context.locate(at)}`);
  };
  const calls = overCalls(query);
  const probe = { aggregate: false };
  for (const item of query.items) if (item.k === "expr") visit(item.expr, [], probe);
  if (query.groupBy.length > 0 || query.having !== null || probe.aggregate) {
    fail(
      "an OVER aggregation in a grouped query is not supported (aggregate in a subquery first)",
      "OVER",
    );
  }
  for (const o of calls) {
    if (RANKING.has(o.fn)) {
      fail(
        `${o.fn}() OVER is supported only in a Top-N: a subquery read with WHERE rn <= N`,
        o.fn,
      );
    }
  }
  let from = query.from;
  let whereExpr = query.where;
  if (from.k === "join" && from.kind === "CROSS" && from.on === null && whereExpr !== null) {
    from = { ...from, kind: "INNER", on: whereExpr };
    whereExpr = null;
  }
  const rel = deps.planRelation(from, context);
  const inputName = from.k === "table" ? `table ${from.name}` : "the FROM clause";
  const scope = deps.relationScope(rel, context, inputName);
  let input: PlanNode = rel.node;
  if (whereExpr !== null) {
    input = {
      op: "Calc",
      input,
      projections: input.columns.map((c, i) => ({
        evaluate: (f) => f[i] ?? null,
        type: c.type,
        text: c.name,
      })),
      filter: deps.condition(whereExpr, scope, "WHERE", context),
      columns: input.columns,
      mode: input.mode,
    };
  }
  const updating = input.mode !== "append";
  // One OverAggregate per distinct window, chained; each appends its calls' columns.
  const windows = new Map<string, OverExpr[]>();
  for (const o of calls) {
    const key = windowTextOf(o);
    windows.set(key, [...(windows.get(key) ?? []), o]);
  }
  const computed = new Map<string, number>();
  let w = 0;
  for (const [text, group] of windows) {
    const first = group[0]!;
    if (first.orderBy.length !== 1 || first.orderBy[0]!.descending) {
      fail(
        `an OVER window must ORDER BY one time attribute ascending, got ${
          first.orderBy.length === 0
            ? "no ORDER BY"
            : `ORDER BY ${
              first.orderBy.map((x) => exprText(x.expr) + (x.descending ? " DESC" : "")).join(", ")
            }`
        }`,
        "ORDER",
      );
    }
    const order = compileExpr(first.orderBy[0]!.expr, scope);
    const rowtimeIndex = deps.columnSource(order);
    const orderType = rowtimeIndex === null ? undefined : input.columns[rowtimeIndex]?.type;
    if (
      !updating && orderType?.timeAttribute !== "rowtime"
    ) {
      fail(
        `an OVER window must ORDER BY a rowtime attribute (a column with WATERMARK FOR), got ${order.text} of type ${order.type.name}`,
        order.text,
      );
    }
    if (updating && orderType?.family !== "TIMESTAMP" && orderType?.family !== "BIGINT") {
      fail(
        `an OVER window over an updating input (from ${
          deps.updateProducer(input) ?? input.op
        }) must ORDER BY a TIMESTAMP or BIGINT column, got ${order.text} of type ${order.type.name}`,
        order.text,
      );
    }
    const partitionKeys = first.partitionBy.map((e) => compileExpr(e, scope));
    const aggregateCalls: AggregateCall[] = group.map((o) => {
      const bounded = frameOf(first).preceding !== null;
      const udf = FUNCTIONS.has(o.fn)
        ? undefined
        : planUserOverAggregate(o.fn, o.args, scope, bounded, context);
      if (udf !== undefined) return { ...udf, text: exprText(o) };
      if (!FUNCTIONS.has(o.fn)) {
        fail(
          `${o.fn}() OVER is not supported (supported: COUNT, SUM, AVG, MIN, MAX)`,
          o.fn,
        );
      }
      if (o.args.length > 1) fail(`${o.fn}() OVER takes one argument`, o.fn);
      const arg = o.args.length === 0 ? null : compileExpr(o.args[0]!, scope);
      if (arg === null && o.fn !== "COUNT") fail(`${o.fn}() OVER needs an argument`, o.fn);
      if (
        arg !== null && (o.fn === "SUM" || o.fn === "AVG") && arg.type.family !== "BIGINT" &&
        arg.type.family !== "DOUBLE"
      ) {
        fail(`${exprText(o)} needs a numeric argument, got ${arg.type.name}`, o.fn);
      }
      const fn: AggregateName = arg === null ? "COUNT_STAR" : o.fn as AggregateName;
      return {
        spec: { fn, distinct: false, integral: arg?.type.family === "BIGINT" },
        arg,
        text: exprText(o),
      };
    });
    const columns: Column[] = [
      ...input.columns,
      ...aggregateCalls.map((c, i) => ({
        name: `w${w}$o${i}`,
        type: c.spec.fn === "UDF"
          ? c.spec.resultType
          : c.spec.fn === "COUNT" || c.spec.fn === "COUNT_STAR"
          ? TYPES.BIGINT
          : plain(c.arg!.type),
      })),
    ];
    aggregateCalls.forEach((c, i) => computed.set(c.text, input.columns.length + i));
    const node: OverAggregateNode = {
      op: "OverAggregate",
      input,
      partitionKeys,
      spec: {
        rowtimeIndex: rowtimeIndex!,
        rowtimeName: input.columns[rowtimeIndex!]!.name,
        frame: frameOf(first),
        calls: aggregateCalls,
      },
      windowText: text,
      updating,
      columns,
      mode: updating ? "retract" : "append",
    };
    input = node;
    w++;
  }
  const outScope: Scope = {
    ...scope,
    columns: input.columns,
    qualifiers: input.columns.map((_, i) => scope.qualifiers?.[i] ?? []),
    computed,
  };
  const projections: CompiledExpr[] = [];
  const columns: Column[] = [];
  for (const item of query.items) {
    if (item.k === "star") {
      // `*`: the FROM clause's columns; `t.*`: those qualified by `t`
      const table = item.table;
      const picked = rel.node.columns.map((_, i) => i).filter((i) =>
        table === undefined || rel.qualifiers[i]?.includes(table) === true
      );
      if (picked.length === 0) fail(`${table}.* names no table of the FROM clause`, `${table}`);
      for (const i of picked) {
        const c = rel.node.columns[i]!;
        projections.push({ evaluate: (f) => f[i] ?? null, type: c.type, text: c.name });
        columns.push(c);
      }
      continue;
    }
    const compiled = compileExpr(item.expr, outScope);
    projections.push(compiled);
    const name = item.alias ??
      (item.expr.k === "column" ? item.expr.name : `EXPR$${columns.length}`);
    columns.push({
      name,
      type: item.expr.k === "column" ? compiled.type : plain(compiled.type),
    });
  }
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) {
      fail(`the SELECT list names column '${c.name}' twice; give one an alias`, c.name);
    }
    seen.add(c.name);
  }
  const node: PlanNode = {
    op: "Calc",
    input,
    projections,
    filter: null,
    columns,
    mode: input.mode,
  };
  return { node, qualifiers: columns.map(() => []), window: null };
}

/** Describes an OverAggregate as Flink's plan prints it (without the mode). */
export function describeOverNode(node: OverAggregateNode): string {
  if (node.display === "TemporalSort") return `TemporalSort(orderBy=[${node.windowText}])`;
  const inputs = node.input.columns.map((c) => c.name);
  const calls = node.spec.calls.map((c, i) =>
    `${
      c.spec.fn === "COUNT_STAR"
        ? "COUNT(*)"
        : c.spec.fn === "UDF"
        ? `${c.spec.name}(${c.arg?.text ?? ""})`
        : `${c.spec.fn}(${c.arg?.text ?? ""})`
    } AS ${node.columns[inputs.length + i]!.name}`
  );
  return `OverAggregate(${
    node.partitionKeys.length === 0
      ? ""
      : `partitionBy=[${node.partitionKeys.map((k) => k.text).join(", ")}], `
  }orderBy=[${node.spec.rowtimeName} ASC], window=[${frameText(node.spec.frame)}], select=[${
    [...inputs, ...calls].join(", ")
  }])`;
}
