/**
 * The MariaDB/MySQL XA sink (Flink's `JdbcSink.exactlyOnceSink` with its
 * `XaFacade`, as a SinkV2): rows go into an XA transaction per subtask and
 * checkpoint, `XA PREPARE`d at the barrier and `XA COMMIT`ted when the
 * checkpoint completes.
 *
 * ```ts ignore
 * import { mariaDbXaSink } from "./connectors/mariadb/mod.ts";
 *
 * stream.sinkTo(mariaDbXaSink<Bill>({
 *   connection: { host: "127.0.0.1", user: "weir", database: "billing" },
 *   sql: "INSERT INTO bills (id, account, amount) VALUES (?, ?, ?)",
 *   parameters: (b) => [b.id, b.account, b.amount],
 * })).uid("bills-sink");
 * ```
 *
 * ## Guarantees
 *
 * | `deliveryGuarantee`        | how                                                      |
 * |----------------------------|----------------------------------------------------------|
 * | `"exactly-once"` (default) | XA transactions, a committer, the commit log (`xa_writer.ts`, `xa_committer.ts`) |
 * | `"at-least-once"`          | autocommit multi-row INSERTs, sent at every barrier and `batchIntervalMs` after a batch's first row; a replay inserts again |
 * | `"none"`                   | autocommit multi-row INSERTs sent when a batch is full, `batchIntervalMs` after its first row, or when input ends; a failure loses the buffer |
 *
 * ## Invariants (exactly-once)
 *
 * - Every record written between barriers *n-1* and *n* is in the xid the
 *   writer prepared at *n*; the xid is checkpointed in *n* and committed
 *   when *n* completes, or at the restore from *n*.
 * - No xid is committed unless the checkpoint that names it completed; no
 *   prepared xid is left: a restore rolls back the writer's xids started
 *   after the restored checkpoint (`xid.ts` says why this is safe at any
 *   parallelism, without coordination between subtasks), and a writer of a
 *   replaced attempt that prepares after that rolls its xid back itself
 *   (`fence.ts`).
 * - A commit never hides loss: an xid that is neither prepared nor in the
 *   commit log fails the job without restarts, naming it
 *   (`xa_committable.ts`).
 *
 * ## Measured
 *
 * `deno run -A connectors/mariadb/xa_sink_bench.ts` (this machine, MariaDB
 * 10.11 on the same 2 cores, 200k records of `(INT, VARCHAR, INT)` in 10
 * checkpoints, writer and committer driven as the sink operator drives
 * them), on a quiet machine: exactly-once 347k records/s with batches of
 * 100, 402k with 1000, 456k with 5000; at-least-once (autocommit) 441k with
 * 1000. With the other engineers' tests running (load average 10 on the 2
 * cores) the same runs gave 60–320k records/s, without a stable order.
 * The zombie fence adds one `SELECT` per checkpoint and subtask.
 *
 * ## Simplifications
 *
 * - Only INSERT-shaped statements are batched (one `VALUES` tuple repeated
 *   per row). A prepared XA transaction keeps its row locks until commit,
 *   so statements that update the same rows in consecutive checkpoints
 *   wait on the previous checkpoint's locks until its commit: prefer
 *   inserts of new rows (an append log, see `examples/billing_tables.ts`).
 * - A transaction per connection: the writer opens a connection per
 *   checkpoint interval that has records (a few ms locally).
 * - The commit log is pruned by time (default 7 days); an older restore
 *   whose rows were pruned fails loudly rather than guess.
 * - Two jobs writing with one xid prefix roll back each other's
 *   transactions (on a fresh start) and take each other's fence: give each
 *   job its own uid or `xidPrefix`. A late zombie of *another* job is not
 *   told apart from a resumed job (`fence.ts`).
 * - A replaced writer that dies between its `XA PREPARE` and its fence
 *   check leaves that xid prepared (holding its row locks) until a restore
 *   from a checkpoint at or below its base, or an operator's `XA
 *   ROLLBACK`.
 *
 * @module
 */

