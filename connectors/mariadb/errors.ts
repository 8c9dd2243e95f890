/**
 * Which MariaDB/MySQL server errors a restart cannot fix, decided from the
 * error number alone ({@linkcode classifyMariaDbError}, no I/O), and the
 * error that ends the job once for them ({@linkcode MariaDbRejectedError}).
 *
 * Flink's JDBC sink retries a failed batch `JdbcExecutionOptions.maxRetries`
 * times and then fails the job; in Weir the restart strategy is the retry.
 * A restart replays the same records into the same table with the same
 * statement, so an error the statement or the data cause deterministically
 * comes back every time, and with the default restart strategy (fixed
 * delay, unlimited) the job would restart about once a second forever. These
 * error numbers fail the job without restarts instead, naming the sink, the
 * table and the server's message:
 *
 * | errno | name | why a restart cannot fix it |
 * |-------|------|------------------------------|
 * | 1044, 1045, 1142, 1143 | access denied (database, login, table, column) | the grants are configuration |
 * | 1046, 1049 | no database selected, unknown database | configuration |
 * | 1048 | `ER_BAD_NULL_ERROR` | the record's value is NULL |
 * | 1054 | `ER_BAD_FIELD_ERROR` (unknown column) | the statement names it |
 * | 1062 | `ER_DUP_ENTRY` | a replay inserts the same rows again |
 * | 1064 | `ER_PARSE_ERROR` | the statement's syntax |
 * | 1136 | `ER_WRONG_VALUE_COUNT_ON_ROW` | the statement's shape |
 * | 1146 | `ER_NO_SUCH_TABLE` | the statement names it |
 * | 1264, 1366, 1406 | out of range, wrong value, data too long | the record's value |
 * | 1452 | `ER_NO_REFERENCED_ROW_2` (foreign key) | the record's value |
 *
 * Everything else is transient by default: a lost connection (the driver's
 * `fatal` errors), the server restarting, a lock wait timeout (1205), a
 * deadlock (1213), too many connections (1040), an unknown number. A new
 * code is added here only when a retry can never fix it.
 *
 * @module
 */

import { SuppressRestartsError } from "../../runtime/failure.ts";

/** Permanent MariaDB error numbers, with their server names (see the module docs). */
export const PERMANENT_MARIADB_ERRORS: ReadonlyMap<number, string> = new Map([
  [1044, "ER_DBACCESS_DENIED_ERROR"],
  [1045, "ER_ACCESS_DENIED_ERROR"],
  [1046, "ER_NO_DB_ERROR"],
  [1048, "ER_BAD_NULL_ERROR"],
  [1049, "ER_BAD_DB_ERROR"],
  [1054, "ER_BAD_FIELD_ERROR"],
  [1062, "ER_DUP_ENTRY"],
  [1064, "ER_PARSE_ERROR"],
  [1136, "ER_WRONG_VALUE_COUNT_ON_ROW"],
  [1142, "ER_TABLEACCESS_DENIED_ERROR"],
  [1143, "ER_COLUMNACCESS_DENIED_ERROR"],
  [1146, "ER_NO_SUCH_TABLE"],
  [1264, "ER_WARN_DATA_OUT_OF_RANGE"],
  [1366, "ER_TRUNCATED_WRONG_VALUE_FOR_FIELD"],
  [1406, "ER_DATA_TOO_LONG"],
  [1452, "ER_NO_REFERENCED_ROW_2"],
]);

/** What {@linkcode classifyMariaDbError} decided. */
export type MariaDbErrorClass =
  | { readonly kind: "permanent"; readonly errno: number; readonly name: string }
  | { readonly kind: "transient" };

/**
 * Decides whether a driver error is one a restart cannot fix (see the
 * module docs for the list). Performs no I/O.
 * @param error anything thrown by `npm:mariadb` (or not).
 * @returns `permanent` with the error number and name, or `transient`
 *   (also for errors that are not server errors, and lost connections).
 */
export function classifyMariaDbError(error: unknown): MariaDbErrorClass {
  if (typeof error !== "object" || error === null) return { kind: "transient" };
  const { errno, fatal } = error as { errno?: unknown; fatal?: unknown };
  if (fatal === true || typeof errno !== "number") return { kind: "transient" };
  const name = PERMANENT_MARIADB_ERRORS.get(errno);
  return name === undefined ? { kind: "transient" } : { kind: "permanent", errno, name };
}

/**
 * The server refused a MariaDB sink's statement for a reason a restart
 * cannot fix (a missing table or column, a syntax error, a duplicate key
 * that a replay would hit again): the job fails once. The message names the
 * sink, what it was doing (with the table) and the server's message; the
 * driver's error is the `cause`.
 */
export class MariaDbRejectedError extends SuppressRestartsError {
  /** The server's error number. */
  readonly errno: number;
  /**
   * Builds the error.
   * @param message names the sink, the statement's table, the error number and the server's message.
   * @param errno the server's error number.
   * @param cause the driver's error.
   */
  constructor(message: string, errno: number, cause: unknown) {
    super(message, { cause });
    this.name = "MariaDbRejectedError";
    this.errno = errno;
  }
}

/**
 * Rethrows `error` as a {@linkcode MariaDbRejectedError} when it is
 * permanent, as it is otherwise (the restart strategy retries it).
 * @param error what the driver threw.
 * @param what the sink and what it was doing, e.g. `MariaDbXaSink "out" subtask 0/1 …: INSERT INTO t`.
 * @returns never.
 * @throws {MariaDbRejectedError} for a permanent error; `error` itself otherwise.
 */
export function rethrowMariaDbError(error: unknown, what: string): never {
  const decided = classifyMariaDbError(error);
  if (decided.kind === "transient") throw error;
  const message = error instanceof Error ? error.message : String(error);
  const hint = decided.errno === 1062
    ? " (a restart replays the same rows into the same table, so it would fail again: " +
      "write into an empty table, or use an upsert statement)"
    : "";
  throw new MariaDbRejectedError(
    `${what}: MariaDB refused it with error ${decided.errno} ${decided.name}, which a restart ` +
      `cannot fix: ${message}${hint}`,
    decided.errno,
    error,
  );
}

/**
 * The target table of an INSERT statement, for messages: the identifier
 * after `INTO`, or `"?"` when the statement has none.
 * @param sql the statement.
 */
export function insertTarget(sql: string): string {
  return /\bINTO\s+((?:`[^`]*`|[^\s(`]+)(?:\.(?:`[^`]*`|[^\s(`]+))?)/i.exec(sql)?.[1] ?? "?";
}
