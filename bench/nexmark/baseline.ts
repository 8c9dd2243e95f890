/**
 * The hand-written baselines of the Nexmark queries: for each query, one
 * loop that generates events `0..events-1` with the same
 * {@linkcode NexmarkGenerator} the engine's source uses and applies the
 * query's logic inline, with plain `Map`s for q3's and dedup's state and a
 * counter for a sink. No engine: no source reader, operators, serialization,
 * state backend or checkpoints. This is the ceiling the engine is compared
 * with (the ratio engine / baseline).
 *
 * The per-record logic is the same pure functions the engine's job uses
 * (`queries.ts`), so both count the same output for the same events, in any
 * arrival order (`queries.ts` states it as its invariant).
 *
 * {@linkcode runBaseline} times the loop's wall time; the harness measures
 * CPU time around it (`../_rounds.ts`). It runs the windowed queries' loops
 * (q5, q7, q8, q11) from `windowed_baseline.ts`, which also sum a hash of
 * each record, and the updating queries' (q4, q6) from `q4_q6_baseline.ts`,
 * which compute their final tables.
 *
 * @module
 */

import { NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import type { NexmarkConfig } from "../../connectors/datagen/nexmark/mod.ts";
import { type Q1Bid, q1Convert, q2Keep, q3Auction, q3Person, type QueryName } from "./queries.ts";
import { runWindowedBaseline } from "./windowed_baseline.ts";
import { q20Loop } from "./q20.ts";
import { isWindowedQueryName, type WindowedQueryName } from "./windowed_rows.ts";
import {
  isUpdatingQueryName,
  runUpdatingBaseline,
  type UpdatingQueryName,
} from "./q4_q6_baseline.ts";

/** What a baseline run produced. */
export interface BaselineResult {
  /** Records the query emitted (what its sink would count). */
  readonly count: number;
  /** Wall time of the loop, seconds. */
  readonly seconds: number;
  /**
   * The windowed queries only: the sum mod 2^32 of the hashes of the
   * records (`windowedRowHash`), to compare with what the engine's sinks
   * committed; the updating queries (q4, q6): of the final table's rows
   * (`fieldsHash`), and `count` is its number of rows.
   */
  readonly checksum?: number;
}

/** Options of {@linkcode runBaseline}. */
export interface BaselineOptions {
  /** Events to generate (event numbers `0..events-1`). */
  readonly events: number;
  /** The generator's configuration, as given to the engine's source. */
  readonly config?: NexmarkConfig;
}

type Loop = (gen: NexmarkGenerator, events: number) => number;

const LOOPS: Readonly<Record<Exclude<QueryName, WindowedQueryName | UpdatingQueryName>, Loop>> = {
  q0: (gen, n) => {
    let count = 0;
    let sink = 0;
    for (let i = 0; i < n; i++) {
      const e = gen.event(i);
      if (e.type !== "bid") continue;
      sink += e.bid.price; // consume the record so it is not optimized away
      count++;
    }
    return sink < 0 ? -1 : count;
  },
  q1: (gen, n) => {
    let count = 0;
    let sink = 0;
    for (let i = 0; i < n; i++) {
      const e = gen.event(i);
      if (e.type !== "bid") continue;
      const out: Q1Bid = q1Convert(e.bid);
      sink += out.price;
      count++;
    }
    return sink < 0 ? -1 : count;
  },
  q2: (gen, n) => {
    let count = 0;
    let sink = 0;
    for (let i = 0; i < n; i++) {
      const e = gen.event(i);
      if (e.type !== "bid" || !q2Keep(e.bid)) continue;
      const out = [e.bid.auction, e.bid.price] as const;
      sink += out[1];
      count++;
    }
    return sink < 0 ? -1 : count;
  },
  q3: (gen, n) => {
    const persons = new Map<number, readonly [string, string, string]>();
    const pending = new Map<number, number[]>();
    let count = 0;
    let sink = 0;
    for (let i = 0; i < n; i++) {
      const e = gen.event(i);
      if (e.type === "person") {
        const p = q3Person(e.person);
        if (p === undefined || p.side !== "person") continue;
        persons.set(p.id, [p.name, p.city, p.state]);
        const waiting = pending.get(p.id);
        if (waiting !== undefined) {
          for (const id of waiting) {
            const row = [p.name, p.city, p.state, id] as const;
            sink += row[3];
            count++;
          }
          pending.delete(p.id);
        }
      } else if (e.type === "auction") {
        const a = q3Auction(e.auction);
        if (a === undefined || a.side !== "auction") continue;
        const p = persons.get(a.seller);
        if (p === undefined) {
          const waiting = pending.get(a.seller);
          if (waiting === undefined) pending.set(a.seller, [a.id]);
          else waiting.push(a.id);
          continue;
        }
        const row = [p[0], p[1], p[2], a.id] as const;
        sink += row[3];
        count++;
      }
    }
    return sink < 0 ? -1 : count;
  },
  dedup: (gen, n) => {
    const seen = new Set<string>();
    let count = 0;
    let sink = 0;
    for (let i = 0; i < n; i++) {
      const e = gen.event(i);
      if (e.type !== "bid") continue;
      const key = `${e.bid.bidder}:${e.bid.auction}`;
      if (seen.has(key)) continue;
      seen.add(key);
      sink += e.bid.price;
      count++;
    }
    return sink < 0 ? -1 : count;
  },
  q20: q20Loop,
};

/**
 * Runs `query`'s hand-written loop over `options.events` events (a windowed
 * query's in `windowed_baseline.ts`).
 * @returns its output count and wall time, and a windowed query's checksum.
 * @throws {RangeError} for a windowed query, when `options.events` is not a
 *   safe integer >= 0.
 */
export function runBaseline(query: QueryName, options: BaselineOptions): BaselineResult {
  if (isWindowedQueryName(query)) return runWindowedBaseline(query, options);
  if (isUpdatingQueryName(query)) return runUpdatingBaseline(query, options);
  const gen = new NexmarkGenerator(options.config);
  const t0 = performance.now();
  const count = LOOPS[query](gen, options.events);
  return { count, seconds: (performance.now() - t0) / 1000 };
}
