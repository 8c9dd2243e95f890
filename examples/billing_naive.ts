/**
 * The seeds' "current scheme" (当前方案) of the billing service, faithfully,
 * without Weir: the baseline that `billing.ts` is measured against.
 *
 *     deno run -A examples/billing_naive.ts --nats nats://127.0.0.1:4222 --stream bills \
 *       --table billing_naive [--mariadb mariadb://root@127.0.0.1:3306/test] \
 *       [--batch-size 1000] [--rate R] [--consumer NAME] [--generate --bills N]
 *
 * ## The scheme (the seeds' 执行步骤 1–4)
 *
 * 1. Read the next `batch-size` messages of the stream after the recorded
 *    offset (table `<table>_offsets`, row `consumer`; the first stream
 *    sequence when there is none).
 * 2. Deduplicate the batch by `billId` (within the batch only) and add it
 *    up per account.
 * 3. Write the batch's sums to MariaDB, one autocommitted
 *    `INSERT … ON DUPLICATE KEY UPDATE bill_count = bill_count + ?,
 *    total = total + ?` per account; when every write succeeded, record the
 *    offset after the batch (one more autocommitted statement). A failed
 *    write records no offset.
 * 4. Go back to 1, until the stream's last sequence at start was read.
 *
 * With `--rate R` it keeps to R messages per second, like a rate-limited
 * source, so a run lasts long enough to be killed at random moments: a
 * batch's writes are spread over the batch's share of time (as against a
 * slow database), so a kill at a random moment mostly lands between a
 * batch's first write and its offset record, the window the seeds warn
 * about.
 *
 * ## What goes wrong (the seeds' 存在的问题)
 *
 * - A crash after some of a batch's writes and before the offset is
 *   recorded re-reads the batch at restart and adds its sums again: the
 *   partial write is doubled (not end-to-end exactly-once).
 * - A copy of a bill that lands in another batch than the bill passes the
 *   in-batch dedup and is counted twice, with or without failures.
 *
 * `tests/billing_chaos.ts` SIGKILLs this process at random moments and
 * counts both effects against the failure-free result.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { delay } from "../runtime/actor/async.ts";
import { jetstreamApi, type NatsConnection } from "../runtime/actor/nats_deps.ts";
import { connectNats, type NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import { exampleConnection } from "./_jetstream.ts";
import { exitWithError } from "./_cli.ts";
import { parseBill } from "./billing_functions.ts";
import { publishBillingInput } from "./billing_input.ts";
import {
  checkTableName,
  connectMariaDb,
  createNaiveTables,
  DEFAULT_MARIADB_URL,
  type MariaDbConfig,
  parseMariaDbUrl,
} from "./billing_tables.ts";

/** Options of {@linkcode runNaiveBilling}. */
export interface NaiveBillingOptions {
  /** The NATS server of the bill stream. */
  readonly connection: NatsConnectionOptions;
  /** The bill stream. */
  readonly stream: string;
  /** The MariaDB server. */
  readonly mariadb: MariaDbConfig;
  /** The totals table (`<table>_offsets` holds the offsets). */
  readonly table: string;
  /** Messages per batch. Default 1000. */
  readonly batchSize?: number;
  /** Messages per second at most; unlimited when absent. */
  readonly rate?: number;
  /** The offset row's name. Default `"billing"`. */
  readonly consumer?: string;
  /** Receives one progress line per batch. Default `console.log`. */
  readonly log?: (line: string) => void;
}

/** What one {@linkcode runNaiveBilling} did. */
export interface NaiveBillingResult {
  /** Batches written (offset recorded). */
  readonly batches: number;
  /** Messages read in those batches. */
  readonly messages: number;
  /** The offset recorded last: the next stream sequence to read. */
  readonly nextSeq: number;
}

/** A batch's sums per account after its in-batch dedup. */
export interface BatchSums {
  /** Per account: distinct bills of the batch and their total, in cents. */
  readonly accounts: Map<string, { count: number; total: number }>;
  /** Copies dropped within the batch. */
  readonly duplicates: number;
}

/** Step 2 of the scheme: deduplicates `payloads` by `billId` within the batch and sums per account. */
export function sumBatch(payloads: readonly Uint8Array[]): BatchSums {
  const ids = new Set<string>();
  const accounts = new Map<string, { count: number; total: number }>();
  let duplicates = 0;
  for (const data of payloads) {
    const bill = parseBill(data);
    if (ids.has(bill.billId)) {
      duplicates++;
      continue;
    }
    ids.add(bill.billId);
    const a = accounts.get(bill.account) ?? { count: 0, total: 0 };
    a.count++;
    a.total += bill.amount;
    accounts.set(bill.account, a);
  }
  return { accounts, duplicates };
}

/**
 * Reads up to `max` messages of `stream` from sequence `from` on, stopping
 * after `lastSeq`.
 * @returns the payloads and the sequence after the last one read.
 * @throws {Error} naming the stream and sequence when a read times out.
 */
