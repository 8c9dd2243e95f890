/**
 * The input of the billing case study (the seeds' 账单计算服务, DESIGN §10
 * case 6): bills `{billId, account, amount, time}` on a replayable log, some
 * of them published twice, minutes apart, as an upstream that retries
 * delivery does. {@linkcode billingInput} makes the input from a seed, so
 * every consumer (the Weir job, the naive scheme, the checks) sees and
 * expects the same thing; {@linkcode expectedTotals} is the failure-free
 * result, computed from the input without any engine.
 *
 * ## The input, exactly
 *
 * - Bill *i* (0-based, `i < bills`) has `billId` `b<seed>-<i>`, an account
 *   `acct-<j>` with `j` uniform in `[0, accounts)`, an `amount` in integer
 *   cents uniform in `[1, 100 000]`, and event `time` = `startTime + i ×
 *   billIntervalMs` (ms since the epoch): the log is in event-time order.
 * - A bill is re-published (a *duplicate*: the very same payload) with
 *   probability `duplicateRatio`, `delay` later in the log, `delay` uniform
 *   in `[minDuplicateDelayMs, maxDuplicateDelayMs]` of event time: the copy
 *   comes right before the first bill whose time is past `time + delay`
 *   (or at the end of the log). Its own `time` is the bill's, so in event
 *   time it is *late* by `delay`.
 * - Each message goes to subject `<stream>.p<j mod partitions>` (Kafka-style
 *   partitions by account: a bill and its copy are in one partition, in
 *   order).
 *
 * The defaults (100 ms between bills, copies 1–5 minutes later) give 100k
 * bills ≈ 2.8 hours of event time, so a one-hour dedup TTL
 * ({@linkcode DEFAULT_DEDUP_TTL_MS} in `billing.ts`) forgets most bills
 * before the log ends and still covers every copy with a wide margin.
 *
 * @module
 */

import type { NatsConnectionOptions } from "../runtime/actor/nats_connect.ts";
import { ensureStream, publishAll } from "./_jetstream.ts";

/** One bill (the seeds' 账单消息). Amounts are integer cents, so totals add up exactly. */
export interface Bill {
  /** Unique per bill; a duplicate carries the same id. */
  readonly billId: string;
  /** The account billed, `acct-<j>`. */
  readonly account: string;
  /** The amount, in integer cents, ≥ 1. */
  readonly amount: number;
  /** When the bill was issued (event time), in ms since the epoch. */
  readonly time: number;
}

/** The shape of the input; every field but `bills` has a default. */
export interface BillingInputShape {
  /** Distinct bills, ≥ 1. */
  readonly bills: number;
  /** Accounts, ≥ 1. Default 1000. */
  readonly accounts?: number;
  /** Probability that a bill is published twice, in [0, 1]. Default 0.1. */
  readonly duplicateRatio?: number;
  /** Event time between consecutive bills, in ms (> 0). Default 100. */
  readonly billIntervalMs?: number;
  /** Shortest delay of a duplicate, in ms of event time (≥ 0). Default 60 000 (1 minute). */
  readonly minDuplicateDelayMs?: number;
  /** Longest delay of a duplicate, in ms of event time (≥ the shortest). Default 300 000 (5 minutes). */
  readonly maxDuplicateDelayMs?: number;
  /** Subjects `<stream>.p0` .. `<stream>.p<partitions-1>`, ≥ 1. Default 4. */
  readonly partitions?: number;
  /** Event time of bill 0, in ms since the epoch. Default 1 700 000 000 000. */
  readonly startTime?: number;
  /** Seed of every random choice (an integer). Default 1. */
  readonly seed?: number;
}

/** One message of the input log, in publishing order. */
export interface BillMessage {
  /** `<stream>.p<n>`. */
  readonly subject: string;
  /** The bill. */
  readonly bill: Bill;
  /** Whether this is the second publication of `bill`. */
  readonly duplicate: boolean;
}

/** The defaults of {@linkcode BillingInputShape}, in one place. */
export const BILLING_INPUT_DEFAULTS: Readonly<Required<Omit<BillingInputShape, "bills">>> = {
  accounts: 1000,
  duplicateRatio: 0.1,
  billIntervalMs: 100,
  minDuplicateDelayMs: 60_000,
  maxDuplicateDelayMs: 300_000,
  partitions: 4,
  startTime: 1_700_000_000_000,
  seed: 1,
};

/**
 * mulberry32, a small seeded 32-bit PRNG (so an input is replayed from its seed).
 * @returns a function giving floats in [0, 1).
 */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The shape with defaults filled in and every field checked.
 * @throws {RangeError} naming the field and its current value when one is out of range.
 */
