import assert from "node:assert/strict";
import { NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import type { Bid, NexmarkConfig, NexmarkEvent } from "../../connectors/datagen/nexmark/mod.ts";
import {
  type EventsByNumber,
  q5Loop,
  q7Loop,
  runWindowedBaseline,
  type WindowedBaselineOptions,
  windowedBaselineRows,
  windowStart,
} from "./windowed_baseline.ts";
import {
  addToDigest,
  newDigest,
  Q11_GAP_MS,
  type Q11Row,
  Q5_SIZE_MS,
  Q5_SLIDE_MS,
  type Q5Row,
  Q7_SIZE_MS,
  type Q7Row,
  Q8_SIZE_MS,
  type Q8Row,
  WINDOWED_QUERY_NAMES,
  windowedRowHash,
} from "./windowed_rows.ts";

/** One event per ms of event time: 60_000 events span a minute, so many windows. */
const SPREAD: NexmarkConfig = { interEventDelayUs: 1000, seed: 3 };

function generated(options: WindowedBaselineOptions) {
  const gen = new NexmarkGenerator(options.config);
  return Array.from({ length: options.events }, (_, n) => gen.event(n));
}

/** Groups `items` by every key `keys` gives it. */
function groupBy<T>(items: Iterable<T>, keys: (item: T) => number[]): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    for (const k of keys(item)) {
      const g = groups.get(k);
      if (g === undefined) groups.set(k, [item]);
      else g.push(item);
    }
  }
  return groups;
}

/**
 * q5 straight from its SQL: every window a bid is in, counts per auction,
 * rows at the max; the rows of each window (by start).
 */
function q5Reference(options: WindowedBaselineOptions): Map<number, Q5Row[]> {
  const bids = generated(options).flatMap((e) => e.type === "bid" ? [e.bid] : []);
  const windows = groupBy(bids, (b: Bid) => {
    const starts: number[] = [];
    for (
      let s = windowStart(b.dateTime, Q5_SLIDE_MS);
      s > b.dateTime - Q5_SIZE_MS;
      s -= Q5_SLIDE_MS
    ) {
      starts.push(s);
    }
    return starts;
  });
  const rows = new Map<number, Q5Row[]>();
  for (const [start, inWindow] of windows) {
    const counts = new Map<number, number>();
    for (const b of inWindow) counts.set(b.auction, (counts.get(b.auction) ?? 0) + 1);
    const max = Math.max(...counts.values());
    rows.set(start, [...counts].filter(([, num]) => num >= max));
  }
  return rows;
}

/** q7 from its SQL (window-contained bids, see the module docs of windowed_queries.ts). */
function q7Reference(options: WindowedBaselineOptions): Q7Row[] {
  const bids = generated(options).flatMap((e) => e.type === "bid" ? [e.bid] : []);
  const windows = groupBy(bids, (b: Bid) => [windowStart(b.dateTime, Q7_SIZE_MS)]);
  return [...windows.values()].flatMap((inWindow) => {
    const max = Math.max(...inWindow.map((b) => b.price));
    return inWindow.filter((b) => b.price === max).map((b) => ({
      auction: b.auction,
      bidder: b.bidder,
      price: b.price,
      dateTime: b.dateTime,
      extra: b.extra,
    }));
  });
}

/** q8 from its SQL: distinct (id, name, window) joined with distinct (seller, window). */
function q8Reference(options: WindowedBaselineOptions): Q8Row[] {
  const events = generated(options);
  const sellers = new Set<string>();
  for (const e of events) {
    if (e.type !== "auction") continue;
    sellers.add(`${e.auction.seller}@${windowStart(e.auction.dateTime, Q8_SIZE_MS)}`);
  }
  const rows = new Map<string, Q8Row>();
  for (const e of events) {
    if (e.type !== "person") continue;
    const start = windowStart(e.person.dateTime, Q8_SIZE_MS);
    if (!sellers.has(`${e.person.id}@${start}`)) continue;
    rows.set(`${e.person.id}|${e.person.name}|${start}`, [e.person.id, e.person.name, start]);
  }
  return [...rows.values()];
}

const bid = (auction: number, price: number, dateTime: number): NexmarkEvent => ({
  type: "bid",
  bid: { auction, bidder: 7, price, channel: "Google", url: "u", dateTime, extra: `x${auction}` },
});

/** Hand-made events, by number. */
function listed(events: readonly NexmarkEvent[]): EventsByNumber {
  return { event: (n) => events[n]! };
}

function run<R>(loop: typeof q7Loop | typeof q5Loop, events: readonly NexmarkEvent[]): R[] {
  const rows: R[] = [];
  (loop as (g: EventsByNumber, n: number, emit: (r: R) => void) => void)(
    listed(events),
    events.length,
    (r) => rows.push(r),
  );
  return rows;
}

