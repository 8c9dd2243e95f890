/**
 * The `mariadb` table connector: a sink of a query's rows into a MariaDB or
 * MySQL table, exactly-once through the XA sink ({@linkcode mariaDbXaSink}),
 * with Flink's JDBC connector options. The database table must exist, with
 * the SQL table's columns (by name); with a PRIMARY KEY, its key must be the
 * database table's primary key or a unique key.
 *
 * ```sql
 * CREATE TABLE totals (customer VARCHAR, total BIGINT, PRIMARY KEY (customer) NOT ENFORCED)
 *   WITH ('connector' = 'mariadb', 'url' = 'jdbc:mariadb://127.0.0.1:3306/test',
 *         'table-name' = 'totals', 'username' = 'root');
 * INSERT INTO totals SELECT customer, SUM(amount) FROM orders GROUP BY customer;
 * ```
 *
 * ## Modes
 *
 * - **With a PRIMARY KEY: upsert.** `+I`/`+U` upsert by the key
 *   (`INSERT … ON DUPLICATE KEY UPDATE`), `-D` and `-U` delete the key,
 *   and each batch is reduced to the last change per key
 *   (`changelog_batch.ts`), so a `-U` and its `+U` are one upsert (Flink's
 *   JDBC sink; `connectors/_table/upsert_sink.ts`). The sink takes any
 *   query; its key must be a unique key of the query's result (the GROUP
 *   BY keys), which is not checked (Flink adds a materializer otherwise).
 * - **Without: append-only.** Every `+I` is inserted; a query that produces
 *   updates is refused at planning, naming the operator that produces them.
 *
 * ## Options
 *
 * | option | default | meaning |
 * |---|---|---|
 * | `url` | | `jdbc:mariadb://host[:port]/database` (or `jdbc:mysql://`, or without `jdbc:`) |
 * | `host`, `port`, `database` | `127.0.0.1`, 3306 | instead of `url` |
 * | `table-name` | the SQL table's name | the database table (`name` or `schema.name`) |
 * | `username` | required | user |
 * | `password` | none | password |
 * | `sink.buffer-flush.max-rows` | 1000 | rows (upsert: distinct keys) per statement |
 * | `sink.delivery-guarantee` | `exactly-once` | `exactly-once` (XA transactions, committed when a checkpoint completes), `at-least-once` (autocommit at every barrier), `none` |
 * | `sink.xid-prefix` | from the sink's uid | the XA xid prefix (see `xid.ts`): give each job writing to a server its own |
 *
 * Exactly-once needs checkpointing (a bounded job's final checkpoint
 * commits the rest). A prepared XA transaction holds its row locks until
 * its checkpoint completes: an upsert of the same key in the next
 * checkpoint interval waits for that commit (the `xa_sink.ts` caveat).
 *
 * Values go as they are held (`types.ts`): TIMESTAMP as its text
 * `YYYY-MM-DD HH:MM:SS.fff`, which a `DATETIME(3)` column takes.
 *
 * @module
 */

import { PlanningError } from "../../runtime/table/changelog_mode.ts";
import { checkTableOptions, stringOption } from "../../runtime/table/connector_options.ts";
import type { Row } from "../../runtime/table/row.ts";
import type { ConnectorTable, TableConnector } from "../../runtime/table/table_connectors.ts";
import {
  DATABASE_TABLE_OPTIONS,
  databaseAddress,
  databaseSinkOptions,
  deletesKey,
} from "../_table/upsert_sink.ts";
import type { MariaDbConnectionOptions } from "./connection.ts";
import { quoteIdentifier } from "./statement.ts";
import { upsertSql } from "./upsert_sink.ts";
import { mariaDbXaSink } from "./xa_sink.ts";

const OPTIONS = [...DATABASE_TABLE_OPTIONS, "sink.xid-prefix"];

/**
 * The connection of a `mariadb` table.
 * @throws {PlanningError} for a missing `username` or a bad address.
 */
export function mariaDbConnection(table: ConnectorTable): MariaDbConnectionOptions {
  const address = databaseAddress(table, ["mariadb", "mysql"], 3306);
  const password = table.options.password;
  return {
    host: address.host,
    port: address.port,
    database: address.database,
    user: stringOption(table, "username"),
    ...(password === undefined ? {} : { password }),
  };
}

/**
 * The one-row statement a `mariadb` table's rows go through: an upsert by
 * its PRIMARY KEY, or a plain INSERT.
 * @throws {PlanningError} for a bad table or column name.
 */
export function mariaDbStatement(table: ConnectorTable): string {
  const target = table.options["table-name"] ?? table.name;
  const columns = table.columns.map((c) => c.name);
  try {
    if (table.primaryKey !== null) {
      return upsertSql({ table: target, columns, keyColumns: table.primaryKey });
    }
    return `INSERT INTO ${quoteIdentifier(target, "table-name")} (${
      columns.map((c) => quoteIdentifier(c, "column")).join(", ")
    }) VALUES (${columns.map(() => "?").join(", ")})`;
  } catch (error) {
    throw new PlanningError(`table ${table.name}: ${(error as Error).message}`, { cause: error });
  }
}

function sink(table: ConnectorTable) {
  const connection = mariaDbConnection(table);
  const sql = mariaDbStatement(table);
  const target = table.options["table-name"] ?? table.name;
  const { batchSize, deliveryGuarantee: guarantee } = databaseSinkOptions(table);
  const prefix = table.options["sink.xid-prefix"];
  const keyIndexes = (table.primaryKey ?? []).map((k) =>
    table.columns.findIndex((c) => c.name === k)
  );
  try {
    return mariaDbXaSink<Row>({
      connection,
      sql,
      parameters: (row) => row.fields,
      deliveryGuarantee: guarantee,
      batchSize,
      ...(prefix === undefined ? {} : { xidPrefix: prefix }),
      ...(table.primaryKey === null ? {} : {
        changelog: {
          table: target,
          keyColumns: table.primaryKey,
          key: (row: Row) => keyIndexes.map((i) => row.fields[i] ?? null),
          isDelete: deletesKey,
        },
      }),
    });
  } catch (error) {
    throw new PlanningError(`table ${table.name}: ${(error as Error).message}`, { cause: error });
  }
}

/** The `mariadb` table connector (see the module docs). */
export const mariaDbTableConnector: TableConnector = {
  identifier: "mariadb",
  validate(table) {
    checkTableOptions(table, OPTIONS);
    sink(table);
  },
  sink: (table) => ({
    sink: sink(table),
    accepts: table.primaryKey === null ? "append" : "updates",
  }),
};
