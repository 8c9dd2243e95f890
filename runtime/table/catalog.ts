/**
 * The temporary tables and views of one table environment (Flink's
 * `CatalogManager` for temporary objects): connector tables made by
 * `CREATE TABLE`, views over DataStreams (`fromDataStream`,
 * `createTemporaryView`) and views defined by a query (`CREATE VIEW`, a
 * `Table`), and what the planner learns about each (`lookup`).
 *
 * ## Invariants
 *
 * - A name holds one entry; registering a taken name is refused.
 * - A view over a DataStream belongs to the StreamExecutionEnvironment it
 *   was made on: a query on another environment cannot read it.
 * - A connector table is readable only when its connector has a source.
 *
 * @module
 */

import { type DataStream, SingleOutputStreamOperator } from "../api/datastream.ts";
import type { StreamExecutionEnvironment } from "../api/environment.ts";
import { type ChangelogMode, PlanningError } from "./changelog_mode.ts";
import { positionOf } from "./parser.ts";
import { projectedColumns } from "./projection_pushdown.ts";
import type { CatalogTableInfo } from "./plan.ts";
import { insertRow, type Row } from "./row.ts";
import { changeOf, toFields } from "./row_conversion.ts";
import type { Expr, WatermarkDefinition } from "./sql_ast.ts";
import type { Table } from "./table.ts";
import type { ConnectorTable, TableConnectorRegistry } from "./table_connectors.ts";
import { type Column, dataTypeOf, SUPPORTED_TYPES } from "./types.ts";

/** A column of `fromDataStream`'s schema: its name and SQL type (`VARCHAR`, `BIGINT`, `TIMESTAMP(3)`...). */
export interface SchemaColumn {
  /** The column's name. */
  readonly name: string;
  /** Its SQL type, as written in DDL. */
  readonly type: string;
}

/**
 * The event time of a table made from a DataStream (Flink's
 * `Schema.Builder.watermark(column, "column - INTERVAL ...")`): `column`
 * becomes the table's rowtime attribute, and the watermark trails the
 * highest rowtime seen by `delayMillis`.
 */
export interface SchemaWatermark {
  /** The rowtime column: a `TIMESTAMP` column, or a `BIGINT` of epoch milliseconds. */
  readonly column: string;
  /** How far the watermark trails the highest rowtime, ms (default 0). */
  readonly delayMillis?: number;
  /**
   * `on-periodic` (default): every auto-watermark interval; `on-event`: at
   * once on each row that raises it (Flink's `scan.watermark.emit.strategy`).
   */
  readonly emit?: "on-periodic" | "on-event";
}

/** Options of {@linkcode StreamTableEnvironment.fromDataStream}. */
export interface FromDataStreamOptions {
  /** The rowtime attribute and its watermark; none by default (no event time). */
  readonly watermark?: SchemaWatermark;
}

/** An entry of the catalog: a connector table, or a view over a DataStream or a query. */
export type CatalogEntry =
  | { readonly kind: "connector"; readonly table: ConnectorTable }
  | {
    readonly kind: "stream";
    readonly columns: readonly Column[];
    readonly mode: ChangelogMode;
    readonly stream: DataStream<Row>;
    readonly env: StreamExecutionEnvironment;
    readonly watermark: WatermarkDefinition | null;
    readonly watermarkEmit: "on-periodic" | "on-event";
  }
  | { readonly kind: "query"; readonly table: Table };

/** A DataStream to register as a table (see {@linkcode TableCatalog.registerStream}). */
export interface StreamRegistration<T> {
  /** The table's name. */
  readonly name: string;
  /** The records (append mode) or the `Row` changes (retract mode). */
  readonly stream: DataStream<T>;
  /** The columns, in order. */
  readonly schema: readonly SchemaColumn[];
  /** The environment the stream belongs to. */
  readonly env: StreamExecutionEnvironment;
  /** `append` (`fromDataStream`) or `retract` (`fromChangelogStream`). */
  readonly mode: ChangelogMode;
  /** The rowtime attribute and its watermark, if any. */
  readonly watermark?: SchemaWatermark | undefined;
}

/** The temporary tables and views of a table environment (see the module docs). */
export class TableCatalog {
  readonly #entries = new Map<string, CatalogEntry>();

  /** The entry `name`, or `undefined`. */
  get(name: string): CatalogEntry | undefined {
    return this.#entries.get(name);
  }

