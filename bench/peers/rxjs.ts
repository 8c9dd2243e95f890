/**
 * The side-by-side's queries written with RxJS 7 (`npm:rxjs@7.8.2`), the
 * way its documentation suggests: a synchronous `Observable` over the
 * generator, then `filter`, `map`, `mergeMap`, `distinct` and
 * `groupBy` + `scan` for the keyed count (one inner `Observable` per
 * auction). No checkpoints, no delivery guarantee: state lives in the
 * operators' closures and is lost with the process.
 *
 * q3's join keeps its state in a {@linkcode MapQ3Join} that `mergeMap`
 * calls per record; dedup uses `distinct` with the loop's string key.
 *
 * @module
 */

import { distinct, filter, groupBy, map, mergeMap, Observable, scan } from "npm:rxjs@7.8.2";
import { NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import type { Bid, NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import { q1Convert, q2Keep, q3Auction, type Q3Input, q3Person } from "../nexmark/queries.ts";
import {
  type Digest,
  DigestSink,
  MapQ3Join,
  type PeerQueryName,
  type PeerRows,
} from "./records.ts";

function events(n: number): Observable<NexmarkEvent> {
  return new Observable<NexmarkEvent>((subscriber) => {
    const gen = new NexmarkGenerator();
    for (let i = 0; i < n && !subscriber.closed; i++) subscriber.next(gen.event(i));
    subscriber.complete();
  });
}

function bids(n: number): Observable<Bid> {
  return events(n).pipe(
    filter((e): e is Extract<NexmarkEvent, { type: "bid" }> => e.type === "bid"),
    map((e) => e.bid),
  );
}

const PIPELINES: { readonly [Q in PeerQueryName]: (n: number) => Observable<PeerRows[Q]> } = {
  q1: (n) => bids(n).pipe(map(q1Convert)),
  q2: (n) => bids(n).pipe(filter(q2Keep), map((b) => [b.auction, b.price] as const)),
  q3: (n) => {
    const join = new MapQ3Join();
    return events(n).pipe(
      map((e) =>
        e.type === "person"
          ? q3Person(e.person)
          : e.type === "auction"
          ? q3Auction(e.auction)
          : undefined
      ),
      filter((r): r is Q3Input => r !== undefined),
      mergeMap((r) => join.step(r)),
    );
  },
  dedup: (n) => bids(n).pipe(distinct((b) => `${b.bidder}:${b.auction}`)),
  count: (n) =>
    bids(n).pipe(
      groupBy((b) => b.auction),
      mergeMap((group) =>
        group.pipe(
          scan((count) => count + 1, 0),
          map((count) => [group.key, count] as const),
        )
      ),
    ),
};

/**
 * Runs `query` with RxJS over events `0..events-1`.
 * @returns the digest of its output.
 * @throws whatever the pipeline signals as an error.
 */
export function runRxjs(query: PeerQueryName, events: number): Promise<Digest> {
  const sink = new DigestSink(query);
  const pipeline = PIPELINES[query](events) as Observable<PeerRows[typeof query]>;
  return new Promise((resolve, reject) => {
    pipeline.subscribe({
      next: (row) => sink.add(row),
      error: reject,
      complete: () => resolve(sink.digest()),
    });
  });
}
