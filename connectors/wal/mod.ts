/**
 * The write-ahead-log sink (Flink's `GenericWriteAheadSink` with its
 * `CheckpointCommitter`): records wait in the checkpoint and are sent when
 * the checkpoint completes; a committer table records each batch sent, so
 * a batch replayed after a crash is skipped.
 *
 * - {@linkcode WriteAheadSink}: the sink, on the writer/committer API.
 * - {@linkcode WalTargetFactory}: how a target declares whether it writes a
 *   batch and its record atomically (`"atomic"`: exactly-once) or not
 *   (`"separate"`: at-least-once; `"exactly-once"` is refused).
 * - {@linkcode PostgresWalTarget}: the atomic PostgreSQL target (values and
 *   committer row in one transaction); {@linkcode PostgresCheckpointCommitter}
 *   for separate targets.
 *
 * `wal_sink.ts` says exactly where the sink is only at-least-once, and what
 * it costs (latency of one checkpoint, memory and checkpoint size that grow
 * with the records per interval).
 *
 * @example
 * ```ts
 * import { PostgresWalTarget, WriteAheadSink } from "./mod.ts";
 *
 * const sink = new WriteAheadSink<{ account: string; amount: number }>({
 *   target: new PostgresWalTarget({
 *     connection: { host: "127.0.0.1", port: 5432, user: "postgres", database: "postgres" },
 *     table: "bills",
 *     columns: ["account", "amount"],
 *     toRow: (bill) => bill,
 *   }),
 * });
 * console.assert(sink.deliveryGuarantee === "exactly-once");
 * ```
 *
 * @module
 */

export type {
  AtomicWalTarget,
  CheckpointCommitter,
  SeparateWalDestination,
  WalCommitId,
  WalSendOutcome,
  WalTarget,
  WalTargetFactory,
} from "./types.ts";
export {
  checkWalCommittable,
  describeWalCommitId,
  type WalCommittable,
} from "./wal_committable.ts";
export {
  DEFAULT_MAX_VALUES_PER_COMMITTABLE,
  WalCommitError,
  WriteAheadSink,
  type WriteAheadSinkOptions,
} from "./wal_sink.ts";
export {
  DEFAULT_MAX_ROWS_PER_STATEMENT,
  DEFAULT_WAL_COMMITTER_TABLE,
  PostgresCheckpointCommitter,
  type PostgresCommitterTableOptions,
  type PostgresConnectionOptions,
  PostgresWalTarget,
  type PostgresWalTargetOptions,
  WalTargetRejectedError,
} from "./postgres_wal_target.ts";
// Types of the runtime that this module's API refers to.
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
export type { SinkContext, SinkInitContext } from "../../runtime/api/sink.ts";
export { SuppressRestartsError } from "../../runtime/failure.ts";
