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
 * - `"at-least-once"` and `"none"` insert in autocommit batches
 *   (`autocommit_writer.ts`), with no dedup: a replay inserts again.
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

import {
  checkDeliveryGuarantee,
  type Committer,
  type CommitterInitContext,
  type DeliveryGuarantee,
  type SinkV2,
  type SinkWriter,
  type WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
import { AutocommitWriter } from "./autocommit_writer.ts";
import { type CommitTableSql, commitTableSql, DEFAULT_COMMIT_TABLE } from "./commit_table.ts";
import { checkPostgresCommittable, type PostgresCommittable } from "./committable.ts";
import { checkGidPrefix } from "./gid.ts";
import { PreparedCommitter } from "./prepared_committer.ts";
import { PreparedWriter } from "./prepared_writer.ts";
import { checkRowSinkOptions, type PostgresValue, type TableSpec } from "./statements.ts";
import { checkBatchIntervalMs } from "../_sql/batch_interval.ts";
import { checkChangelog, type PostgresChangelog } from "./changelog_batch.ts";
import { checkOptions, type OptionsShape } from "../../runtime/api/options_check.ts";

/** The known keys of {@linkcode PostgresPreparedSinkOptions} and the kinds of their values. */
const PREPARED_SINK_OPTIONS: OptionsShape<PostgresPreparedSinkOptions<unknown>> = {
  url: "string",
  table: "any",
  columns: "object",
  values: "any",
  gidPrefix: "any",
  commitTable: "any",
  batchSize: "number",
  commitTableRetentionMs: "number",
  deliveryGuarantee: "any",
  batchIntervalMs: "number",
  changelog: "object",
  preparedTransactionsRemedy: "string",
};

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
  /**
   * `"exactly-once"` (the default) through prepared transactions;
   * `"at-least-once"` or `"none"` through autocommit batches without
   * prepared transactions (`autocommit_writer.ts`).
   */
  readonly deliveryGuarantee?: DeliveryGuarantee;
  /**
   * `"at-least-once"` and `"none"` only: how long the first row of a batch
   * waits before the batch is sent although not full, in ms (Flink's
   * `JdbcExecutionOptions.batchIntervalMs`; default 200, 0: only full
   * batches, barriers and the end of input send). Exactly-once rows are
   * committed at checkpoints whatever this says.
   */
  readonly batchIntervalMs?: number;
  /**
   * For a changelog (e.g. a SQL table with a PRIMARY KEY): rows are
   * upserted by `keyColumns` (`ON CONFLICT … DO UPDATE`, which needs a
   * unique index on them), a record for which `isDelete` holds deletes its
   * key, and each batch is reduced to the last change per key
   * (`changelog_batch.ts`).
   */
  readonly changelog?: PostgresChangelog<T>;
  /**
   * What a {@linkcode PreparedTransactionsDisabledError} suggests instead
   * of enabling prepared transactions (its last clause, after "or").
   * Default: use `PostgresUpsertSink`; the SQL table factory names its
   * `sink.delivery-guarantee` option.
   */
  readonly preparedTransactionsRemedy?: string;
}

/** The guarantees {@linkcode PostgresPreparedSink} can give. */
export const POSTGRES_PREPARED_SINK_GUARANTEES: readonly DeliveryGuarantee[] = [
  "none",
  "at-least-once",
  "exactly-once",
];
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Writes records into a PostgreSQL table exactly once through prepared
 * transactions; see the module docs for the protocol.
 */
export class PostgresPreparedSink<T> implements SinkV2<T, PostgresCommittable, never> {
  /** Always `"v2"`. */
  readonly kind = "v2" as const;
  /** What the sink promises (see `deliveryGuarantee` of the options). */
  readonly deliveryGuarantee: DeliveryGuarantee;
  readonly #options: PostgresPreparedSinkOptions<T>;
  readonly #spec: TableSpec;
  readonly #batchRows: number;
  readonly #commitSql: CommitTableSql;
  readonly #retentionMs: number;
  readonly #batchIntervalMs: number;

