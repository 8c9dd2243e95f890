/**
 * The commit table of {@linkcode PostgresPreparedSink}: one row per
 * prepared transaction, inserted inside that transaction just before
 * `PREPARE TRANSACTION`. After `COMMIT PREPARED` the row proves the commit,
 * so a committer that finds a gid missing from `pg_prepared_xacts` can tell
 * "committed before" (row present) from "vanished" (no row: rolled back,
 * records lost).
 *
 * ```sql
 * CREATE TABLE IF NOT EXISTS weir_prepared_commits (
 *   gid_prefix    text        NOT NULL,
 *   gid           text        NOT NULL,
 *   checkpoint_id bigint      NOT NULL,
 *   prepared_at   timestamptz NOT NULL DEFAULT now(),
 *   PRIMARY KEY (gid_prefix, gid))
 * ```
 *
 * Rows older than the retention (default 7 days) are deleted by the
 * committer, at most once an hour. A restore from a checkpoint older than
 * the retention whose transactions had been committed then reports them as
 * vanished: loud, never silent.
 *
 * @module
 */

import type { Sql } from "./_driver.ts";
import { quoteIdentifier } from "./statements.ts";

/** The commit table's default name. */
export const DEFAULT_COMMIT_TABLE = "weir_prepared_commits";

/** The SQL of one commit table, by quoted name. */
export interface CommitTableSql {
  /** Creates it when missing. */
  readonly create: string;
  /** Records a gid: `$1` prefix, `$2` gid, `$3` checkpoint id. */
  readonly record: string;
  /** The recorded gids among `$2` (text[]) of prefix `$1`. */
  readonly lookup: string;
  /** Deletes the rows of prefix `$1` older than `$2` seconds. */
  readonly expire: string;
  /** The quoted name, the key of the advisory lock around its creation. */
  readonly table: string;
}

/**
 * The statements for the commit table `name` (`name` or `schema.name`).
 * @throws {TypeError} when `name` is not a valid table name, with the current value.
 */
export function commitTableSql(where: string, name: string): CommitTableSql {
  const table = quoteIdentifier(`${where}: commitTable`, name);
  return {
    create: `CREATE TABLE IF NOT EXISTS ${table} (gid_prefix text NOT NULL, gid text NOT NULL, ` +
      `checkpoint_id bigint NOT NULL, prepared_at timestamptz NOT NULL DEFAULT now(), ` +
      `PRIMARY KEY (gid_prefix, gid))`,
    record: `INSERT INTO ${table} (gid_prefix, gid, checkpoint_id) VALUES ($1, $2, $3)`,
    lookup: `SELECT gid FROM ${table} WHERE gid_prefix = $1 AND gid = ANY($2::text[])`,
    expire: `DELETE FROM ${table} WHERE gid_prefix = $1 AND ` +
      `prepared_at < now() - make_interval(secs => $2::float8)`,
    table,
  };
}

/**
 * Creates the commit table when missing. Every subtask's writer and
 * committer call this at start, at once: concurrent `CREATE TABLE IF NOT
 * EXISTS` of one table may fail in PostgreSQL ("type … already exists"),
 * so creation runs in a transaction holding an advisory lock keyed by the
 * table's name (`pg_advisory_xact_lock(hashtext(name))`).
 * @throws the driver's error when the table cannot be created.
 */
export async function ensureCommitTable(sql: Sql, statements: CommitTableSql): Promise<void> {
  await sql.begin("read write", async (tx) => {
    await tx.unsafe("SELECT pg_advisory_xact_lock(hashtext($1)) AS locked", [statements.table]);
    await tx.unsafe(statements.create);
  });
}
