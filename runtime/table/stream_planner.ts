/**
 * `StreamPlanner`: the planner behind a `StreamTableEnvironment` (Flink's
 * `org.apache.flink.table.planner.delegation.StreamPlanner`). It plans a
 * SELECT over the environment's catalog, connectors and functions into a
 * `PlanNode` tree (`plan.ts`), checks an `INSERT INTO ... SELECT` against
 * its sink, and translates a plan into DataStream operators
 * (`translate.ts`) on the environment's current `StreamExecutionEnvironment`.
 *
 * The environment (`table_environment.ts`) runs statements and jobs; this
 * class does no I/O: it only adds operators to the stream graph when it
 * translates.
 *
 * Invariants:
 *
 * - A Table made here carries this planner, and only this planner plans
 *   it: a Table of another environment is refused with a `PlanningError`.
 * - Function calls resolve in the environment's `FunctionCatalog` while a
 *   query is planned (`withFunctionCatalog`).
 * - Each translation gets its own uid prefix `sql-<n>` (n counting the
 *   translations of this planner), so two queries on one job never share a
 *   uid.
 *
 * @module
 */

import type { DataStream } from "../api/datastream.ts";
import type { StreamExecutionEnvironment } from "../api/environment.ts";
import { checkSinkMode, PlanningError } from "./changelog_mode.ts";
import { positionOf } from "./parser.ts";
import { describeNode, type PlanNode, planQuery, updateProducer } from "./plan.ts";
import { referencedColumns } from "./projection_pushdown.ts";
import type { Row } from "./row.ts";
import type { SelectQuery, Statement } from "./sql_ast.ts";
import {
  makeTable,
  type Table,
  type TableInternals,
  tableInternals,
  type TablePlanner,
} from "./table.ts";
import type { ConnectorTable, TableConnectorRegistry, TableSink } from "./table_connectors.ts";
import { translatePlan } from "./translate.ts";
import type { TableConfig } from "./table_config.ts";
import { type FunctionCatalog, withFunctionCatalog } from "./function_catalog.ts";
import type { TableCatalog } from "./catalog.ts";

/** What a {@linkcode StreamPlanner} plans over: its environment's parts. */
export interface StreamPlannerContext {
  /** The environment's tables and views. */
  readonly catalog: TableCatalog;
  /** The environment's table connectors, by identifier. */
  readonly connectors: TableConnectorRegistry;
  /** The environment's options (`SET`), read at each translation. */
  readonly config: TableConfig;
  /** The environment's user-defined functions. */
  readonly functions: FunctionCatalog;
  /** The StreamExecutionEnvironment the next job is built on (it changes between a script's jobs). */
  readonly environment: () => StreamExecutionEnvironment;
}

/** A planned `INSERT INTO t SELECT ...`: the sink table, its sink, and the query's plan. */
export interface PlannedInsert {
  /** The table written. */
  readonly table: ConnectorTable;
  /** Its connector's sink, and the changes it accepts. */
  readonly sink: TableSink;
  /** The query's plan, checked against the sink's mode and columns. */
  readonly root: PlanNode;
}

/** Plans SELECTs and INSERTs of one `StreamTableEnvironment` and translates them to DataStreams. */
export class StreamPlanner implements TablePlanner {
  readonly #context: StreamPlannerContext;
  #queries = 0;

  /** A planner over `context`; no I/O. */
  constructor(context: StreamPlannerContext) {
    this.#context = context;
  }

  /**
   * Plans `table` (`TablePlanner.plan`); `options.upsert` plans its
   * changelog keyed by the GROUP BY keys.
   * @throws {PlanningError} when `table` belongs to another environment, or
   *   its query cannot be planned.
   */
  plan(table: Table, options: { readonly upsert?: boolean } = {}): PlanNode {
    const parts = this.own(table);
    return this.planQuery(parts.query, parts.sql, parts.offset, options);
  }

  /**
   * The parts of `table`, a Table this planner made.
   * @throws {PlanningError} when `table` belongs to another StreamTableEnvironment.
   */
  own(table: Table): TableInternals {
    const parts = tableInternals(table);
    if (parts.planner !== this) {
      throw new PlanningError("the Table belongs to another StreamTableEnvironment");
    }
    return parts;
  }