export function resolveBillingShape(shape: BillingInputShape): Required<BillingInputShape> {
  const s = { ...BILLING_INPUT_DEFAULTS, ...stripUndefined(shape) } as Required<BillingInputShape>;
  const positiveInts = ["bills", "accounts", "partitions"] as const;
  for (const name of positiveInts) {
    if (!Number.isSafeInteger(s[name]) || s[name] < 1) {
      throw new RangeError(`'${name}' must be a positive integer: current value is ${s[name]}`);
    }
  }
  if (!Number.isSafeInteger(s.seed)) {
    throw new RangeError(`'seed' must be an integer: current value is ${s.seed}`);
  }
  if (!Number.isSafeInteger(s.startTime) || s.startTime < 0) {
    throw new RangeError(
      `'startTime' must be a non-negative integer (ms): current value is ${s.startTime}`,
    );
  }
  if (!(s.duplicateRatio >= 0 && s.duplicateRatio <= 1)) {
    throw new RangeError(
      `'duplicateRatio' must be in [0, 1]: current value is ${s.duplicateRatio}`,
    );
  }
  if (!(s.billIntervalMs > 0 && Number.isFinite(s.billIntervalMs))) {
    throw new RangeError(
      `'billIntervalMs' must be a positive number: current value is ${s.billIntervalMs}`,
    );
  }
  if (!(s.minDuplicateDelayMs >= 0 && s.maxDuplicateDelayMs >= s.minDuplicateDelayMs)) {
    throw new RangeError(
      `'minDuplicateDelayMs' must be ≥ 0 and ≤ 'maxDuplicateDelayMs': current values are ${s.minDuplicateDelayMs} and ${s.maxDuplicateDelayMs}`,
    );
  }
  return s;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The input log in publishing order (see the module docs), computed from
 * `shape` alone.
 * @throws {RangeError} when a field of `shape` is out of range.
 */
export function* billingInput(stream: string, shape: BillingInputShape): Generator<BillMessage> {
  const s = resolveBillingShape(shape);
  const rand = mulberry32(s.seed);
  const subject = (account: number) => `${stream}.p${account % s.partitions}`;
  // Pending copies, due in event-time order: delays are random, so keep them sorted by due time.
  const pending: { due: number; message: BillMessage }[] = [];
  let head = 0;
  for (let i = 0; i < s.bills; i++) {
    const time = s.startTime + Math.round(i * s.billIntervalMs);
    while (head < pending.length && pending[head]!.due < time) yield pending[head++]!.message;
    if (head > 4096 && head * 2 > pending.length) {
      pending.splice(0, head);
      head = 0;
    }
    const j = Math.floor(rand() * s.accounts);
    const bill: Bill = {
      billId: `b${s.seed}-${i}`,
      account: `acct-${j}`,
      amount: 1 + Math.floor(rand() * 100_000),
      time,
    };
    yield { subject: subject(j), bill, duplicate: false };
    if (rand() < s.duplicateRatio) {
      const delay = s.minDuplicateDelayMs +
        Math.round(rand() * (s.maxDuplicateDelayMs - s.minDuplicateDelayMs));
      const entry = { due: time + delay, message: { subject: subject(j), bill, duplicate: true } };
      // Insert in due order (the tail is almost always the place: delays vary by minutes only).
      let at = pending.length;
      while (at > head && pending[at - 1]!.due > entry.due) at--;
      pending.splice(at, 0, entry);
    }
  }
  while (head < pending.length) yield pending[head++]!.message;
}

/** The failure-free result for one account: its distinct bills and their total. */
export interface AccountTotal {
  /** Distinct bills of the account. */
  readonly count: number;
  /** Their amounts added up, in cents. */
  readonly total: number;
}

/** The failure-free result of a whole input. */
export interface ExpectedBilling {
  /** Every distinct bill by id. */
  readonly bills: ReadonlyMap<string, Bill>;
  /** Per account (only accounts with bills). */
  readonly accounts: ReadonlyMap<string, AccountTotal>;
  /** Messages in the log (bills and their copies). */
  readonly messages: number;
  /** Per bill id with copies: how many copies (messages beyond the first). */
  readonly copies: ReadonlyMap<string, number>;
}

/**
 * The failure-free result: every distinct bill counted once per account
 * (what exactly-once deduplication and aggregation must produce), computed
 * directly from the log, without any engine.
 */
export function expectedTotals(messages: Iterable<BillMessage>): ExpectedBilling {
  const bills = new Map<string, Bill>();
  const accounts = new Map<string, { count: number; total: number }>();
  const copies = new Map<string, number>();
  let count = 0;
  for (const { bill } of messages) {
    count++;
    if (bills.has(bill.billId)) {
      copies.set(bill.billId, (copies.get(bill.billId) ?? 0) + 1);
      continue;
    }
    bills.set(bill.billId, bill);
    const a = accounts.get(bill.account) ?? { count: 0, total: 0 };
    a.count++;
    a.total += bill.amount;
    accounts.set(bill.account, a);
  }
  return { bills, accounts, messages: count, copies };
}

const encoder = new TextEncoder();

/**
 * Creates `stream` (capturing `<stream>.>`) and publishes the input of
 * `shape` to it. Never call it on a slot thread.
 * @returns the messages published (bills and copies).
 * @throws {Error} naming the stream when it already holds messages (the
 *   input would be doubled), or when NATS refuses a publish.
 */
export async function publishBillingInput(
  connection: NatsConnectionOptions,
  stream: string,
  shape: BillingInputShape,
): Promise<number> {
  const found = await ensureStream(connection, stream);
  if (found.kind === "exists" && found.messages > 0) {
    throw new Error(
      `Cannot generate the billing input into stream ${stream}: it already holds ${found.messages} messages`,
    );
  }
  const encoded = function* () {
    for (const m of billingInput(stream, shape)) {
      yield [m.subject, encoder.encode(JSON.stringify(m.bill))] as const;
    }
  };
  return await publishAll(connection, encoded());
}
