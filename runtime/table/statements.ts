/**
 * The statements of a table environment that run no job: `SET`, `EXPLAIN`,
 * the table `CREATE TABLE` defines, and the job options `SET` leaves for
 * the next job (Flink's `TableEnvironmentImpl.executeInternal` for
 * `SetOperation`, `ExplainOperation`, `CreateTableOperation`). Registering
 * entries (`CREATE TABLE`, `CREATE VIEW`) is the catalog's (`catalog.ts`),
 * done by `table_environment.ts`.
 *
 * | statement | result |
 * |---|---|
 * | `SET 'key' = 'value'` | sets the option in the environment's `TableConfig` (`SUCCESS`) |
 * | `SET 'key'` | one row `(key, value)` of that option |
 * | `SET` | one row `(key, value)` per known option |
 * | `EXPLAIN [CHANGELOG_MODE] SELECT ...` / `INSERT ...` | one row `(result)`: the plan with each node's changelog mode |
 *
 * `EXPLAIN` prints the optimized physical plan with changelog modes whether
 * or not `CHANGELOG_MODE` is written (Weir has no separate abstract syntax
 * tree or execution plan to show: a simplification of Flink's `EXPLAIN`,
 * which prints three sections); an `INSERT` adds the `Sink` node on top.
 *
 * Pure code, but {@linkcode applyJobOptions}, which sets options on the
 * environment that runs the next job.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { executeSet, formatTableResult } from "./statements.ts";
 * import { TableConfig } from "./table_config.ts";
 *
 * const config = new TableConfig();
 * executeSet(config, "table.exec.state.ttl", "1 h", "");
 * const shown = executeSet(config, "table.exec.state.ttl", null, "");
 * assert.deepEqual(shown.rows, [["table.exec.state.ttl", "1 h"]]);
 * assert.match(formatTableResult(shown), /\| table\.exec\.state\.ttl \| 1 h +\|/);
 * ```
 *
 * @module
 */

import type { StreamExecutionEnvironment } from "../api/environment.ts";
import { PlanningError } from "./changelog_mode.ts";
import { explainPlan, type PlanNode } from "./plan.ts";
import { formatValue } from "./row.ts";
import type { Statement } from "./sql_ast.ts";
import type { TableResult } from "./table.ts";
import { TableConfig, TableConfigError } from "./table_config.ts";
import type { ComputedColumn, ConnectorTable, TableConnectorRegistry } from "./table_connectors.ts";
import { compileExpr } from "./expressions.ts";
import type { Column } from "./types.ts";

/**
 * Runs `SET`: with a key and a value sets it; with a key alone shows it;
 * with neither lists every option.
 * @param config the environment's options.
 * @param key the option's key, or `null`.
 * @param value its new value, or `null`.
 * @param where where the statement is (`" at line 1, column 1"`), for messages.
 * @returns `SUCCESS` after a change, else `SUCCESS_WITH_CONTENT` with `key`, `value` rows.
 * @throws {PlanningError} for an unknown key (listing the known ones) or a
 *   bad value (naming key and value), with `where`.
 */
export function executeSet(
  config: TableConfig,
  key: string | null,
  value: string | null,
  where: string,
): TableResult {
  try {
    if (key === null) {
      return {
        resultKind: "SUCCESS_WITH_CONTENT",
        statement: "SET",
        columns: ["key", "value"],
        rows: config.list().map((e) => [e.key, e.value]),
      };
    }
    if (value === null) {
      return {
        resultKind: "SUCCESS_WITH_CONTENT",
        statement: "SET",
        columns: ["key", "value"],
        rows: [[TableConfig.definition(key).key, config.format(key)]],
      };
    }
    config.set(key, value);
    return { resultKind: "SUCCESS", statement: "SET" };
  } catch (error) {
    if (error instanceof TableConfigError) {
      throw new PlanningError(`SET: ${error.message}${where}`, { cause: error });
    }
    throw error;
  }
}

/** The sink an `EXPLAIN INSERT` writes into. */
export interface ExplainedSink {
  /** The table's name. */
  readonly table: string;
  /** Its columns' names. */
  readonly fields: readonly string[];
}

/**
 * The plan of an `EXPLAIN`ed query: {@linkcode explainPlan}'s text, under a
 * `Sink(table=[[t]], fields=[...])` node for an `INSERT`.
 * @returns `SUCCESS_WITH_CONTENT` with one row: the plan's text.
 */
export function explainResult(root: PlanNode, sink: ExplainedSink | null): TableResult {
  let text = explainPlan(root);
  if (sink !== null) {
    const [header, ...lines] = text.trimEnd().split("\n");
    const nested = lines.map((line, i) => (i === 0 ? `+- ${line}` : `   ${line}`));
    text = [
      header,
      `Sink(table=[[${sink.table}]], fields=[${sink.fields.join(", ")}])`,
      ...nested,
    ].join("\n") + "\n";
  }
  return {
    resultKind: "SUCCESS_WITH_CONTENT",
    statement: "EXPLAIN",
    columns: ["result"],
    rows: [[text]],
  };
}

/**
 * Prints a result as Flink's `TableResult.print()` does in tableau form: a
 * boxed table of `columns` and `rows`, or `[INFO] Execute statement
 * succeeded.` for a result without rows. A one-column result of one
 * multi-line value (an `EXPLAIN`) prints the value as it is.
 */
