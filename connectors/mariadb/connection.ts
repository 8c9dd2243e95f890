/**
 * Connections of the MariaDB sinks (through `npm:mariadb`), and how their
 * errors are classified.
 *
 * @module
 */

import mariadb from "npm:mariadb@3.5.4";
import { logger } from "../../runtime/log.ts";
import { checkOptions, type OptionsShape } from "../../runtime/api/options_check.ts";

/** The known keys of {@linkcode MariaDbConnectionOptions} and the kinds of their values. */
const CONNECTION_OPTIONS: OptionsShape<MariaDbConnectionOptions> = {
  host: "string",
  port: "number",
  socketPath: "string",
  user: "any",
  password: "string",
  database: "any",
  connectTimeoutMs: "number",
  driverOptions: "object",
};

const log = logger("mariadb");

/** Where the server is and who connects: handed to `mariadb.createConnection`. */
export interface MariaDbConnectionOptions {
  /** Host name or address (default `"127.0.0.1"`). */
  readonly host?: string;
  /** TCP port (default 3306). */
  readonly port?: number;
  /** A Unix socket path instead of host and port. */
  readonly socketPath?: string;
  /** User name. */
  readonly user: string;
  /** Password (default none). */
  readonly password?: string;
  /** The database the sink's statements and its commit log use. */
  readonly database: string;
  /** Connect timeout in ms (default 10 000). */
  readonly connectTimeoutMs?: number;
  /** Further `mariadb` connection options (TLS, charset, …), passed as they are. */
  readonly driverOptions?: Readonly<Record<string, unknown>>;
}

/** The part of a driver connection the sinks use. */
export interface SqlConnection {
  /** Runs one statement; `?` placeholders are filled from `values` client-side. */
  query(sql: string, values?: readonly unknown[]): Promise<unknown>;
  /** The server's connection id (for `KILL` and logs). */
  readonly threadId: number | null;
  /** Ends the connection gracefully. */
  end(): Promise<void>;
  /** Drops the socket at once. */
  destroy(): void;
}

/**
 * Checks connection options.
 * @param options the candidate.
 * @param where who passed them, for the message.
 * @returns `options`.
 * @throws {TypeError} when `user` or `database` is not a non-empty string,
 *   or an option has the wrong type (`port: "3306"`).
 * @throws {RangeError} for an unknown option (`checkOptions`).
 */
export function checkConnectionOptions(
  options: MariaDbConnectionOptions,
  where: string,
): MariaDbConnectionOptions {
  checkOptions(`${where}: connection`, options, CONNECTION_OPTIONS);
  if (typeof options?.user !== "string" || options.user.length === 0) {
    throw new TypeError(
      `${where}: connection.user must be a non-empty string: current value is ${
        JSON.stringify(options?.user)
      }`,
    );
  }
  if (typeof options.database !== "string" || options.database.length === 0) {
    throw new TypeError(
      `${where}: connection.database must be a non-empty string: current value is ${
        JSON.stringify(options.database)
      }`,
    );
  }
  return options;
}

/**
 * Opens a connection (autocommit on, numbers as JS numbers where safe).
 * @param options where to connect.
 * @returns the connection.
 * @throws the driver's error when the server cannot be reached or refuses.
 */
export async function openConnection(options: MariaDbConnectionOptions): Promise<SqlConnection> {
  const config: Record<string, unknown> = {
    ...options.driverOptions,
    user: options.user,
    database: options.database,
    connectTimeout: options.connectTimeoutMs ?? 10_000,
    bigIntAsNumber: false,
    insertIdAsNumber: true,
    decimalAsNumber: false,
  };
  if (options.socketPath !== undefined) config.socketPath = options.socketPath;
  else {
    config.host = options.host ?? "127.0.0.1";
    config.port = options.port ?? 3306;
  }
  if (options.password !== undefined) config.password = options.password;
  const connection = await mariadb.createConnection(
    config as Parameters<typeof mariadb.createConnection>[0],
  );
  // The driver also emits a lost socket as an 'error' event, which would be
  // uncaught without a listener; the pending or next query rejects with the
  // same error, and that is where the sinks handle it.
  const threadId = connection.threadId;
  connection.on("error", (e: Error) => {
    log.debug(`connection ${threadId} to ${describeServer(options)} failed: ${e.message}`);
  });
  return connection as unknown as SqlConnection;
}

/**
 * Where `options` connect, for logs and errors: `user@host:port/database`
 * or `user@socketPath/database`.
 */
export function describeServer(options: MariaDbConnectionOptions): string {
  const at = options.socketPath ?? `${options.host ?? "127.0.0.1"}:${options.port ?? 3306}`;
  return `${options.user}@${at}/${options.database}`;
}

/** `ER_XAER_NOTA`: the server holds no such xid (prepared, or attached to this connection). */
export const ER_XAER_NOTA = 1397;

/** The server error number of `error`, or `undefined` when it is not a server error. */
export function sqlErrno(error: unknown): number | undefined {
  const errno = (error as { errno?: unknown } | null)?.errno;
  return typeof errno === "number" ? errno : undefined;
}

/**
 * Whether `error` lost the connection (server gone, socket closed, killed):
 * the driver marks such errors `fatal`, and a new connection may succeed.
 */
export function isConnectionLost(error: unknown): boolean {
  return (error as { fatal?: unknown } | null)?.fatal === true;
}

/**
 * Releases a connection without waiting for the server: `destroy` drops the
 * socket, which ends an active (unprepared) XA transaction as a crash does.
 * @param connection the connection, or `undefined`.
 */
export function releaseConnection(connection: SqlConnection | undefined): void {
  if (connection === undefined) return;
  try {
    connection.destroy();
  } catch {
    // Already closed: nothing to release.
  }
}
