/**
 * The PostgreSQL driver (`postgres` from npm, pinned) and the connections
 * the sinks open with it. Each sink writer and committer has its own
 * single connection (`max: 1`), so statements run in order on one session.
 *
 * @module
 */

import postgres from "npm:postgres@3.4.9";

/** A driver client (one connection). */
export type Sql = postgres.Sql<Record<string, never>>;

/** How a sink connects. */
export interface ConnectOptions {
  /** `postgres://user:password@host:port/database?sslmode=…` */
  readonly url: string;
  /**
   * Sessions start read-only (`default_transaction_read_only`): a statement
   * outside the writer's `BEGIN READ WRITE` fails instead of autocommitting,
   * even on a connection the driver opened again behind the writer's back.
   */
  readonly readOnlyByDefault?: boolean;
  /** Called when the connection closes, for any reason. */
  readonly onClose?: () => void;
  /** `application_name` of the session (visible in `pg_stat_activity`). */
  readonly applicationName: string;
}

/** Opens a one-connection client (it connects at the first query). */
export function connect(options: ConnectOptions): Sql {
  const connection: Record<string, string> = { application_name: options.applicationName };
  if (options.readOnlyByDefault) connection.default_transaction_read_only = "on";
  return postgres(options.url, {
    max: 1,
    connection,
    onnotice: () => {},
    ...(options.onClose === undefined ? {} : { onclose: options.onClose }),
  }) as unknown as Sql;
}

/** `host:port/database` of a URL, for messages (never the password). */
export function describeServer(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname || "/"}`;
  } catch {
    return "(unparsable url)";
  }
}

/** Closes a client at once; in-flight statements fail, an open transaction is rolled back by the server. */
export async function closeNow(sql: Sql): Promise<void> {
  await sql.end({ timeout: 0 });
}

/** The values of column `name` in a result's rows, in order. */
export function columnValues(rows: readonly unknown[], name: string): unknown[] {
  return rows.map((row) => (row as Record<string, unknown>)[name]);
}