  /** The names of every table and view, sorted (for "not found" messages). */
  names(): string[] {
    return [...this.#entries.keys()].sort();
  }

  /**
   * Registers `entry` as `name`.
   * @param where where the statement is, for the message (`" at line 1, column 1"`).
   * @throws {PlanningError} when `name` is taken.
   */
  register(name: string, entry: CatalogEntry, where = ""): void {
    this.checkFree(name, where);
    this.#entries.set(name, entry);
  }

  /**
   * Refuses a taken name.
   * @throws {PlanningError} `Table or view 'x' already exists`, with `where`.
   */
  checkFree(name: string, where = ""): void {
    if (this.#entries.has(name)) {
      throw new PlanningError(`Table or view '${name}' already exists${where}`);
    }
  }

  /**
   * The connector table `name`, for `INSERT INTO`.
   * @throws {PlanningError} when there is none, with the statement's position.
   */
  connectorTable(name: string, sql: string, at: number): ConnectorTable {
    const entry = this.#entries.get(name);
    if (entry?.kind !== "connector") {
      const p = positionOf(sql, at);
      throw new PlanningError(
        `Table '${name}' not found (INSERT INTO needs a table made by CREATE TABLE) at line ${p.line}, column ${p.column}`,
      );
    }
    return entry.table;
  }

  /**
   * What the planner learns about `name` (`PlannerContext.lookup`).
   * @param env the environment of the query being planned.
   * @param connectors the connectors, to check a table can be read.
   * @param locate where a name is in the statement, for messages.
   * @param planView plans a view defined by a query.
   * @param referenced the column names the statement references
   *   (`projection_pushdown.ts`): a connector table whose connector
   *   supports projection and that has no computed column then lists only
   *   those (and its rowtime); `null` or absent: every column (the caller
   *   passes `null` for a table a `*` expands to).
   * @returns the table's info, or `undefined` when there is none.
   * @throws {PlanningError} for a sink-only table or a DataStream view of another environment.
   */
  lookup(
    name: string,
    env: StreamExecutionEnvironment,
    connectors: TableConnectorRegistry,
    locate: (name: string) => string,
    planView: (table: Table) => CatalogTableInfo,
    referenced: ReadonlySet<string> | null = null,
  ): CatalogTableInfo | undefined {
    const entry = this.#entries.get(name);
    if (entry === undefined) return undefined;
    switch (entry.kind) {
      case "connector":
        if (connectors.get(entry.table.options.connector!)?.source === undefined) {
          throw new PlanningError(
            `table ${name} (connector '${entry.table.options.connector}') is a sink and cannot be read${
              locate(name)
            }`,
          );
        }
        return {
          columns: referenced !== null &&
              connectors.get(entry.table.options.connector!)?.supportsProjection === true &&
              entry.table.computedColumns === undefined
            ? projectedColumns(
              entry.table.columns,
              referenced,
              entry.table.watermark ? [entry.table.watermark.column] : [],
            )
            : entry.table.columns,
          watermark: entry.table.watermark,
          ...(entry.table.computedColumns === undefined
            ? {}
            : { computed: entry.table.computedColumns }),
        };
      case "stream":
        if (entry.env !== env) {
          throw new PlanningError(
            `view ${name} reads a DataStream of another StreamExecutionEnvironment${locate(name)}`,
          );
        }
        return {
          columns: entry.columns,
          mode: entry.mode,
          watermark: entry.watermark,
          watermarkEmit: entry.watermarkEmit,
        };
      case "query":
        return planView(entry.table);
    }
  }

  /**
   * How one query's scans reach their streams: a DataStream view's rows,
   * or a connector table's source (uid `<prefix>-source-<name>`). A table
   * scanned twice by one query (Nexmark q5, q7) reads one source (Flink's
   * source reuse): two sources would share the uid and read twice. A scan
   * of a subset of the columns (projection push-down) reads a source of
   * that subset, one per distinct subset (uid `<prefix>-source-<name>` for
   * the first, then `-2`, `-3`, ...).
   * @param prefix the query's uid prefix.
   * @returns the scan callback of `translatePlan`; it throws a
   *   PlanningError for a view defined by a query (those are planned in place).
   */
  scanSources(
    env: StreamExecutionEnvironment,
    connectors: TableConnectorRegistry,
    prefix: string,
  ): (name: string, columns?: readonly Column[]) => DataStream<Row> {
    const sources = new Map<string, DataStream<Row>>();
    const perTable = new Map<string, number>();
    return (name, columns) => {
      const entry = this.#entries.get(name);
      if (entry?.kind === "stream") return entry.stream;
      if (entry?.kind === "connector") {
        const all = entry.table.columns;
        const read = columns ?? all;
        const projected = read.length !== all.length ||
          read.some((c, i) => c.name !== all[i]!.name);
        const id = `${name}\u0000${read.map((c) => c.name).join("\u0000")}`;
        const reused = sources.get(id);
        if (reused !== undefined) return reused;
        const nth = (perTable.get(name) ?? 0) + 1;
        perTable.set(name, nth);
        const table = projected ? { ...entry.table, columns: read } : entry.table;
        const source = connectors.get(entry.table.options.connector!)!.source!(table, env)
          .uid(`${prefix}-source-${name}${nth === 1 ? "" : `-${nth}`}`);
        sources.set(id, source);
        return source;
      }
      throw new PlanningError(`view ${name} is planned in place, not scanned`);
    };
  }

  /**
   * Registers a DataStream as a table: its records become rows (`+I` in
   * append mode, with their RowKind in retract mode) by a map at the
   * stream's parallelism, when that is set, so each subtask's order is kept.
   * @throws {PlanningError} for a taken name, an empty schema, a repeated
   *   column, an unsupported type, or a bad watermark, naming it.
   */
  registerStream<T>(registration: StreamRegistration<T>): void {
    const { name, stream, schema, mode, watermark } = registration;
    this.checkFree(name);
    if (schema.length === 0) throw new PlanningError(`the schema of ${name} has no column`);
    const columns: Column[] = schema.map((c) => {
      const base = /^\s*(\w+)/.exec(c.type)?.[1] ?? "";
      const type = dataTypeOf(base, c.type.trim());
      if (type === undefined) {
        throw new PlanningError(
          `column ${c.name} of ${name} has type ${c.type}, which is not supported (supported: ${SUPPORTED_TYPES})`,
        );
      }
      return { name: c.name, type };
    });
    const seen = new Set<string>();
    for (const c of columns) {
      if (seen.has(c.name)) {
        throw new PlanningError(`the schema of ${name} names column ${c.name} twice`);
      }
      seen.add(c.name);
    }
    const rows = mode === "append"
      ? stream.map((value: T): Row => insertRow(toFields(value, columns, name)))
        .name(`fromDataStream: ${name}`)
      : stream.map((value: T): Row => changeOf(value, columns, name))
        .name(`fromChangelogStream: ${name}`);
    // The conversion keeps the order of each input subtask: it runs at the
    // input's parallelism (a forward, chained edge) when that is set.
    if (stream instanceof SingleOutputStreamOperator && stream.node.parallelism !== undefined) {
      rows.setParallelism(stream.node.parallelism);
    }
    this.#entries.set(name, {
      kind: "stream",
      columns,
      stream: rows,
      env: registration.env,
      mode,
      watermark: watermark === undefined ? null : schemaWatermark(name, columns, watermark),
      watermarkEmit: watermark?.emit ?? "on-periodic",
    });
  }
}