import type { SinkInitContext } from "../../runtime/api/sink.ts";
import {
  checkDeliveryGuarantee,
  type Committer,
  type CommitterInitContext,
  type DeliveryGuarantee,
  type SinkV2,
  type SinkWriter,
  type WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
import { AutocommitBatchWriter } from "./batch_writer.ts";
import { checkBatchIntervalMs } from "../_sql/batch_interval.ts";
import {
  CommitLog,
  DEFAULT_COMMIT_LOG_RETENTION_MS,
  DEFAULT_COMMIT_LOG_TABLE,
} from "./commit_log.ts";
import {
  checkConnectionOptions,
  type MariaDbConnectionOptions,
  openConnection,
  releaseConnection,
} from "./connection.ts";
import { parseInsertStatement, quoteIdentifier } from "./statement.ts";
import type { MariaDbChangelog } from "./changelog_batch.ts";
import { checkXaCommittable, type XaCommittable } from "./xa_committable.ts";
import { XaCommitter } from "./xa_committer.ts";
import { FencedWriterError, WriterFence } from "./fence.ts";
import { rethrowMariaDbError } from "./errors.ts";
import { rollBackLingering, XaSinkWriter } from "./xa_writer.ts";
import { checkXidPrefix, defaultXidPrefix } from "./xid.ts";
import { checkOptions, type OptionsShape } from "../../runtime/api/options_check.ts";

/** The known keys of {@linkcode MariaDbXaSinkOptions} and the kinds of their values. */
const XA_SINK_OPTIONS: OptionsShape<MariaDbXaSinkOptions<unknown>> = {
  connection: "object",
  sql: "any",
  parameters: "any",
  deliveryGuarantee: "any",
  batchSize: "number",
  batchIntervalMs: "number",
  xidPrefix: "string",
  commitLogTable: "string",
  commitLogRetentionMs: "number",
  detachTimeoutMs: "number",
  changelog: "object",
};

/** What {@linkcode mariaDbXaSink} is built from. */
export interface MariaDbXaSinkOptions<T> {
  /** Where to connect (user, database, host …). */
  readonly connection: MariaDbConnectionOptions;
  /**
   * A one-row INSERT with `?` placeholders in one `VALUES` tuple, e.g.
   * `INSERT INTO t (a, b) VALUES (?, ?)`; an `ON DUPLICATE KEY UPDATE`
   * tail without `?` may follow. Batches repeat the tuple.
   */
  readonly sql: string;
  /** A record's values, one per `?`, in order. */
  readonly parameters: (record: T) => readonly unknown[];
  /** What the sink promises (default `"exactly-once"`); see the module docs. */
  readonly deliveryGuarantee?: DeliveryGuarantee;
  /** Rows per INSERT statement (default 1000). */
  readonly batchSize?: number;
  /**
   * `"at-least-once"` and `"none"` only: how long the first row of a batch
   * waits before the batch is sent although not full, in ms (Flink's
   * `JdbcExecutionOptions.batchIntervalMs`; default 200, 0: only full
   * batches, barriers and the end of input send). Exactly-once rows are
   * committed at checkpoints whatever this says.
   */
  readonly batchIntervalMs?: number;
  /**
   * The xid prefix (1–32 characters of `[A-Za-z0-9_.-]`; default derived
   * from the sink's uid, see `xid.ts`). Every job writing through XA to the
   * same server must use its own prefix: a fresh start rolls back every
   * prepared xid of its prefix.
   */
  readonly xidPrefix?: string;
  /** The commit-log table (default `weir_xa_commit_log`, in `connection.database`). */
  readonly commitLogTable?: string;
  /** How long commit-log rows are kept, in ms (default 7 days). */
  readonly commitLogRetentionMs?: number;
  /**
   * How long a restoring writer waits for a lingering xid to detach from
   * the connection that prepared it, in ms (default 10 000).
   */
  readonly detachTimeoutMs?: number;
  /**
   * For a changelog (upserts and deletes by key, e.g. a SQL table with a
   * PRIMARY KEY): `sql` is then an upsert (`INSERT … ON DUPLICATE KEY
   * UPDATE`), a record for which `isDelete` holds deletes its key, and each
   * batch is reduced to the last change per key (`changelog_batch.ts`).
   */
  readonly changelog?: MariaDbChangelog<T>;
}

/** The guarantees the XA sink can give. */
export const MARIADB_XA_SINK_GUARANTEES: readonly DeliveryGuarantee[] = [
  "none",
  "at-least-once",
  "exactly-once",
];

function positive(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      `mariaDbXaSink: ${name} must be a positive integer: current value is ${String(value)}`,
    );
  }
  return value;
}

/** Checks the `changelog` option (functions, key columns, table name). */
function checkChangelog<T>(
  changelog: MariaDbChangelog<T> | undefined,
): MariaDbChangelog<T> | undefined {
  if (changelog === undefined) return undefined;
  if (typeof changelog.key !== "function" || typeof changelog.isDelete !== "function") {
    throw new TypeError(
      "mariaDbXaSink: changelog.key and changelog.isDelete must be functions",
    );
  }
  const keys = changelog.keyColumns;
  if (!Array.isArray(keys) || keys.length === 0 || new Set(keys).size !== keys.length) {
    throw new RangeError(
      `mariaDbXaSink: changelog.keyColumns must be a non-empty list of distinct names: current value is ${
        JSON.stringify(keys)
      }`,
    );
  }
  quoteIdentifier(changelog.table, "mariaDbXaSink: changelog.table");
  for (const k of keys) quoteIdentifier(k, "mariaDbXaSink: changelog.keyColumns");
  return changelog;
}

function where(context: SinkInitContext): string {
  return `MariaDbXaSink "${context.uid}" subtask ${context.subtaskIndex}/${context.parallelism} ` +
    `(job ${context.jobId}, attempt ${context.attempt})`;
}

