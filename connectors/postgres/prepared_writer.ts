/**
 * {@linkcode PostgresPreparedSink}'s exactly-once writer: one connection,
 * read-only by default, with at most one transaction open (`BEGIN READ
 * WRITE` at the first batch after a barrier), prepared at the barrier.
 * The protocol is in `prepared_sink.ts`'s module docs.
 *
 * @module
 */

import type { SinkContext } from "../../runtime/api/sink.ts";
import type { SinkWriter, WriterInitContext } from "../../runtime/api/sink_v2.ts";
import { logger } from "../../runtime/log.ts";
import { closeNow, columnValues, connect, describeServer, type Sql } from "./_driver.ts";
import { type CommitTableSql, ensureCommitTable } from "./commit_table.ts";
import type { PostgresCommittable } from "./committable.ts";
import {
  describeError,
  errorCode,
  PreparedTransactionsDisabledError,
  UNDEFINED_OBJECT,
} from "./errors.ts";
import { classifySqlState, statementFailure } from "./sqlstate.ts";
import { decideLingering, formatGid, GID_MARKER, newGidToken } from "./gid.ts";
import { InsertBatch, type PostgresValue, type TableSpec } from "./statements.ts";
import { ChangelogInsertBatch, type PostgresChangelog } from "./changelog_batch.ts";

const log = logger("postgres-sink");

/**
 * Checks that the server can prepare transactions.
 * @throws {PreparedTransactionsDisabledError} when its `max_prepared_transactions` is 0.
 */
export async function checkPreparedTransactionsEnabled(
  sql: Sql,
  name: string,
  url: string,
  remedy?: string,
): Promise<void> {
  const rows = await sql.unsafe("SHOW max_prepared_transactions");
  const value = String(columnValues(rows, "max_prepared_transactions")[0]);
  if (value === "0") {
    throw new PreparedTransactionsDisabledError(name, describeServer(url), value, remedy);
  }
}

/** Where {@linkcode rollBackLingering} runs. */
export interface LingeringScope {
  /** The writer's name, for messages. */
  readonly name: string;
  /** The sink's gid prefix. */
  readonly gidPrefix: string;
  /** The writer's init context: subtask, parallelism, restored checkpoint. */
  readonly context: WriterInitContext<never>;
}

/**
 * Rolls back the prepared transactions of the sink's prefix that this
 * writer owns and no checkpoint it continues from names (`decideLingering`
 * in `gid.ts`); a gid another client resolved meanwhile is skipped.
 * @returns the gids rolled back.
 * @throws {Error} naming the gid, when `ROLLBACK PREPARED` fails otherwise.
 */
export async function rollBackLingering(sql: Sql, scope: LingeringScope): Promise<string[]> {
  const { name, gidPrefix, context } = scope;
  const prepared = await sql.unsafe(
    "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND " +
      "starts_with(gid, $1)",
    [`${GID_MARKER}:${gidPrefix}:`],
  );
  const rollBack = decideLingering({
    gidPrefix,
    subtaskIndex: context.subtaskIndex,
    parallelism: context.parallelism,
    restoredCheckpointId: context.restoredCheckpointId,
    preparedGids: columnValues(prepared, "gid").map(String),
  });
  for (const gid of rollBack) {
    try {
      await sql.unsafe(`ROLLBACK PREPARED '${gid}'`);
    } catch (error) {
      if (errorCode(error) !== UNDEFINED_OBJECT) {
        throw new Error(
          `${name}: cannot roll back lingering prepared transaction '${gid}': ${
            describeError(error)
          }`,
          { cause: error },
        );
      }
    }
  }
  if (rollBack.length > 0) {
    log.info(
      `${name} (job ${context.jobId}, attempt ${context.attempt}): rolled back ` +
        `${rollBack.length} lingering prepared transaction(s) not named by ${
          context.restoredCheckpointId === undefined
            ? "any checkpoint (fresh start)"
            : `checkpoint ${context.restoredCheckpointId}`
        }: ${rollBack.join(", ")}`,
    );
  }
  return rollBack;
}

