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
 *   → keyBy(billId) → BillDeduplicator (uid bill-dedup)
 *       ├ side output duplicate-bills → MariaDB XA sink (uid billing-copies-sink): <table>_copies
 *   → keyBy(account) → AccountTotals (uid account-totals)
 *   → MariaDB XA sink (uid billing-sink): one row per account update into <table>
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
 * hour), `--xid-prefix P` (the XA sink's xid prefix, default the table's
 * name). With `--generate` it first publishes the input (`--bills N`,
 * default 10 000, `--accounts A`, `--duplicates RATIO` (default 0.1),
 * `--seed S`; see `billing_input.ts`) and refuses a stream that already
 * holds messages. The table and its totals view are created when missing.
 * When the job has ended, it reads the stream back, computes the
 * failure-free result of its bills and checks the table against it,
 * printing `BILLING bills=… rows=… lost=… duplicated=… unexpected=…
 * inconsistent=… wrong_totals=… copies=… copies_lost=… copies_duplicated=…`
 * (see `billing_check.ts`); it exits with 1 unless every count but
 * `bills`, `rows` and `copies` is 0 and there is one row per bill (so run
 * it on fresh tables).
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

import { parseArgs } from "node:util";
import {
  type DataStreamSink,
  executionRole,
  type Sink,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import {
  DEFAULT_TXN_BUCKET,
  JetStreamSource,
  type NatsConnectionOptions,
  readCommitted,
} from "../connectors/jetstream/mod.ts";
import { exampleConnection } from "./_jetstream.ts";
import { exitWithError } from "./_cli.ts";
import { billingPassed, checkCopyIds, checkUpdateRows } from "./billing_check.ts";
import {
  AccountTotals,
  type AccountUpdate,
  BillDeduplicator,
  BillFormatError,
  DEFAULT_DEDUP_TTL_MS,
  DUPLICATE_BILLS,
  parseBill,
} from "./billing_functions.ts";
import {
  type Bill,
  type BillMessage,
  type ExpectedBilling,
  expectedTotals,
  publishBillingInput,
} from "./billing_input.ts";
import {
  checkTableName,
  createBillingTable,
  DEFAULT_MARIADB_URL,
  type MariaDbConfig,
  parseMariaDbUrl,
  readCopyIds,
  readUpdateRows,
} from "./billing_tables.ts";
import { mariaDbXaSink } from "../connectors/mariadb/mod.ts";

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
  copies: "billing-copies-sink",
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

/** The two sinks of the billing job. */
export interface BillingSinks {
  /** Receives every account update (uid `billing-sink`). */
  readonly updates: Sink<AccountUpdate>;
  /**
   * Receives every copy the dedup rejected (uid `billing-copies-sink`).
   * Without it the copies are dropped, and the engine warns so.
   */
  readonly copies?: Sink<Bill>;
}

/**
 * Adds the billing pipeline (see the module docs) to `env`, ending in
 * `sinks.updates` (uid `billing-sink`), with the dedup's rejected copies
 * into `sinks.copies` (uid `billing-copies-sink`). Checkpointing,
 * parallelism and restarts are left to the caller.
 * @returns the updates' sink, e.g. to find its vertex for fault injection.
 * @throws {RangeError} when `dedupTtlMs` is not a positive number.
 */
export function buildBillingPipeline(
  env: StreamExecutionEnvironment,
  options: BillingPipelineOptions,
  sinks: BillingSinks,
): DataStreamSink<AccountUpdate> {
  const { connection, stream } = options;
  const deduplicated = env.fromSource(
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
    .uid(BILLING_UIDS.dedup).name("BillDeduplicator");
  if (sinks.copies !== undefined) {
    deduplicated.getSideOutput(DUPLICATE_BILLS)
      .sinkTo(sinks.copies).uid(BILLING_UIDS.copies).name("billing copies");
  }
  return deduplicated
    .keyBy((bill) => bill.account)
    .process(new AccountTotals()).uid(BILLING_UIDS.totals).name("AccountTotals")
    .sinkTo(sinks.updates).uid(BILLING_UIDS.sink).name("billing table");
}

/** Options of {@linkcode billingSinks}. */
export interface BillingSinkOptions {
  /** The MariaDB server. */
  readonly mariadb: MariaDbConfig;
  /** The update table (see `billing_tables.ts`); it and `<table>_copies` must exist. */
  readonly table: string;
  /**
   * The updates' XA sink's xid prefix (1–30 characters of `[A-Za-z0-9_.-]`);
   * the copies' sink uses `<prefix>.c`. Default: `table`. Every job writing
   * to one server needs its own: a fresh start rolls back every prepared
   * xid of its prefix.
   */
  readonly xidPrefix?: string;
}

/**
 * The job's sinks: MariaDB XA sinks (`connectors/mariadb`, exactly-once),
 * one inserting a row per {@linkcode AccountUpdate} into `table` (columns
 * `account, bill_count, total, bill_id, amount, bill_time`), one a row per
 * rejected copy into `<table>_copies`, both with their commit log in
 * `<table>_xa_log`, so a run's tables are all named after its table.
 * @throws {TypeError} when `table` is not a valid billing table name.
 * @throws {RangeError} when an xid prefix is longer than 32 characters or
 *   has other characters than `[A-Za-z0-9_.-]`.
 */
export function billingSinks(options: BillingSinkOptions): Required<BillingSinks> {
  const table = checkTableName(options.table);
  const prefix = options.xidPrefix ?? table;
  return {
    updates: mariaDbXaSink<AccountUpdate>({
      connection: options.mariadb,
      sql: `INSERT INTO \`${table}\` (account, bill_count, total, bill_id, amount, bill_time) ` +
        "VALUES (?, ?, ?, ?, ?, ?)",
      parameters: (u) => [u.account, u.count, u.total, u.billId, u.amount, u.time],
      xidPrefix: prefix,
      commitLogTable: `${table}_xa_log`,
    }),
    copies: mariaDbXaSink<Bill>({
      connection: options.mariadb,
      sql: `INSERT INTO \`${table}_copies\` (bill_id, account, amount, bill_time) ` +
        "VALUES (?, ?, ?, ?)",
      parameters: (b) => [b.billId, b.account, b.amount, b.time],
      xidPrefix: `${prefix}.c`,
      commitLogTable: `${table}_xa_log`,
    }),
  };
}

/**
 * The failure-free result of the bills in `stream` as it is now (read to
 * its last sequence): every distinct bill once per account.
 * @throws {BillFormatError} naming the sequence of a message that is not a bill.
 */
export async function expectedFromStream(
  connection: NatsConnectionOptions,
  stream: string,
): Promise<ExpectedBilling> {
  const messages: BillMessage[] = [];
  const seen = new Set<string>();
  for await (const record of readCommitted({ connection, stream, bounded: true })) {
    let bill: Bill;
    try {
      bill = parseBill(record.data);
    } catch (error) {
      throw new BillFormatError(
        `stream ${stream} sequence ${record.seq}: ${
          error instanceof Error ? error.message : error
        }`,
      );
    }
    messages.push({ subject: record.subject, bill, duplicate: seen.has(bill.billId) });
    seen.add(bill.billId);
  }
  return expectedTotals(messages);
}

function positive(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!(n > 0 && Number.isFinite(n))) {
    throw new Error(`${flag} must be a positive number: current value is ${JSON.stringify(value)}`);
  }
  return n;
}

async function main(): Promise<void> {
  const text = { type: "string" } as const;
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: text,
      jetstream: text,
      stream: text,
      table: text,
      mariadb: text,
      "xid-prefix": text,
      parallelism: text,
      "checkpoint-interval": text,
      rate: text,
      ttl: text,
      generate: { type: "boolean", default: false },
      bills: text,
      accounts: text,
      duplicates: text,
      seed: text,
    },
  });
  const connection = exampleConnection(values, "billing");
  const { stream, table } = values;
  if (stream === undefined || table === undefined) {
    throw new Error("billing.ts needs --stream S and --table T");
  }
  const mariadb = parseMariaDbUrl(values.mariadb ?? DEFAULT_MARIADB_URL);
  const onSlot = executionRole() === "slot";
  if (!onSlot) {
    if (values.generate) {
      const duplicates = values.duplicates === undefined ? undefined : Number(values.duplicates);
      const n = await publishBillingInput(connection, stream, {
        bills: positive(values.bills, "--bills") ?? 10_000,
        ...(values.accounts === undefined ? {} : { accounts: Number(values.accounts) }),
        ...(duplicates === undefined ? {} : { duplicateRatio: duplicates }),
        ...(values.seed === undefined ? {} : { seed: Number(values.seed) }),
      });
      console.error(`published ${n} bill messages to stream ${stream}`);
    }
    await createBillingTable(mariadb, table);
  }
  const rate = positive(values.rate, "--rate");
  const ttl = positive(values.ttl, "--ttl");
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(positive(values.parallelism, "--parallelism") ?? 2)
    .enableCheckpointing(positive(values["checkpoint-interval"], "--checkpoint-interval") ?? 1000);
  buildBillingPipeline(
    env,
    {
      connection,
      stream,
      ...(rate === undefined ? {} : { recordsPerSecond: rate }),
      ...(ttl === undefined ? {} : { dedupTtlMs: ttl }),
    },
    billingSinks({
      mariadb,
      table,
      ...(values["xid-prefix"] === undefined ? {} : { xidPrefix: values["xid-prefix"] }),
    }),
  );
  const result = await env.execute("billing");
  console.log(result.summary);
  const expected = await expectedFromStream(connection, stream);
  const report = checkUpdateRows(await readUpdateRows(mariadb, table), expected);
  const copies = checkCopyIds(await readCopyIds(mariadb, table), expected);
  console.log(
    `BILLING bills=${report.bills} rows=${report.rows} lost=${report.lost} ` +
      `duplicated=${report.duplicated} unexpected=${report.unexpected} ` +
      `inconsistent=${report.inconsistent} wrong_totals=${report.wrongTotals} ` +
      `copies=${copies.copies} copies_lost=${copies.lost} copies_duplicated=${copies.duplicated}`,
  );
  if (!billingPassed(report) || copies.lost !== 0 || copies.duplicated !== 0) {
    throw new Error(`table ${table} does not hold the failure-free totals of stream ${stream}`);
  }
}

if (import.meta.main) {
  // On a slot thread an error must reach the worker process (which reports it), not end it.
  if (executionRole() === "slot") await main();
  else await main().catch(exitWithError);
}