/**
 * The `WATERMARK FOR` of a DataStream table's {@linkcode SchemaWatermark}.
 * @throws {PlanningError} for an unknown or non-time column or a bad delay.
 */
function schemaWatermark(
  name: string,
  columns: readonly Column[],
  watermark: SchemaWatermark,
): WatermarkDefinition {
  const column = columns.find((c) => c.name === watermark.column);
  if (
    column === undefined || (column.type.family !== "TIMESTAMP" && column.type.family !== "BIGINT")
  ) {
    throw new PlanningError(
      `the watermark of ${name} needs a TIMESTAMP (or BIGINT epoch milliseconds) column of its schema: current value is '${watermark.column}'${
        column === undefined ? " (no such column)" : ` of type ${column.type.name}`
      }`,
    );
  }
  const delay = watermark.delayMillis ?? 0;
  if (!Number.isSafeInteger(delay) || delay < 0) {
    throw new PlanningError(
      `the watermark delay of ${name} must be an integer >= 0 ms: current value is ${delay}`,
    );
  }
  const rowtime: Expr = { k: "column", table: null, name: watermark.column };
  return {
    column: watermark.column,
    expr: delay === 0 ? rowtime : {
      k: "binary",
      op: "-",
      left: rowtime,
      right: { k: "interval", millis: delay, text: `INTERVAL '${delay / 1000}' SECOND` },
    },
    at: 0,
  };
}
