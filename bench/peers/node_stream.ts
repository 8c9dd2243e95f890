/**
 * The side-by-side's queries written with Node's streams (`node:stream`,
 * as Deno provides it): `Readable.from` over a generator of the events, in
 * object mode, piped through object-mode `Transform`s into a `Writable`
 * with `pipeline` (default high-water marks: 16 objects). State lives in a
 * `Map` or `Set` in the transform's closure. No checkpoints, no delivery
 * guarantee.
 *
 * @module
 */

import { Readable, Transform, type TransformCallback, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import type { NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import { q1Convert, q2Keep, q3Auction, q3Person } from "../nexmark/queries.ts";
import { type Digest, DigestSink, MapQ3Join, type PeerQueryName } from "./records.ts";

function* generate(n: number): Generator<NexmarkEvent> {
  const gen = new NexmarkGenerator();
  for (let i = 0; i < n; i++) yield gen.event(i);
}

/** An object-mode transform pushing what `step` returns for each record. */
function transform<I>(step: (record: I, push: (out: unknown) => void) => void): Transform {
  return new Transform({
    objectMode: true,
    transform(record: I, _encoding: BufferEncoding, done: TransformCallback) {
      step(record, (out) => this.push(out));
      done();
    },
  });
}

const STAGES: Readonly<Record<PeerQueryName, () => Transform>> = {
  q1: () =>
    transform<NexmarkEvent>((e, push) => {
      if (e.type === "bid") push(q1Convert(e.bid));
    }),
  q2: () =>
    transform<NexmarkEvent>((e, push) => {
      if (e.type === "bid" && q2Keep(e.bid)) push([e.bid.auction, e.bid.price]);
    }),
  q3: () => {
    const join = new MapQ3Join();
    return transform<NexmarkEvent>((e, push) => {
      const r = e.type === "person"
        ? q3Person(e.person)
        : e.type === "auction"
        ? q3Auction(e.auction)
        : undefined;
      if (r !== undefined) { for (const row of join.step(r)) push(row); }
    });
  },
  dedup: () => {
    const seen = new Set<string>();
    return transform<NexmarkEvent>((e, push) => {
      if (e.type !== "bid") return;
      const key = `${e.bid.bidder}:${e.bid.auction}`;
      if (seen.has(key)) return;
      seen.add(key);
      push(e.bid);
    });
  },
  count: () => {
    const counts = new Map<number, number>();
    return transform<NexmarkEvent>((e, push) => {
      if (e.type !== "bid") return;
      const c = (counts.get(e.bid.auction) ?? 0) + 1;
      counts.set(e.bid.auction, c);
      push([e.bid.auction, c]);
    });
  },
};

/**
 * Runs `query` with `node:stream` over events `0..events-1`.
 * @returns the digest of its output.
 * @throws whatever a stage of the pipeline fails with.
 */
export async function runNodeStream(query: PeerQueryName, events: number): Promise<Digest> {
  const sink = new DigestSink(query);
  const add = sink.add.bind(sink) as (row: unknown) => void;
  await pipeline(
    Readable.from(generate(events)),
    STAGES[query](),
    new Writable({
      objectMode: true,
      write(row: unknown, _encoding: BufferEncoding, done: (error?: Error | null) => void) {
        add(row);
        done();
      },
    }),
  );
  return sink.digest();
}
