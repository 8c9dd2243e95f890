/**
 * The hand-written baselines of the updating Nexmark queries q4 and q6:
 * one loop over events `0..events-1` of the same {@linkcode NexmarkGenerator}
 * the engine's source uses, computing the queries' final tables (see
 * `queries_q4_q6.ts` for their semantics) with plain `Map`s, and digesting
 * them as the harness digests the engine's folded changelog: the number of
 * rows and the sum mod 2^32 of `fieldsHash` per row.
 *
 * ## Design
 *
 * The generator's event times never decrease with the event number, so one
 * pass suffices:
 *
 * - an auction is kept as `[dateTime, expires, seller, category]` (not the
 *   event: its padding would hold hundreds of bytes per auction for the
 *   whole run), with its best bid so far;
 * - a bid naming an auction not generated yet can only fall in that
 *   auction's interval if both share the millisecond (the auction's
 *   `dateTime` is at least the bid's), so such bids wait in a map that is
 *   emptied whenever event time moves on to the next millisecond;
 * - q4 folds each auction's best price into its category's sum and count
 *   at the end; q6 sorts each seller's winners by `(dateTime, auction)` and
 *   averages windows of 11.
 *
 * The loop's rows equal `q4Batch`/`q6Batch` (the two-pass batch oracles of
 * `queries_q4_q6.ts`); `q4_q6_baseline_test.ts` checks it.
 *
 * @module
 */

import { NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import type { NexmarkConfig } from "../../connectors/datagen/nexmark/mod.ts";
import { fieldsHash, Q6_PRECEDING } from "./queries_q4_q6.ts";

/** The updating queries with a hand-written baseline here. */
export const UPDATING_QUERY_NAMES = ["q4", "q6"] as const;
/** An updating query's name. */
export type UpdatingQueryName = typeof UPDATING_QUERY_NAMES[number];

/** Whether `name` is one of {@linkcode UPDATING_QUERY_NAMES}. */
export function isUpdatingQueryName(name: string): name is UpdatingQueryName {
  return (UPDATING_QUERY_NAMES as readonly string[]).includes(name);
}

/** What one loop run computed. */
export interface UpdatingBaselineResult {
  /** Rows of the final table. */
  readonly count: number;
  /** Sum mod 2^32 of `fieldsHash` of the rows. */
  readonly checksum: number;
  /** Wall time of the loop, seconds. */
  readonly seconds: number;
}

/** `[dateTime, expires, seller, category, best price (-1: none), best bid's dateTime]`. */
type AuctionSlot = [number, number, number, number, number, number];

/**
 * Runs `query`'s loop over events `0..events-1` and hands each row of the
 * final table to `row` (when given).
 * @throws {RangeError} when `events` is not a safe integer >= 0, or the
 *   generator's event time went backwards (a generator bug).
 */
export function runUpdatingBaseline(
  query: UpdatingQueryName,
  options: {
    readonly events: number;
    readonly config?: NexmarkConfig;
    readonly row?: (fields: [number, number]) => void;
  },
): UpdatingBaselineResult {
  const n = options.events;
  if (!(Number.isSafeInteger(n) && n >= 0)) {
    throw new RangeError(
      `Cannot run the ${query} baseline as 'events' must be a safe integer >= 0: current value is ${n}`,
    );
  }
  const gen = new NexmarkGenerator(options.config);
  const t0 = performance.now();
  const auctions = new Map<number, AuctionSlot>();
  /** Bids of auctions not generated yet, in the current millisecond: auction -> [price, dateTime][]. */
  let early = new Map<number, [number, number][]>();
  let now = Number.NEGATIVE_INFINITY;
  const offer = (slot: AuctionSlot, price: number, dateTime: number) => {
    if (dateTime < slot[0] || dateTime > slot[1]) return;
    if (price > slot[4] || (price === slot[4] && dateTime < slot[5])) {
      slot[4] = price;
      slot[5] = dateTime;
    }
  };
  for (let i = 0; i < n; i++) {
    const e = gen.event(i);
    const time = e.type === "bid"
      ? e.bid.dateTime
      : e.type === "auction"
      ? e.auction.dateTime
      : e.person.dateTime;
    if (time < now) {
      throw new RangeError(`nexmark ${query} baseline: event ${i} goes back in time to ${time}`);
    }
    if (time > now) {
      now = time;
      if (early.size > 0) early = new Map();
    }
    if (e.type === "auction") {
      const a = e.auction;
      const slot: AuctionSlot = [a.dateTime, a.expires, a.seller, a.category, -1, 0];
      auctions.set(a.id, slot);
      for (const [price, dateTime] of early.get(a.id) ?? []) offer(slot, price, dateTime);
      early.delete(a.id);
    } else if (e.type === "bid") {
      const b = e.bid;
      const slot = auctions.get(b.auction);
      if (slot !== undefined) offer(slot, b.price, b.dateTime);
      else {
        const waiting = early.get(b.auction);
        if (waiting === undefined) early.set(b.auction, [[b.price, b.dateTime]]);
        else waiting.push([b.price, b.dateTime]);
      }
    }
  }
  let count = 0;
  let checksum = 0;
  const emit = (fields: [number, number]) => {
    count++;
    checksum = (checksum + fieldsHash(fields)) >>> 0;
    options.row?.(fields);
  };
  if (query === "q4") {
    const acc = new Map<number, [number, number]>();
    for (const s of auctions.values()) {
      if (s[4] < 0) continue;
      const a = acc.get(s[3]);
      if (a === undefined) acc.set(s[3], [s[4], 1]);
      else {
        a[0] += s[4];
        a[1]++;
      }
    }
    for (const [category, [sum, n]] of acc) emit([category, Math.trunc(sum / n)]);
  } else {
    const bySeller = new Map<number, [number, number, number][]>();
    for (const [id, s] of auctions) {
      if (s[4] < 0) continue;
      const rows = bySeller.get(s[2]);
      const row: [number, number, number] = [s[5], id, s[4]];
      if (rows === undefined) bySeller.set(s[2], [row]);
      else rows.push(row);
    }
    for (const [seller, rows] of bySeller) {
      rows.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      let sum = 0;
      for (let i = 0; i < rows.length; i++) {
        sum += rows[i]![2];
        if (i > Q6_PRECEDING) sum -= rows[i - Q6_PRECEDING - 1]![2];
        emit([seller, Math.trunc(sum / Math.min(i + 1, Q6_PRECEDING + 1))]);
      }
    }
  }
  return { count, checksum, seconds: (performance.now() - t0) / 1000 };
}
