/**
 * Batch results of the Nexmark SQL queries that have no DataStream version
 * (q9, q15, q18, q19): each computed in memory from the events, as the
 * query means over a finished input, so `sql_test.ts` can check what the
 * SQL's changelog folds to. Rows are normalized as `sql_queries.ts`
 * normalizes the SQL's (fields in the SQL's column order, times as epoch
 * ms). Pure: no I/O.
 *
 * Where the SQL leaves a choice open (a tie in a `ROW_NUMBER()` order),
 * the result is not defined; these give one answer, and the tests use
 * events with one event per millisecond, where the ties that remain
 * (equal prices) are rare. q12 (processing-time windows) has no batch
 * result at all: its windows depend on the wall clock.
 *
 * @module
 */

import type { SqlValue } from "../../mod.ts";
import type { Auction, Bid, NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import type { SqlQueryName } from "./sql_queries.ts";

type Oracle = (events: readonly NexmarkEvent[]) => SqlValue[][];

const bidRow = (b: Bid): SqlValue[] => [
  b.auction,
  b.bidder,
  b.price,
  b.channel,
  b.url,
  b.dateTime,
  b.extra,
];

function bidsOf(events: readonly NexmarkEvent[]): Bid[] {
  return events.flatMap((e) => e.type === "bid" ? [e.bid] : []);
}

/** `yyyy-MM-dd` of epoch ms, in UTC (Flink's `DATE_FORMAT` in a UTC session). */
function day(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * q9 (winning bids): per auction, the bid of its interval `[dateTime,
 * expires]` first by price descending, then `dateTime` ascending, with the
 * auction's columns.
 */
function q9(events: readonly NexmarkEvent[]): SqlValue[][] {
  const auctions = new Map<number, Auction>();
  for (const e of events) if (e.type === "auction") auctions.set(e.auction.id, e.auction);
  const best = new Map<number, Bid>();
  for (const b of bidsOf(events)) {
    const a = auctions.get(b.auction);
    if (a === undefined || b.dateTime < a.dateTime || b.dateTime > a.expires) continue;
    const w = best.get(a.id);
    if (w === undefined || b.price > w.price || (b.price === w.price && b.dateTime < w.dateTime)) {
      best.set(a.id, b);
    }
  }
  return [...best].map(([id, b]) => {
    const a = auctions.get(id)!;
    return [
      a.id,
      a.itemName,
      a.description,
      a.initialBid,
      a.reserve,
      a.dateTime,
      a.expires,
      a.seller,
      a.category,
      a.extra,
      b.auction,
      b.bidder,
      b.price,
      b.dateTime,
      b.extra,
    ];
  });
}

/** q15 (bidding statistics per day): counts and distinct counts by price rank. */
function q15(events: readonly NexmarkEvent[]): SqlValue[][] {
  const days = new Map<string, Bid[]>();
  for (const b of bidsOf(events)) {
    const d = day(b.dateTime);
    const list = days.get(d);
    if (list === undefined) days.set(d, [b]);
    else list.push(b);
  }
  const ranks: ((b: Bid) => boolean)[] = [
    (b) => b.price < 10_000,
    (b) => b.price >= 10_000 && b.price < 1_000_000,
    (b) => b.price >= 1_000_000,
  ];
  return [...days].map(([d, bids]) => {
    const distinct = (bs: readonly Bid[], f: (b: Bid) => number) => new Set(bs.map(f)).size;
    const counts = (f: (bs: readonly Bid[]) => number) => [
      f(bids),
      ...ranks.map((r) => f(bids.filter(r))),
    ];
    return [
      d,
      ...counts((bs) => bs.length),
      ...counts((bs) => distinct(bs, (b) => b.bidder)),
      ...counts((bs) => distinct(bs, (b) => b.auction)),
    ];
  });
}

/** q18 (last bid per bidder and auction): the latest by `dateTime` (the last of equal times). */
function q18(events: readonly NexmarkEvent[]): SqlValue[][] {
  const last = new Map<string, Bid>();
  for (const b of bidsOf(events)) {
    const key = `${b.bidder}/${b.auction}`;
    const kept = last.get(key);
    if (kept === undefined || b.dateTime >= kept.dateTime) last.set(key, b);
  }
  return [...last.values()].map(bidRow);
}

/** q19 (auction top-10 price): per auction its 10 highest bids, with their rank (1 = highest). */
function q19(events: readonly NexmarkEvent[]): SqlValue[][] {
  const byAuction = new Map<number, Bid[]>();
  for (const b of bidsOf(events)) {
    const list = byAuction.get(b.auction);
    if (list === undefined) byAuction.set(b.auction, [b]);
    else list.push(b);
  }
  return [...byAuction.values()].flatMap((bids) =>
    [...bids].sort((x, y) => y.price - x.price).slice(0, 10).map((b, i) => [...bidRow(b), i + 1])
  );
}

const ORACLES: Readonly<Partial<Record<SqlQueryName, Oracle>>> = { q9, q15, q18, q19 };

/**
 * The batch result of `query` over `events`, or `undefined` for a query
 * without one here (those with a DataStream version, and q12).
 */
export function batchResult(
  query: SqlQueryName,
  events: readonly NexmarkEvent[],
): SqlValue[][] | undefined {
  return ORACLES[query]?.(events);
}
