/**
 * `StreamTableEnvironment`: the Table API and SQL over a
 * `StreamExecutionEnvironment` (Flink's `StreamTableEnvironment`).
 *
 * ```ts ignore
 * const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1);
 * const tEnv = StreamTableEnvironment.create(env);
 * await tEnv.executeSql("CREATE TABLE clicks (`user` VARCHAR, cTime VARCHAR, url VARCHAR) WITH ('connector' = 'values')");
 * await tEnv.executeSql("INSERT INTO clicks VALUES ('Mary', '12:00:00', './home')");
 * await tEnv.executeSql("SELECT `user`, COUNT(url) AS cnt FROM clicks GROUP BY `user`"); // prints +I(Mary,1)
 * ```
 *
 * ## What each statement does
 *
 * | statement | effect |
 * |---|---|
 * | `CREATE TABLE t (...) WITH ('connector' = ...)` | registers a connector table (`table_connectors.ts`) |
 * | `INSERT INTO t VALUES (...)` | into a `values` table: appends the rows; into a sink: runs a job |
 * | `INSERT INTO t SELECT ...` | runs a job writing the query's changelog into sink `t` |
 * | `SELECT ...` | runs a job printing the query's changelog on stdout, one `+I(...)` line per change (at-least-once, as `print`) |
 *
 * `executeSql` resolves when the job ends (Flink's `executeSql(...).await()`);
 * a query over an unbounded source runs until it is cancelled.
 *
 * ## One job per environment
 *
 * Weir's `StreamExecutionEnvironment` keeps its operators after `execute`
 * (Flink's clears them), so one environment runs one job. A second
 * `INSERT`/`SELECT` on the same environment is refused with a message;
 * `executeScript` takes a factory of fresh environments for scripts with
 * several jobs (connector tables carry over; views over DataStreams of the
 * old environment do not).
 *
 * ## Event time
 *
 * A table's rowtime attribute comes from `WATERMARK FOR c AS c - INTERVAL
 * ...` in `CREATE TABLE`, or from `fromDataStream(stream, schema, {
 * watermark: { column, delayMillis } })`; window TVFs and interval joins
 * read it (`plan.ts`).
 *
 * @module
 */

import type { DataStream } from "../api/datastream.ts";
import type { StreamExecutionEnvironment } from "../api/environment.ts";
import { PrintSink } from "../api/print_sink.ts";
import type { Sink } from "../api/sink.ts";
import { checkSinkMode, PlanningError } from "./changelog_mode.ts";
import { parseScript, positionOf } from "./parser.ts";
import { explainPlan } from "./plan.ts";
import { formatRow, insertRow, type Row } from "./row.ts";
import type { Statement } from "./sql_ast.ts";
import { Table, type TableResult } from "./table.ts";
import { type TableConnector, TableConnectorRegistry } from "./table_connectors.ts";
import { valuesRow } from "./row_conversion.ts";
import { TableConfig } from "./table_config.ts";
import { FunctionCatalog } from "./function_catalog.ts";
import { StreamPlanner } from "./stream_planner.ts";
import type { UserDefinedFunction } from "./udf.ts";
import { applyJobOptions, createConnectorTable, executeSet, explainResult } from "./statements.ts";
import { TableCatalog } from "./catalog.ts";
import type { Column } from "./types.ts";

export type { FromDataStreamOptions, SchemaColumn, SchemaWatermark } from "./catalog.ts";
import type { FromDataStreamOptions, SchemaColumn } from "./catalog.ts";

const STATEMENT_NAMES: Readonly<Record<Statement["k"], string>> = {
  createTable: "CREATE TABLE",
  insertValues: "INSERT",
  insertSelect: "INSERT",
  select: "SELECT",
  createView: "CREATE VIEW",
  explain: "EXPLAIN",
  set: "SET",
};

