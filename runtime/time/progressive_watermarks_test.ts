import assert from "node:assert/strict";
import { decode, encode } from "../actor/codec.ts";
import type { Output } from "../task/operators/operator.ts";
import { ManualClock } from "./manual_clock.ts";
import {
  ProgressiveTimestampsAndWatermarks,
  type SplitWatermarkState,
} from "./progressive_watermarks.ts";
import { MAX_WATERMARK, type WatermarkGenerator, WatermarkStrategy } from "./watermark.ts";

interface Event {
  readonly ts: number;
}

/** An operator output that records records, watermarks and statuses as strings, in order. */
function recording(): Output & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    collect: (value, ts) => seen.push(`record ${JSON.stringify(value)}@${ts}`),
    collectSide: (tag, value) => seen.push(`side ${tag} ${JSON.stringify(value)}`),
    emitWatermark: (w) => seen.push(`wm ${w}`),
    emitWatermarkStatus: (s) => seen.push(s),
  };
}

function setUp(strategy: WatermarkStrategy<Event>, clock = new ManualClock()) {
  const out = recording();
  const watermarks = new ProgressiveTimestampsAndWatermarks<Event>({
    strategy,
    clock,
    output: out,
    where: "source 'events' subtask 0/1 of job 'test'",
  });
  return { out, watermarks, clock, reader: watermarks.readerOutput };
}

const bounded = WatermarkStrategy.forBoundedOutOfOrderness<Event>(0)
  .withTimestampAssigner((e) => e.ts);

Deno.test("each split runs its own generator and the subtask emits the minimum over its splits", () => {
  const { out, watermarks, reader } = setUp(bounded);
  const a = reader.createOutputForSplit("a");
  const b = reader.createOutputForSplit("b");
  assert.equal(reader.createOutputForSplit("a"), a, "the same output until released");
  a.collect({ ts: 100 });
  b.collect({ ts: 40 });
  a.collect({ ts: 300 });
  watermarks.emitPeriodicWatermark(0);
  // One generator for both would have said 299: split b is behind at 39.
  assert.deepEqual(out.seen.filter((s) => s.startsWith("wm")), ["wm 39"]);
  b.collect({ ts: 500 });
  watermarks.emitPeriodicWatermark(200);
  assert.deepEqual(out.seen.filter((s) => s.startsWith("wm")), ["wm 39", "wm 299"]);
  assert.equal(watermarks.currentWatermark, 299);
});

Deno.test("a released split no longer holds back the subtask", () => {
  const { out, watermarks, reader } = setUp(bounded);
  const a = reader.createOutputForSplit("a");
  reader.createOutputForSplit("b"); // never emits
  a.collect({ ts: 100 });
  watermarks.emitPeriodicWatermark(0);
  assert.deepEqual(out.seen.filter((s) => s.startsWith("wm")), []);
  reader.releaseOutputForSplit("b");
  reader.releaseOutputForSplit("b"); // releasing twice does nothing
  assert.deepEqual(out.seen.filter((s) => s.startsWith("wm")), ["wm 99"]);
});

Deno.test("a split idle for the idle timeout leaves the minimum, all idle splits make the subtask idle, and a record makes it active first", () => {
  const { out, watermarks, reader, clock } = setUp(bounded.withIdleness(1_000));
  const a = reader.createOutputForSplit("a");
  const b = reader.createOutputForSplit("b");
  a.collect({ ts: 10 });
  b.collect({ ts: 5 });
  clock.setTime(200);
  watermarks.emitPeriodicWatermark(200);
  assert.deepEqual(out.seen.slice(-1), ["wm 4"]);
  clock.setTime(400);
  a.collect({ ts: 20 });
  watermarks.emitPeriodicWatermark(400);
  assert.deepEqual(out.seen.slice(-1), ['record {"ts":20}@20'], "b holds the minimum at 4");
  // b has had no record since the check at 200: idle from 1 200 on.
  watermarks.emitPeriodicWatermark(1_100);
  assert.equal(watermarks.idle, false);
  a.collect({ ts: 30 });
  watermarks.emitPeriodicWatermark(1_200);
  assert.deepEqual(out.seen.slice(-1), ["wm 29"], "b left the minimum");
  watermarks.emitPeriodicWatermark(2_200);
  assert.deepEqual(out.seen.slice(-1), ["idle"], "a is idle too: the subtask is");
  assert.equal(watermarks.idle, true);
  b.collect({ ts: 50 });
  assert.deepEqual(out.seen.slice(-2), ["active", 'record {"ts":50}@50']);
});

Deno.test("a watermark a generator emits from onEvent follows the record that caused it", () => {
  const punctuated = WatermarkStrategy.forGenerator<Event>(() => ({
    onEvent: (_e, ts, output) => output.emitWatermark(ts),
    onPeriodicEmit() {},
  })).withTimestampAssigner((e) => e.ts);
  const { out, reader } = setUp(punctuated);
  const a = reader.createOutputForSplit("a");
  a.collect({ ts: 7 });
  assert.deepEqual(out.seen, ['record {"ts":7}@7', "wm 7"]);
});

