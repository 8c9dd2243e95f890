/**
 * An exactly-once PostgreSQL sink through prepared transactions
 * (two-phase commit), on the writer/committer Sink API (Flink's SinkV2;
 * the protocol of Flink's `TwoPhaseCommitSinkFunction` and of its JDBC
 * `XaSinkStateHandler`, with PostgreSQL's `PREPARE TRANSACTION`).
 *
 * ```ts ignore
 * stream.sinkTo(new PostgresPreparedSink<Bill>({
 *   url: "postgres://weir@db:5432/billing",
 *   table: "totals",
 *   columns: ["account", "checkpoint", "amount"],
 *   values: (t) => [t.account, t.checkpoint, t.amount],
 *   gidPrefix: "billing-totals",
 * })).uid("totals");
 * ```
 *
 * ## Protocol, per sink subtask
 *
 * 1. Start (committer first, then writer): both check that the server
 *    allows prepared transactions (`max_prepared_transactions > 0`; else a
 *    {@linkcode PreparedTransactionsDisabledError} ends the job once) and
 *    create the commit table if missing (`commit_table.ts`). The
 *    committer commits the restored committables; then the writer rolls
 *    back the lingering prepared transactions it owns that no restored
 *    checkpoint names (`decideLingering` in `gid.ts`).
 * 2. `write`: rows are buffered and sent as one multi-row `INSERT` per
 *    `batchSize` rows; the first one of a transaction is preceded by
 *    `BEGIN READ WRITE`.
 * 3. Barrier of checkpoint *n* (`flush`, `prepareCommit(n)`): the last rows
 *    are sent, the gid is recorded in the commit table inside the
 *    transaction, and `PREPARE TRANSACTION '<gid>'`. The committable is
 *    `{ gid, rows }`. A checkpoint without rows prepares nothing.
 * 4. Checkpoint *n* complete: the committer runs `COMMIT PREPARED '<gid>'`
 *    (pipelined, one connection). A gid no longer prepared is either
 *    committed already (its commit-table row exists: signalled as
 *    already committed) or has vanished (no row: the records are lost, and
 *    a {@linkcode PreparedTransactionVanishedError} ends the job once,
 *    naming the gid). A lost connection is retried later.
 * 5. `close()`: the connection is closed; a transaction not yet prepared
 *    dies with it (the server rolls it back).
 *
 * ## Safety of the writer's connection
 *
 * The writer's session starts read-only (`default_transaction_read_only`)
 * and writes only inside `BEGIN READ WRITE`. If the connection is lost
 * mid-transaction (server restart, `pg_terminate_backend`), the driver
 * would open a new one at the next statement; that session is read-only,
 * so no row can be autocommitted outside a transaction. The writer also
 * notes the loss and fails every later call, so the attempt restarts and
 * replays from the checkpoint.
 *
 * ## Costs (measured)
 *
 * `deno run -A connectors/postgres/prepared_sink_bench.ts` (200k rows of
 * three columns in 10 checkpoints, a private PostgreSQL 15 with
 * `fsync=off` on this 2-core machine shared with other work): batch 1
 * about 4k rows/s (a round trip per row), batch 100 about 79k, batch 1000
 * (the default) about 216k, batch 5000 about 211k. The next batch is built
 * while the server inserts the previous one (two statements in flight);
 * without that overlap batch 1000 gave 126k rows/s. The upsert sink at
 * batch 1000: 73k–93k rows/s.
 *
 * ## Simplifications
 *
 * - Rows are inserted only (`INSERT … VALUES`); upserts go through
 *   {@linkcode PostgresUpsertSink}.
 * - The sink gives `"exactly-once"` only. At-least-once without prepared
 *   transactions is the upsert sink's job.
 * - Writers are not fenced (Kafka fences a zombie producer with an epoch).
 *   A writer of an earlier attempt still running after a failover (a worker
 *   cut off from the coordinator) could prepare a gid after the new attempt
 *   rolled back the lingering ones. No checkpoint names that gid, so it is
 *   never committed: its records are not duplicated, but it holds its locks
 *   until the next restore or fresh start rolls it back.
 * - Commit-table rows are kept for `commitTableRetentionMs`; restoring a
 *   checkpoint older than that whose transactions had committed reports
 *   them as vanished (loud, never silent).
 * - Prepared transactions hold their row locks and keep `VACUUM` from
 *   removing dead rows until committed: a job that stops for long between
 *   pre-commit and commit holds them that long (as any 2PC sink does).
 *
 * @module
 */

