/**
 * What every implementation of the side-by-side (`main.ts`) shares: the
 * query names, the per-record hash each output record is summed by, the
 * {@linkcode Digest} an implementation returns, and the plain-`Map` q3 join
 * the peers use (Weir uses {@linkcode Q3Join} with keyed state).
 *
 * ## The check
 *
 * Every implementation returns the number of records its sink saw and the
 * sum mod 2^32 of {@linkcode ROW_HASH}`[query]` over them. Both are functions
 * of the events alone, whatever the order in which records arrive (a sum does
 * not depend on order; dedup keeps the first bid per key, the keyed count's
 * rows `(auction, n)` for n = 1..bids of that auction are the same set in any
 * order), so the harness requires equality of count and checksum with the
 * hand-written loop, in every round, before printing any figure.
 *
 * ## The keyed count
 *
 * Not one of Flink's Nexmark queries: a running count of bids per auction,
 * `SELECT auction, COUNT(*) FROM bid GROUP BY auction` as an append stream
 * (one row `(auction, count so far)` per bid), the simplest keyed query,
 * whose cost is almost all the keyBy exchange and the keyed state.
 *
 * @module
 */

import type { Bid } from "../../connectors/datagen/nexmark/model.ts";
import type { Q1Bid, Q3Input, Q3Row } from "../nexmark/queries.ts";

/** The queries of the side-by-side. */
export const PEER_QUERY_NAMES = ["q1", "q2", "q3", "dedup", "count"] as const;
/** One of {@linkcode PEER_QUERY_NAMES}. */
export type PeerQueryName = typeof PEER_QUERY_NAMES[number];

/** Whether `name` is one of {@linkcode PEER_QUERY_NAMES}. */
export function isPeerQueryName(name: string): name is PeerQueryName {
  return (PEER_QUERY_NAMES as readonly string[]).includes(name);
}

/** q2's output row `(auction, price)`. */
export type Q2Row = readonly [auction: number, price: number];
/** The keyed count's output row `(auction, bids of it so far)`. */
export type CountRow = readonly [auction: number, count: number];

/** The output record type of each query. */
export interface PeerRows {
  /** q1: the converted bid. */
  q1: Q1Bid;
  /** q2: `(auction, price)`. */
  q2: Q2Row;
  /** q3: `(name, city, state, auction)`. */
  q3: Q3Row;
  /** dedup: the first bid of each `(bidder, auction)`. */
  dedup: Bid;
  /** count: `(auction, running count)`. */
  count: CountRow;
}

/** A 32-bit mix of two numbers (their low 32 bits), Murmur3's finalizer constants. */
export function mix(a: number, b: number): number {
  let h = Math.imul((a | 0) ^ Math.imul(b | 0, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Per query, the hash of one output record that the checksum sums (mod 2^32). */
export const ROW_HASH: { readonly [Q in PeerQueryName]: (row: PeerRows[Q]) => number } = {
  q1: (r) => mix(mix(r.auction, r.bidder), Math.trunc(r.price)),
  q2: (r) => mix(r[0], r[1]),
  q3: (r) => mix(r[3], r[0].length + 31 * r[1].length + 961 * r[2].length),
  dedup: (r) => mix(r.bidder, r.auction),
  count: (r) => mix(r[0], r[1]),
};

/** What an implementation's sink saw. */
export interface Digest {
  /** Output records. */
  readonly count: number;
  /** Sum mod 2^32 of {@linkcode ROW_HASH} over them. */
  readonly checksum: number;
}

/** A counting sink: adds each record's hash. */
export class DigestSink<Q extends PeerQueryName> {
  /** Records so far. */
  count = 0;
  /** Sum mod 2^32 of their hashes so far. */
  checksum = 0;
  readonly #hash: (row: PeerRows[Q]) => number;

  /** A sink for `query`'s rows. */
  constructor(query: Q) {
    this.#hash = ROW_HASH[query] as (row: PeerRows[Q]) => number;
  }

  /** Counts `row`. */
  add(row: PeerRows[Q]): void {
    this.count++;
    this.checksum = (this.checksum + this.#hash(row)) >>> 0;
  }

  /** The digest so far. */
  digest(): Digest {
    return { count: this.count, checksum: this.checksum };
  }
}

/**
 * q3's incremental inner join on plain `Map`s, the way a developer writes it
 * without an engine (the same logic as {@linkcode Q3Join}: auctions that
 * arrive before their seller wait, and are emitted when the person arrives).
 */
export class MapQ3Join {
  readonly #persons = new Map<number, readonly [string, string, string]>();
  readonly #pending = new Map<number, number[]>();

  /**
   * Joins one side's record.
   * @returns the rows it completes: none, one, or (a person) every waiting auction.
   */
  step(r: Q3Input): Q3Row[] {
    if (r.side === "person") {
      this.#persons.set(r.id, [r.name, r.city, r.state]);
      const waiting = this.#pending.get(r.id);
      if (waiting === undefined) return [];
      this.#pending.delete(r.id);
      return waiting.map((id) => [r.name, r.city, r.state, id] as const);
    }
    const p = this.#persons.get(r.seller);
    if (p !== undefined) return [[p[0], p[1], p[2], r.id]];
    const waiting = this.#pending.get(r.seller);
    if (waiting === undefined) this.#pending.set(r.seller, [r.id]);
    else waiting.push(r.id);
    return [];
  }
}
