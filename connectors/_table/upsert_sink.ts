/**
 * What the SQL database table connectors (`mariadb`, `postgres`) share:
 * which changes of a changelog delete their key, the `url` option, the
 * WITH options they take in common ({@linkcode DATABASE_TABLE_OPTIONS},
 * {@linkcode databaseSinkOptions}); and
 * the refusal of a PRIMARY KEY by the connectors that cannot keep one
 * ({@linkcode refusePrimaryKey}).
 *
 * ## Upsert mode (Flink's JDBC upsert sink)
 *
 * A table with a PRIMARY KEY takes a changelog: `+I` and `+U` upsert the
 * row by its key; `-D` and `-U` delete it ({@linkcode deletesKey}), as
 * Flink's `TableBufferReducedStatementExecutor` does. The sinks reduce each
 * batch to the last change per key, so a `-U` followed by its `+U` is one
 * upsert, and a `-U` whose `+U` a HAVING filtered out deletes the row that
 * no longer belongs to the result. This is exact when the key is a unique
 * key of the query's result (a GROUP BY's keys); Flink adds a
 * `SinkUpsertMaterializer` when it is not, which Weir does not have.
 *
 * @module
 */

import type { DeliveryGuarantee } from "../../runtime/api/sink_v2.ts";
import { PlanningError } from "../../runtime/table/changelog_mode.ts";
import { choiceOption, integerOption } from "../../runtime/table/connector_options.ts";
import type { Row } from "../../runtime/table/row.ts";
import type { ConnectorTable } from "../../runtime/table/table_connectors.ts";

/** Whether a change deletes its key in upsert mode (`-D` and `-U`; see the module docs). */
export function deletesKey(row: Row): boolean {
  return row.kind === "DELETE" || row.kind === "UPDATE_BEFORE";
}

/** Where a database table connector connects: parsed from `url` or from separate options. */
export interface DatabaseAddress {
  /** Host name or address. */
  readonly host: string;
  /** TCP port. */
  readonly port: number;
  /** The database. */
  readonly database: string;
}

/**
 * The address of a database table: `url` (`jdbc:<scheme>://host[:port]/db`,
 * as Flink's JDBC connector takes it, or `<scheme>://host[:port]/db`), or
 * the options `host`, `port` and `database`. `url` and those options
 * together are refused.
 * @param table the table.
 * @param schemes the URL schemes accepted (e.g. `["mariadb", "mysql"]`).
 * @param defaultPort the port when none is given.
 * @throws {PlanningError} naming what is missing or malformed.
 */
export function databaseAddress(
  table: ConnectorTable,
  schemes: readonly string[],
  defaultPort: number,
): DatabaseAddress {
  const { url, host, port, database } = table.options;
  if (url !== undefined) {
    if (host !== undefined || port !== undefined || database !== undefined) {
      throw new PlanningError(
        `table ${table.name} gives 'url' and also 'host', 'port' or 'database': give one or the other`,
      );
    }
    const m = /^(?:jdbc:)?([a-z]+):\/\/([^/:?#@]+)(?::(\d+))?\/([^/?#]+)\/?$/i.exec(url.trim());
    if (m === null || !schemes.includes(m[1]!.toLowerCase())) {
      throw new PlanningError(
        `option 'url' of table ${table.name} must be jdbc:${
          schemes[0]
        }://host[:port]/database (schemes: ${
          schemes.join(", ")
        }; user and password go in 'username' and 'password'): current value is '${url}'`,
      );
    }
    return {
      host: m[2]!,
      port: m[3] === undefined ? defaultPort : checkPort(table, m[3]),
      database: decodeURIComponent(m[4]!),
    };
  }
  if (database === undefined) {
    throw new PlanningError(
      `table ${table.name} needs option 'url' (jdbc:${
        schemes[0]
      }://host:port/database) or 'database'`,
    );
  }
  return {
    host: host ?? "127.0.0.1",
    port: port === undefined ? defaultPort : checkPort(table, port),
    database,
  };
}

function checkPort(table: ConnectorTable, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > 65535) {
    throw new PlanningError(
      `the port of table ${table.name} must be 1-65535: current value is '${text}'`,
    );
  }
  return n;
}

/**
 * The WITH options every database table connector takes, as Flink's JDBC
 * connector names them: the address ({@linkcode databaseAddress}), the
 * credentials, `table-name` and the sink options of
 * {@linkcode databaseSinkOptions}. A connector adds its own (e.g. its
 * transaction id prefix).
 */
export const DATABASE_TABLE_OPTIONS: readonly string[] = [
  "url",
  "host",
  "port",
  "database",
  "table-name",
  "username",
  "password",
  "sink.buffer-flush.max-rows",
  "sink.delivery-guarantee",
];

/** The sink options every database table connector takes (Flink's JDBC sink options). */
export interface DatabaseSinkOptions {
  /** `sink.buffer-flush.max-rows`: rows per batch, at least 1; 1000 when not set. */
  readonly batchSize: number;
  /** `sink.delivery-guarantee`: `exactly-once` (the default), `at-least-once` or `none`. */
  readonly deliveryGuarantee: DeliveryGuarantee;
}

/**
 * Reads the sink options every database table connector takes.
 * @throws {PlanningError} for a value out of range or not among the choices, naming the option.
 */
export function databaseSinkOptions(table: ConnectorTable): DatabaseSinkOptions {
  return {
    batchSize: integerOption(table, "sink.buffer-flush.max-rows", { min: 1, fallback: 1000 }),
    deliveryGuarantee: choiceOption<DeliveryGuarantee>(
      table,
      "sink.delivery-guarantee",
      ["exactly-once", "at-least-once", "none"],
      "exactly-once",
    ),
  };
}

/**
 * Refuses a PRIMARY KEY on a table whose connector cannot keep its meaning
 * (Flink's `kafka` connector refuses it the same way: "doesn't support
 * defining PRIMARY KEY constraint on the table, because it can't guarantee
 * the semantic of primary key").
 * @throws {PlanningError} naming the table and the connector.
 */
export function refusePrimaryKey(table: ConnectorTable): void {
  if (table.primaryKey === null) return;
  throw new PlanningError(
    `table ${table.name}: connector '${table.options.connector}' doesn't support a PRIMARY KEY (${
      table.primaryKey.join(", ")
    }), because it can't guarantee its meaning; write updates into a 'mariadb' or 'postgres' table with a key`,
  );
}
