/**
 * The side-by-side's queries written with `@most/core` (`npm:@most/core@1.6.1`,
 * scheduler `npm:@most/scheduler@1.3.0`): a source stream that emits the
 * generator's events synchronously in one scheduled task, then `filter` and
 * `map`, with keyed state in a `Map` or `Set` held by the function's closure
 * (how a developer adds state to a stateless combinator library). No
 * checkpoints, no delivery guarantee.
 *
 * q3 maps each record to the rows its join completes (an array, most
 * often empty or of one row, from a {@linkcode MapQ3Join}); the sink counts
 * the rows of each array.
 *
 * @module
 */

import { filter, map, runEffects, tap } from "npm:@most/core@1.6.1";
import { asap, newDefaultScheduler } from "npm:@most/scheduler@1.3.0";
import type { Scheduler, Sink, Stream, Time } from "npm:@most/types@1.1.0";
import { NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import type { Bid, NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import {
  type Q1Bid,
  q1Convert,
  q2Keep,
  q3Auction,
  type Q3Input,
  q3Person,
  type Q3Row,
} from "../nexmark/queries.ts";
import {
  type CountRow,
  type Digest,
  DigestSink,
  MapQ3Join,
  type PeerQueryName,
  type Q2Row,
} from "./records.ts";

function events(n: number): Stream<NexmarkEvent> {
  return {
    run(sink: Sink<NexmarkEvent>, scheduler: Scheduler) {
      let disposed = false;
      return asap({
        run(t: Time) {
          const gen = new NexmarkGenerator();
          for (let i = 0; i < n && !disposed; i++) sink.event(t, gen.event(i));
          if (!disposed) sink.end(t);
        },
        error(t: Time, e: Error) {
          sink.error(t, e);
        },
        dispose() {
          disposed = true;
        },
      }, scheduler);
    },
  };
}

function bids(n: number): Stream<Bid> {
  return map(
    (e: Extract<NexmarkEvent, { type: "bid" }>) => e.bid,
    filter((e): e is Extract<NexmarkEvent, { type: "bid" }> => e.type === "bid", events(n)),
  );
}

type Pipelines = {
  readonly [Q in PeerQueryName]: (n: number, sink: DigestSink<Q>) => Stream<unknown>;
};

const PIPELINES: Pipelines = {
  q1: (n, sink) => tap((r: Q1Bid) => sink.add(r), map(q1Convert, bids(n))),
  q2: (n, sink) =>
    tap(
      (r: Q2Row) => sink.add(r),
      map((b: Bid): Q2Row => [b.auction, b.price], filter(q2Keep, bids(n))),
    ),
  q3: (n, sink) => {
    const join = new MapQ3Join();
    const sides = filter(
      (r): r is Q3Input => r !== undefined,
      map(
        (e: NexmarkEvent) =>
          e.type === "person"
            ? q3Person(e.person)
            : e.type === "auction"
            ? q3Auction(e.auction)
            : undefined,
        events(n),
      ),
    );
    return tap((rows: Q3Row[]) => {
      for (const row of rows) sink.add(row);
    }, map((r: Q3Input) => join.step(r), sides));
  },
  dedup: (n, sink) => {
    const seen = new Set<string>();
    return tap(
      (b: Bid) => sink.add(b),
      filter((b: Bid) => {
        const key = `${b.bidder}:${b.auction}`;
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      }, bids(n)),
    );
  },
  count: (n, sink) => {
    const counts = new Map<number, number>();
    return tap(
      (r: CountRow) => sink.add(r),
      map((b: Bid): CountRow => {
        const c = (counts.get(b.auction) ?? 0) + 1;
        counts.set(b.auction, c);
        return [b.auction, c];
      }, bids(n)),
    );
  },
};

/**
 * Runs `query` with `@most/core` over events `0..events-1`.
 * @returns the digest of its output.
 * @throws whatever the stream signals as an error.
 */
export async function runMost(query: PeerQueryName, events: number): Promise<Digest> {
  const sink = new DigestSink(query);
  const build = PIPELINES[query] as (n: number, sink: DigestSink<PeerQueryName>) => Stream<unknown>;
  await runEffects(build(events, sink), newDefaultScheduler());
  return sink.digest();
}
