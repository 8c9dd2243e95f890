/**
 * The hand-written baselines of the windowed Nexmark queries (q5, q7, q8, q11):
 * for each query, one loop over events `0..events-1` of the same
 * {@linkcode NexmarkGenerator} the engine's source uses, with the window
 * logic written out by hand over plain `Map`s and `Set`s. No engine: no
 * source reader, operators, state backend, timers, watermarks or
 * checkpoints. It is the ceiling the engine's jobs (`windowed_queries.ts`)
 * are compared with, and the reference their output must equal.
 *
 * ## Design
 *
 * The generator's event times never decrease with the event number
 * (`baseTimeMs + floor(n × interEventDelayUs / 1000)`), so a loop in
 * generation order sees every window's events before any event of a later
 * window: it closes a window as soon as an event of a later one arrives,
 * and closes the rest after the last event (the engine's end-of-input
 * watermark does the same). A decreasing event time is a bug in the
 * generator; the loops throw rather than produce another answer.
 *
 * - **q5**: counts per (2 s pane, auction), Flink's window slicing: a bid
 *   touches one counter, not five. A 10 s window is the sum of its five
 *   panes, built when it closes; its rows are the auctions whose count is
 *   the window's maximum.
 * - **q7**: per 10 s window, the highest price so far and the bids at that
 *   price.
 * - **q8**: per 10 s window, the persons (id → name) and the set of sellers
 *   of its auctions; a person with an auction of its own in the window is a
 *   row.
 * - **q11**: per bidder, its open session; a bid more than 10 s after the
 *   bidder's last closes it into a row.
 *
 * Like the engine's source, every loop generates every event, also those
 * its query drops (q8 drops the bids): the generator's cost is part of both
 * figures, as in `baseline.ts`.
 *
 * Every row goes to a callback: the benchmark's counts it and adds its hash
 * to an order-independent checksum ({@linkcode OutputDigest}); the tests'
 * collects the rows.
 *
 * @module
 */

import { NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import type { NexmarkConfig } from "../../connectors/datagen/nexmark/mod.ts";
import {
  addToDigest,
  newDigest,
  type OutputDigest,
  Q11_GAP_MS,
  type Q11Row,
  Q5_SIZE_MS,
  Q5_SLIDE_MS,
  type Q5Row,
  Q7_SIZE_MS,
  type Q7Row,
  Q8_SIZE_MS,
  type Q8Row,
  type WindowedQueryName,
  type WindowedRow,
  windowedRowHash,
} from "./windowed_rows.ts";

/** What a windowed baseline run produced. */
export interface WindowedBaselineResult extends OutputDigest {
  /** Wall time of the loop, seconds (the harness measures CPU time around it). */
  readonly seconds: number;
}

/** Options of {@linkcode runWindowedBaseline} and {@linkcode windowedBaselineRows}. */
export interface WindowedBaselineOptions {
  /** Events to generate (event numbers `0..events-1`), a safe integer >= 0. */
  readonly events: number;
  /** The generator's configuration, as given to the engine's source. */
  readonly config?: NexmarkConfig;
}

/**
 * The start of the window of `size` ms holding `t` (ms), epoch-aligned: the
 * largest multiple of `size` <= `t` (Flink's `TimeWindow.getWindowStartWithOffset`
 * with offset 0), also for negative `t`.
 */
export function windowStart(t: number, size: number): number {
  return t - (((t % size) + size) % size);
}

/** Where a loop's events come from: a {@linkcode NexmarkGenerator}, or a test's list. */
export type EventsByNumber = Pick<NexmarkGenerator, "event">;

/**
 * A baseline loop: reads events `0..events-1` of `gen` in order, in which
 * their event times must not decrease, and calls `emit` once per output row.
 * @throws {Error} when an event's time is before the previous one's.
 */
export type WindowedLoop<R> = (
  gen: EventsByNumber,
  events: number,
  emit: (row: R) => void,
) => void;

function decreasing(query: string, n: number, t: number, before: number): Error {
  return new Error(
    `nexmark ${query} baseline: event ${n} has event time ${t} ms, before the previous ` +
      `event's ${before} ms; the generator's event times must not decrease`,
  );
}

/** q5: counts per (pane, auction); a window closes into its max-count auctions. */
export const q5Loop: WindowedLoop<Q5Row> = (gen, events, emit) => {
  const panes = new Map<number, Map<number, number>>();
  let pane = Number.NEGATIVE_INFINITY; // start of the pane of the latest bid
  let nextEnd = Number.POSITIVE_INFINITY; // end of the next window to close
  let counts: Map<number, number> | undefined;

  /** Closes every window ending at or before `end`: all their panes are complete. */
  const closeUpTo = (end: number) => {
    for (; nextEnd <= end; nextEnd += Q5_SLIDE_MS) {
      const merged = new Map<number, number>();
      for (let p = nextEnd - Q5_SIZE_MS; p < nextEnd; p += Q5_SLIDE_MS) {
        const part = panes.get(p);
        if (part === undefined) continue;
        for (const [auction, c] of part) merged.set(auction, (merged.get(auction) ?? 0) + c);
      }
      panes.delete(nextEnd - Q5_SIZE_MS); // no later window holds this pane
      let max = 0;
      for (const c of merged.values()) if (c > max) max = c;
      for (const [auction, num] of merged) if (num === max) emit([auction, num]);
    }
  };

  for (let n = 0; n < events; n++) {
    const e = gen.event(n);
    if (e.type !== "bid") continue;
    const t = e.bid.dateTime;
    const p = windowStart(t, Q5_SLIDE_MS);
    if (p !== pane) {
      if (p < pane) throw decreasing("q5", n, t, pane);
      // The first window holding the first pane ends one slide after it.
      if (counts === undefined) nextEnd = p + Q5_SLIDE_MS;
      else closeUpTo(p);
      pane = p;
      counts = new Map();
      panes.set(p, counts);
    }
    counts!.set(e.bid.auction, (counts!.get(e.bid.auction) ?? 0) + 1);
  }
  // The last window holding the last pane ends one window size after that pane's start.
  if (counts !== undefined) closeUpTo(pane + Q5_SIZE_MS);
};

/** q7: per window, the highest price and the bids at it. */
export const q7Loop: WindowedLoop<Q7Row> = (gen, events, emit) => {
  let window = Number.NEGATIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  let top: Q7Row[] = [];
  for (let n = 0; n < events; n++) {
    const e = gen.event(n);
    if (e.type !== "bid") continue;
    const bid = e.bid;
    const w = windowStart(bid.dateTime, Q7_SIZE_MS);
    if (w !== window) {
      if (w < window) throw decreasing("q7", n, bid.dateTime, window);
      for (const row of top) emit(row);
      window = w;
      max = Number.NEGATIVE_INFINITY;
      top = [];
    }
    if (bid.price < max) continue;
    const row: Q7Row = {
      auction: bid.auction,
      bidder: bid.bidder,
      price: bid.price,
      dateTime: bid.dateTime,
      extra: bid.extra,
    };
    if (bid.price > max) {
      max = bid.price;
      top = [row];
    } else top.push(row);
  }
  for (const row of top) emit(row);
};

/** q8: per window, persons and sellers; a person who sold in its window is a row. */
export const q8Loop: WindowedLoop<Q8Row> = (gen, events, emit) => {
  let window = Number.NEGATIVE_INFINITY;
  let persons = new Map<number, string>();
  let sellers = new Set<number>();
  const close = () => {
    for (const [id, name] of persons) if (sellers.has(id)) emit([id, name, window]);
  };
  for (let n = 0; n < events; n++) {
    const e = gen.event(n);
    if (e.type === "bid") continue;
    const t = e.type === "person" ? e.person.dateTime : e.auction.dateTime;
    const w = windowStart(t, Q8_SIZE_MS);
    if (w !== window) {
      if (w < window) throw decreasing("q8", n, t, window);
      close();
      window = w;
      persons = new Map();
      sellers = new Set();
    }
    if (e.type === "person") persons.set(e.person.id, e.person.name);
    else if (e.type === "auction") sellers.add(e.auction.seller);
  }
  close();
};

/**
 * q11: per bidder, the open session (first bid, last bid, count); a bid
 * more than the gap after its bidder's last one closes the session. A bid
 * exactly the gap after joins it: session windows `[t, t + gap)` that touch
 * merge (Flink's `TimeWindow.intersects`).
 */
export const q11Loop: WindowedLoop<Q11Row> = (gen, events, emit) => {
  const sessions = new Map<number, { start: number; last: number; count: number }>();
  let latest = Number.NEGATIVE_INFINITY;
  for (let n = 0; n < events; n++) {
    const e = gen.event(n);
    if (e.type !== "bid") continue;
    const { bidder, dateTime: t } = e.bid;
    if (t < latest) throw decreasing("q11", n, t, latest);
    latest = t;
    const s = sessions.get(bidder);
    if (s !== undefined && t <= s.last + Q11_GAP_MS) {
      s.last = t;
      s.count++;
      continue;
    }
    if (s !== undefined) emit([bidder, s.count, s.start, s.last + Q11_GAP_MS]);
    sessions.set(bidder, { start: t, last: t, count: 1 });
  }
  for (const [bidder, s] of sessions) emit([bidder, s.count, s.start, s.last + Q11_GAP_MS]);
};

const LOOPS: { readonly [Q in WindowedQueryName]: WindowedLoop<WindowedRow<Q>> } = {
  q5: q5Loop,
  q7: q7Loop,
  q8: q8Loop,
  q11: q11Loop,
};

function checkedEvents(query: WindowedQueryName, events: number): number {
  if (!(Number.isSafeInteger(events) && events >= 0)) {
    throw new RangeError(
      `Cannot run the nexmark ${query} baseline as 'events' must be a safe integer >= 0: ` +
        `current value is ${events}`,
    );
  }
  return events;
}

/**
 * Runs `query`'s hand-written loop over `options.events` events, counting
 * its rows and summing their hashes ({@linkcode windowedRowHash}).
 * @returns the output's count and checksum, and the loop's wall time.
 * @throws {RangeError} when `options.events` is not a safe integer >= 0.
 */
export function runWindowedBaseline(
  query: WindowedQueryName,
  options: WindowedBaselineOptions,
): WindowedBaselineResult {
  const events = checkedEvents(query, options.events);
  const gen = new NexmarkGenerator(options.config);
  const loop = LOOPS[query] as WindowedLoop<WindowedRow<WindowedQueryName>>;
  const hash = windowedRowHash(query);
  const digest = newDigest();
  const t0 = performance.now();
  loop(gen, events, (row) => addToDigest(digest, hash(row)));
  const seconds = (performance.now() - t0) / 1000;
  return { ...digest, seconds };
}

/**
 * `query`'s output rows over `options.events` events, in the loop's order
 * (window by window). For tests: it keeps every row.
 * @throws {RangeError} when `options.events` is not a safe integer >= 0.
 */
export function windowedBaselineRows<Q extends WindowedQueryName>(
  query: Q,
  options: WindowedBaselineOptions,
): WindowedRow<Q>[] {
  const events = checkedEvents(query, options.events);
  const rows: WindowedRow<Q>[] = [];
  (LOOPS[query] as WindowedLoop<WindowedRow<Q>>)(
    new NexmarkGenerator(options.config),
    events,
    (row) => rows.push(row),
  );
  return rows;
}
