/**
 * MariaDB/MySQL sinks, through the `mariadb` driver from npm:
 *
 * - {@linkcode mariaDbXaSink}: exactly-once through XA transactions
 *   (`XA START` at the first row after a barrier, `XA END` + `XA PREPARE`
 *   at the barrier, `XA COMMIT` when the checkpoint completes, `XA
 *   RECOVER` at restore), after Flink's `JdbcSink.exactlyOnceSink`; or
 *   at-least-once / none through autocommit batches.
 * - {@linkcode mariaDbUpsertSink}: `INSERT … ON DUPLICATE KEY UPDATE` in
 *   batches flushed at every barrier; exactly-once *eventually* when the
 *   keys are deterministic.
 * - `mariaDbTableConnector` (`table.ts`, listed in `connectors/table.ts`):
 *   the `mariadb` SQL table connector (upserts and deletes by PRIMARY KEY
 *   through the XA sink's `changelog` option, or append-only inserts).
 *
 * ```ts ignore
 * import { mariaDbXaSink } from "./connectors/mariadb/mod.ts";
 *
 * env.enableCheckpointing(1000);
 * stream.sinkTo(mariaDbXaSink<Bill>({
 *   connection: { host: "127.0.0.1", user: "weir", database: "billing" },
 *   sql: "INSERT INTO bills (id, account, amount) VALUES (?, ?, ?)",
 *   parameters: (b) => [b.id, b.account, b.amount],
 * })).uid("bills-sink");
 * ```
 *
 * ## Guarantees
 *
 * | sink | `deliveryGuarantee` | what a failure does |
 * |---|---|---|
 * | XA | `"exactly-once"` (default) | nothing lost, nothing doubled; readers at READ COMMITTED or above see each checkpoint's rows at once, when it commits |
 * | XA | `"at-least-once"` | rows sent at every barrier in autocommit; a replay inserts the rows after the last checkpoint again |
 * | XA | `"none"` | rows sent when a batch is full; a failure loses the buffered rows and replays the sent ones |
 * | upsert | `"exactly-once"` | the replay rewrites the same keys: the table converges to the failure-free result, earlier values show again for a while |
 * | upsert | `"at-least-once"` (default) | the same writes; declared when keys or values are not deterministic |
 * | upsert | `"none"` | rows sent when a batch is full; a failure loses the buffered rows |
 *
 * Exactly-once also needs a replayable source and exactly-once
 * checkpointing (DESIGN §12).
 *
 * ## XA xids
 *
 * `formatID` `0x57454952` ("WEIR"), gtrid `weir:<prefix>:<owner subtask>:<base
 * checkpoint>`, bqual `<writer id>.<sequence>`; the prefix defaults to the
 * sink's uid (see `xid.ts`). Give each job its own prefix (its own uid):
 * a fresh start rolls back every prepared xid of its prefix, as Kafka's
 * sink aborts the lingering transactions of its transactional-id prefix.
 *
 * ## How a commit is proven, and zombies fenced
 *
 * MariaDB answers "unknown xid" alike for a committed and a lost
 * transaction, so every XA transaction also inserts its row into the
 * commit log: after "unknown xid", a visible row proves the commit, and
 * its absence fails the job without restarts (`xa_committable.ts`,
 * `commit_log.ts`). A writer of a replaced attempt that prepares after the
 * new attempt's lingering scan rolls its own xid back (`fence.ts`).
 *
 * ## What the server must allow
 *
 * - MariaDB 10.5+ (prepared XA transactions survive a disconnect) or MySQL
 *   5.7.7+; InnoDB tables.
 * - The user needs INSERT on the target tables; for the XA sink also
 *   CREATE (once), INSERT, SELECT, UPDATE and DELETE on the commit-log
 *   table `weir_xa_commit_log` and its fence table
 *   `weir_xa_commit_log_fences` (one fence row per xid prefix and subtask;
 *   both created by the sink if missing), and,
 *   on MySQL 8, the `XA_RECOVER_ADMIN` privilege (`XA RECOVER` lists other
 *   sessions' xids only with it).
 * - On MariaDB, `XA RECOVER` needs no extra privilege.
 * - A statement the server refuses for a reason a restart cannot fix (a
 *   missing table or column, a syntax error, a duplicate key: the list is in
 *   `errors.ts`) fails the job once with {@linkcode MariaDbRejectedError};
 *   lost connections, lock wait timeouts and deadlocks restart it.
 * - Prepared transactions keep their row locks until commit: keep
 *   `innodb_lock_wait_timeout` above the checkpoint interval if the job
 *   updates rows, or insert only.
 *
 * @module
 */

export { MARIADB_XA_SINK_GUARANTEES, mariaDbXaSink, type MariaDbXaSinkOptions } from "./xa_sink.ts";
export {
  MARIADB_UPSERT_SINK_GUARANTEES,
  mariaDbUpsertSink,
  type MariaDbUpsertSinkOptions,
} from "./upsert_sink.ts";
export type { MariaDbConnectionOptions } from "./connection.ts";
export { checkXaCommittable, type XaCommittable } from "./xa_committable.ts";
export { XaTransactionLostError } from "./xa_committer.ts";
export { CheckpointOrderError, LingeringXidAttachedError } from "./xa_writer.ts";
export { DEFAULT_COMMIT_LOG_RETENTION_MS, DEFAULT_COMMIT_LOG_TABLE } from "./commit_log.ts";
export { defaultXidPrefix, WEIR_XID_FORMAT_ID } from "./xid.ts";
export { UpsertKeyError } from "./upsert_sink.ts";
export { deleteSql, type MariaDbChangelog } from "./changelog_batch.ts";
export { FencedWriterError } from "./fence.ts";
export {
  classifyMariaDbError,
  type MariaDbErrorClass,
  MariaDbRejectedError,
  PERMANENT_MARIADB_ERRORS,
} from "./errors.ts";
export type {
  CheckpointingMode,
  CommitRequest,
  Committer,
  CommitterInitContext,
  DeliveryGuarantee,
  SinkV2,
  SinkWriter,
  WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
export { DeliveryGuaranteeError, SinkStateError } from "../../runtime/api/sink_v2.ts";
export type { SinkContext, SinkInitContext } from "../../runtime/api/sink.ts";
export { SuppressRestartsError } from "../../runtime/failure.ts";
