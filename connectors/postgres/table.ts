/**
 * The `postgres` table connector: a sink of a query's rows into a
 * PostgreSQL table, exactly-once through prepared transactions
 * ({@linkcode PostgresPreparedSink}), with Flink's JDBC connector options.
 * The database table must exist with the SQL table's columns (by name);
 * with a PRIMARY KEY, a unique index on its key columns.
 *
 * ```sql
 * CREATE TABLE totals (customer VARCHAR, total BIGINT, PRIMARY KEY (customer) NOT ENFORCED)
 *   WITH ('connector' = 'postgres', 'url' = 'jdbc:postgresql://127.0.0.1:5432/shop',
 *         'table-name' = 'totals', 'username' = 'postgres');
 * ```
 *
 * ## Modes
 *
 * - **With a PRIMARY KEY: upsert.** `+I`/`+U` upsert by the key (`INSERT …
 *   ON CONFLICT (key) DO UPDATE`), `-D` and `-U` delete the key, and each
 *   batch is reduced to the last change per key, so a `-U` and its `+U`
 *   are one upsert (Flink's JDBC sink; `changelog_batch.ts`,
 *   `connectors/_table/upsert_sink.ts`). The key must be a unique key of
 *   the query's result (the GROUP BY keys); that is not checked.
 * - **Without: append-only.** Every `+I` is inserted; a query that produces
 *   updates is refused at planning, naming the operator that produces them.
 *
 * ## Options
 *
 * | option | default | meaning |
 * |---|---|---|
 * | `url` | | `jdbc:postgresql://host[:port]/database` (or `postgres://…`, without user) |
 * | `host`, `port`, `database` | `127.0.0.1`, 5432 | instead of `url` |
 * | `table-name` | the SQL table's name | the database table (`name` or `schema.name`, case-sensitive) |
 * | `username` | required | user |
 * | `password` | none | password |
 * | `sink.buffer-flush.max-rows` | 1000 | rows (upsert: distinct keys) per statement |
 * | `sink.delivery-guarantee` | `exactly-once` | `exactly-once` (prepared transactions: the server needs `max_prepared_transactions` > 0), `at-least-once` (autocommit at every barrier), `none` |
 * | `sink.gid-prefix` | `weir.<database>.<table-name>` | the prepared transactions' gid prefix (`gid.ts`): unique per sink among the jobs writing to the server |
 *
 * Exactly-once needs checkpointing (a bounded job's final checkpoint
 * commits the rest). A prepared transaction holds its row locks until its
 * checkpoint completes: an upsert of the same key in the next interval
 * waits for that commit.
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
import { PostgresPreparedSink } from "./prepared_sink.ts";
import type { PostgresValue } from "./statements.ts";

const OPTIONS = [...DATABASE_TABLE_OPTIONS, "sink.gid-prefix"];

/**
 * The `postgres://` URL a `postgres` table's sink connects with.
 * @throws {PlanningError} for a missing `username` or a bad address.
 */
export function postgresUrl(table: ConnectorTable): string {
  const address = databaseAddress(table, ["postgresql", "postgres"], 5432);
  const user = encodeURIComponent(stringOption(table, "username"));
  const password = table.options.password;
  const auth = password === undefined ? user : `${user}:${encodeURIComponent(password)}`;
  return `postgres://${auth}@${address.host}:${address.port}/${
    encodeURIComponent(address.database)
  }`;
}

/** The default gid prefix: `weir.<database>.<table>`, cut to the characters and length gids allow. */
function defaultGidPrefix(table: ConnectorTable, target: string): string {
  const database = databaseAddress(table, ["postgresql", "postgres"], 5432).database;
  return `weir.${database}.${target}`.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 64);
}

function sink(table: ConnectorTable): PostgresPreparedSink<Row> {
  const url = postgresUrl(table);
  const target = table.options["table-name"] ?? table.name;
  const { batchSize, deliveryGuarantee: guarantee } = databaseSinkOptions(table);
  try {
    return new PostgresPreparedSink<Row>({
      url,
      table: target,
      columns: table.columns.map((c) => c.name),
      values: (row) => row.fields as readonly PostgresValue[],
      gidPrefix: table.options["sink.gid-prefix"] ?? defaultGidPrefix(table, target),
      batchSize,
      deliveryGuarantee: guarantee,
      preparedTransactionsRemedy:
        `set 'sink.delivery-guarantee' = 'at-least-once' in the WITH options of table ${table.name} ` +
        "(autocommit batches at every checkpoint, no prepared transactions; rows replayed after a " +
        "failure are written again, idempotently when the table has a PRIMARY KEY)",
      ...(table.primaryKey === null
        ? {}
        : { changelog: { keyColumns: table.primaryKey, isDelete: deletesKey } }),
    });
  } catch (error) {
    throw new PlanningError(`table ${table.name}: ${(error as Error).message}`, { cause: error });
  }
}

/** The `postgres` table connector (see the module docs). */
export const postgresTableConnector: TableConnector = {
  identifier: "postgres",
  validate(table) {
    checkTableOptions(table, OPTIONS);
    sink(table);
  },
  sink: (table) => ({
    sink: sink(table),
    accepts: table.primaryKey === null ? "append" : "updates",
  }),
};