/** Options of {@linkcode StreamTableEnvironment.executeScript}. */
export interface ScriptOptions {
  /** A fresh environment for each job after the first (see the module docs). */
  readonly newEnvironment?: () => StreamExecutionEnvironment;
  /**
   * Called before each statement runs, with what it is (`CREATE TABLE`,
   * `INSERT`, `SELECT`) and its 1-based line in the script.
   */
  readonly onStatement?: (statement: string, line: number) => void;
  /** Called with the printed plan (as `Table.explain()`) of each query, before its job runs. */
  readonly onQuery?: (plan: string) => void;
  /**
   * Where a SELECT's changelog goes, given the result's columns (the SQL
   * client's result modes, `weir sql`). Default: printed on stdout, one
   * `+I(...)` line per change, as the `print` connector does. A sink given
   * here runs at parallelism 1, so it gets the changelog in order.
   */
  readonly selectSink?: (columns: readonly Column[]) => Sink<Row>;
}

/** The Table API and SQL over a StreamExecutionEnvironment (Flink's `StreamTableEnvironment`). */
export class StreamTableEnvironment {
  #env: StreamExecutionEnvironment;
  #jobRan = false;
  readonly #catalog = new TableCatalog();
  readonly #connectors: TableConnectorRegistry;
  readonly #config = new TableConfig();
  readonly #functions = new FunctionCatalog();
  #anonymous = 0;
  /** Plans and translates this environment's queries (`stream_planner.ts`). */
  readonly #planner: StreamPlanner;

