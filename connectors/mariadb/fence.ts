/**
 * Fencing of zombie XA writers: a writer of an attempt that has already
 * been replaced (its subtask is still finishing a barrier while the next
 * attempt restores) must not leave a prepared xid behind after the new
 * attempt's writers rolled back the lingering ones. Kafka fences such
 * zombies with producer epochs (`initTransactions`); MariaDB has nothing
 * alike, so the sink keeps one row per xid prefix:
 *
 * ```sql
 * CREATE TABLE IF NOT EXISTS weir_xa_commit_log_fence (
 *   prefix     VARCHAR(32)  NOT NULL PRIMARY KEY,
 *   job_id     VARCHAR(255) NOT NULL,  -- the attempt that holds the prefix
 *   attempt    INT          NOT NULL,
 *   generation BIGINT       NOT NULL   -- +1 at every take-over
 * ) ENGINE=InnoDB
 * ```
 *
 * - Every writer, in `createWriter` and *before* its lingering-xid scan,
 *   claims the prefix for its (job, attempt) ({@linkcode decideFence}) and
 *   remembers the generation.
 * - After each `XA PREPARE` the writer reads the generation again. If it
 *   changed, a newer attempt took over, maybe after it scanned for
 *   lingering xids: the writer rolls back the xid it just prepared and
 *   fails.
 *
 * Either the new attempt's scan saw the zombie's prepared xid (and rolled
 * it back: its base is at least the restored checkpoint), or the prepare
 * came after the take-over, and the zombie's own check rolls it back. A
 * zombie that dies between its `XA PREPARE` and that check leaves its xid
 * prepared until a restore from a checkpoint at or below its base (the
 * double fault this does not cover).
 *
 * @module
 */

import { type SqlConnection, sqlErrno } from "./connection.ts";

/** InnoDB chose this transaction as a deadlock victim. */
const ER_LOCK_DEADLOCK = 1213;
import { quoteIdentifier } from "./statement.ts";

/** The row of a prefix: who holds it. */
export interface FenceHolder {
  /** The holding job. */
  readonly jobId: string;
  /** The holding attempt of that job. */
  readonly attempt: number;
  /** Bumped at every take-over. */
  readonly generation: number;
}

/** What {@linkcode decideFence} decides. */
export type FenceDecision =
  /** Nobody or an older attempt holds the prefix: take it, with `generation`. */
  | { readonly kind: "take-over"; readonly generation: number }
  /** The same attempt holds it (another subtask claimed it first). */
  | { readonly kind: "join"; readonly generation: number }
  /** A newer attempt of the same job holds it: this writer is a zombie. */
  | { readonly kind: "fenced"; readonly holder: FenceHolder };

/**
 * Decides a writer's claim on its prefix. Performs no I/O. A different job
 * always takes over (a resumed job; a late zombie of an older job is not
 * told apart); within a job, attempt numbers order the claims.
 * @param holder the current row, if any.
 * @param claim the writer's job and attempt.
 * @returns the decision.
 */
export function decideFence(
  holder: FenceHolder | undefined,
  claim: { readonly jobId: string; readonly attempt: number },
): FenceDecision {
  if (holder === undefined) return { kind: "take-over", generation: 1 };
  if (holder.jobId === claim.jobId) {
    if (holder.attempt === claim.attempt) return { kind: "join", generation: holder.generation };
    if (holder.attempt > claim.attempt) return { kind: "fenced", holder };
  }
  return { kind: "take-over", generation: holder.generation + 1 };
}

/**
 * A newer attempt holds the sink's xid prefix: this writer belongs to a
 * replaced attempt. Its attempt is over anyway; the error says why it
 * stopped.
 */
export class FencedWriterError extends Error {
  /**
   * Builds the error.
   * @param message names the sink, the subtask and the attempt holding the prefix.
   */
  constructor(message: string) {
    super(message);
    this.name = "FencedWriterError";
  }
}

