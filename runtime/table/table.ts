/**
 * `Table`: a continuous query not yet run (Flink's `Table`), and
 * `TableResult`, what `executeSql` returns (Flink's `TableResult`).
 *
 * A Table is planned when it is consumed, because its changelog mode
 * depends on its consumer: `toChangelogStream(t, "upsert")` plans the
 * GROUP BY without `-U` rows, everything else plans retract mode.
 *
 * @module
 */

import type { JobExecutionResult } from "../api/job_execution_result.ts";
import type { PlanNode } from "./plan.ts";
import type { SelectQuery } from "./sql_ast.ts";
import type { Column } from "./types.ts";

/** What a Table's owner does for it (implemented by `StreamTableEnvironment`). */
export interface TablePlanner {
  /**
   * Plans `table`.
   * @throws {PlanningError} for a query that cannot be planned.
   */
  plan(table: Table, options?: { readonly upsert?: boolean }): PlanNode;
  /**
   * The plan of `table`, printed.
   * @throws {PlanningError} for a query that cannot be planned.
   */
  explain(table: Table): string;
}

/**
 * A query over the environment's tables, planned lazily (Flink's `Table`).
 * Made by `sqlQuery`, `fromDataStream`; consumed by `toDataStream`,
 * `toChangelogStream`, `createTemporaryView` and `explain`.
 */
export class Table {
  /** The SELECT this table stands for. */
  readonly query: SelectQuery;
  /** The SQL text it was parsed from (for messages), or a description. */
  readonly sql: string;
  /** The offset of the statement in `sql`. */
  readonly offset: number;
  readonly #planner: TablePlanner;

  /**
   * Made by `StreamTableEnvironment`; not for direct use.
   * @param planner the owner.
   * @param query the query.
   * @param sql its text.
   * @param offset its statement's offset in `sql`.
   */
  constructor(planner: TablePlanner, query: SelectQuery, sql: string, offset: number) {
    this.#planner = planner;
    this.query = query;
    this.sql = sql;
    this.offset = offset;
  }

  /** The planner of this table (its environment). */
  get planner(): TablePlanner {
    return this.#planner;
  }

  /**
   * The result's columns (Flink's `getResolvedSchema()`).
   * @throws {PlanningError} when the query cannot be planned.
   */
  getColumns(): readonly Column[] {
    const root = this.#planner.plan(this);
    return root.columns;
  }

  /**
   * The plan as Flink's `EXPLAIN CHANGELOG_MODE` prints it: one operator
   * per line with its changelog mode (`[I]`, `[I,UB,UA,D]`, `[I,UA,D]`).
   * @throws {PlanningError} when the query cannot be planned.
   */
  explain(): string {
    return this.#planner.explain(this);
  }
}

/** Flink's `ResultKind`: `SUCCESS` for DDL and `INSERT INTO ... VALUES` into a values table; `SUCCESS_WITH_CONTENT` when a job ran. */
export type ResultKind = "SUCCESS" | "SUCCESS_WITH_CONTENT";

/** What `executeSql` returns (Flink's `TableResult`, after `await()`). */
export interface TableResult {
  /** Whether a job ran. */
  readonly resultKind: ResultKind;
  /** What the statement was: `CREATE TABLE`, `INSERT`, `SELECT`. */
  readonly statement: string;
  /** The job's result, when a job ran. */
  readonly jobResult?: JobExecutionResult;
}
