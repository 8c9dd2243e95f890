/**
 * Test helpers for the relational planner's tests: syntax-tree builders
 * (the parser is another slice, so tests build `sql_ast.ts` trees
 * directly) and a runner that plans a query over in-memory tables,
 * translates it and collects its changelog at parallelism 1.
 *
 * @module
 */

import "../cluster/default_executor.ts";
import type { DataStream } from "../api/datastream.ts";
import { StreamExecutionEnvironment } from "../api/environment.ts";
import type { ChangelogMode } from "./changelog_mode.ts";
import { type PlannerContext, type PlanNode, planQuery } from "./plan.ts";
import type { Row, SqlValue } from "./row.ts";
import type { Expr, SelectItem, SelectQuery, TableRef, WatermarkDefinition } from "./sql_ast.ts";
import { translatePlan } from "./translate.ts";
import type { Column } from "./types.ts";

/** A column reference. */
export const col = (name: string, table: string | null = null): Expr => ({
  k: "column",
  table,
  name,
});
/** A literal. */
export const lit = (value: SqlValue): Expr => ({ k: "literal", value });
/** A binary operation. */
export const bin = (op: string, left: Expr, right: Expr): Expr => ({
  k: "binary",
  op,
  left,
  right,
});
/** `left = right`. */
export const eq = (left: Expr, right: Expr): Expr => bin("=", left, right);
/** `left AND right`. */
export const and = (left: Expr, right: Expr): Expr => bin("AND", left, right);
/** `INTERVAL 'n' SECOND`. */
export const seconds = (n: number): Expr => ({
  k: "interval",
  millis: n * 1000,
  text: `INTERVAL '${n}' SECOND`,
});
/** A SELECT item. */
export const item = (expr: Expr, alias: string | null = null): SelectItem => ({
  k: "expr",
  expr,
  alias,
});
/** `SELECT *`. */
export const star: SelectItem = { k: "star" };
/** An aggregate call. */
export const agg = (
  fn: "COUNT" | "COUNT_STAR" | "SUM" | "AVG" | "MIN" | "MAX",
  arg: Expr | null,
  distinct = false,
): Expr => ({ k: "aggregate", fn, distinct, arg });
/** A table reference. */
export const table = (name: string, alias: string | null = null): TableRef => ({
  k: "table",
  name,
  alias,
  at: 0,
});
/** A join. */
export const join = (
  kind: "INNER" | "LEFT" | "RIGHT" | "FULL",
  left: TableRef,
  right: TableRef,
  on: Expr,
): TableRef => ({ k: "join", kind, left, right, on, at: 0 });
/** A window TVF. */
export const tvf = (
  fn: "TUMBLE" | "HOP" | "CUMULATE" | "SESSION",
  input: TableRef,
  timeColumn: string,
  intervals: number[],
  partitionBy: string[] = [],
): TableRef => ({
  k: "windowTvf",
  fn,
  input,
  timeColumn,
  intervals,
  partitionBy,
  alias: null,
  at: 0,
});

/** A SELECT over `from` with `items` and the rest defaulted. */
export function select(
  from: TableRef,
  items: SelectItem[],
  rest: Partial<SelectQuery> = {},
): SelectQuery {
  return {
    items,
    distinct: false,
    from,
    where: null,
    groupBy: [],
    having: null,
    orderBy: [],
    limit: null,
    ...rest,
  };
}

/** `WATERMARK FOR column AS column - INTERVAL 'delay' SECOND`. */
export function watermarkFor(column: string, delaySeconds = 0): WatermarkDefinition {
  return {
    column,
    expr: delaySeconds === 0 ? col(column) : bin("-", col(column), seconds(delaySeconds)),
    at: 0,
  };
}

/** An in-memory table of the runner. */
export interface TestTable {
  /** Its columns. */
  readonly columns: readonly Column[];
  /** Its changes, in order (plain field arrays are `+I` rows). */
  readonly rows: readonly (Row | readonly SqlValue[])[];
  /** Its watermark (emitted on each row that raises it). */
  readonly watermark?: WatermarkDefinition;
  /** Its mode (default `append`). */
  readonly mode?: ChangelogMode;
}

/** A planner context over `tables`. */
export function contextOf(tables: Readonly<Record<string, TestTable>>): PlannerContext {
  return {
    lookup: (name) => {
      const t = tables[name];
      if (t === undefined) return undefined;
      return {
        columns: t.columns,
        mode: t.mode ?? "append",
        watermark: t.watermark ?? null,
        watermarkEmit: "on-event",
      };
    },
    locate: () => "",
  };
}

/**
 * Plans `query` over `tables`, runs it (sources at parallelism 1, the
 * operators at `parallelism`, default 1) and returns the plan and the
 * changelog it emitted. Checkpoints go to a temporary directory, not the
 * checkout's shared `.weir/`.
 */
export async function runQuery(
  query: SelectQuery,
  tables: Readonly<Record<string, TestTable>>,
  parallelism = 1,
): Promise<{ plan: PlanNode; rows: Row[] }> {
  const plan = planQuery(query, contextOf(tables));
  const directory = await Deno.makeTempDir({ prefix: "weir-sql-relational-" });
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(parallelism)
    .setCheckpointDirectory(directory);
  const out: Row[] = [];
  const sources = new Map<string, DataStream<Row>>(); // a table read twice reads one source
  const stream = translatePlan(plan, (name) => {
    const reused = sources.get(name);
    if (reused !== undefined) return reused;
    const rows = tables[name]!.rows.map((r): Row =>
      Array.isArray(r) ? { kind: "INSERT", fields: r as SqlValue[] } : r as Row
    );
    const source = env.fromCollection(rows).uid(`test-source-${name}`).name(`source ${name}`)
      .setParallelism(1);
    sources.set(name, source);
    return source;
  }, "sql-test");
  stream.sinkTo({ kind: "simple", invoke: (row: Row) => void out.push(row) }).uid("test-sink")
    .setParallelism(1);
  try {
    await env.execute(`sql-test-${crypto.randomUUID()}`);
  } finally {
    await Deno.remove(directory, { recursive: true });
  }
  return { plan, rows: out };
}