/** The fence table of one sink's commit log (see the module docs). */
export class WriterFence {
  /** The quoted table name. */
  readonly table: string;
  /** The sink's xid prefix. */
  readonly prefix: string;

  /**
   * @param commitLogTable the commit log's table name; the fence table is
   *   `<name>_fence` beside it.
   * @param prefix the sink's xid prefix.
   * @throws {RangeError} when the resulting name is invalid.
   */
  constructor(commitLogTable: string, prefix: string) {
    this.table = quoteIdentifier(`${commitLogTable}_fence`, "commitLogTable");
    this.prefix = prefix;
  }

  /**
   * Creates the table if need be.
   * @param connection an autocommit connection.
   */
  async ensureTable(connection: SqlConnection): Promise<void> {
    await connection.query(
      `CREATE TABLE IF NOT EXISTS ${this.table} (prefix VARCHAR(32) NOT NULL PRIMARY KEY, ` +
        "job_id VARCHAR(255) NOT NULL, attempt INT NOT NULL, generation BIGINT NOT NULL) ENGINE=InnoDB",
    );
  }

  /**
   * Claims the prefix for `claim` in one local transaction (the row locked
   * with `SELECT … FOR UPDATE`), retried when InnoDB picks it as a
   * deadlock victim (up to 20 times).
   * @param connection an autocommit connection with no transaction open.
   * @param claim the writer's job and attempt.
   * @returns the decision taken (a `fenced` one changes nothing).
   */
  async claim(
    connection: SqlConnection,
    claim: { readonly jobId: string; readonly attempt: number },
  ): Promise<FenceDecision> {
    // Subtasks claim at the same moment; InnoDB may pick one as a deadlock
    // victim (1213), which a retry resolves.
    for (let tries = 1;; tries++) {
      try {
        return await this.#claimOnce(connection, claim);
      } catch (e) {
        if (sqlErrno(e) !== ER_LOCK_DEADLOCK || tries >= 20) throw e;
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * tries));
      }
    }
  }

  async #claimOnce(
    connection: SqlConnection,
    claim: { readonly jobId: string; readonly attempt: number },
  ): Promise<FenceDecision> {
    await connection.query("START TRANSACTION");
    try {
      // A missing row is created first so that FOR UPDATE always has a row to lock.
      await connection.query(
        `INSERT IGNORE INTO ${this.table} (prefix, job_id, attempt, generation) VALUES (?, '', -1, 0)`,
        [this.prefix],
      );
      const rows = await connection.query(
        `SELECT job_id, attempt, generation FROM ${this.table} WHERE prefix = ? FOR UPDATE`,
        [this.prefix],
      ) as { job_id: string; attempt: number; generation: number | bigint }[];
      const row = rows[0];
      const holder = row === undefined || Number(row.generation) === 0 ? undefined : {
        jobId: row.job_id,
        attempt: Number(row.attempt),
        generation: Number(row.generation),
      };
      const decision = decideFence(holder, claim);
      if (decision.kind === "take-over") {
        await connection.query(
          `UPDATE ${this.table} SET job_id = ?, attempt = ?, generation = ? WHERE prefix = ?`,
          [claim.jobId, claim.attempt, decision.generation, this.prefix],
        );
      }
      await connection.query("COMMIT");
      return decision;
    } catch (e) {
      await connection.query("ROLLBACK").catch(() => {});
      throw e;
    }
  }

  /**
   * The prefix's current generation.
   * @param connection an autocommit connection.
   * @returns the generation (0 when the row is missing).
   */
  async generation(connection: SqlConnection): Promise<number> {
    const rows = await connection.query(
      `SELECT generation FROM ${this.table} WHERE prefix = ?`,
      [this.prefix],
    ) as { generation: number | bigint }[];
    return rows[0] === undefined ? 0 : Number(rows[0].generation);
  }
}
