import assert from "node:assert/strict";
import {
  type DataStream,
  type Row,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import type { NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import { type NexmarkConfig, NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import { nexmarkEventTimeEvents } from "./windowed_queries.ts";
import { batchWinners, q4Batch, q4Job, q6Batch, q6Job } from "./queries_q4_q6.ts";

type Job = (events: DataStream<NexmarkEvent>) => DataStream<Row>;

/** Folds a changelog into the multiset of rows it leaves, as sorted JSON lines; throws on a retraction of a missing row. */
function fold(changes: readonly Row[]): string[] {
  const table = new Map<string, number>();
  for (const r of changes) {
    const key = JSON.stringify(r.fields);
    const n = table.get(key) ?? 0;
    if (r.kind === "INSERT" || r.kind === "UPDATE_AFTER") table.set(key, n + 1);
    else if (n === 0) throw new Error(`the changelog retracts ${key}, which it never inserted`);
    else if (n === 1) table.delete(key);
    else table.set(key, n - 1);
  }
  return [...table].flatMap(([k, n]) => Array<string>(n).fill(k)).sort();
}

const sorted = (rows: readonly (readonly number[])[]) => rows.map((r) => JSON.stringify(r)).sort();

async function runGenerated(
  job: Job,
  o: { events: number; parallelism: number; config: NexmarkConfig },
): Promise<Row[]> {
  const out: Row[] = [];
  const dir = await Deno.makeTempDir({ prefix: "weir-nexmark-q4q6-test-" });
  try {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(o.parallelism);
    env.enableCheckpointing(50, { directory: dir });
    job(nexmarkEventTimeEvents(env, { events: o.events, batchSize: 100, ...o.config }))
      .sinkTo({ kind: "simple", invoke: (r: Row) => void out.push(r) });
    await env.execute("nexmark-q4-q6-test");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  return out;
}

async function runEvents(job: Job, events: readonly NexmarkEvent[]): Promise<Row[]> {
  const out: Row[] = [];
  const dir = await Deno.makeTempDir({ prefix: "weir-nexmark-q4q6-test-" });
  try {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(1);
    env.setCheckpointDirectory(dir);
    const timeOf = (e: NexmarkEvent) =>
      e.type === "bid"
        ? e.bid.dateTime
        : e.type === "auction"
        ? e.auction.dateTime
        : e.person.dateTime;
    const stream = env.fromCollection([...events]).uid("events").assignTimestampsAndWatermarks(
      WatermarkStrategy.forMonotonousTimestamps<NexmarkEvent>().withTimestampAssigner(timeOf),
    );
    job(stream).sinkTo({ kind: "simple", invoke: (r: Row) => void out.push(r) });
    await env.execute("nexmark-q4-q6-unit");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  return out;
}

function generated(events: number, config: NexmarkConfig): NexmarkEvent[] {
  const gen = new NexmarkGenerator(config);
  return Array.from({ length: events }, (_, n) => gen.event(n));
}

const bid = (auction: number, price: number, dateTime: number): NexmarkEvent => ({
  type: "bid",
  bid: { auction, bidder: 1, price, channel: "c", url: "u", dateTime, extra: "" },
});

const auction = (
  id: number,
  o: { seller: number; category: number; dateTime: number; expires: number },
): NexmarkEvent => ({
  type: "auction",
  auction: {
    id,
    itemName: "i",
    description: "d",
    initialBid: 1,
    reserve: 1,
    dateTime: o.dateTime,
    expires: o.expires,
    seller: o.seller,
    category: o.category,
    extra: "",
  },
});

// One event per 100 µs: auctions stay open for tens of ms, so they gather several bids each.
const CONFIG: NexmarkConfig = { interEventDelayUs: 100, seed: 3 };
const EVENTS = 20_000;

Deno.test("q4's and q6's DataStream changelogs fold to the batch query's table (generated events, parallelism 1 and 2)", async (t) => {
  const events = generated(EVENTS, CONFIG);
  const winners = batchWinners(events);
  assert.ok(winners.length > 100, `only ${winners.length} auctions have a bid in their interval`);
  const expected4 = sorted(q4Batch(events));
  const expected6 = sorted(q6Batch(events));
  assert.ok(expected4.length >= 5 && expected6.length === winners.length);
  for (const parallelism of [1, 2]) {
    await t.step(`q4 at parallelism ${parallelism}`, async () => {
      const changes = await runGenerated(q4Job, { events: EVENTS, parallelism, config: CONFIG });
      assert.ok(changes.some((r) => r.kind === "UPDATE_BEFORE"), "q4 updates its averages");
      assert.deepEqual(fold(changes), expected4);
    });
    await t.step(`q6 at parallelism ${parallelism}`, async () => {
      const changes = await runGenerated(q6Job, { events: EVENTS, parallelism, config: CONFIG });
      assert.deepEqual(fold(changes), expected6);
    });
  }
});

Deno.test("q4 takes a bid that came before its auction in the same millisecond, and both ends of the interval", async () => {
  const events = [
    bid(7, 900, 10), // before its auction, same ms: in [10, 20]
    auction(7, { seller: 1, category: 10, dateTime: 10, expires: 20 }),
    auction(8, { seller: 1, category: 10, dateTime: 10, expires: 20 }),
    bid(8, 100, 12),
    bid(7, 50, 20), // at expires: in, but lower
    bid(8, 300, 20), // at expires: in, the highest of 8
    bid(8, 5000, 21), // after expires: out
    bid(9, 7777, 22), // an auction that never comes
  ];
  const changes = await runEvents(q4Job, events);
  // Averages of 900 and 300: the first closing is +I, the second -U/+U.
  assert.deepEqual(fold(changes), [JSON.stringify([10, 600])]);
  assert.deepEqual(fold(changes), sorted(q4Batch(events)));
  assert.equal(changes.length, 3);
});

Deno.test("q6 orders a seller's winners by the winning bid's time, not by closing, and averages 11 rows", async () => {
  const events: NexmarkEvent[] = [];
  // Auction 100 opens first and closes last, but its winning bid is the earliest of all.
  events.push(auction(100, { seller: 5, category: 11, dateTime: 0, expires: 1000 }));
  events.push(bid(100, 1, 1));
  for (let i = 0; i < 12; i++) {
    const t = 10 + 10 * i;
    events.push(auction(i, { seller: 5, category: 11, dateTime: t, expires: t + 5 }));
    events.push(bid(i, 100 * (i + 1), t + 1));
    events.push(bid(i, 100 * (i + 1), t + 2)); // a tie: the earlier one wins
  }
  const changes = await runEvents(q6Job, events);
  assert.ok(
    changes.some((r) => r.kind === "UPDATE_BEFORE"),
    "the late winner moves later averages",
  );
  const expected = sorted(q6Batch(events));
  assert.deepEqual(fold(changes), expected);
  // Winners by time: 1 (auction 100), then 100, 200, ..., 1200. The 12th row (price 1100)
  // averages 100..1100 (11 rows, not 1 from auction 100); the 11th averages 1, 100..1000.
  assert.ok(expected.includes(JSON.stringify([5, 600])));
  assert.ok(expected.includes(JSON.stringify([5, Math.trunc((1 + 5500) / 11)])));
  assert.equal(expected.length, 13);
});