async function readBatch(
  nc: NatsConnection,
  stream: string,
  from: number,
  max: number,
  lastSeq: number,
): Promise<{ payloads: Uint8Array[]; next: number }> {
  const want = Math.min(max, lastSeq - from + 1);
  const payloads: Uint8Array[] = [];
  let next = from;
  if (want <= 0) return { payloads, next };
  const js = jetstreamApi.jetstream(nc);
  const consumer = await js.consumers.get(stream, {
    deliver_policy: jetstreamApi.DeliverPolicy.StartSequence,
    opt_start_seq: from,
  });
  while (payloads.length < want) {
    const before = payloads.length;
    const messages = await consumer.fetch({
      max_messages: want - payloads.length,
      expires: 5000,
    });
    for await (const m of messages) {
      if (m.seq > lastSeq) break;
      payloads.push(m.data);
      next = m.seq + 1;
      if (payloads.length >= want) break;
    }
    if (payloads.length === before) {
      throw new Error(
        `Cannot read stream ${stream} at sequence ${next}: no message within 5000 ms (its last sequence was ${lastSeq})`,
      );
    }
  }
  await consumer.delete().catch(() => {});
  return { payloads, next };
}

/**
 * Runs the scheme (see the module docs) until the stream's last sequence
 * at start has been read.
 * @throws {Error} when NATS or MariaDB fail, or a message is not a bill
 *   (`BillFormatError`); the offset then stays where the last full batch
 *   left it.
 */
export async function runNaiveBilling(options: NaiveBillingOptions): Promise<NaiveBillingResult> {
  const table = checkTableName(options.table);
  const batchSize = options.batchSize ?? 1000;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
    throw new RangeError(`'batchSize' must be a positive integer: current value is ${batchSize}`);
  }
  const rate = options.rate;
  if (rate !== undefined && !(rate > 0 && Number.isFinite(rate))) {
    throw new RangeError(`'rate' must be a positive number: current value is ${rate}`);
  }
  const consumer = options.consumer ?? "billing";
  const log = options.log ?? ((line: string) => console.log(line));
  await createNaiveTables(options.mariadb, table);
  const nc = await connectNats({ name: "weir-billing-naive", ...options.connection });
  const db = await connectMariaDb(options.mariadb);
  try {
    const jsm = await jetstreamApi.jetstreamManager(nc);
    const lastSeq = (await jsm.streams.info(options.stream)).state.last_seq;
    const found = await db.query(
      `SELECT next_seq FROM \`${table}_offsets\` WHERE consumer = ?`,
      [consumer],
    ) as { next_seq: number }[];
    let next = found[0]?.next_seq ?? 1;
    log(`naive: started at offset ${next} of stream ${options.stream} (last sequence ${lastSeq})`);
    let batches = 0;
    let messages = 0;
    while (next <= lastSeq) {
      // 1. read a batch after the recorded offset
      const batch = await readBatch(nc, options.stream, next, batchSize, lastSeq);
      // 2. deduplicate within the batch and aggregate
      const sums = sumBatch(batch.payloads);
      // 3. write, then record the offset (at the rate limit: the writes spread over the batch's time)
      const batchStart = performance.now();
      const batchMs = rate === undefined ? 0 : (batch.payloads.length / rate) * 1000;
      let written = 0;
      for (const [account, s] of sums.accounts) {
        const wait = batchStart + (written++ / sums.accounts.size) * batchMs - performance.now();
        if (wait > 0) await delay(wait);
        await db.query(
          `INSERT INTO \`${table}\` (account, bill_count, total) VALUES (?, ?, ?)
           ON DUPLICATE KEY UPDATE bill_count = bill_count + VALUES(bill_count),
                                   total = total + VALUES(total)`,
          [account, s.count, s.total],
        );
      }
      await db.query(
        `INSERT INTO \`${table}_offsets\` (consumer, next_seq) VALUES (?, ?)
         ON DUPLICATE KEY UPDATE next_seq = VALUES(next_seq)`,
        [consumer, batch.next],
      );
      batches++;
      messages += batch.payloads.length;
      log(
        `naive: batch ${next}..${batch.next - 1} written (${sums.accounts.size} accounts, ` +
          `${sums.duplicates} copies dropped in the batch); offset ${batch.next}`,
      );
      next = batch.next;
      // 4. go back to 1 (after the batch's time at the rate limit, if any)
      const wait = batchStart + batchMs - performance.now();
      if (wait > 0) await delay(wait);
    }
    return { batches, messages, nextSeq: next };
  } finally {
    await db.end().catch(() => db.destroy());
    await nc.close();
  }
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
      "batch-size": text,
      rate: text,
      consumer: text,
      generate: { type: "boolean", default: false },
      bills: text,
      seed: text,
    },
  });
  const connection = exampleConnection(values, "billing-naive");
  const stream = values.stream;
  const table = values.table;
  if (stream === undefined || table === undefined) {
    throw new Error("billing_naive.ts needs --stream S and --table T");
  }
  if (values.generate) {
    const n = await publishBillingInput(connection, stream, {
      bills: positive(values.bills, "--bills") ?? 10_000,
      seed: Number(values.seed ?? "1"),
    });
    console.error(`published ${n} messages to stream ${stream}`);
  }
  const rate = positive(values.rate, "--rate");
  const result = await runNaiveBilling({
    connection,
    stream,
    table,
    mariadb: parseMariaDbUrl(values.mariadb ?? DEFAULT_MARIADB_URL),
    batchSize: positive(values["batch-size"], "--batch-size") ?? 1000,
    ...(rate === undefined ? {} : { rate }),
    ...(values.consumer === undefined ? {} : { consumer: values.consumer }),
  });
  console.log(
    `NAIVE_DONE batches=${result.batches} messages=${result.messages} next_seq=${result.nextSeq}`,
  );
}

if (import.meta.main) await main().catch(exitWithError);