/**
 * Builds the MariaDB/MySQL XA sink (see the module docs).
 * @param options see {@linkcode MariaDbXaSinkOptions}.
 * @returns a SinkV2; with `"exactly-once"` it has a committer and validates
 *   restored committables.
 * @throws {DeliveryGuaranteeError} for an unknown `deliveryGuarantee`.
 * @throws {RangeError} for a statement that is not a one-tuple INSERT, a
 *   bad `xidPrefix`, `commitLogTable`, `batchSize`, `batchIntervalMs`, `commitLogRetentionMs`
 *   or `detachTimeoutMs` (each naming the value).
 * @throws {TypeError} for connection options without `user` or `database`.
 * @throws {RangeError} for an unknown option, here or in `connection` (`checkOptions`).
 * @throws {TypeError} for an option of the wrong type (`batchSize: "100"`).
 */
export function mariaDbXaSink<T>(
  options: MariaDbXaSinkOptions<T>,
): SinkV2<T, XaCommittable> {
  checkOptions("mariaDbXaSink", options, XA_SINK_OPTIONS);
  const guarantee = checkDeliveryGuarantee(
    "mariaDbXaSink",
    options.deliveryGuarantee ?? "exactly-once",
    MARIADB_XA_SINK_GUARANTEES,
  );
  const connection = checkConnectionOptions(options.connection, "mariaDbXaSink");
  const statement = parseInsertStatement(options.sql);
  if (typeof options.parameters !== "function") {
    throw new TypeError(
      `mariaDbXaSink: parameters must be a function: current value is ${typeof options
        .parameters}`,
    );
  }
  const batchSize = positive(options.batchSize, "batchSize", 1000);
  const changelog = checkChangelog(options.changelog);
  const batchIntervalMs = checkBatchIntervalMs("mariaDbXaSink", options.batchIntervalMs);
  const retentionMs = positive(
    options.commitLogRetentionMs,
    "commitLogRetentionMs",
    DEFAULT_COMMIT_LOG_RETENTION_MS,
  );
  const detachTimeoutMs = positive(options.detachTimeoutMs, "detachTimeoutMs", 10_000);
  if (options.xidPrefix !== undefined) checkXidPrefix(options.xidPrefix, "mariaDbXaSink");
  const commitLogTable = options.commitLogTable ?? DEFAULT_COMMIT_LOG_TABLE;
  new CommitLog(commitLogTable, "x"); // validates the table name now
  const prefixOf = (context: SinkInitContext) => options.xidPrefix ?? defaultXidPrefix(context.uid);

  if (guarantee !== "exactly-once") {
    return {
      kind: "v2",
      deliveryGuarantee: guarantee,
      createWriter: (context: WriterInitContext<never>): SinkWriter<T, XaCommittable> =>
        new AutocommitBatchWriter<T>({
          connection,
          statement,
          parameters: options.parameters,
          ...(changelog === undefined ? {} : { changelog }),
          batchSize,
          flushOnCheckpoint: guarantee === "at-least-once",
          batchIntervalMs,
          where: where(context),
        }),
    };
  }

  return {
    kind: "v2",
    deliveryGuarantee: "exactly-once",
    async createWriter(context: WriterInitContext<never>): Promise<XaSinkWriter<T>> {
      const prefix = prefixOf(context);
      const commitLog = new CommitLog(commitLogTable, prefix);
      const fence = new WriterFence(commitLogTable, prefix, context.subtaskIndex);
      const control = await openConnection(connection);
      let generation: number;
      try {
        await commitLog.ensureTable(control);
        await fence.ensureTable(control);
        const claim = await fence.claim(control, context);
        if (claim.kind === "fenced") {
          throw new FencedWriterError(
            `${where(context)}: attempt ${claim.holder.attempt} of job ${claim.holder.jobId} ` +
              `already holds the fence of subtask ${context.subtaskIndex} of xid prefix "${prefix}": ` +
              `this writer belongs to a replaced attempt`,
          );
        }
        generation = claim.generation;
        await rollBackLingering({
          connection: control,
          prefix,
          subtaskIndex: context.subtaskIndex,
          parallelism: context.parallelism,
          restoredCheckpointId: context.restoredCheckpointId,
          detachTimeoutMs,
          where: where(context),
        });
      } catch (e) {
        releaseConnection(control);
        rethrowMariaDbError(e, `${where(context)}: preparing the commit log ${commitLogTable}`);
      }
      return new XaSinkWriter<T>({
        control,
        fence,
        generation,
        detachTimeoutMs,
        connection,
        statement,
        parameters: options.parameters,
        ...(changelog === undefined ? {} : { changelog }),
        batchSize,
        prefix,
        commitLog,
        subtaskIndex: context.subtaskIndex,
        restoredCheckpointId: context.restoredCheckpointId,
        where: where(context),
      });
    },
    async createCommitter(context: CommitterInitContext): Promise<Committer<XaCommittable>> {
      const commitLog = new CommitLog(commitLogTable, prefixOf(context));
      const admin = await openConnection(connection);
      try {
        await commitLog.ensureTable(admin);
      } finally {
        await admin.end().catch(() => releaseConnection(admin));
      }
      return new XaCommitter({
        connection,
        commitLog,
        pruneRetentionMs: context.subtaskIndex === 0 ? retentionMs : undefined,
        where: where(context),
      });
    },
    checkCommittable: checkXaCommittable,
  };
}