import type { SinkContext } from "../../runtime/api/sink.ts";
import {
  checkDeliveryGuarantee,
  type CommitRequest,
  type Committer,
  type CommitterInitContext,
  type DeliveryGuarantee,
  type SinkV2,
  type SinkWriter,
  type WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
import { logger } from "../../runtime/log.ts";
import { closeNow, columnValues, connect, describeServer, type Sql } from "./_driver.ts";
import {
  type CommitTableSql,
  commitTableSql,
  DEFAULT_COMMIT_TABLE,
  ensureCommitTable,
} from "./commit_table.ts";
import { checkPostgresCommittable, type PostgresCommittable } from "./committable.ts";
import { decideCommitOutcome } from "./commit_outcome.ts";
import {
  describeError,
  errorCode,
  PreparedTransactionsDisabledError,
  PreparedTransactionVanishedError,
  UNDEFINED_OBJECT,
} from "./errors.ts";
import { checkGidPrefix, decideLingering, formatGid, GID_MARKER, newGidToken } from "./gid.ts";
import {
  checkRow,
  checkTableSpec,
  insertStatement,
  type PostgresValue,
  rowsPerStatement,
  type TableSpec,
} from "./statements.ts";

const log = logger("postgres-sink");

/** Options of {@linkcode PostgresPreparedSink}. */
export interface PostgresPreparedSinkOptions<T> {
  /** `postgres://user:password@host:port/database`; the server needs `max_prepared_transactions > 0`. */
  readonly url: string;
  /** The table rows go into: `name` or `schema.name`, case-sensitive as written. */
  readonly table: string;
  /** The columns each row fills, in the order of `row`'s values. */
  readonly columns: readonly string[];
  /** A record's row: one value per column. Throwing fails the attempt. */
  readonly values: (record: T) => readonly PostgresValue[];
  /**
   * The prefix of this sink's gids (see `gid.ts`): 1–64 characters of
   * `[A-Za-z0-9_.-]`, stable across jobs and restarts, and unique per sink
   * among all jobs using the server (a sink rolls back the lingering
   * prepared transactions of its prefix). Flink's `transactionalIdPrefix`.
   */
  readonly gidPrefix: string;
  /** The commit table (`commit_table.ts`). Default `weir_prepared_commits`. */
  readonly commitTable?: string;
  /** Rows per `INSERT` statement. Default 1000 (fewer when 65 535 parameters would not hold them). */
  readonly batchSize?: number;
  /** How long commit-table rows are kept, in ms. Default 7 days. */
  readonly commitTableRetentionMs?: number;
  /** Must be `"exactly-once"` (the default). */
  readonly deliveryGuarantee?: DeliveryGuarantee;
}

const SUPPORTED: readonly DeliveryGuarantee[] = ["exactly-once"];
const DAY_MS = 24 * 60 * 60 * 1000;
/** The committer deletes expired commit-table rows at most this often, in ms. */
const EXPIRE_EVERY_MS = 60 * 60 * 1000;

/**
 * Writes records into a PostgreSQL table exactly once through prepared
 * transactions; see the module docs for the protocol.
 */
export class PostgresPreparedSink<T> implements SinkV2<T, PostgresCommittable, never> {
  /** Always `"v2"`. */
  readonly kind = "v2" as const;
  /** Always `"exactly-once"`. */
  readonly deliveryGuarantee: DeliveryGuarantee;
  readonly #options: PostgresPreparedSinkOptions<T>;
  readonly #spec: TableSpec;
  readonly #batchRows: number;
  readonly #commitSql: CommitTableSql;
  readonly #retentionMs: number;

  /**
   * Checks the options.
   * @throws {DeliveryGuaranteeError} for a guarantee other than `"exactly-once"`.
   * @throws {TypeError} for a bad table, column, gid prefix or commit table name.
   * @throws {RangeError} for a bad `batchSize` or `commitTableRetentionMs`.
   */
  constructor(options: PostgresPreparedSinkOptions<T>) {
    const where = "PostgresPreparedSink";
    this.deliveryGuarantee = checkDeliveryGuarantee(
      where,
      options.deliveryGuarantee ?? "exactly-once",
      SUPPORTED,
    );
    if (typeof options.url !== "string" || !/^postgres(ql)?:\/\//.test(options.url)) {
      throw new TypeError(
        `${where}: url must be a postgres:// URL: current value is ${JSON.stringify(options.url)}`,
      );
    }
    if (typeof options.values !== "function") {
      throw new TypeError(
        `${where}: values must be a function: current value is ${typeof options.values}`,
      );
    }
    checkGidPrefix(where, options.gidPrefix);
    this.#spec = checkTableSpec(where, { table: options.table, columns: options.columns });
    this.#batchRows = rowsPerStatement(where, options.batchSize ?? 1000, options.columns.length);
    this.#commitSql = commitTableSql(where, options.commitTable ?? DEFAULT_COMMIT_TABLE);
    const retention = options.commitTableRetentionMs ?? 7 * DAY_MS;
    if (!Number.isFinite(retention) || retention < 60_000) {
      throw new RangeError(
        `${where}: commitTableRetentionMs must be a finite number >= 60000: current value is ${retention}`,
      );
    }
    this.#retentionMs = retention;
    this.#options = options;
  }

  /**
   * Opens the subtask's writer: checks the server, rolls back lingering
   * gids. Whether the job's checkpointing can give exactly-once is the
   * job's check (`runtime/api/delivery_check.ts`): without checkpoints a
   * bounded job still commits at its final checkpoint.
   * @throws {PreparedTransactionsDisabledError} when the server has `max_prepared_transactions = 0`.
   */
  async createWriter(
    context: WriterInitContext<never>,
  ): Promise<SinkWriter<T, PostgresCommittable, never>> {
    const name = `PostgresPreparedSink '${context.uid}' subtask ${context.subtaskIndex}`;
    const writer = new PreparedWriter<T>({
      name,
      options: this.#options,
      spec: this.#spec,
      batchRows: this.#batchRows,
      commitSql: this.#commitSql,
      subtaskIndex: context.subtaskIndex,
    });
    try {
      await writer.open(context);
    } catch (error) {
      await writer.close();
      throw error;
    }
    return writer;
  }

  /** Opens the subtask's committer: checks the server, creates the commit table. */
  async createCommitter(context: CommitterInitContext): Promise<Committer<PostgresCommittable>> {
    const committer = new PreparedCommitter({
      name: `PostgresPreparedSink '${context.uid}' subtask ${context.subtaskIndex}`,
      url: this.#options.url,
      gidPrefix: this.#options.gidPrefix,
      commitSql: this.#commitSql,
      commitTable: this.#options.commitTable ?? DEFAULT_COMMIT_TABLE,
      retentionMs: this.#retentionMs,
    });
    try {
      await committer.open();
    } catch (error) {
      await committer.close();
      throw error;
    }
    return committer;
  }

  /**
   * Checks a committable restored from a checkpoint (`committable.ts`).
   * @throws {SinkStateError} naming what is wrong.
   */
  checkCommittable(raw: unknown): PostgresCommittable {
    return checkPostgresCommittable(raw, this.#options.gidPrefix);
  }
}

/** Throws {@linkcode PreparedTransactionsDisabledError} when the server cannot prepare transactions. */
async function checkPreparedTransactionsEnabled(
  sql: Sql,
  name: string,
  url: string,
): Promise<void> {
  const rows = await sql.unsafe("SHOW max_prepared_transactions");
  const value = String(columnValues(rows, "max_prepared_transactions")[0]);
  if (value === "0") throw new PreparedTransactionsDisabledError(name, describeServer(url), value);
}

interface WriterParts<T> {
  readonly name: string;
  readonly options: PostgresPreparedSinkOptions<T>;
  readonly spec: TableSpec;
  readonly batchRows: number;
  readonly commitSql: CommitTableSql;
  readonly subtaskIndex: number;
}

/** One subtask's writer: one connection, at most one open transaction. */
class PreparedWriter<T> implements SinkWriter<T, PostgresCommittable, never> {
  readonly #p: WriterParts<T>;
  readonly #sql: Sql;
  readonly #token = newGidToken();
  /** Parameters of the rows not yet sent, row after row. */
  #params: PostgresValue[] = [];
  #bufferedRows = 0;
  /** Rows sent in the open transaction; 0 when none is open. */
  #rowsInTransaction = 0;
  #statements = new Map<number, string>();
  /**
   * Set at the first failure (a lost connection, a failed statement): the
   * open transaction is gone, so every later call fails with it and the
   * attempt restarts from the checkpoint.
   */
  #failed: Error | undefined;
  /** The last statement sent and not yet awaited; it never rejects (failures land in `#failed`). */
  #inFlight: Promise<void> | undefined;
  #closed = false;

  constructor(parts: WriterParts<T>) {
    this.#p = parts;
    this.#sql = connect({
      url: parts.options.url,
      readOnlyByDefault: true,
      applicationName: `weir ${parts.name}`.slice(0, 63),
      onClose: () => {
        if (!this.#closed && this.#failed === undefined) {
          this.#failed = new Error(
            `${parts.name}: the connection to ${describeServer(parts.options.url)} was lost` +
              (this.#rowsInTransaction > 0
                ? ` with ${this.#rowsInTransaction} rows in a transaction not yet prepared ` +
                  `(the server rolled it back; a restart replays them from the checkpoint)`
                : ""),
          );
        }
      },
    });
  }

  async open(context: WriterInitContext<never>): Promise<void> {
    const { name, options, commitSql } = this.#p;
    await checkPreparedTransactionsEnabled(this.#sql, name, options.url);
    await this.#sql.begin("read write", (tx) => ensureCommitTable(tx as unknown as Sql, commitSql));
    const prepared = await this.#sql.unsafe(
      "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND " +
        "starts_with(gid, $1)",
      [`${GID_MARKER}:${options.gidPrefix}:`],
    );
    const rollBack = decideLingering({
      gidPrefix: options.gidPrefix,
      subtaskIndex: context.subtaskIndex,
      parallelism: context.parallelism,
      restoredCheckpointId: context.restoredCheckpointId,
      preparedGids: columnValues(prepared, "gid").map(String),
    });
    for (const gid of rollBack) {
      try {
        await this.#sql.unsafe(`ROLLBACK PREPARED '${gid}'`);
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
  }

  write(value: T, _context: SinkContext): void | Promise<void> {
    if (this.#failed !== undefined) throw this.#failed;
    const row = checkRow(this.#p.name, this.#p.spec, this.#p.options.values(value));
    for (let i = 0; i < row.length; i++) this.#params.push(row[i]!);
    if (++this.#bufferedRows >= this.#p.batchRows) return this.#sendBehind();
  }

  async flush(_endOfInput: boolean): Promise<void> {
    if (this.#bufferedRows > 0) await this.#sendBehind();
    const last = this.#inFlight;
    this.#inFlight = undefined;
    await last;
    if (this.#failed !== undefined) throw this.#failed;
  }

  async prepareCommit(checkpointId: number): Promise<readonly PostgresCommittable[]> {
    await this.flush(false);
    if (this.#rowsInTransaction === 0) return [];
    const { name, options, commitSql } = this.#p;
    const gid = formatGid({
      gidPrefix: options.gidPrefix,
      ownerSubtask: this.#p.subtaskIndex,
      checkpointId,
      token: this.#token,
    });
    const rows = this.#rowsInTransaction;
    try {
      if (this.#failed !== undefined) throw this.#failed;
      // pipelined: both go out at once, in order, on the one connection
      const [recorded, prepared] = await Promise.allSettled([
        this.#sql.unsafe(commitSql.record, [options.gidPrefix, gid, checkpointId]),
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
        throw new PreparedTransactionsDisabledError(name, describeServer(options.url), "0");
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

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#params = [];
    this.#bufferedRows = 0;
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
    const rows = this.#bufferedRows;
    const params = this.#params;
    this.#params = [];
    this.#bufferedRows = 0;
    let statement = this.#statements.get(rows);
    if (statement === undefined) {
      statement = insertStatement(this.#p.spec, rows);
      this.#statements.set(rows, statement);
    }
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
    this.#failed = new Error(
      `${this.#p.name}: ${action} failed: ${describeError(error)}${hint}` +
        (rows > 0
          ? `; the transaction with its ${rows} rows is rolled back (a restart replays them ` +
            `from the checkpoint)`
          : ""),
      { cause: error },
    );
    return this.#failed;
  }
}

interface CommitterParts {
  readonly name: string;
  readonly url: string;
  readonly gidPrefix: string;
  readonly commitSql: CommitTableSql;
  readonly commitTable: string;
  readonly retentionMs: number;
}

/** One subtask's committer: `COMMIT PREPARED` on its own connection. */
class PreparedCommitter implements Committer<PostgresCommittable> {
  readonly #p: CommitterParts;
  readonly #sql: Sql;
  #lastExpiry = 0;

  constructor(parts: CommitterParts) {
    this.#p = parts;
    this.#sql = connect({ url: parts.url, applicationName: `weir ${parts.name} committer` });
  }

  async open(): Promise<void> {
    await checkPreparedTransactionsEnabled(this.#sql, this.#p.name, this.#p.url);
    await ensureCommitTable(this.#sql, this.#p.commitSql);
  }

  async commit(requests: readonly CommitRequest<PostgresCommittable>[]): Promise<void> {
    const settled = await Promise.allSettled(
      requests.map((r) => this.#sql.unsafe(`COMMIT PREPARED '${r.committable.gid}'`)),
    );
    const missing = requests
      .filter((_, i) => {
        const s = settled[i]!;
        return s.status === "rejected" && errorCode(s.reason) === UNDEFINED_OBJECT;
      })
      .map((r) => r.committable.gid);
    let recorded: Set<string> | Error | undefined;
    if (missing.length > 0) {
      try {
        const rows = await this.#sql.unsafe(this.#p.commitSql.lookup, [this.#p.gidPrefix, missing]);
        recorded = new Set(columnValues(rows, "gid").map(String));
      } catch (error) {
        recorded = error instanceof Error ? error : new Error(String(error));
      }
    }
    let allCommitted = true;
    requests.forEach((request, i) => {
      const s = settled[i]!;
      const { gid } = request.committable;
      const outcome = decideCommitOutcome({
        commitError: s.status === "rejected" ? s.reason : undefined,
        recorded: recorded instanceof Set ? recorded.has(gid) : recorded,
      });
      switch (outcome.kind) {
        case "committed":
          return;
        case "already-committed":
          request.signalAlreadyCommitted();
          return;
        case "vanished":
          allCommitted = false;
          request.signalFailedWithKnownReason(
            new PreparedTransactionVanishedError(
              this.#p.name,
              gid,
              request.checkpointId,
              this.#p.commitTable,
            ),
          );
          return;
        case "retry":
          allCommitted = false;
          log.warn(
            `${this.#p.name}: COMMIT PREPARED '${gid}' of checkpoint ${request.checkpointId} ` +
              `(try ${request.numberOfRetries + 1}) will be retried: ${
                describeError(outcome.cause)
              }`,
          );
          request.retryLater();
          return;
        case "failed":
          allCommitted = false;
          request.signalFailedWithUnknownReason(
            new Error(
              `${this.#p.name}: COMMIT PREPARED '${gid}' of checkpoint ${request.checkpointId} ` +
                `failed: ${describeError(outcome.cause)}`,
              { cause: outcome.cause },
            ),
          );
          return;
      }
    });
    if (allCommitted) await this.#expire();
  }

  async close(): Promise<void> {
    await closeNow(this.#sql);
  }

  /** Deletes the prefix's commit-table rows past the retention, at most once an hour. */
  async #expire(): Promise<void> {
    const now = Date.now();
    if (now - this.#lastExpiry < EXPIRE_EVERY_MS) return;
    this.#lastExpiry = now;
    try {
      await this.#sql.unsafe(this.#p.commitSql.expire, [
        this.#p.gidPrefix,
        this.#p.retentionMs / 1000,
      ]);
    } catch (error) {
      log.warn(`${this.#p.name}: cannot delete expired commit-table rows: ${describeError(error)}`);
    }
  }
}
