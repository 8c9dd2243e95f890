/**
 * The two stateful steps of the billing job (`billing.ts`), and the bill
 * decoder of its source:
 *
 * - {@linkcode BillDeduplicator}, keyed by `billId`: passes a bill the first
 *   time its id is seen and sends every later copy to the side output
 *   {@linkcode DUPLICATE_BILLS}. What it has seen is keyed state with an
 *   event-time TTL, so it is in every checkpoint (deduplication holds
 *   across batches, checkpoints and restores, unlike the seeds' in-batch
 *   dedup) and it forgets a bill once event time has moved `ttlMs` past it.
 * - {@linkcode AccountTotals}, keyed by `account`: the running count and
 *   total of the account's bills, emitted as one {@linkcode AccountUpdate}
 *   per bill.
 *
 * ## Why event-time TTL
 *
 * A copy arrives minutes after its bill *in the log*. Processing-time TTL
 * (Flink's only kind) would measure the wall clock instead: a job that was
 * down for longer than the TTL restores state that expires at once, so the
 * copies of the bills just before the outage pass as new bills; and a
 * catch-up replay of hours of log keeps state far longer than needed. The
 * outcome of a dedup would depend on when and how fast the job ran, so a
 * run with failures could differ from one without. Event-time TTL measures
 * the lifetime on the operator's watermark, which follows the log: a bill
 * stays known while the log moves on less than `ttlMs` of event time, in
 * any run. The TTL must exceed the longest delay of a copy plus how far
 * the watermark may trail the newest bill when a bill is first seen (the
 * source's out-of-orderness bound, the periodic watermark's interval, and
 * the skew between source subtasks: alignment blocks a subtask that is a
 * checkpoint ahead, so the skew stays near one checkpoint interval of
 * input plus what the network buffers hold). A copy arriving later than
 * that passes as a new bill, in a failure-free run as well. The example's
 * input (`billing_input.ts`) sends copies at most 5 minutes late against
 * a one-hour TTL. (A watermark that trails when a copy arrives only makes
 * its bill live longer; one that trails when the bill is first seen
 * shortens its life by as much, hence the margin.)
 *
 * ## Shapes
 *
 * State values are plain data (`true`; `{count, total}`), as checkpoints
 * encode them with MessagePack. Fields are TypeScript-`private` rather than
 * `#private`: the engine copies a function per subtask with
 * `Object.create(prototype)` plus its own fields, which `#private` slots do
 * not survive.
 *
 * @module
 */

import {
  type Collector,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  OutputTag,
  type RuntimeContext,
  type ValueState,
  ValueStateDescriptor,
} from "../mod.ts";
import type { Bill } from "./billing_input.ts";

/** One step of an account's running totals: the account after `billId` was added. */
export interface AccountUpdate {
  /** The account. */
  readonly account: string;
  /** The account's distinct bills so far, this one included (1, 2, 3, ...). */
  readonly count: number;
  /** Their amounts added up, in cents. */
  readonly total: number;
  /** The bill that made this update. */
  readonly billId: string;
  /** That bill's amount, in cents. */
  readonly amount: number;
  /** That bill's event time, in ms since the epoch. */
  readonly time: number;
}

/** The side output of the copies {@linkcode BillDeduplicator} rejects. */
export const DUPLICATE_BILLS: OutputTag<Bill> = new OutputTag<Bill>("duplicate-bills");

/** The default dedup TTL: one hour of event time. */
export const DEFAULT_DEDUP_TTL_MS = 3_600_000;

/**
 * Passes each bill once per `billId`; later copies go to
 * {@linkcode DUPLICATE_BILLS} (see the module docs). Keyed by `billId`.
 * The idea is Flink's deduplication with keyed state and `StateTtlConfig`
 * (the seeds' "增强的去重能力"), with the TTL in event time.
 */
export class BillDeduplicator implements KeyedProcessFunction<string, Bill, Bill> {
  /** How long a bill id is remembered, in ms of event time. */
  readonly ttlMs: number;
  private seen!: ValueState<boolean>;

  /**
   * Makes the deduplicator.
   * @param ttlMs how long a bill id is remembered, in ms of event time (> 0).
   * @throws {RangeError} when `ttlMs` is not a positive finite number.
   */
  constructor(ttlMs: number = DEFAULT_DEDUP_TTL_MS) {
    if (!(ttlMs > 0 && Number.isFinite(ttlMs))) {
      throw new RangeError(
        `BillDeduplicator: 'ttlMs' must be a positive number of ms: current value is ${ttlMs}`,
      );
    }
    this.ttlMs = ttlMs;
  }