/** What both writers of a `PostgresPreparedSink` are built from (checked by the sink). */
export interface PostgresWriterParts<T> {
  /** `PostgresPreparedSink '<uid>' subtask <i>`, for messages. */
  readonly name: string;
  /** The server's URL. */
  readonly url: string;
  /** The sink's gid prefix (the autocommit writer rolls back an exactly-once run's lingering gids). */
  readonly gidPrefix: string;
  /** A record's column values. */
  readonly values: (record: T) => readonly PostgresValue[];
  /** The table and columns. */
  readonly spec: TableSpec;
  /** Rows per `INSERT`. */
  readonly batchRows: number;
  /** Upserts and deletes by key, when the sink writes a changelog (`changelog_batch.ts`). */
  readonly changelog?: PostgresChangelog<T>;
}

/** The batch both writers buffer into: an {@linkcode InsertBatch} or a {@linkcode ChangelogInsertBatch}. */
export interface WriterBatch {
  /** Rows (keys, for a changelog) buffered. */
  readonly rows: number;
  /** Buffers a row (`deletes`: it deletes its key; changelogs only); returns the rows buffered. */
  add(row: readonly PostgresValue[], deletes?: boolean): number;
  /** Empties the batch: its rows, parameters and statement. */
  take(): { readonly rows: number; readonly params: PostgresValue[]; readonly statement: string };
  /** Drops the buffered rows. */
  clear(): void;
}

/** The batch of a writer built from `parts`. */
export function writerBatch<T>(parts: PostgresWriterParts<T>): WriterBatch {
  return parts.changelog === undefined
    ? new InsertBatch(parts.name, parts.spec)
    : new ChangelogInsertBatch(parts.name, parts.spec, parts.changelog.keyColumns);
}

/** What a {@linkcode PreparedWriter} is built from (checked by the sink). */
export interface PreparedWriterParts<T> extends PostgresWriterParts<T> {
  /** The commit table's statements. */
  readonly commitSql: CommitTableSql;
  /** The writer's subtask: the owner in its gids. */
  readonly subtaskIndex: number;
  /** The alternative a {@linkcode PreparedTransactionsDisabledError} suggests (default: the DataStream one). */
  readonly preparedTransactionsRemedy?: string;
}

/** One subtask's writer: one connection, at most one open transaction (see `prepared_sink.ts`). */
export class PreparedWriter<T> implements SinkWriter<T, PostgresCommittable, never> {
  readonly #p: PreparedWriterParts<T>;
  readonly #sql: Sql;
  readonly #token = newGidToken();
  /** The rows not yet sent. */
  readonly #batch: WriterBatch;
  /** Rows sent in the open transaction; 0 when none is open. */
  #rowsInTransaction = 0;
  /**
   * Set at the first failure (a lost connection, a failed statement): the
   * open transaction is gone, so every later call fails with it and the
   * attempt restarts from the checkpoint.
   */
  #failed: Error | undefined;
  /** The last statement sent and not yet awaited; it never rejects (failures land in `#failed`). */
  #inFlight: Promise<void> | undefined;
  #closed = false;

