/**
 * The PostgreSQL connectors' errors, and the pure classification of what
 * the driver (`postgres` from npm) throws: an error a reconnect may fix
 * (the server restarted, the connection was terminated) versus one it
 * cannot.
 *
 * @module
 */

import { SuppressRestartsError } from "../../runtime/failure.ts";

/**
 * What {@linkcode PreparedTransactionsDisabledError} suggests besides
 * enabling prepared transactions, for a DataStream `PostgresPreparedSink`.
 */
export const DATASTREAM_REMEDY =
  "use PostgresUpsertSink for idempotent writes without transactions";

/**
 * The server has `max_prepared_transactions = 0`, so `PREPARE TRANSACTION`
 * fails there. A restart cannot fix it, so the job fails once.
 */
export class PreparedTransactionsDisabledError extends SuppressRestartsError {
  /**
   * Builds the error, saying what to set on the server.
   * @param sink names the sink and its uid.
   * @param server the server (`host:port/database`).
   * @param value the server's `max_prepared_transactions`.
   * @param remedy the alternative to enabling prepared transactions, the
   *   message's last clause (default {@linkcode DATASTREAM_REMEDY}; the SQL
   *   table factory names its `sink.delivery-guarantee` option).
   */
  constructor(sink: string, server: string, value: string, remedy: string = DATASTREAM_REMEDY) {
    super(
      `${sink}: the PostgreSQL server ${server} has max_prepared_transactions = ${value}, so ` +
        `PREPARE TRANSACTION fails there. Set max_prepared_transactions in postgresql.conf to at ` +
        `least the sink's parallelism x (max concurrent checkpoints + 1), e.g. ` +
        `'max_prepared_transactions = 64', and restart the server (it cannot be changed at run ` +
        `time); or ${remedy}`,
    );
    this.name = "PreparedTransactionsDisabledError";
  }
}

/**
 * A prepared transaction the checkpoint names is neither prepared nor
 * committed: someone rolled it back (`ROLLBACK PREPARED`, another job with
 * the same gid prefix, a restored database). Its records are lost, and a
 * commit must not hide that (DESIGN §12), so the job fails without
 * restarts, naming the gid.
 */
export class PreparedTransactionVanishedError extends SuppressRestartsError {
  /** The vanished transaction's gid. */
  readonly gid: string;
  /**
   * Builds the error, naming the gid and its checkpoint.
   * @param sink names the sink and its uid.
   * @param gid the transaction's gid.
   * @param checkpointId the checkpoint that prepared it.
   * @param commitTable the table that records committed gids.
   */
  constructor(sink: string, gid: string, checkpointId: number, commitTable: string) {
    super(
      `${sink}: prepared transaction '${gid}' of checkpoint ${checkpointId} has vanished: it is ` +
        `not in pg_prepared_xacts and ${commitTable} has no row for it, so it was rolled back ` +
        `and its records are lost (another job with the same gidPrefix, a manual ROLLBACK ` +
        `PREPARED, or a restored database?)`,
    );
    this.name = "PreparedTransactionVanishedError";
    this.gid = gid;
  }
}

/** SQLSTATE codes that a new connection may get past (server restart, terminated backend). */
const TRANSIENT_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300", "40001", "40P01"]);

/** The driver's own codes for a lost or refused connection. */
const CONNECTION_CODES = new Set([
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
]);

/**
 * Whether a driver error is one a retry on a new connection may fix: a lost
 * or refused connection, the server shutting down or starting
 * (SQLSTATE class 08, 57P01–57P03), too many connections (53300), a
 * serialization failure or deadlock (40001, 40P01). Performs no I/O.
 */
export function isTransientError(error: unknown): boolean {
  const code = errorCode(error);
  if (code === undefined) return error instanceof Deno.errors.ConnectionRefused;
  return CONNECTION_CODES.has(code) || TRANSIENT_SQLSTATES.has(code) || code.startsWith("08");
}

/** The SQLSTATE or driver code of `error`, if it has one. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}

/** The SQLSTATE PostgreSQL gives for a gid that is not prepared (`undefined_object`). */
export const UNDEFINED_OBJECT = "42704";

/** `error`'s message with its SQLSTATE or driver code, for error texts. */
export function describeError(error: unknown): string {
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return code === undefined || message.includes(code) ? message : `${message} (${code})`;
}