/** q11 from its SQL: each bidder's bids cut where two follow more than the gap apart. */
function q11Reference(options: WindowedBaselineOptions): Q11Row[] {
  const bids = generated(options).flatMap((e) => e.type === "bid" ? [e.bid] : []);
  const byBidder = groupBy(bids, (b: Bid) => [b.bidder]);
  const rows: Q11Row[] = [];
  for (const [bidder, own] of byBidder) {
    let start = 0;
    for (let i = 1; i <= own.length; i++) {
      if (i < own.length && own[i]!.dateTime - own[i - 1]!.dateTime <= Q11_GAP_MS) continue;
      rows.push([bidder, i - start, own[start]!.dateTime, own[i - 1]!.dateTime + Q11_GAP_MS]);
      start = i;
    }
  }
  return rows;
}

/** Rows as sorted JSON lines: equal multisets give equal arrays. */
const canonical = (rows: readonly unknown[]) => rows.map((r) => JSON.stringify(r)).sort();

Deno.test("windowStart is the epoch-aligned start of the window holding t, also before 1970", () => {
  assert.deepEqual(
    [0, 1, 1999, 2000, 2001, -1, -2000, -2001].map((t) => windowStart(t, 2000)),
    [0, 0, 0, 2000, 2000, -2000, -2000, -4000],
  );
});

Deno.test("the q5 baseline gives the SQL's rows over a minute of event time", () => {
  const options = { events: 60_000, config: SPREAD };
  const rows = windowedBaselineRows("q5", options);
  const expected = q5Reference(options);
  assert.ok(expected.size >= 30, `only ${expected.size} q5 windows: too few to test`);
  assert.deepEqual(canonical(rows), canonical([...expected.values()].flat()));
});

Deno.test("the q5 baseline emits every auction tied at a window's maximum", () => {
  // 50 events per s of event time, no hot auction: a few bids per auction and window, so ties.
  const options = { events: 20_000, config: { interEventDelayUs: 20_000, hotAuctionRatio: 1 } };
  const expected = q5Reference(options);
  const ties = [...expected.values()].filter((rows) => rows.length > 1).length;
  assert.ok(ties > 0, "no window with a tie: the test shows nothing");
  const rows = windowedBaselineRows("q5", options);
  assert.deepEqual(canonical(rows), canonical([...expected.values()].flat()));
});

Deno.test("the q7 baseline gives each window's bids at its highest price", () => {
  const options = { events: 60_000, config: SPREAD };
  const rows = windowedBaselineRows("q7", options);
  assert.ok(rows.length >= 6, `only ${rows.length} q7 rows`);
  assert.deepEqual(canonical(rows), canonical(q7Reference(options)));
});

Deno.test("the q8 baseline gives the persons who created an auction in their window", () => {
  const options = { events: 60_000, config: SPREAD };
  const rows = windowedBaselineRows("q8", options);
  assert.ok(rows.length >= 6, `only ${rows.length} q8 rows`);
  assert.deepEqual(canonical(rows), canonical(q8Reference(options)));
});

Deno.test("the q11 baseline gives each bidder's sessions of bids at most 10 s apart", () => {
  // One event per 4 ms: 160 s, so bidders who pause for more than 10 s have several sessions.
  const options = { events: 40_000, config: { interEventDelayUs: 4000, seed: 2 } };
  const rows = windowedBaselineRows("q11", options);
  const expected = q11Reference(options);
  const bidders = new Set(expected.map(([bidder]) => bidder));
  assert.ok(expected.length > bidders.size, "no bidder with two sessions: the test shows nothing");
  assert.deepEqual(canonical(rows), canonical(expected));
});

Deno.test("runWindowedBaseline digests exactly the rows windowedBaselineRows gives", () => {
  const options = { events: 30_000, config: SPREAD };
  for (const query of WINDOWED_QUERY_NAMES) {
    const digest = newDigest();
    const hash = windowedRowHash(query);
    for (const row of windowedBaselineRows(query, options)) addToDigest(digest, hash(row as never));
    const run = runWindowedBaseline(query, options);
    assert.deepEqual({ count: run.count, checksum: run.checksum }, digest, query);
    assert.ok(run.count > 0, `${query}: no rows`);
    assert.ok(run.seconds >= 0);
  }
});

Deno.test("runWindowedBaseline rejects an event count that is not a safe integer >= 0", () => {
  assert.throws(
    () => runWindowedBaseline("q7", { events: -1 }),
    /'events' must be a safe integer >= 0: current value is -1/,
  );
});

Deno.test("the q7 baseline emits every bid tied at the window's highest price, per window", () => {
  const rows = run<Q7Row>(q7Loop, [
    bid(1, 50, 1_000),
    bid(2, 90, 2_000),
    bid(3, 90, 9_999), // tied with auction 2 in [0, 10 s)
    bid(4, 10, 10_000), // the next window: its own maximum
    bid(5, 9, 19_999),
  ]);
  assert.deepEqual(rows.map((r) => [r.auction, r.price]), [[2, 90], [3, 90], [4, 10]]);
});

Deno.test("the baseline loops throw on an event time before the previous one", () => {
  const events = [bid(1, 5, 20_000), bid(2, 5, 10_000)];
  assert.throws(() => run(q7Loop, events), /event 1 has event time 10000 ms, before/);
  assert.throws(() => run(q5Loop, events), /event 1 has event time 10000 ms, before/);
});
