import assert from "node:assert/strict";
import { StreamExecutionEnvironment } from "../../mod.ts";
import type { Auction, Bid, NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import { NexmarkGenerator } from "../../connectors/datagen/nexmark/mod.ts";
import { q20Job, q20Loop, type Q20Row, q20Row } from "./q20.ts";

const bid = (auction: number, price: number): NexmarkEvent => ({
  type: "bid",
  bid: { auction, bidder: 9, price, channel: "c", url: "u", dateTime: 5, extra: "b" },
});

const auction = (id: number, category: number): NexmarkEvent => ({
  type: "auction",
  auction: {
    id,
    itemName: `item${id}`,
    description: "",
    initialBid: 1,
    reserve: 2,
    dateTime: 3,
    expires: 4,
    seller: 7,
    category,
    extra: "a",
  },
});

/** Runs q20Job over `events` in local mode at parallelism 1; returns its rows' (auction, price). */
async function run(events: NexmarkEvent[]): Promise<string[]> {
  const rows: Q20Row[] = [];
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const dir = await Deno.makeTempDir({ prefix: "weir-q20-test-" });
  try {
    env.setCheckpointDirectory(dir);
    q20Job(env.fromCollection(events).uid("events"))
      .sinkTo({ kind: "simple", invoke: (r: Q20Row) => void rows.push(r) });
    await env.execute("q20-unit");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  return rows.map((r) => `${r.auction}:${r.price}:${r.itemName}`).sort();
}

Deno.test("q20 joins each bid with its auction of category 10, in either arrival order, and drops bids of other categories", async () => {
  const rows = await run([
    bid(1, 100), // before its auction (category 10)
    auction(1, 10),
    bid(1, 101), // after it
    bid(2, 200), // before its auction of category 11: dropped when it arrives
    auction(2, 11),
    bid(2, 201), // after it: dropped
    bid(3, 300), // its auction never comes
  ]);
  assert.deepEqual(rows, ["1:100:item1", "1:101:item1"]);
});

Deno.test("q20Row widens a bid with its auction's fields in Flink's column order", () => {
  const b = (bid(1, 100) as { bid: Bid }).bid;
  const a = (auction(1, 10) as { auction: Auction }).auction;
  assert.deepEqual(Object.keys(q20Row(b, a)), [
    "auction",
    "bidder",
    "price",
    "channel",
    "url",
    "bidDateTime",
    "bidExtra",
    "itemName",
    "description",
    "initialBid",
    "reserve",
    "auctionDateTime",
    "expires",
    "seller",
    "category",
    "auctionExtra",
  ]);
});

Deno.test("q20Loop counts the same rows as a brute-force join over the generated events", () => {
  const n = 20_000;
  const gen = new NexmarkGenerator();
  const events = Array.from({ length: n }, (_, i) => gen.event(i));
  const category = new Map<number, number>();
  for (const e of events) if (e.type === "auction") category.set(e.auction.id, e.auction.category);
  const expected =
    events.filter((e) => e.type === "bid" && category.get(e.bid.auction) === 10).length;
  assert.ok(expected > 0);
  assert.equal(q20Loop(new NexmarkGenerator(), n), expected);
});