  /** A Table of this planner for `query`, the statement at `offset` in `sql` (not planned yet). */
  table(query: SelectQuery, sql: string, offset: number): Table {
    return makeTable({ planner: this, query, sql, offset });
  }

  /** The Table `SELECT * FROM <name>` (not planned yet). */
  scanTable(name: string): Table {
    const query: SelectQuery = {
      items: [{ k: "star" }],
      distinct: false,
      from: { k: "table", name, alias: null, at: 0 },
      where: null,
      groupBy: [],
      having: null,
      orderBy: [],
      limit: null,
    };
    return this.table(query, `SELECT * FROM ${name}`, 0);
  }

  /**
   * Plans `query`, the statement at `offset` in `sql`; function calls
   * resolve in the environment's catalog meanwhile.
   * @throws {PlanningError} naming the table, column or operator at fault,
   *   with its line and column in `sql` where known.
   */
  planQuery(
    query: SelectQuery,
    sql: string,
    offset: number,
    options: { readonly upsert?: boolean },
  ): PlanNode {
    return withFunctionCatalog(
      this.#context.functions,
      () => this.#planQueryInCatalog(query, sql, offset, options),
    );
  }

  #planQueryInCatalog(
    query: SelectQuery,
    sql: string,
    offset: number,
    options: { readonly upsert?: boolean },
  ): PlanNode {
    const { catalog, connectors } = this.#context;
    const locate = (name: string): string => {
      const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      const m = new RegExp(`(?<![\\w$])${escaped}(?![\\w$])`, "i").exec(sql.slice(offset));
      if (m === null) return "";
      const p = positionOf(sql, offset + m.index);
      return ` at line ${p.line}, column ${p.column}`;
    };
    // Projection push-down into sources: projection_pushdown.ts.
    const referenced = referencedColumns(query);
    return planQuery(query, {
      lookup: (name) =>
        catalog.lookup(name, this.#context.environment(), connectors, locate, (table) => ({
          columns: table.getColumns(),
          plan: this.plan(table),
        }), referenced.whole.has(name) ? null : referenced.names),
      locate,
      names: () => catalog.names(),
    }, options);
  }

  /** The operator of `root`'s plan that produces updates, described, or `undefined` when it appends only. */
  producer(root: PlanNode): string | undefined {
    const node = updateProducer(root);
    return node === undefined ? undefined : describeNode(node);
  }

  /**
   * Adds the operators of `root` to the current StreamExecutionEnvironment.
   * @returns the plan's changelog as a DataStream of rows.
   */
  translate(root: PlanNode): DataStream<Row> {
    const { catalog, connectors, config } = this.#context;
    const prefix = `sql-${++this.#queries}`;
    return translatePlan(
      root,
      catalog.scanSources(this.#context.environment(), connectors, prefix),
      prefix,
      {
        stateTtlMs: config.stateTtlMs,
        sourceIdleTimeoutMs: config.get("table.exec.source.idle-timeout"),
      },
    );
  }

  /**
   * Plans `INSERT INTO t SELECT ...`: the query must fit the sink's mode and columns.
   * @throws {PlanningError} for an unknown table, a table without a sink,
   *   an updating query into an append-only sink (naming the operator), or
   *   a column count that differs from the table's.
   */
  planInsert(statement: Extract<Statement, { k: "insertSelect" }>, sql: string): PlannedInsert {
    const table = this.#context.catalog.connectorTable(statement.table, sql, statement.at);
    const sink = this.sinkOf(table);
    const root = this.planQuery(statement.query, sql, statement.at, {});
    checkSinkMode(
      `table ${table.name} (connector '${table.options.connector}')`,
      sink.accepts,
      root.mode,
      this.producer(root),
    );
    if (root.columns.length !== table.columns.length) {
      throw new PlanningError(
        `INSERT INTO ${table.name}: the query has ${root.columns.length} column(s), the table ${table.columns.length}`,
      );
    }
    return { table, sink, root };
  }

  /**
   * The sink of connector table `table`.
   * @throws {PlanningError} when its connector has no sink (a source only).
   */
  sinkOf(table: ConnectorTable): TableSink {
    const sink = this.#context.connectors.get(table.options.connector!)?.sink?.(table);
    if (sink === undefined) {
      throw new PlanningError(
        `table ${table.name} (connector '${table.options.connector}') is a source and cannot be written by a job`,
      );
    }
    return sink;
  }
}