Deno.test("the assigner replaces the source's timestamp, and without one the source's is kept", () => {
  const withAssigner = setUp(
    WatermarkStrategy.noWatermarks<Event>().withTimestampAssigner((e, source) => e.ts + source!),
  );
  withAssigner.reader.createOutputForSplit("a").collect({ ts: 1 }, 1_000);
  assert.deepEqual(withAssigner.out.seen, ['record {"ts":1}@1001']);
  const without = setUp(WatermarkStrategy.noWatermarks<Event>());
  without.reader.createOutputForSplit("a").collect({ ts: 1 }, 1_000);
  without.reader.collect({ ts: 2 });
  assert.deepEqual(without.out.seen, ['record {"ts":1}@1000', 'record {"ts":2}@undefined']);
  assert.equal(without.watermarks.periodic, false, "no generator, no idleness: no wake-ups");
});

Deno.test("records collected on the main output count as one more output from the first such record", () => {
  const { out, watermarks, reader } = setUp(bounded);
  const a = reader.createOutputForSplit("a");
  a.collect({ ts: 100 });
  watermarks.emitPeriodicWatermark(0);
  assert.deepEqual(out.seen.slice(-1), ["wm 99"]);
  reader.collect({ ts: 50 });
  a.collect({ ts: 400 });
  watermarks.emitPeriodicWatermark(200);
  assert.deepEqual(out.seen.filter((s) => s.startsWith("wm")), ["wm 99"], "main holds at 49");
  reader.collect({ ts: 600 });
  watermarks.emitPeriodicWatermark(400);
  assert.deepEqual(out.seen.filter((s) => s.startsWith("wm")), ["wm 99", "wm 399"]);
});

Deno.test("a restored split resumes its watermark and its generator's state", () => {
  const before = setUp(bounded);
  const split = before.reader.createOutputForSplit("a");
  split.collect({ ts: 1_000 });
  before.watermarks.emitPeriodicWatermark(0);
  split.collect({ ts: 2_000 }); // seen, but no periodic emit since
  const state = decode(encode(before.watermarks.snapshotSplit("a"))) as SplitWatermarkState;
  assert.deepEqual(state, { watermark: 999, generator: 2_000 });
  assert.equal(before.watermarks.snapshotSplit("unknown"), undefined);

  const after = setUp(bounded);
  after.watermarks.restoreSplit("a", state);
  assert.deepEqual(after.watermarks.snapshotSplit("a"), state, "kept until the output exists");
  const restored = after.reader.createOutputForSplit("a");
  restored.collect({ ts: 1_500 }); // replayed: below what the split had seen
  after.watermarks.emitPeriodicWatermark(0);
  // As without the failure: the generator still knows 2 000 was seen.
  assert.deepEqual(after.out.seen.filter((s) => s.startsWith("wm")), ["wm 1999"]);
});

Deno.test("a restored split whose generator keeps no state still starts from its checkpointed watermark", () => {
  const stateless: WatermarkGenerator<Event> = {
    onEvent() {},
    onPeriodicEmit: (output) => output.emitWatermark(10),
  };
  const { out, watermarks, reader } = setUp(WatermarkStrategy.forGenerator(() => stateless));
  watermarks.restoreSplit("a", { watermark: 700, generator: "ignored: nothing to restore it" });
  reader.createOutputForSplit("a");
  watermarks.emitPeriodicWatermark(0);
  assert.deepEqual(out.seen, ["wm 700"]);
});

Deno.test("a malformed restored watermark state fails, naming the split and the subtask", () => {
  const { watermarks, reader } = setUp(bounded);
  watermarks.restoreSplit("a", { watermark: "high" as unknown as number });
  assert.throws(
    () => reader.createOutputForSplit("a"),
    /Cannot restore the watermark of split a in source 'events' subtask 0\/1 of job 'test': .*"high"/,
  );
  watermarks.restoreSplit("b", { watermark: 5, generator: "x" });
  assert.throws(
    () => reader.createOutputForSplit("b"),
    /Cannot restore the watermark generator of split b in source 'events'.*current value is "x"/,
  );
});

Deno.test("an idle subtask ends with 'active' then MAX_WATERMARK; side outputs pass through", () => {
  const { out, watermarks, reader } = setUp(bounded);
  reader.output({ id: "dead-letter" } as never, "bad line");
  watermarks.markIdle();
  watermarks.markIdle();
  watermarks.emitFinalWatermark();
  assert.deepEqual(out.seen, [
    'side dead-letter "bad line"',
    "idle",
    "active",
    `wm ${MAX_WATERMARK}`,
  ]);
});

Deno.test("split outputs can emit watermarks and idleness directly, like Flink's SourceOutput", () => {
  const { out, reader } = setUp(WatermarkStrategy.noWatermarks<Event>());
  const a = reader.createOutputForSplit("a");
  const b = reader.createOutputForSplit("b");
  a.emitWatermark(50);
  b.markIdle();
  a.markIdle();
  b.markActive();
  b.emitWatermark(70);
  assert.deepEqual(out.seen, ["wm 50", "idle", "active", "wm 70"]);
});
