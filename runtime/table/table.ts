/**
 * `Table`: a continuous query not yet run (Flink's `Table`), and
 * `TableResult`, what `executeSql` returns (Flink's `TableResult`).
 *
 * A Table is planned when it is consumed, because its changelog mode
 * depends on its consumer: `toChangelogStream(t, "upsert")` plans the
 * GROUP BY without `-U` rows, everything else plans retract mode. Its
 * query and planner are kept out of its public face (a module-private
 * WeakMap), so the public API is `getColumns()` and `explain()`.
 *
 * @module
 */

import type { JobExecutionResult } from "../cluster/job_result.ts";
import { explainPlan, type PlanNode } from "./plan.ts";
import type { SqlValue } from "./row.ts";
import type { SelectQuery } from "./sql_ast.ts";
import type { Column } from "./types.ts";

/** What a Table's owner does for it (the `StreamTableEnvironment`). */
export interface TablePlanner {
  /**
   * Plans `table`.
   * @throws {PlanningError} for a query that cannot be planned.
   */
  plan(table: Table, options?: { readonly upsert?: boolean }): PlanNode;
}

/** A Table's hidden parts. */
export interface TableInternals {
  /** The environment's planner. */
  readonly planner: TablePlanner;
  /** The SELECT this table stands for. */
  readonly query: SelectQuery;
  /** The SQL text it was parsed from (for messages' lines and columns). */
  readonly sql: string;
  /** The statement's offset in `sql`. */
  readonly offset: number;
}

const internals = new WeakMap<Table, TableInternals>();

/**
 * A query over a StreamTableEnvironment's tables, planned lazily (Flink's
 * `Table`). Made by `sqlQuery` and `fromDataStream`; consumed by
 * `toDataStream`, `toChangelogStream` and `createTemporaryView`.
 */
export class Table {
  private constructor() {}

  /**
   * The result's columns, in order (Flink's `getResolvedSchema()`).
   * @throws {PlanningError} when the query cannot be planned.
   */
  getColumns(): readonly Column[] {
    return tableInternals(this).planner.plan(this).columns;
  }

  /**
   * The plan as Flink's `EXPLAIN CHANGELOG_MODE` prints its optimized
   * physical plan: one operator per line, inputs indented under `+- `, each
   * with its changelog mode (`[I]` append-only, `[I,UB,UA,D]` retract,
   * `[I,UA,D]` upsert).
   * @throws {PlanningError} when the query cannot be planned.
   */
  explain(): string {
    return explainPlan(tableInternals(this).planner.plan(this));
  }
}

/** A new Table (for `StreamTableEnvironment` only). */
export function makeTable(parts: TableInternals): Table {
  const table = Object.create(Table.prototype) as Table;
  internals.set(table, parts);
  return table;
}

/**
 * A Table's hidden parts.
 * @throws {TypeError} for an object that was not made by `makeTable`.
 */
export function tableInternals(table: Table): TableInternals {
  const parts = internals.get(table);
  if (parts === undefined) throw new TypeError("not a Table made by a StreamTableEnvironment");
  return parts;
}

/**
 * Flink's `ResultKind`: `SUCCESS` for DDL, `SET 'k' = 'v'` and `INSERT INTO
 * ... VALUES` into a values table; `SUCCESS_WITH_CONTENT` when a job ran or
 * the statement answers with rows (`EXPLAIN`, `SET` alone).
 */
export type ResultKind = "SUCCESS" | "SUCCESS_WITH_CONTENT";

/** What `executeSql` returns (Flink's `TableResult`, after `await()`). */
export interface TableResult {
  /** Whether a job ran. */
  readonly resultKind: ResultKind;
  /** What the statement was: `CREATE TABLE`, `INSERT`, `SELECT`. */
  readonly statement: string;
  /** The job's result, when a job ran. */
  readonly jobResult?: JobExecutionResult;
  /**
   * The names of the columns of `rows`, for statements that answer with a
   * small table instead of a job (`EXPLAIN`: `result`; `SET`: `key`, `value`).
   */
  readonly columns?: readonly string[];
  /** The rows such a statement answers with (Flink's `TableResult.collect()`). */
  readonly rows?: readonly (readonly SqlValue[])[];
}