  private constructor(env: StreamExecutionEnvironment, connectors: Iterable<TableConnector>) {
    this.#env = env;
    this.#connectors = new TableConnectorRegistry(connectors);
    this.#planner = new StreamPlanner({
      catalog: this.#catalog,
      connectors: this.#connectors,
      config: this.#config,
      functions: this.#functions,
      environment: () => this.#env,
    });
  }

  /**
   * A table environment over `env` (Flink's `StreamTableEnvironment.create`).
   * @param env where its jobs' operators are added and run.
   * @param settings `connectors`: table connectors to register besides the
   *   built-ins (`values`, `datagen`, `print`, `blackhole`), e.g.
   *   `TABLE_CONNECTOR_FACTORIES` of `connectors/table.ts`.
   * @throws {PlanningError} when two connectors share an identifier.
   */
  static create(
    env: StreamExecutionEnvironment,
    settings: { readonly connectors?: Iterable<TableConnector> } = {},
  ): StreamTableEnvironment {
    return new StreamTableEnvironment(env, settings.connectors ?? []);
  }

  /**
   * Registers a table connector for `CREATE TABLE ... WITH ('connector' =
   * '<identifier>')` (Flink discovers its `DynamicTableFactory`s by
   * identifier; here they are registered: see `table_connectors.ts`).
   * @throws {PlanningError} when the identifier is taken or malformed.
   */
  registerTableConnector(connector: TableConnector): void {
    this.#connectors.register(connector);
  }

  /**
   * The options of this environment (Flink's `TableEnvironment.getConfig()`):
   * what `SET 'key' = 'value'` changes (`table_config.ts` lists them).
   */
  getConfig(): TableConfig {
    return this.#config;
  }

  /**
   * Registers a user-defined function (`udf.ts`) that shadows a built-in
   * of its name (Flink's `createTemporarySystemFunction`).
   * @throws {PlanningError} for a malformed or taken name, or a built-in aggregate's name.
   */
  createTemporarySystemFunction(name: string, fn: UserDefinedFunction): void {
    this.#functions.registerTemporarySystemFunction(name, fn);
  }

  /**
   * Registers a user-defined function found after the built-ins (Flink's
   * `createTemporaryFunction`).
   * @throws {PlanningError} as `createTemporarySystemFunction`, and for a built-in's name.
   */
  createTemporaryFunction(name: string, fn: UserDefinedFunction): void {
    this.#functions.registerTemporaryFunction(name, fn);
  }

  /** Removes a temporary system function. @returns whether there was one. */
  dropTemporarySystemFunction(name: string): boolean {
    return this.#functions.dropTemporarySystemFunction(name);
  }

  /** Removes a temporary function. @returns whether there was one. */
  dropTemporaryFunction(name: string): boolean {
    return this.#functions.dropTemporaryFunction(name);
  }

  /** The StreamExecutionEnvironment the next job is built on. */
  get environment(): StreamExecutionEnvironment {
    return this.#env;
  }

  /**
   * A table over an append-only DataStream (Flink's `fromDataStream`).
   * Each record becomes one `+I` row: an array gives the fields by
   * position, an object by column name.
   *
   * @param stream the records.
   * @param schema the columns, in order.
   * @param options the rowtime attribute and its watermark
   *   ({@linkcode SchemaWatermark}): the scan then stamps each row with its
   *   rowtime and emits watermarks, for window TVFs and interval joins.
   *
   * The conversion runs at the stream's parallelism when it was set on the
   * stream's operator, so the order of each input subtask is kept.
   * @returns the table `SELECT * FROM <the stream>`.
   * @throws {PlanningError} for an empty schema, a repeated column, an
   *   unsupported type, or a watermark on an unknown or non-time column or
   *   with a negative delay, naming it. A record that does not fit the
   *   schema ends the job (no restart) with a message naming the column and value.
   */
  fromDataStream<T>(
    stream: DataStream<T>,
    schema: readonly SchemaColumn[],
    options: FromDataStreamOptions = {},
  ): Table {
    const name = `*anonymous_datastream_source$${++this.#anonymous}*`;
    this.#catalog.registerStream({
      name,
      stream,
      schema,
      env: this.#env,
      mode: "append",
      watermark: options.watermark,
    });
    return this.#planner.scanTable(name);
  }

  /**
   * A table over a DataStream of changes (Flink's `fromChangelogStream`,
   * retract mode): each `Row` is applied with its RowKind, so the table is
   * updating (`+I`, `-U`, `+U`, `-D`) and what reads it is planned for
   * retractions.
   *
   * @param stream the changes; each row's fields in the schema's order.
   * @param schema the columns, in order.
   * @returns the table `SELECT * FROM <the stream>`.
   * @throws {PlanningError} as {@linkcode StreamTableEnvironment.fromDataStream}.
   *   A row whose kind or fields do not fit ends the job (no restart),
   *   naming the column and value.
   */
  fromChangelogStream(stream: DataStream<Row>, schema: readonly SchemaColumn[]): Table {
    const name = `*anonymous_datastream_source$${++this.#anonymous}*`;
    this.#catalog.registerStream({ name, stream, schema, env: this.#env, mode: "retract" });
    return this.#planner.scanTable(name);
  }

  /**
   * Registers `name` as a view (Flink's `createTemporaryView`): of a Table
   * (planned in place wherever the view is read), or of a DataStream with a
   * schema and options (as `fromDataStream`).
   * @throws {PlanningError} when `name` is taken, or as `fromDataStream`.
   */
  createTemporaryView<T>(
    name: string,
    source: Table | DataStream<T>,
    schema?: readonly SchemaColumn[],
    options: FromDataStreamOptions = {},
  ): void {
    this.#catalog.checkFree(name);
    if (source instanceof Table) {
      this.#planner.own(source);
      source.getColumns();
      this.#catalog.register(name, { kind: "query", table: source });
      return;
    }
    if (schema === undefined) {
      throw new PlanningError(`createTemporaryView(${name}) of a DataStream needs a schema`);
    }
    this.#catalog.registerStream({
      name,
      stream: source,
      schema,
      env: this.#env,
      mode: "append",
      watermark: options.watermark,
    });
  }

  /**
   * A Table for one SELECT statement (Flink's `sqlQuery`).
   * @throws {SqlParseError} for SQL that does not parse or is not supported,
   *   with its line and column.
   * @throws {PlanningError} when the statement is not a SELECT, or cannot be planned.
   */
  sqlQuery(sql: string): Table {
    const statements = parseScript(sql);
    const statement = statements[0];
    if (statements.length !== 1 || statement?.k !== "select") {
      throw new PlanningError(
        `sqlQuery takes one SELECT statement; got ${
          statements.length === 1 ? statement!.k : `${statements.length} statements`
        }`,
      );
    }
    const table = this.#planner.table(statement.query, sql, statement.at);
    table.getColumns();
    return table;
  }

  /**
   * Runs one statement (Flink's `executeSql(...).await()`; see the module
   * docs for what each does).
   * @returns what happened; a job's result when a job ran.
   * @throws {SqlParseError} for SQL that does not parse or is not supported.
   * @throws {PlanningError} for a statement that cannot be planned (unknown
   *   table or column, an updating query into an append-only sink, a
   *   second job on this environment...).
   * @throws {JobFailedError} when the job fails for good.
   */
  async executeSql(sql: string): Promise<TableResult> {
    const statements = parseScript(sql);
    if (statements.length !== 1) {
      throw new PlanningError(
        `executeSql takes one statement; got ${statements.length} (use executeScript)`,
      );
    }
    return await this.#execute(statements[0]!, sql);
  }

  /**
   * Runs a script of `;`-separated statements in order (what `weir sql -f` does).
   * @returns one result per statement.
   * @throws as {@linkcode StreamTableEnvironment.executeSql}; statements
   *   after a failing one do not run.
   */
  async executeScript(script: string, options: ScriptOptions = {}): Promise<TableResult[]> {
    const results: TableResult[] = [];
    for (const statement of parseScript(script)) {
      options.onStatement?.(STATEMENT_NAMES[statement.k], positionOf(script, statement.at).line);
      const job = statement.k === "select" || statement.k === "insertSelect" ||
        (statement.k === "insertValues" &&
          this.#catalog.connectorTable(statement.table, script, statement.at).options.connector !==
            "values");
      if (job && this.#jobRan && options.newEnvironment !== undefined) {
        this.#env = options.newEnvironment();
        this.#jobRan = false;
      }
      results.push(await this.#execute(statement, script, options));
    }
    return results;
  }

  /**
   * The plan of one SELECT, printed with each operator's changelog mode
   * (Flink's `explainSql(sql, CHANGELOG_MODE)`).
   * @throws as {@linkcode StreamTableEnvironment.sqlQuery}.
   */
  explainSql(sql: string): string {
    return this.sqlQuery(sql).explain();
  }

  /**
   * An append-only table as a DataStream of `+I` rows (Flink's `toDataStream`).
   * @throws {PlanningError} when the table is updating, naming the operator
   *   that produces the updates (use `toChangelogStream`).
   */
  toDataStream(table: Table): DataStream<Row> {
    const root = this.#planner.plan(table);
    checkSinkMode("toDataStream", "append", root.mode, this.#planner.producer(root));
    return this.#planner.translate(root);
  }

  /**
   * A table as the DataStream of its changelog (Flink's
   * `toChangelogStream`): `+I`, `-U`, `+U`, `-D` rows in `retract` mode
   * (the default), or `+I`, `+U`, `-D` keyed by the GROUP BY keys in `upsert` mode.
   * @throws {PlanningError} for upsert mode after HAVING, or without the
   *   GROUP BY keys selected.
   */
  toChangelogStream(table: Table, mode: "retract" | "upsert" = "retract"): DataStream<Row> {
    return this.#planner.translate(this.#planner.plan(table, { upsert: mode === "upsert" }));
  }

  #claimJob(): void {
    if (this.#jobRan) {
      throw new PlanningError(
        "this StreamTableEnvironment's StreamExecutionEnvironment already ran a job; Weir's environment keeps its operators after execute, so run the next INSERT or SELECT on a new environment (executeScript's newEnvironment option does this)",
      );
    }
    this.#jobRan = true;
  }

  async #runJob(
    stream: DataStream<Row>,
    sink: Sink<Row>,
    name: string,
    statement: string,
    parallelism?: number,
  ): Promise<TableResult> {
    const added = stream.sinkTo(sink).uid(`${name}-sink`).name(`Sink: ${name}`);
    if (parallelism !== undefined) added.setParallelism(parallelism);
    const jobResult = await this.#env.execute(applyJobOptions(this.#config, this.#env, name));
    return { resultKind: "SUCCESS_WITH_CONTENT", statement, jobResult };
  }

  async #execute(
    statement: Statement,
    sql: string,
    options: ScriptOptions = {},
  ): Promise<TableResult> {
    const onQuery = options.onQuery;
    switch (statement.k) {
      case "createTable": {
        const p = positionOf(sql, statement.at);
        const where = ` at line ${p.line}, column ${p.column}`;
        this.#catalog.checkFree(statement.name, where);
        const table = createConnectorTable(statement, this.#connectors, where);
        this.#catalog.register(statement.name, { kind: "connector", table }, where);
        return { resultKind: "SUCCESS", statement: "CREATE TABLE" };
      }
      case "insertValues": {
        const table = this.#catalog.connectorTable(statement.table, sql, statement.at);
        const rows = statement.rows.map((row, r) => valuesRow(row, r, table, sql, statement.at));
        if (table.options.connector === "values") {
          table.rows.push(...rows);
          return { resultKind: "SUCCESS", statement: "INSERT" };
        }
        const sink = this.#planner.sinkOf(table);
        this.#claimJob();
        const stream = this.#env.fromCollection(rows.map((r) => insertRow(r))).name(
          `values for ${table.name}`,
        );
        return await this.#runJob(stream, sink.sink, `insert-into_${table.name}`, "INSERT");
      }
      case "insertSelect": {
        const { table, sink, root } = this.#planner.planInsert(statement, sql);
        onQuery?.(explainPlan(root));
        this.#claimJob();
        return await this.#runJob(
          this.#planner.translate(root),
          sink.sink,
          `insert-into_${table.name}`,
          "INSERT",
        );
      }
      case "select": {
        const root = this.#planner.planQuery(statement.query, sql, statement.at, {});
        onQuery?.(explainPlan(root));
        this.#claimJob();
        const custom = options.selectSink?.(root.columns);
        return await this.#runJob(
          this.#planner.translate(root),
          custom ?? new PrintSink<Row>({ formatter: formatRow }),
          "collect", // Flink's job name for a SELECT's collect job
          "SELECT",
          custom === undefined ? undefined : 1,
        );
      }
      case "createView": {
        const p = positionOf(sql, statement.at);
        this.#catalog.checkFree(statement.name, ` at line ${p.line}, column ${p.column}`);
        const table = this.#planner.table(statement.query, sql, statement.at);
        table.getColumns(); // planned now, so a bad view fails at CREATE VIEW
        this.#catalog.register(statement.name, { kind: "query", table });
        return { resultKind: "SUCCESS", statement: "CREATE VIEW" };
      }
      case "explain": {
        const inner = statement.statement;
        if (inner.k === "select") {
          return explainResult(this.#planner.planQuery(inner.query, sql, inner.at, {}), null);
        }
        if (inner.k === "insertSelect") {
          const { table, root } = this.#planner.planInsert(inner, sql);
          return explainResult(root, {
            table: table.name,
            fields: table.columns.map((c) => c.name),
          });
        }
        const p = positionOf(sql, inner.at);
        throw new PlanningError(
          `EXPLAIN takes a SELECT or an INSERT INTO ... SELECT, not ${
            STATEMENT_NAMES[inner.k]
          }, at line ${p.line}, column ${p.column}`,
        );
      }
      case "set": {
        const p = positionOf(sql, statement.at);
        return executeSet(
          this.#config,
          statement.key,
          statement.value,
          ` at line ${p.line}, column ${p.column}`,
        );
      }
    }
  }
}
