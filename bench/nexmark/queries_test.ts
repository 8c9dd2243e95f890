import assert from "node:assert/strict";
import {
  type Key,
  type KeyedCoProcessFunction,
  type KeyedProcessFunction,
  StreamExecutionEnvironment,
} from "../../mod.ts";
import type { Auction, Bid, Person } from "../../connectors/datagen/nexmark/model.ts";
import {
  DedupFirst,
  dedupKey,
  q1Convert,
  q2Keep,
  q3Auction,
  type Q3Input,
  Q3Join,
  q3Key,
  q3Person,
  type Q3Row,
} from "./queries.ts";
import { renderChart } from "./chart.ts";

const bid = (auction: number, bidder: number, price: number, dateTime: number): Bid => ({
  auction,
  bidder,
  price,
  channel: "Google",
  url: "https://example.com",
  dateTime,
  extra: "",
});

const person = (id: number, state: string): Person => ({
  id,
  name: `p${id}`,
  emailAddress: "",
  creditCard: "",
  city: `c${id}`,
  state,
  dateTime: 0,
  extra: "",
});

const auction = (id: number, seller: number, category: number): Auction => ({
  id,
  itemName: "",
  description: "",
  initialBid: 1,
  reserve: 1,
  dateTime: 0,
  expires: 1,
  seller,
  category,
  extra: "",
});

/** Runs `records` through `keyBy(key).process(fn)` in local mode, parallelism 1. */
async function runKeyed<I, K extends Key, O>(
  records: I[],
  key: (r: I) => K,
  fn: () => KeyedProcessFunction<K, I, O>,
): Promise<O[]> {
  const out: O[] = [];
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const dir = await Deno.makeTempDir({ prefix: "weir-nexmark-test-" });
  try {
    env.setCheckpointDirectory(dir);
    env.fromCollection(records).uid("input").keyBy(key).process(fn()).uid("fn").sinkTo({
      kind: "simple",
      invoke: (r: O) => {
        out.push(r);
      },
    });
    await env.execute("nexmark-unit");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  return out;
}

/**
 * Runs `records` through `connect` and `keyBy(key, key).process(fn)` in
 * local mode, parallelism 1: the records `first` picks are input 1, the
 * others input 2 (one source, split by filter, so both inputs see the
 * records in the list's order).
 */
async function runConnected<I, K extends Key, O>(
  records: I[],
  first: (r: I) => boolean,
  key: (r: I) => K,
  fn: () => KeyedCoProcessFunction<K, I, I, O>,
): Promise<O[]> {
  const out: O[] = [];
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const dir = await Deno.makeTempDir({ prefix: "weir-nexmark-test-" });
  try {
    env.setCheckpointDirectory(dir);
    const input = env.fromCollection(records).uid("input");
    input.filter(first).connect(input.filter((r) => !first(r))).keyBy(key, key)
      .process(fn()).uid("fn")
      .sinkTo({
        kind: "simple",
        invoke: (r: O) => {
          out.push(r);
        },
      });
    await env.execute("nexmark-unit");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  return out;
}

Deno.test("q1Convert multiplies the price by 0.908 and keeps the other fields", () => {
  const out = q1Convert(bid(1001, 2002, 1000, 5));
  assert.deepEqual(out, { auction: 1001, bidder: 2002, price: 908, dateTime: 5, extra: "" });
  assert.equal(q1Convert(bid(1, 1, 1, 0)).price, 0.908);
});

Deno.test("q2Keep keeps only auctions divisible by 123", () => {
  assert.deepEqual(
    [0, 122, 123, 246, 1000, 1107].map((a) => q2Keep(bid(a, 1, 1, 0))),
    [true, false, true, true, false, true],
  );
});

Deno.test("q3's filters keep persons in OR, ID, CA and auctions of category 10", () => {
  assert.deepEqual(q3Person(person(7, "OR")), {
    side: "person",
    id: 7,
    name: "p7",
    city: "c7",
    state: "OR",
  });
  assert.equal(q3Person(person(7, "WA")), undefined);
  assert.deepEqual(q3Auction(auction(50, 7, 10)), { side: "auction", id: 50, seller: 7 });
  assert.equal(q3Auction(auction(50, 7, 11)), undefined);
});

Deno.test("Q3Join joins a person with its auctions in either arrival order", async (t) => {
  const p7 = q3Person(person(7, "OR"))!;
  const p8 = q3Person(person(8, "CA"))!;
  const a = (id: number, seller: number) => q3Auction(auction(id, seller, 10))!;
  const expected: Q3Row[] = [
    ["p7", "c7", "OR", 100],
    ["p7", "c7", "OR", 101],
    ["p8", "c8", "CA", 102],
  ];
  const sorted = (rows: Q3Row[]) => [...rows].sort((x, y) => x[3] - y[3]);
  await t.step("person first", async () => {
    const rows = await runConnected<Q3Input, number, Q3Row>(
      [p7, a(100, 7), p8, a(101, 7), a(102, 8), a(103, 9)],
      (r) => r.side === "person",
      q3Key,
      () => new Q3Join(),
    );
    assert.deepEqual(sorted(rows), expected);
  });
  await t.step("auctions first", async () => {
    const rows = await runConnected<Q3Input, number, Q3Row>(
      [a(100, 7), a(101, 7), a(102, 8), a(103, 9), p8, p7],
      (r) => r.side === "person",
      q3Key,
      () => new Q3Join(),
    );
    assert.deepEqual(sorted(rows), expected);
  });
});

Deno.test("DedupFirst emits the first bid of each (bidder, auction) and drops the rest", async () => {
  const bids = [
    bid(1, 10, 5, 100), // first of (10, 1): emitted
    bid(1, 10, 6, 100), // same key, same time
    bid(1, 10, 7, 90), // same key, older
    bid(2, 10, 8, 50), // first of (10, 2)
    bid(1, 11, 9, 10), // first of (11, 1)
    bid(1, 10, 3, 101), // same key, newer
  ];
  const out = await runKeyed<Bid, [number, number], Bid>(bids, dedupKey, () => new DedupFirst());
  assert.deepEqual(out.map((b) => b.price), [5, 8, 9]);
  const reversed = await runKeyed<Bid, [number, number], Bid>(
    bids.toReversed(),
    dedupKey,
    () => new DedupFirst(),
  );
  assert.deepEqual(reversed.map((b) => b.price), [3, 9, 8]); // another bid per key, as many
});

Deno.test("renderChart draws two bars per query with their values and the ratio", () => {
  const svg = renderChart(
    [{ query: "q1", engine: 1_500_000, baseline: 3_000_000, ratio: 0.5 }],
    ["t & u", "second line"],
  );
  assert.match(svg, /^<svg /);
  assert.equal(svg.match(/<rect x=/g)?.length, 2 + 2); // two bars, two legend swatches
  assert.match(svg, />1\.50M</);
  assert.match(svg, />3\.00M</);
  assert.match(svg, /t &amp; u/);
  assert.match(svg, />second line</);
  assert.match(svg, />q1 \(50%\)</);
  assert.throws(() => renderChart([], ["x"]), RangeError);
});
