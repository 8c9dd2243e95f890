/**
 * The seeds' case study (账单计算服务, DESIGN §10 case 6), end to end: bills
 * from a replayable log (a JetStream stream) that also carries copies of
 * bills, deduplicated across checkpoints with keyed state and an
 * event-time TTL, added up per account, and written to MariaDB exactly
 * once through the XA sink. Kill it at any point: the table ends up as a
 * run without failures leaves it.
 *
 * ```
 * JetStream source (bounded, uid billing-source; event time = bill.time)
 *   → keyBy(billId) → BillDeduplicator (uid bill-dedup; copies → side output duplicate-bills)
 *   → keyBy(account) → AccountTotals (uid account-totals)
 *   → MariaDB XA sink (uid billing-sink): one row per account update
 * ```
 *
 * Run it in cluster mode (`--nats`), with a coordinator and workers running,
 * or in local mode (`--jetstream`: the job runs in this process, its input
 * is still a JetStream stream):
 *
 *     deno run -A examples/billing.ts --jetstream nats://127.0.0.1:4222 --stream bills \
 *       --table billing --generate --bills 100000
 *     deno run -A examples/billing.ts --nats nats://127.0.0.1:4222 --stream bills --table billing
 *
 * Options: `--mariadb URL` (default `mariadb://root@127.0.0.1:3306/test`),
 * `--parallelism P` (default 2), `--checkpoint-interval MS` (default 1000),
 * `--rate R` (messages per second over all source subtasks; default
 * unlimited), `--ttl MS` (the dedup TTL in ms of event time, default one
 * hour). With `--generate` it first publishes the input (`--bills N`,
 * default 10 000, `--accounts A`, `--duplicates RATIO` (default 0.1),
 * `--seed S`; see `billing_input.ts`) and refuses a stream that already
 * holds messages; it then checks the table against the failure-free result
 * at the end and prints `BILLING bills=… rows=… lost=… duplicated=…
 * unexpected=… inconsistent=… wrong_totals=…` (see `billing_check.ts`),
 * exiting with 1 unless all counts are 0.
 *
 * ## Design decisions
 *
 * - Dedup state is keyed by `billId` with an event-time TTL (why event
 *   time: `billing_functions.ts`), so copies minutes apart are caught
 *   across batches and restores, and state stays bounded.
 * - The table holds one row per account update, inserted in the XA
 *   transaction of the checkpoint, and the per-account totals are the view
 *   `<table>_totals` (why not upserts of a totals row: `billing_tables.ts`).
 * - Exactly-once: the source's offsets, the dedup state, the running totals
 *   and the XA transaction's id are in one checkpoint; the transaction is
 *   prepared at the barrier and committed when the checkpoint completes (or
 *   at restore), so committed rows always match the restored state.
 *
 * @module
 */

import {
  type DataStreamSink,
  type Sink,
  type StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import {
  DEFAULT_TXN_BUCKET,
  JetStreamSource,
  type NatsConnectionOptions,
} from "../connectors/jetstream/mod.ts";
import {
  AccountTotals,
  type AccountUpdate,
  BillDeduplicator,
  DEFAULT_DEDUP_TTL_MS,
  parseBill,
} from "./billing_functions.ts";
import type { Bill } from "./billing_input.ts";

export * from "./billing_functions.ts";
export * from "./billing_input.ts";
export * from "./billing_check.ts";
export * from "./billing_tables.ts";
// The types the billing API mentions, so its documentation is complete (deno doc --lint).
export type * from "../mod.ts";
export type * from "../connectors/jetstream/mod.ts";

/** The uids of the billing job's operators (stable: they name its state in checkpoints). */
export const BILLING_UIDS = {
  source: "billing-source",
  dedup: "bill-dedup",
  totals: "account-totals",
  sink: "billing-sink",
} as const;

/** How far out of order bills of one partition may be, in ms of event time (the watermark's bound). */
export const BILL_OUT_OF_ORDERNESS_MS = 1000;

/** Options of {@linkcode buildBillingPipeline}. */
export interface BillingPipelineOptions {
  /** How source subtasks connect to NATS. */
  readonly connection: NatsConnectionOptions;
  /** The bill stream (subjects `<stream>.p<n>`). */
  readonly stream: string;
  /** The dedup TTL, in ms of event time. Default {@linkcode DEFAULT_DEDUP_TTL_MS}. */
  readonly dedupTtlMs?: number;
  /** Source rate over all its subtasks, in messages per second (default unlimited). */
  readonly recordsPerSecond?: number;
  /** The KV bucket of transaction state, for read-committed reading (default `weir-txn`). */
  readonly txnBucket?: string;
}

/**
 * Adds the billing pipeline (see the module docs) to `env`, ending in
 * `sink` (uid `billing-sink`). Checkpointing, parallelism and restarts are
 * left to the caller.
 * @returns the sink, e.g. to find its vertex for fault injection.
 * @throws {RangeError} when `dedupTtlMs` is not a positive number.
 */
export function buildBillingPipeline(
  env: StreamExecutionEnvironment,
  options: BillingPipelineOptions,
  sink: Sink<AccountUpdate>,
): DataStreamSink<AccountUpdate> {
  const { connection, stream } = options;
  return env.fromSource(
    new JetStreamSource<Bill>({
      connection,
      stream,
      filterSubject: `${stream}.*`,
      bounded: true,
      txnBucket: options.txnBucket ?? DEFAULT_TXN_BUCKET,
      deserializer: (data) => parseBill(data),
      ...(options.recordsPerSecond === undefined
        ? {}
        : { recordsPerSecond: options.recordsPerSecond }),
    }),
    WatermarkStrategy.forBoundedOutOfOrderness<Bill>(BILL_OUT_OF_ORDERNESS_MS)
      .withTimestampAssigner((bill) => bill.time),
    "bills",
  ).uid(BILLING_UIDS.source)
    .keyBy((bill) => bill.billId)
    .process(new BillDeduplicator(options.dedupTtlMs ?? DEFAULT_DEDUP_TTL_MS))
    .uid(BILLING_UIDS.dedup).name("BillDeduplicator")
    .keyBy((bill) => bill.account)
    .process(new AccountTotals()).uid(BILLING_UIDS.totals).name("AccountTotals")
    .sinkTo(sink).uid(BILLING_UIDS.sink).name("billing table");
}
