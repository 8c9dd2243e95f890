/**
 * What the windowed Nexmark queries (q5, q7, q8, q11) output, shared by their
 * DataStream jobs (`windowed_queries.ts`) and their hand-written baselines
 * (`windowed_baseline.ts`): the query names, window sizes, row types and the
 * {@linkcode OutputDigest} by which the harness compares the two outputs.
 *
 * ## Output digest
 *
 * A digest is the number of rows and the sum mod 2^32 of a 32-bit hash per
 * row ({@linkcode windowedRowHash}: Weir's `keyHash` over the row's fields
 * as a tuple). A sum does not depend on the order of the rows, which
 * parallel subtasks do not fix, and a lost, duplicated or changed row moves
 * it (but for a 2^-32 chance).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { addToDigest, newDigest, q5RowHash } from "./windowed_rows.ts";
 *
 * const a = newDigest();
 * addToDigest(a, q5RowHash([1000, 3]));
 * addToDigest(a, q5RowHash([1001, 3]));
 * const b = newDigest();
 * addToDigest(b, q5RowHash([1001, 3]));
 * addToDigest(b, q5RowHash([1000, 3]));
 * assert.deepEqual(a, b); // order does not matter
 * ```
 *
 * @module
 */

import { keyHash } from "../../mod.ts";

/** The windowed queries, by name. */
export const WINDOWED_QUERY_NAMES = ["q5", "q7", "q8", "q11"] as const;
/** A windowed query's name. */
export type WindowedQueryName = typeof WINDOWED_QUERY_NAMES[number];

/** Whether `name` is one of {@linkcode WINDOWED_QUERY_NAMES}. */
export function isWindowedQueryName(name: string): name is WindowedQueryName {
  return (WINDOWED_QUERY_NAMES as readonly string[]).includes(name);
}

/** q5's window size: 10 s, in ms. */
export const Q5_SIZE_MS = 10_000;
/** q5's window slide: 2 s, in ms. */
export const Q5_SLIDE_MS = 2_000;
/** q7's tumbling window: 10 s, in ms. */
export const Q7_SIZE_MS = 10_000;
/** q8's tumbling window: 10 s, in ms. */
export const Q8_SIZE_MS = 10_000;
/** q11's session gap: 10 s, in ms. */
export const Q11_GAP_MS = 10_000;

/** q5's row `(auction, num)`: an auction with its window's highest bid count. */
export type Q5Row = readonly [auction: number, num: number];

/** q7's row: a bid at its window's highest price. */
export interface Q7Row {
  /** Auction id. */
  readonly auction: number;
  /** Bidder id. */
  readonly bidder: number;
  /** Price, cents: the window's maximum. */
  readonly price: number;
  /** Event time, ms since the epoch. */
  readonly dateTime: number;
  /** Padding, passed through. */
  readonly extra: string;
}

/** q8's row `(id, name, starttime)`: a person who created an auction in its window (start, ms). */
export type Q8Row = readonly [id: number, name: string, starttime: number];

/**
 * q11's row `(bidder, bid_count, starttime, endtime)`: one bidder's session,
 * from its first bid to its last bid plus the gap (ms, exclusive), as
 * Flink's `SESSION_START` and `SESSION_END`.
 */
export type Q11Row = readonly [bidder: number, count: number, starttime: number, endtime: number];

/** The row type of each windowed query. */
export type WindowedRow<Q extends WindowedQueryName> = {
  q5: Q5Row;
  q7: Q7Row;
  q8: Q8Row;
  q11: Q11Row;
}[Q];

/** A query output's size and order-independent checksum (see the module docs). */
export interface OutputDigest {
  /** Rows. */
  count: number;
  /** Sum of the rows' 32-bit hashes, mod 2^32 (an unsigned 32-bit integer). */
  checksum: number;
}

/** An empty {@linkcode OutputDigest}. */
export function newDigest(): OutputDigest {
  return { count: 0, checksum: 0 };
}

/**
 * Adds one row, by its hash, to `digest` (in place).
 * @param hash a 32-bit integer, signed or unsigned.
 */
export function addToDigest(digest: OutputDigest, hash: number): void {
  digest.count++;
  digest.checksum = (digest.checksum + hash) >>> 0;
}

/** q5's row hash: `keyHash([auction, num])`. */
export function q5RowHash(row: Q5Row): number {
  return keyHash(row);
}

/** q7's row hash: `keyHash([auction, bidder, price, dateTime, extra])`. */
export function q7RowHash(row: Q7Row): number {
  return keyHash([row.auction, row.bidder, row.price, row.dateTime, row.extra]);
}

/** q11's row hash: `keyHash([bidder, count, starttime, endtime])`. */
export function q11RowHash(row: Q11Row): number {
  return keyHash(row);
}

/** q8's row hash: `keyHash([id, name, starttime])`. */
export function q8RowHash(row: Q8Row): number {
  return keyHash(row);
}

const ROW_HASHES: { readonly [Q in WindowedQueryName]: (row: WindowedRow<Q>) => number } = {
  q5: q5RowHash,
  q7: q7RowHash,
  q8: q8RowHash,
  q11: q11RowHash,
};

/** The row hash of `query`, what its sink and its baseline add to their {@linkcode OutputDigest}. */
export function windowedRowHash<Q extends WindowedQueryName>(
  query: Q,
): (row: WindowedRow<Q>) => number {
  return ROW_HASHES[query] as (row: WindowedRow<Q>) => number;
}