  /** Creates the writer's client; it connects in {@linkcode open}. */
  constructor(parts: PreparedWriterParts<T>) {
    this.#p = parts;
    this.#batch = writerBatch(parts);
    this.#sql = connect({
      url: parts.url,
      readOnlyByDefault: true,
      applicationName: `weir ${parts.name}`.slice(0, 63),
      onClose: () => {
        if (!this.#closed && this.#failed === undefined) {
          this.#failed = new Error(
            `${parts.name}: the connection to ${describeServer(parts.url)} was lost` +
              (this.#rowsInTransaction > 0
                ? ` with ${this.#rowsInTransaction} rows in a transaction not yet prepared ` +
                  `(the server rolled it back; a restart replays them from the checkpoint)`
                : ""),
          );
        }
      },
    });
  }

  /**
   * Checks the server, creates the commit table, and rolls back the lingering gids it owns.
   * @throws {PreparedTransactionsDisabledError} when the server has `max_prepared_transactions = 0`.
   */
  async open(context: WriterInitContext<never>): Promise<void> {
    const { name, url, gidPrefix, commitSql, preparedTransactionsRemedy } = this.#p;
    await checkPreparedTransactionsEnabled(this.#sql, name, url, preparedTransactionsRemedy);
    await ensureCommitTable(this.#sql, commitSql);
    await rollBackLingering(this.#sql, { name, gidPrefix, context });
  }

  /** Buffers one row; sends the batch when it is full (see `#sendBehind`). */
  write(value: T, _context: SinkContext): void | Promise<void> {
    if (this.#failed !== undefined) throw this.#failed;
    const deletes = this.#p.changelog?.isDelete(value) ?? false;
    if (this.#batch.add(this.#p.values(value), deletes) >= this.#p.batchRows) {
      return this.#sendBehind();
    }
  }

  /** Sends the buffered rows and waits for every statement in flight. */
  async flush(_endOfInput: boolean): Promise<void> {
    if (this.#batch.rows > 0) await this.#sendBehind();
    const last = this.#inFlight;
    this.#inFlight = undefined;
    await last;
    if (this.#failed !== undefined) throw this.#failed;
  }

  /** Records the gid and prepares the open transaction, if it has rows. */
  async prepareCommit(checkpointId: number): Promise<readonly PostgresCommittable[]> {
    await this.flush(false);
    if (this.#rowsInTransaction === 0) return [];
    const { name, url, gidPrefix, commitSql } = this.#p;
    const gid = formatGid({
      gidPrefix,
      ownerSubtask: this.#p.subtaskIndex,
      checkpointId,
      token: this.#token,
    });
    const rows = this.#rowsInTransaction;
    try {
      if (this.#failed !== undefined) throw this.#failed;
      // pipelined: both go out at once, in order, on the one connection
      const [recorded, prepared] = await Promise.allSettled([
        this.#sql.unsafe(commitSql.record, [gidPrefix, gid, checkpointId]),
        this.#sql.unsafe(`PREPARE TRANSACTION '${gid}'`),
      ]);
      if (recorded.status === "rejected") throw recorded.reason;
      if (prepared.status === "rejected") throw prepared.reason;
      if (prepared.value.command !== "PREPARE TRANSACTION") {
        throw new Error(
          `the server answered ${prepared.value.command} instead of PREPARE TRANSACTION`,
        );
      }
    } catch (error) {
      if (errorCode(error) === "55000") {
        throw new PreparedTransactionsDisabledError(
          name,
          describeServer(url),
          "0",
          this.#p.preparedTransactionsRemedy,
        );
      }
      const hint = errorCode(error) === "53200"
        ? " (raise max_prepared_transactions: it must be at least the sink's parallelism x " +
          "(max concurrent checkpoints + 1) plus what other clients prepare)"
        : "";
      throw this.#fail(
        `PREPARE TRANSACTION '${gid}' of checkpoint ${checkpointId} (${rows} rows)`,
        error,
        hint,
      );
    } finally {
      this.#rowsInTransaction = 0;
    }
    return [{ gid, rows }];
  }

  /** Closes the connection: a transaction not yet prepared dies with it. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#batch.clear();
    await closeNow(this.#sql);
  }

  /**
   * Sends the buffered rows while the previous statement may still run
   * (so the next batch is built while the server inserts this one), then
   * waits for that previous one: at most two statements are in flight.
   */
  async #sendBehind(): Promise<void> {
    const previous = this.#inFlight;
    this.#inFlight = this.#send().catch(() => {}); // #send notes its failure in #failed
    await previous;
    if (this.#failed !== undefined) throw this.#failed;
  }

  /** Sends the buffered rows as one `INSERT` (after `BEGIN READ WRITE` when no transaction is open). */
  async #send(): Promise<void> {
    if (this.#failed !== undefined) throw this.#failed;
    const { rows, params, statement } = this.#batch.take();
    const begin = this.#rowsInTransaction === 0;
    this.#rowsInTransaction += rows;
    try {
      // pipelined: BEGIN and the INSERT go out at once, in order, on the one connection
      const settled = await Promise.allSettled([
        begin ? this.#sql.unsafe("BEGIN READ WRITE") : Promise.resolve(),
        // deno-lint-ignore no-explicit-any
        this.#sql.unsafe(statement, params as any[]),
      ]);
      for (const s of settled) if (s.status === "rejected") throw s.reason;
    } catch (error) {
      throw this.#fail(`INSERT of ${rows} rows into ${this.#p.spec.table}`, error, "");
    }
  }

  /** Notes the writer's first failure and returns the error for `action`. */
  #fail(action: string, error: unknown, hint: string): Error {
    if (this.#failed !== undefined && this.#failed !== error) return this.#failed;
    const rows = this.#rowsInTransaction;
    this.#failed = statementFailure(
      error,
      `${this.#p.name}: ${action} failed: ${describeError(error)}${hint}` +
        (rows > 0
          ? `; the transaction with its ${rows} rows is rolled back` +
            (classifySqlState(error).kind === "transient"
              ? " (a restart replays them from the checkpoint)"
              : "")
          : ""),
    );
    return this.#failed;
  }
}
