/**
 * Fencing of zombie XA writers: a writer of an attempt that has already
 * been replaced (its subtask is still finishing a barrier while the next
 * attempt restores) must not leave a prepared xid behind after the new
 * attempt's writers rolled back the lingering ones. Kafka fences such
 * zombies with producer epochs (`initTransactions`, one per transactional
 * id, that is per subtask); MariaDB has nothing alike, so the sink keeps one
 * row per xid prefix and subtask:
 *
 * ```sql
 * CREATE TABLE IF NOT EXISTS weir_xa_commit_log_fences (
 *   prefix     VARCHAR(32)  NOT NULL,
 *   subtask    INT          NOT NULL,
 *   job_id     VARCHAR(255) NOT NULL,  -- the attempt that holds the subtask's fence
 *   attempt    INT          NOT NULL,
 *   generation BIGINT       NOT NULL,  -- +1 at every take-over
 *   PRIMARY KEY (prefix, subtask)
 * ) ENGINE=InnoDB
 * ```
 *
 * - Every writer, in `createWriter` and *before* its lingering-xid scan,
 *   claims its subtask's row for its (job, attempt)
 *   ({@linkcode decideFence}) and remembers the generation. In the same
 *   transaction it takes over the rows of subtasks of *other* jobs that its
 *   scan covers (subtask `s` with `s % parallelism == i`, left by a run at a
 *   higher parallelism: {@linkcode decideForeignFence}).
 * - After each `XA PREPARE` the writer reads its row's generation again. If
 *   it changed, a newer attempt of its subtask took over, maybe after it
 *   scanned for lingering xids: the writer rolls back the xid it just
 *   prepared and fails.
 *
 * Either the new attempt's scan saw the zombie's prepared xid (and rolled
 * it back: its base is at least the restored checkpoint), or the prepare
 * came after the take-over, and the zombie's own check rolls it back. A
 * zombie that dies between its `XA PREPARE` and that check leaves its xid
 * prepared until a restore from a checkpoint at or below its base (the
 * double fault this does not cover).
 *
 * The fence is per subtask, not per prefix, because a region failover
 * (Flink's `RestartPipelinedRegionFailoverStrategy`) gives only the failed
 * region's subtasks a new attempt: the other subtasks' writers keep running
 * on the older attempt and must not be fenced. (With one row per prefix, as
 * before, each region failover fenced every other region's writers, and a
 * region failover became a full one.)
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
 * Decides a writer's claim on its subtask's row. Performs no I/O. A different job
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

/** A row of another subtask that a claim covers, as {@linkcode decideForeignFence} sees it. */
export type ForeignFenceDecision =
  /** Held by another job: bump its generation, so a zombie of that job fails its next check. */
  | { readonly kind: "take-over"; readonly generation: number }
  /** Held by this job (a live subtask of it), or never held: leave it. */
  | { readonly kind: "leave" };

/**
 * Decides what a writer's claim does to the row of another subtask its
 * lingering-xid scan covers (`s % parallelism == i`, `s != i`: a subtask of
 * a run at a higher parallelism). Performs no I/O.
 * @param holder the row's holder, if any.
 * @param claim the claiming writer's job.
 * @returns `take-over` for a row of another job, else `leave`.
 */
export function decideForeignFence(
  holder: FenceHolder | undefined,
  claim: { readonly jobId: string },
): ForeignFenceDecision {
  if (holder === undefined || holder.jobId === claim.jobId) return { kind: "leave" };
  return { kind: "take-over", generation: holder.generation + 1 };
}

/** The fence rows of one sink's commit log, as one subtask's writer uses them (see the module docs). */
export class WriterFence {
  /** The quoted table name. */
  readonly table: string;
  /** The sink's xid prefix. */
  readonly prefix: string;
  /** The writer's subtask. */
  readonly subtask: number;

  /**
   * @param commitLogTable the commit log's table name; the fence table is
   *   `<name>_fences` beside it.
   * @param prefix the sink's xid prefix.
   * @param subtask the writer's subtask index.
   * @throws {RangeError} when the resulting name is invalid.
   */
  constructor(commitLogTable: string, prefix: string, subtask: number) {
    this.table = quoteIdentifier(`${commitLogTable}_fences`, "commitLogTable");
    this.prefix = prefix;
    this.subtask = subtask;
  }