export function formatTableResult(result: TableResult): string {
  const columns = result.columns;
  const rows = result.rows;
  if (columns === undefined || rows === undefined) return "[INFO] Execute statement succeeded.\n";
  if (columns.length === 1 && rows.length === 1 && String(rows[0]![0]).includes("\n")) {
    return String(rows[0]![0]);
  }
  const cells = rows.map((r) => r.map(formatValue));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const rule = `+${widths.map((w) => "-".repeat(w + 2)).join("+")}+`;
  const line = (values: readonly string[]) =>
    `| ${values.map((v, i) => v.padEnd(widths[i]!)).join(" | ")} |`;
  return [rule, line(columns), rule, ...cells.map(line), rule, `${rows.length} row(s) in set`]
    .join("\n") + "\n";
}

/**
 * Applies the job options of `config` to the environment of the next job
 * (`parallelism.default`, `execution.checkpointing.interval`) and picks its
 * name (`pipeline.name`, else `defaultName`).
 * @returns the job's name.
 */
export function applyJobOptions(
  config: TableConfig,
  env: StreamExecutionEnvironment,
  defaultName: string,
): string {
  const parallelism = config.get("parallelism.default");
  if (parallelism !== null) env.setParallelism(parallelism);
  const interval = config.get("execution.checkpointing.interval");
  if (interval > 0) env.enableCheckpointing(interval);
  return config.get("pipeline.name") ?? defaultName;
}

/**
 * The connector table a `CREATE TABLE` defines, checked: its connector
 * exists and accepts its options, its PRIMARY KEY names distinct columns
 * of it, its WATERMARK column is TIMESTAMP or BIGINT (Flink's rowtime).
 * @param where where the statement is, for messages.
 * @throws {PlanningError} for a missing or unknown connector (listing the
 *   known ones), a computed column that does not compile or is a key, a
 *   bad key or watermark column, or
 *   options the connector refuses, naming the table.
 */
export function createConnectorTable(
  statement: Extract<Statement, { k: "createTable" }>,
  connectors: TableConnectorRegistry,
  where: string,
): ConnectorTable {
  const connectorName = statement.options.connector;
  if (connectorName === undefined) {
    throw new PlanningError(`CREATE TABLE ${statement.name} needs a 'connector' option${where}`);
  }
  const connector = connectors.get(connectorName);
  if (connector === undefined) {
    throw new PlanningError(
      `Could not find a connector for identifier '${connectorName}' (table ${statement.name}${where}); available: ${
        connectors.identifiers.join(", ")
      }`,
    );
  }
  const columns: Column[] = [];
  const computedColumns: ComputedColumn[] = [];
  statement.columns.forEach((c, position) => {
    if (c.computed !== null) computedColumns.push({ name: c.name, expr: c.computed, position });
    else if (c.type !== null) columns.push({ name: c.name, type: c.type });
    else throw new PlanningError(`column ${c.name} of ${statement.name} has no type${where}`);
  });
  const table: ConnectorTable = {
    name: statement.name,
    columns,
    options: statement.options,
    rows: [],
    primaryKey: statement.primaryKey,
    watermark: statement.watermark,
    ...(computedColumns.length === 0 ? {} : { computedColumns }),
  };
  checkKeyAndWatermark(table, where);
  connector.validate(table);
  return table;
}

/**
 * Checks a CREATE TABLE's PRIMARY KEY (distinct columns of the table) and
 * WATERMARK column (a TIMESTAMP or BIGINT column of the table: Flink's
 * rowtime attribute).
 * @throws {PlanningError} naming the column and the table.
 */
function checkKeyAndWatermark(table: ConnectorTable, where: string): void {
  const names = table.columns.map((c) => c.name);
  const computed = table.computedColumns ?? [];
  for (const c of computed) {
    if (names.includes(c.name) || computed.filter((x) => x.name === c.name).length > 1) {
      throw new PlanningError(`${table.name} names column ${c.name} twice${where}`);
    }
    if (table.primaryKey?.includes(c.name)) {
      throw new PlanningError(
        `PRIMARY KEY column ${c.name} of ${table.name} is a computed column; a key must be physical${where}`,
      );
    }
  }
  if (table.primaryKey !== null) {
    for (const key of table.primaryKey) {
      if (!names.includes(key)) {
        throw new PlanningError(
          `PRIMARY KEY column ${key} of ${table.name} is not a column of it${where}; columns: ${
            names.join(", ")
          }`,
        );
      }
    }
    if (new Set(table.primaryKey).size !== table.primaryKey.length) {
      throw new PlanningError(`PRIMARY KEY of ${table.name} names a column twice${where}`);
    }
  }
  if (table.watermark !== null) {
    const virtual = computed.find((c) => c.name === table.watermark!.column);
    const column = virtual === undefined
      ? table.columns.find((c) => c.name === table.watermark!.column)
      : computedColumnOf(table, virtual, where);
    if (column === undefined) {
      throw new PlanningError(
        `WATERMARK FOR ${table.watermark.column}: ${table.name} has no such column${where}`,
      );
    }
    if (column.type.family !== "TIMESTAMP" && column.type.family !== "BIGINT") {
      throw new PlanningError(
        `WATERMARK FOR ${column.name} of ${table.name}: the rowtime column must be TIMESTAMP(3) or BIGINT (epoch ms), not ${column.type.name}${where}`,
      );
    }
  }
}

/**
 * A computed column with the type of its expression over the table's
 * physical columns.
 * @throws {PlanningError} when the expression does not compile, naming the column.
 */
function computedColumnOf(table: ConnectorTable, c: ComputedColumn, where: string): Column {
  try {
    const compiled = compileExpr(c.expr, {
      columns: table.columns,
      inputName: `the physical columns of ${table.name}`,
      locate: () => "",
      aggregatesAllowed: false,
    });
    return { name: c.name, type: compiled.type };
  } catch (error) {
    throw new PlanningError(
      `computed column ${c.name} of ${table.name}: ${
        error instanceof Error ? error.message : String(error)
      }${where}`,
      { cause: error },
    );
  }
}
