import assert from "node:assert/strict";
import {
  CollectionSource,
  type Collector,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import type { NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import {
  COUNT_BIDS,
  q7Row,
  Q7RunningMaxFilter,
  Q8_NEW_SELLER,
  SUM_COUNTS,
  TOP_BIDS,
  type TopOf,
  WindowTopSelect,
} from "./windowed_functions.ts";
import type { Q7Row } from "./windowed_rows.ts";

const bid = (auction: number, price: number, dateTime: number): NexmarkEvent => ({
  type: "bid",
  bid: { auction, bidder: 9, price, channel: "Google", url: "u", dateTime, extra: `x${auction}` },
});

function collector<T>(): Collector<T> & { rows: T[] } {
  const rows: T[] = [];
  return { rows, collect: (r: T) => void rows.push(r) };
}

/** A first-stage record of the test: a window end, a score and an item. */
type Top = { readonly end: number; readonly score: number; readonly item: string };
const TOP: TopOf<Top, string> = { end: (t) => t.end, score: (t) => t.score, item: (t) => t.item };

/** Runs `tops` (timestamped at `end - 1`) through `keyBy(end).process(WindowTopSelect)`. */
async function selectTops(tops: Top[], parallelism: number): Promise<string[]> {
  const out: string[] = [];
  const dir = await Deno.makeTempDir({ prefix: "weir-window-top-test-" });
  try {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(parallelism);
    env.setCheckpointDirectory(dir);
    env.fromSource(
      new CollectionSource(tops),
      WatermarkStrategy.forMonotonousTimestamps<Top>().withTimestampAssigner((t) => t.end - 1),
      "tops",
    ).uid("tops")
      .keyBy((t) => t.end)
      .process(new WindowTopSelect(TOP)).uid("select")
      .sinkTo({ kind: "simple", invoke: (r: string) => void out.push(r) });
    await env.execute("window-top-test");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  return out;
}

Deno.test("WindowTopSelect emits, per window, every item at the highest score across keys", async () => {
  const tops: Top[] = [
    { end: 10, score: 3, item: "a" },
    { end: 10, score: 5, item: "b" }, // replaces a
    { end: 10, score: 5, item: "c" }, // ties with b
    { end: 10, score: 5, item: "d" },
    { end: 10, score: 4, item: "e" },
    { end: 20, score: 1, item: "f" },
    { end: 20, score: 1, item: "g" },
  ];
  for (const parallelism of [1, 2]) {
    const rows = await selectTops(tops, parallelism);
    assert.deepEqual([...rows].sort(), ["b", "c", "d", "f", "g"], `parallelism ${parallelism}`);
  }
});

Deno.test("Q7RunningMaxFilter passes bids at or above its window's running maximum only", () => {
  const filter = new Q7RunningMaxFilter(10_000);
  filter.open();
  const out = collector<Q7Row>();
  const events = [
    bid(1, 50, 1_000), // first of [0, 10 s): passes
    bid(2, 40, 2_000), // below 50: dropped
    bid(3, 50, 3_000), // equal: passes (a tie may be the maximum)
    bid(4, 70, 4_000), // above: passes
    bid(5, 60, 5_000), // below 70: dropped
    bid(6, 10, 10_000), // a new window: passes, maximum restarts
    bid(7, 5, 9_999), // an earlier window than the current: passed unfiltered
    bid(8, 9, 11_000), // below 10 in [10 s, 20 s): dropped
  ];
  for (const e of events) filter.flatMap(e, out);
  filter.flatMap({ type: "person" } as NexmarkEvent, out); // not a bid: dropped
  assert.deepEqual(out.rows.map((r) => r.auction), [1, 3, 4, 6, 7]);
  assert.deepEqual(out.rows[0], {
    auction: 1,
    bidder: 9,
    price: 50,
    dateTime: 1_000,
    extra: "x1",
  });
});

Deno.test("Q7RunningMaxFilter rejects a window size that is not a positive integer", () => {
  assert.throws(() => new Q7RunningMaxFilter(0), /positive integer \(ms\): current value is 0/);
});

Deno.test("the count aggregates carry the auction and hand out copies of their accumulators", () => {
  let acc = COUNT_BIDS.createAccumulator();
  for (let i = 0; i < 3; i++) acc = COUNT_BIDS.add(1007, acc);
  const result = COUNT_BIDS.getResult(acc);
  assert.deepEqual(result, [1007, 3]);
  acc = COUNT_BIDS.add(1007, acc);
  assert.deepEqual(result, [1007, 3], "the result changed with the accumulator");
  assert.deepEqual(COUNT_BIDS.merge(COUNT_BIDS.createAccumulator(), acc), [1007, 4]);

  let sum = SUM_COUNTS.createAccumulator();
  sum = SUM_COUNTS.add([1007, 3], sum);
  sum = SUM_COUNTS.add([1007, 4], sum);
  assert.deepEqual(SUM_COUNTS.getResult(sum), [1007, 7]);
  assert.deepEqual(SUM_COUNTS.merge(sum, [1007, 1]), [1007, 8]);
});

Deno.test("TOP_BIDS keeps every row at the highest price, and merges ties", () => {
  const row = (auction: number, price: number) =>
    q7Row((bid(auction, price, 0) as Extract<NexmarkEvent, { type: "bid" }>).bid);
  let acc = TOP_BIDS.createAccumulator();
  for (const r of [row(1, 5), row(2, 9), row(3, 9), row(4, 1)]) acc = TOP_BIDS.add(r, acc);
  const top = TOP_BIDS.getResult(acc);
  assert.equal(top.price, 9);
  assert.deepEqual(top.rows.map((r) => r.auction), [2, 3]);
  TOP_BIDS.add(row(7, 9), acc);
  assert.deepEqual(
    top.rows.map((r) => r.auction),
    [2, 3],
    "the result changed with the accumulator",
  );
  const other = TOP_BIDS.add(row(5, 9), TOP_BIDS.createAccumulator());
  assert.deepEqual(TOP_BIDS.merge(acc, other).rows.map((r) => r.auction), [2, 3, 7, 5]);
  assert.equal(
    TOP_BIDS.merge(acc, TOP_BIDS.add(row(6, 10), TOP_BIDS.createAccumulator())).price,
    10,
  );
});

Deno.test("Q8_NEW_SELLER emits (id, name, window start) only when the window holds the person and an auction of theirs", () => {
  const kate = [1001, "Kate Smith", 1_547_718_203_456] as const;
  const run = (persons: (typeof kate)[], sellers: number[]) => {
    const out = collector<readonly [number, string, number]>();
    (Q8_NEW_SELLER as (
      p: (typeof kate)[],
      s: number[],
      o: Collector<readonly [number, string, number]>,
    ) => void)(persons, sellers, out);
    return out.rows;
  };
  assert.deepEqual(run([kate], [1001, 1001]), [[1001, "Kate Smith", 1_547_718_200_000]]);
  assert.deepEqual(run([kate], []), []);
  assert.deepEqual(run([], [1001]), []);
});
