/**
 * PostgreSQL sinks, through the `postgres` driver from npm:
 *
 * - {@linkcode PostgresPreparedSink}: exactly-once through prepared
 *   transactions (`BEGIN` at the first row after a barrier, multi-row
 *   `INSERT`s, `PREPARE TRANSACTION '<gid>'` at the barrier, `COMMIT
 *   PREPARED` when the checkpoint completes and again at restore; lingering
 *   gids rolled back at start), after Flink's `TwoPhaseCommitSinkFunction`
 *   and `KafkaSink`.
 * - {@linkcode PostgresUpsertSink}: `INSERT … ON CONFLICT (<keys>) DO
 *   UPDATE` in batches flushed at every barrier; exactly-once *eventually*
 *   when keys and values are deterministic. Needs no prepared transactions.
 *
 * ```ts ignore
 * import { PostgresPreparedSink } from "./connectors/postgres/mod.ts";
 *
 * env.enableCheckpointing(1000);
 * stream.sinkTo(new PostgresPreparedSink<Bill>({
 *   url: "postgres://weir@127.0.0.1:5432/billing",
 *   table: "bills",
 *   columns: ["id", "account", "amount"],
 *   values: (b) => [b.id, b.account, b.amount],
 *   gidPrefix: "billing-bills",
 * })).uid("bills-sink");
 * ```
 *
 * ## Guarantees
 *
 * | sink | `deliveryGuarantee` | what a failure does |
 * |---|---|---|
 * | prepared | `"exactly-once"` (default) | nothing lost, nothing doubled; each checkpoint's rows become visible at once, when it commits |
 * | prepared | `"at-least-once"` | autocommit batches sent at every barrier, no prepared transactions; a replay inserts the rows after the last checkpoint again |
 * | prepared | `"none"` | autocommit batches sent when full; a failure loses the buffered rows and replays the sent ones |
 * | upsert | `"exactly-once"` | the replay rewrites the same keys: the table converges to the failure-free result; earlier values show again for a while (5 → 10 → 15 → 5 → 10 → 15) |
 * | upsert | `"at-least-once"` (default) | the same writes; declared when keys or values are not deterministic |
 * | upsert | `"none"` | rows sent only when a batch is full or at the end of input; a failure loses the buffered rows |
 *
 * Exactly-once also needs a replayable source and exactly-once
 * checkpointing (DESIGN §12). A commit never hides loss: a prepared
 * transaction that vanished before its commit (rolled back by hand, or by
 * another job with the same `gidPrefix`) fails the job without restarts,
 * naming the gid ({@linkcode PreparedTransactionVanishedError}).
 *
 * ## Gids
 *
 * `weir:<gidPrefix>:<owner subtask>:<checkpoint id>:<16 hex digits>` (see
 * `gid.ts`). Give each sink its own `gidPrefix`, stable across jobs: a
 * fresh start rolls back every prepared transaction of its prefix, and a
 * restore from checkpoint *n* those of its prefix prepared after *n*.
 *
 * ## What the server must allow
 *
 * - For {@linkcode PostgresPreparedSink}: `max_prepared_transactions` above
 *   0 (PostgreSQL's default is 0, and then the sink fails at start with
 *   {@linkcode PreparedTransactionsDisabledError}). Set it in
 *   `postgresql.conf` to at least the sink's parallelism × (max concurrent
 *   checkpoints + 1), plus what other clients prepare, e.g.
 *   `max_prepared_transactions = 64`, and restart the server (it cannot
 *   change at run time; on a replica it must be at least the primary's).
 * - The user needs INSERT on the target table, and CREATE (once), INSERT,
 *   SELECT and DELETE on the commit table `weir_prepared_commits`; a
 *   prepared transaction can be committed only by its user or a superuser.
 * - Prepared transactions hold their row locks and keep VACUUM from
 *   cleaning behind them until committed.
 *
 * @module
 */

export {
  POSTGRES_PREPARED_SINK_GUARANTEES,
  PostgresPreparedSink,
  type PostgresPreparedSinkOptions,
} from "./prepared_sink.ts";
export {
  PostgresUpsertSink,
  type PostgresUpsertSinkOptions,
  UpsertKeyError,
} from "./upsert_sink.ts";
export { checkPostgresCommittable, type PostgresCommittable } from "./committable.ts";
export { PreparedTransactionsDisabledError, PreparedTransactionVanishedError } from "./errors.ts";
export {
  classifySqlState,
  PERMANENT_SQLSTATE_CLASSES,
  PostgresRejectedError,
  type SqlStateClass,
} from "./sqlstate.ts";
export { DEFAULT_COMMIT_TABLE } from "./commit_table.ts";
export { formatGid, type GidParts, type ParsedGid, parseGid } from "./gid.ts";
export { type PostgresValue, RowShapeError } from "./statements.ts";
export type { PostgresChangelog } from "./changelog_batch.ts";
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
