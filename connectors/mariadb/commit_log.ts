/**
 * The XA sink's commit log: one row per XA transaction, inserted inside the
 * transaction itself, so the row is visible exactly when the transaction
 * committed. It is how the committer tells "committed before" from "lost"
 * after `XA COMMIT` answers "unknown xid" (see `xa_committable.ts`).
 *
 * ```sql
 * CREATE TABLE IF NOT EXISTS weir_xa_commit_log (
 *   gtrid         VARBINARY(64) NOT NULL,
 *   bqual         VARBINARY(64) NOT NULL,
 *   prefix        VARCHAR(32)   NOT NULL,  -- the sink's xid prefix
 *   checkpoint_id BIGINT        NOT NULL,  -- the checkpoint it was prepared for
 *   records       BIGINT        NOT NULL,
 *   prepared_at   TIMESTAMP(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
 *   PRIMARY KEY (gtrid, bqual),
 *   KEY (prefix, prepared_at)
 * ) ENGINE=InnoDB
 * ```
 *
 * Rows only ever get inserted with fresh keys (xids are unique), so a
 * prepared transaction's row lock blocks no other writer. Rows older than
 * the sink's `commitLogRetentionMs` (default 7 days) are deleted, by the
 * committer of subtask 0, at most once per {@linkcode PRUNE_INTERVAL_MS}:
 * restoring a checkpoint or savepoint whose transactions were committed
 * longer ago than that, and whose rows were pruned, fails loudly (the
 * committer cannot prove they were committed) instead of guessing.
 *
 * @module
 */

import type { SqlConnection } from "./connection.ts";
import { quoteIdentifier } from "./statement.ts";
import type { Xid } from "./xid.ts";

/** The commit log's default table name. */
export const DEFAULT_COMMIT_LOG_TABLE = "weir_xa_commit_log";

/** The commit log's default retention: 7 days, in ms. */
export const DEFAULT_COMMIT_LOG_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** How often (at most) the committer of subtask 0 prunes the log, in ms: 10 minutes. */
export const PRUNE_INTERVAL_MS = 10 * 60 * 1000;

/** The commit log of one sink (table and xid prefix). */
export class CommitLog {
  /** The quoted table name. */
  readonly table: string;
  /** The sink's xid prefix; pruning touches this prefix's rows only. */
  readonly prefix: string;

  /**
   * @param table the table name (maybe `schema.table`).
   * @param prefix the sink's xid prefix.
   * @throws {RangeError} for an invalid table name.
   */
  constructor(table: string, prefix: string) {
    this.table = quoteIdentifier(table, "commitLogTable");
    this.prefix = prefix;
  }

  /**
   * Creates the table if it does not exist (needs the CREATE privilege once).
   * @param connection an autocommit connection.
   */
  async ensureTable(connection: SqlConnection): Promise<void> {
    await connection.query(
      `CREATE TABLE IF NOT EXISTS ${this.table} (` +
        "gtrid VARBINARY(64) NOT NULL, bqual VARBINARY(64) NOT NULL, " +
        "prefix VARCHAR(32) NOT NULL, checkpoint_id BIGINT NOT NULL, records BIGINT NOT NULL, " +
        "prepared_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), " +
        "PRIMARY KEY (gtrid, bqual), KEY prefix_prepared_at (prefix, prepared_at)) ENGINE=InnoDB",
    );
  }

  /**
   * Inserts the transaction's row; call inside the XA transaction, before `XA END`.
   * @param connection the connection running the XA transaction.
   * @param entry the xid, the checkpoint it is prepared for and its record count.
   */
  async insert(
    connection: SqlConnection,
    entry: { readonly xid: Xid; readonly checkpointId: number; readonly records: number },
  ): Promise<void> {
    await connection.query(
      `INSERT INTO ${this.table} (gtrid, bqual, prefix, checkpoint_id, records) VALUES (?,?,?,?,?)`,
      [
        entry.xid.gtrid,
        entry.xid.bqual,
        this.prefix,
        entry.checkpointId,
        entry.records,
      ],
    );
  }

  /**
   * Whether the transaction `xid` committed (its row is visible).
   * @param connection an autocommit connection.
   * @param xid the xid.
   * @returns `true` when the row is there.
   */
  async contains(connection: SqlConnection, xid: Xid): Promise<boolean> {
    const rows = await connection.query(
      `SELECT 1 AS found FROM ${this.table} WHERE gtrid = ? AND bqual = ?`,
      [xid.gtrid, xid.bqual],
    ) as unknown[];
    return rows.length > 0;
  }

  /**
   * Deletes this prefix's rows older than `retentionMs` (server clock), at
   * most 10 000 per call.
   * @param connection an autocommit connection.
   * @param retentionMs how old a row may get, in ms.
   * @returns how many rows were deleted.
   */
  async prune(connection: SqlConnection, retentionMs: number): Promise<number> {
    const result = await connection.query(
      `DELETE FROM ${this.table} WHERE prefix = ? AND ` +
        `prepared_at < NOW(3) - INTERVAL ? MICROSECOND LIMIT 10000`,
      [this.prefix, Math.round(retentionMs) * 1000],
    ) as { affectedRows?: number };
    return result.affectedRows ?? 0;
  }
}