  /** Registers the keyed state `seen` with its event-time TTL. */
  open(ctx: RuntimeContext): void {
    this.seen = ctx.getState(
      new ValueStateDescriptor<boolean>("seen", {
        ttl: { ttlMs: this.ttlMs, timeCharacteristic: "EventTime" },
      }),
    );
  }

  /** Emits `bill` if its id is new, else sends it to {@linkcode DUPLICATE_BILLS}. */
  processElement(bill: Bill, ctx: KeyedProcessContext<string>, out: Collector<Bill>): void {
    if (this.seen.value() === true) {
      ctx.output(DUPLICATE_BILLS, bill);
      return;
    }
    this.seen.update(true);
    out.collect(bill);
  }
}

/**
 * Adds each bill to its account's running count and total (keyed state
 * `totals`, `{count, total}`) and emits the account's new state as an
 * {@linkcode AccountUpdate}. Keyed by `account`. Flink's
 * `KeyedStream.sum`, with the count and the bill carried along.
 */
export class AccountTotals implements KeyedProcessFunction<string, Bill, AccountUpdate> {
  private totals!: ValueState<{ count: number; total: number }>;

  /** Registers the keyed state `totals`. */
  open(ctx: RuntimeContext): void {
    this.totals = ctx.getState(
      new ValueStateDescriptor<{ count: number; total: number }>("totals"),
    );
  }

  /** Adds `bill` and emits the update. */
  processElement(
    bill: Bill,
    _ctx: KeyedProcessContext<string>,
    out: Collector<AccountUpdate>,
  ): void {
    const before = this.totals.value() ?? { count: 0, total: 0 };
    const after = { count: before.count + 1, total: before.total + bill.amount };
    this.totals.update(after);
    out.collect({
      account: bill.account,
      count: after.count,
      total: after.total,
      billId: bill.billId,
      amount: bill.amount,
      time: bill.time,
    });
  }
}

/** A message of the bill log is not a bill. */
export class BillFormatError extends Error {
  /**
   * Builds the error; its message reads `Invalid bill: <problem>`.
   * @param problem what is wrong, with the current value.
   */
  constructor(problem: string) {
    super(`Invalid bill: ${problem}`);
    this.name = "BillFormatError";
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const MAX_ID_LENGTH = 64;

/**
 * Decodes one message of the bill log: UTF-8 JSON of an object with
 * `billId` and `account` (non-empty strings of at most 64 characters),
 * `amount` (a safe integer ≥ 1, cents) and `time` (a safe integer ≥ 0, ms
 * since the epoch). Other fields are ignored.
 * @throws {BillFormatError} naming the field and its current value (or the
 *   byte offset of bad UTF-8 / JSON).
 */
export function parseBill(data: Uint8Array): Bill {
  let text: string;
  try {
    text = utf8.decode(data);
  } catch {
    throw new BillFormatError(`the payload (${data.length} bytes) is not valid UTF-8`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new BillFormatError(
      `the payload is not JSON (${error instanceof Error ? error.message : error}): ${
        JSON.stringify(text.slice(0, 80))
      }`,
    );
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new BillFormatError(
      `the payload must be a JSON object: current value is ${JSON.stringify(text.slice(0, 80))}`,
    );
  }
  const o = raw as Record<string, unknown>;
  const id = (name: "billId" | "account"): string => {
    const v = o[name];
    if (typeof v !== "string" || v === "" || v.length > MAX_ID_LENGTH) {
      throw new BillFormatError(
        `field '${name}' must be a non-empty string of at most ${MAX_ID_LENGTH} characters: current value is ${
          JSON.stringify(v)?.slice(0, 80)
        }`,
      );
    }
    return v;
  };
  const int = (name: "amount" | "time", min: number): number => {
    const v = o[name];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min) {
      throw new BillFormatError(
        `field '${name}' must be a safe integer ≥ ${min}: current value is ${
          JSON.stringify(v)?.slice(0, 80)
        }`,
      );
    }
    return v;
  };
  return {
    billId: id("billId"),
    account: id("account"),
    amount: int("amount", 1),
    time: int("time", 0),
  };
}
