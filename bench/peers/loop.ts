/**
 * The hand-written loops of the side-by-side: the loops of
 * `../nexmark/baseline.ts` (one `for` over `NexmarkGenerator.event(i)`, the
 * query's logic inline, plain `Map`s and `Set`s for state), plus the keyed
 * count, each feeding a {@linkcode DigestSink} instead of `sink += price`, so
 * their output can be compared record by record with every peer's.
 * `main_test.ts` checks that their counts equal `runBaseline`'s.
 *
 * @module
 */

import { NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import { q1Convert, q2Keep, q3Auction, q3Person } from "../nexmark/queries.ts";
import { type Digest, DigestSink, type PeerQueryName } from "./records.ts";

type Loop = (gen: NexmarkGenerator, events: number) => Digest;

const LOOPS: Readonly<Record<PeerQueryName, Loop>> = {
  q1: (gen, n) => {
    const sink = new DigestSink("q1");
    for (let i = 0; i < n; i++) {
      const e = gen.event(i);
      if (e.type === "bid") sink.add(q1Convert(e.bid));
    }
    return sink.digest();
  },
  q2: (gen, n) => {
    const sink = new DigestSink("q2");
    for (let i = 0; i < n; i++) {
      const e = gen.event(i);
      if (e.type === "bid" && q2Keep(e.bid)) sink.add([e.bid.auction, e.bid.price]);
    }
    return sink.digest();
  },
  q3: (gen, n) => {
    const sink = new DigestSink("q3");
    const persons = new Map<number, readonly [string, string, string]>();
    const pending = new Map<number, number[]>();
    for (let i = 0; i < n; i++) {
      const e = gen.event(i);
      if (e.type === "person") {
        const p = q3Person(e.person);
        if (p === undefined || p.side !== "person") continue;
        persons.set(p.id, [p.name, p.city, p.state]);
        const waiting = pending.get(p.id);
        if (waiting === undefined) continue;
        pending.delete(p.id);
        for (const id of waiting) sink.add([p.name, p.city, p.state, id]);
      } else if (e.type === "auction") {
        const a = q3Auction(e.auction);
        if (a === undefined || a.side !== "auction") continue;
        const p = persons.get(a.seller);
        if (p !== undefined) {
          sink.add([p[0], p[1], p[2], a.id]);
          continue;
        }
        const waiting = pending.get(a.seller);
        if (waiting === undefined) pending.set(a.seller, [a.id]);
        else waiting.push(a.id);
      }
    }
    return sink.digest();
  },
  dedup: (gen, n) => {
    const sink = new DigestSink("dedup");
    const seen = new Set<string>();
    for (let i = 0; i < n; i++) {
      const e = gen.event(i);
      if (e.type !== "bid") continue;
      const key = `${e.bid.bidder}:${e.bid.auction}`;
      if (seen.has(key)) continue;
      seen.add(key);
      sink.add(e.bid);
    }
    return sink.digest();
  },
  count: (gen, n) => {
    const sink = new DigestSink("count");
    const counts = new Map<number, number>();
    for (let i = 0; i < n; i++) {
      const e = gen.event(i);
      if (e.type !== "bid") continue;
      const c = (counts.get(e.bid.auction) ?? 0) + 1;
      counts.set(e.bid.auction, c);
      sink.add([e.bid.auction, c]);
    }
    return sink.digest();
  },
};

/**
 * Runs `query`'s hand-written loop over events `0..events-1` of a fresh
 * default {@linkcode NexmarkGenerator}.
 * @returns the digest of its output.
 */
export function runLoop(query: PeerQueryName, events: number): Digest {
  return LOOPS[query](new NexmarkGenerator(), events);
}