  /**
   * Creates the table if need be.
   * @param connection an autocommit connection.
   */
  async ensureTable(connection: SqlConnection): Promise<void> {
    await connection.query(
      `CREATE TABLE IF NOT EXISTS ${this.table} (prefix VARCHAR(32) NOT NULL, ` +
        "subtask INT NOT NULL, job_id VARCHAR(255) NOT NULL, attempt INT NOT NULL, " +
        "generation BIGINT NOT NULL, PRIMARY KEY (prefix, subtask)) ENGINE=InnoDB",
    );
  }

  /**
   * Claims the subtask's row for `claim` in one local transaction (the rows
   * locked with `SELECT … FOR UPDATE`), taking over the rows of other jobs'
   * subtasks the writer's scan covers; retried when InnoDB picks it as a
   * deadlock victim (up to 20 times).
   * @param connection an autocommit connection with no transaction open.
   * @param claim the writer's job, attempt and parallelism.
   * @returns the decision taken on the subtask's own row (a `fenced` one changes nothing).
   */
  async claim(
    connection: SqlConnection,
    claim: { readonly jobId: string; readonly attempt: number; readonly parallelism: number },
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
    claim: { readonly jobId: string; readonly attempt: number; readonly parallelism: number },
  ): Promise<FenceDecision> {
    await connection.query("START TRANSACTION");
    try {
      // A missing row is created first so that FOR UPDATE always has a row to lock.
      await connection.query(
        `INSERT IGNORE INTO ${this.table} (prefix, subtask, job_id, attempt, generation) ` +
          "VALUES (?, ?, '', -1, 0)",
        [this.prefix, this.subtask],
      );
      const rows = await connection.query(
        `SELECT subtask, job_id, attempt, generation FROM ${this.table} ` +
          "WHERE prefix = ? AND MOD(subtask, ?) = ? FOR UPDATE",
        [this.prefix, claim.parallelism, this.subtask % claim.parallelism],
      ) as { subtask: number; job_id: string; attempt: number; generation: number | bigint }[];
      const holderOf = (row: (typeof rows)[number] | undefined) =>
        row === undefined || Number(row.generation) === 0 ? undefined : {
          jobId: row.job_id,
          attempt: Number(row.attempt),
          generation: Number(row.generation),
        };
      const own = rows.find((r) => Number(r.subtask) === this.subtask);
      const decision = decideFence(holderOf(own), claim);
      if (decision.kind === "take-over") {
        await this.#set(connection, this.subtask, claim, decision.generation);
        for (const row of rows) {
          if (Number(row.subtask) === this.subtask) continue;
          const foreign = decideForeignFence(holderOf(row), claim);
          if (foreign.kind === "take-over") {
            await this.#set(connection, Number(row.subtask), claim, foreign.generation);
          }
        }
      }
      await connection.query("COMMIT");
      return decision;
    } catch (e) {
      await connection.query("ROLLBACK").catch(() => {});
      throw e;
    }
  }

  async #set(
    connection: SqlConnection,
    subtask: number,
    claim: { readonly jobId: string; readonly attempt: number },
    generation: number,
  ): Promise<void> {
    await connection.query(
      `UPDATE ${this.table} SET job_id = ?, attempt = ?, generation = ? ` +
        "WHERE prefix = ? AND subtask = ?",
      [claim.jobId, claim.attempt, generation, this.prefix, subtask],
    );
  }

  /**
   * The subtask's current fence generation.
   * @param connection an autocommit connection.
   * @returns the generation (0 when the row is missing).
   */
  async generation(connection: SqlConnection): Promise<number> {
    const rows = await connection.query(
      `SELECT generation FROM ${this.table} WHERE prefix = ? AND subtask = ?`,
      [this.prefix, this.subtask],
    ) as { generation: number | bigint }[];
    return rows[0] === undefined ? 0 : Number(rows[0].generation);
  }
}
