/**
 * Which PostgreSQL errors a restart cannot fix, decided from the SQLSTATE
 * alone ({@linkcode classifySqlState}, no I/O), shared by the PostgreSQL
 * sinks (`prepared_writer.ts`, `autocommit_writer.ts`, `upsert_sink.ts`)
 * and the write-ahead-log target (`connectors/wal/postgres_wal_target.ts`).
 *
 * A restart replays the same records into the same table with the same
 * statement; an error the statement, the schema or the data cause comes
 * back every time, and under the default restart strategy (fixed delay,
 * unlimited) the job would restart about once a second forever. Flink's
 * JDBC sink retries `maxRetries` times and then fails; in Weir the restart
 * strategy is the retry, so these SQLSTATE classes fail the job once
 * ({@linkcode PostgresRejectedError}, a `SuppressRestartsError`):
 *
 * | class | meaning | e.g. |
 * |-------|---------|------|
 * | `22` | data exception | `22P02` invalid text representation, `22003` out of range |
 * | `23` | integrity constraint violation | `23505` unique_violation (a replay inserts the same keys again), `23502` not_null_violation |
 * | `28` | invalid authorization | `28P01` wrong password |
 * | `3D` | invalid catalog name | `3D000` the database does not exist |
 * | `3F` | invalid schema name | `3F000` |
 * | `42` | syntax error or access rule violation | `42P01` undefined_table, `42703` undefined_column, `42601` syntax_error, `42804` datatype_mismatch, `42501` insufficient_privilege |
 * | `0A` | feature not supported | |
 *
 * Everything else is transient: connection exceptions (class `08`), the
 * server shutting down or starting (`57P01`–`57P03`), too many connections
 * (`53300`), serialization failures and deadlocks (class `40`), lock
 * timeouts (`55P03`), the driver's own connection codes, and errors
 * without a SQLSTATE.
 *
 * @module
 */

import { SuppressRestartsError } from "../../runtime/failure.ts";

/** SQLSTATE classes (first two characters) a restart cannot fix (see the module docs). */
export const PERMANENT_SQLSTATE_CLASSES: ReadonlySet<string> = new Set([
  "22",
  "23",
  "28",
  "3D",
  "3F",
  "42",
  "0A",
]);

/** What {@linkcode classifySqlState} decided. */
export type SqlStateClass =
  | { readonly kind: "permanent"; readonly sqlState: string }
  | { readonly kind: "transient" };

/**
 * The SQLSTATE of a driver error: its `code` when that is five characters
 * of `[0-9A-Z]` (the driver also puts its own codes such as
 * `CONNECTION_CLOSED` there), otherwise `undefined`.
 */
export function sqlStateOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * Decides whether a driver error is one a restart cannot fix. Performs no I/O.
 * @param error anything the `postgres` driver threw (or not).
 * @returns `permanent` with its SQLSTATE, or `transient` (also without a SQLSTATE).
 */
export function classifySqlState(error: unknown): SqlStateClass {
  const sqlState = sqlStateOf(error);
  if (sqlState === undefined || !PERMANENT_SQLSTATE_CLASSES.has(sqlState.slice(0, 2))) {
    return { kind: "transient" };
  }
  return { kind: "permanent", sqlState };
}

/**
 * PostgreSQL refused a sink's statement for a reason a restart cannot fix
 * (see the module docs): the job fails once. The message names the sink,
 * the statement's table and the server's message; the driver's error is
 * the `cause`.
 */
export class PostgresRejectedError extends SuppressRestartsError {
  /** The server's SQLSTATE. */
  readonly sqlState: string;
  /**
   * Builds the error.
   * @param message names the sink, what it did (with the table) and the server's message.
   * @param sqlState the SQLSTATE.
   * @param cause the driver's error.
   */
  constructor(message: string, sqlState: string, cause: unknown) {
    super(message, { cause });
    this.name = "PostgresRejectedError";
    this.sqlState = sqlState;
  }
}

/**
 * The error to throw for a failed statement: a
 * {@linkcode PostgresRejectedError} when the SQLSTATE is permanent, a plain
 * `Error` (which the restart strategy retries) otherwise; both carry
 * `message` (with the server's `detail`, e.g. `Key (id)=(3) already
 * exists.`, when permanent) and have `error` as their cause.
 * @param error what the driver threw.
 * @param message the sink, what failed and the server's message.
 */
export function statementFailure(error: unknown, message: string): Error {
  const decided = classifySqlState(error);
  if (decided.kind === "transient") return new Error(message, { cause: error });
  const hint = decided.sqlState === "23505"
    ? " (a restart replays the same rows into the same table, so it would fail again: write " +
      "into an empty table, or use PostgresUpsertSink)"
    : "";
  const detail = (error as { detail?: unknown }).detail;
  const detailText = typeof detail === "string" && detail.length > 0 && !message.includes(detail)
    ? ` (${detail})`
    : "";
  return new PostgresRejectedError(
    `${message}${detailText}${hint} [SQLSTATE ${decided.sqlState}: a restart cannot fix it]`,
    decided.sqlState,
    error,
  );
}