  /**
   * Checks the options.
   * @throws {DeliveryGuaranteeError} for an unknown `deliveryGuarantee`.
   * @throws {TypeError} for a bad table, column, gid prefix or commit table name.
   * @throws {RangeError} for a bad `batchSize`, `batchIntervalMs` or `commitTableRetentionMs`., or an unknown option
   *   (`checkOptions`); a `TypeError` for an option of the wrong type.
   */
  constructor(options: PostgresPreparedSinkOptions<T>) {
    checkOptions("PostgresPreparedSink", options, PREPARED_SINK_OPTIONS);
    const where = "PostgresPreparedSink";
    this.deliveryGuarantee = checkDeliveryGuarantee(
      where,
      options.deliveryGuarantee ?? "exactly-once",
      POSTGRES_PREPARED_SINK_GUARANTEES,
    );
    const rowSink = checkRowSinkOptions(where, options);
    this.#spec = rowSink.spec;
    this.#batchRows = rowSink.batchRows;
    checkGidPrefix(where, options.gidPrefix);
    this.#commitSql = commitTableSql(where, options.commitTable ?? DEFAULT_COMMIT_TABLE);
    const retention = options.commitTableRetentionMs ?? 7 * DAY_MS;
    if (!Number.isFinite(retention) || retention < 60_000) {
      throw new RangeError(
        `${where}: commitTableRetentionMs must be a finite number >= 60000: current value is ${retention}`,
      );
    }
    this.#retentionMs = retention;
    this.#batchIntervalMs = checkBatchIntervalMs(where, options.batchIntervalMs);
    if (options.changelog !== undefined) checkChangelog(where, this.#spec, options.changelog);
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
    const writer = this.deliveryGuarantee !== "exactly-once"
      ? new AutocommitWriter<T>({
        name,
        url: this.#options.url,
        gidPrefix: this.#options.gidPrefix,
        values: this.#options.values,
        spec: this.#spec,
        batchRows: this.#batchRows,
        ...(this.#options.changelog === undefined ? {} : { changelog: this.#options.changelog }),
        flushAtBarrier: this.deliveryGuarantee === "at-least-once",
        batchIntervalMs: this.#batchIntervalMs,
      })
      : new PreparedWriter<T>({
        name,
        url: this.#options.url,
        gidPrefix: this.#options.gidPrefix,
        values: this.#options.values,
        spec: this.#spec,
        batchRows: this.#batchRows,
        ...(this.#options.changelog === undefined ? {} : { changelog: this.#options.changelog }),
        commitSql: this.#commitSql,
        subtaskIndex: context.subtaskIndex,
        ...(this.#options.preparedTransactionsRemedy === undefined
          ? {}
          : { preparedTransactionsRemedy: this.#options.preparedTransactionsRemedy }),
      });
    try {
      await writer.open(context);
    } catch (error) {
      await writer.close();
      throw error;
    }
    return writer;
  }

  /**
   * Opens the subtask's committer. In exactly-once mode it checks the
   * server and creates the commit table; in the other modes it connects
   * only if a restored checkpoint (of an exactly-once run) holds
   * committables, and commits those.
   * @throws {PreparedTransactionsDisabledError} (exactly-once) when the server has `max_prepared_transactions = 0`.
   */
  async createCommitter(context: CommitterInitContext): Promise<Committer<PostgresCommittable>> {
    const committer = new PreparedCommitter({
      name: `PostgresPreparedSink '${context.uid}' subtask ${context.subtaskIndex}`,
      url: this.#options.url,
      gidPrefix: this.#options.gidPrefix,
      commitSql: this.#commitSql,
      commitTable: this.#options.commitTable ?? DEFAULT_COMMIT_TABLE,
      retentionMs: this.#retentionMs,
      ...(this.#options.preparedTransactionsRemedy === undefined
        ? {}
        : { preparedTransactionsRemedy: this.#options.preparedTransactionsRemedy }),
    });
    try {
      if (this.deliveryGuarantee === "exactly-once") await committer.open();
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
