/**
 * Operator-level tests of the window operator: each builds a window with
 * the public API (so the spec is what a job would run), then drives one
 * operator subtask directly with elements, watermarks and a ManualClock
 * through the operator test harness.
 */

import assert from "node:assert/strict";
import { StreamExecutionEnvironment } from "../../api/environment.ts";
import type { DataStream, KeyedStream } from "../../api/datastream.ts";
import type { SingleOutputStreamOperator } from "../../api/datastream.ts";
import { OutputTag } from "../../api/output_tag.ts";
import { ValueStateDescriptor } from "../../api/state.ts";
import type { AggregateFunction } from "../../api/functions.ts";
import type { ProcessWindowFunction } from "../../api/window_functions.ts";
import type { WindowOperatorSpec } from "../../api/windowed_stream.ts";
import type { KeySelector } from "../../graph/stream_graph.ts";
import { ManualClock } from "../../time/manual_clock.ts";
import {
  TumblingEventTimeWindows,
  TumblingProcessingTimeWindows,
} from "../../time/windows/tumbling_windows.ts";
import { SlidingEventTimeWindows } from "../../time/windows/sliding_windows.ts";
import {
  EventTimeSessionWindows,
  ProcessingTimeSessionWindows,
} from "../../time/windows/session_windows.ts";
import {
  ContinuousEventTimeTrigger,
  CountTrigger,
  EventTimeTrigger,
} from "../../time/windows/triggers.ts";
import type { Trigger } from "../../time/windows/trigger.ts";
import { TimeEvictor } from "../../time/windows/evictors.ts";
import type { TimeWindow, Window } from "../../time/windows/window.ts";
import { MAX_WATERMARK } from "../../time/watermark.ts";
import { type HarnessOptions, OperatorTestHarness } from "./_operator_test_harness.ts";
import { WindowOperator } from "./window_operator.ts";
import type { TakenSnapshot } from "./_snapshot_kit.ts";
import { mulberry32 } from "../../../tests/_job_kit.ts";

/** An event: key, event time (ms), value. */
type Event = { key: string; ts: number; n: number };
const e = (key: string, ts: number, n = 1): Event => ({ key, ts, n });

/** The window spec and key selector a job built with `build` runs. */
function windowOf<O>(
  build: (stream: DataStream<Event>) => SingleOutputStreamOperator<O>,
): { spec: WindowOperatorSpec; keySelector: KeySelector } {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  build(env.fromCollection<Event>([])).uid("window");
  const node = env.streamGraph.nodes.find((n) => n.spec.kind === "window")!;
  assert.equal(node.spec.kind, "window");
  return {
    spec: (node.spec as { window: WindowOperatorSpec }).window,
    keySelector: node.keySelector!,
  };
}

/** Opens a window operator built with `build` in the harness. */
function openWindow<O>(
  build: (stream: DataStream<Event>) => SingleOutputStreamOperator<O>,
  options: HarnessOptions = {},
): Promise<OperatorTestHarness<WindowOperator>> {
  const { spec, keySelector } = windowOf(build);
  return OperatorTestHarness.open(
    (env, output) =>
      new WindowOperator({ uid: "window", name: "Window", spec, env, output, keySelector }),
    options,
  );
}

/** The window namespaces holding entries of keyed state `name` in a snapshot. */
function stateNamespaces(snap: TakenSnapshot, name: string): string[] {
  const state = snap.keyed?.states[name];
  return (state?.keyGroups ?? []).flatMap((g) => (g.namespaces ?? []).map((n) => n.namespace));
}

/** The pending event-time timers of a snapshot, as `namespace@timestamp`. */
function eventTimers(snap: TakenSnapshot): string[] {
  return (snap.timers?.eventTime ?? []).flatMap((g) =>
    g.namespaces.map((ns, i) => `${ns}@${g.timestamps[i]}`)
  ).sort();
}

const byKey = (s: DataStream<Event>): KeyedStream<Event, string> => s.keyBy((x) => x.key);
const sum = (a: Event, b: Event): Event => ({ ...a, n: a.n + b.n });

const count: AggregateFunction<Event, number, number> = {
  createAccumulator: () => 0,
  add: (_v, acc) => acc + 1,
  getResult: (acc) => acc,
  merge: (a, b) => a + b,
};

/** Lists each window's key, bounds and elements' values. */
const listing: ProcessWindowFunction<Event, string, string, TimeWindow> = {
  process(key, ctx, elements, out) {
    out.collect(
      `${key}[${ctx.window().start},${ctx.window().end}):${elements.map((x) => x.n).join(",")}`,
    );
  },
};

Deno.test("A tumbling event-time reduce fires each key's window once, stamped with its maxTimestamp", async () => {
  const h = await openWindow((s) =>
    byKey(s).window(TumblingEventTimeWindows.of(1_000)).reduce(sum)
  );
  h.processElement(e("a", 100, 1), 100);
  h.processElement(e("b", 200, 10), 200);
  h.processElement(e("a", 999, 2), 999);
  h.processElement(e("a", 1_000, 4), 1_000);
  h.processWatermark(998);
  assert.deepEqual(h.records, []);
  h.processWatermark(999);
  assert.deepEqual(h.records, [
    { value: e("a", 100, 3), timestamp: 999 },
    { value: e("b", 200, 10), timestamp: 999 },
  ]);
  h.processWatermark(MAX_WATERMARK);
  assert.deepEqual(h.records.slice(2), [{ value: e("a", 1_000, 4), timestamp: 1_999 }]);
  assert.deepEqual(h.watermarks, [998, 999, MAX_WATERMARK]);
});

Deno.test("A window operator drops every window's state and timers at its cleanup time", async () => {
  const h = await openWindow((s) =>
    byKey(s).window(TumblingEventTimeWindows.of(1_000)).allowedLateness(500).reduce(sum)
  );
  h.processElement(e("a", 100), 100);
  h.processElement(e("b", 1_100), 1_100);
  h.processWatermark(999);
  let snap = await h.snapshot();
  assert.deepEqual(stateNamespaces(snap, "window-contents").sort(), ["0:1000", "1000:2000"]);
  assert.deepEqual(eventTimers(snap), ["0:1000@1499", "1000:2000@1999", "1000:2000@2499"]);
  h.processWatermark(1_499); // [0, 1000) is cleaned up at 999 + 500
  snap = await h.snapshot();
  assert.deepEqual(stateNamespaces(snap, "window-contents"), ["1000:2000"]);
  assert.deepEqual(eventTimers(snap), ["1000:2000@1999", "1000:2000@2499"]);
  h.processWatermark(2_499);
  snap = await h.snapshot();
  assert.deepEqual(stateNamespaces(snap, "window-contents"), []);
  assert.deepEqual(eventTimers(snap), []);
  assert.equal(h.records.length, 2);
});

Deno.test("A sliding event-time aggregate counts each element in every window holding it", async () => {
  const h = await openWindow((s) =>
    byKey(s).window(SlidingEventTimeWindows.of(2_000, 1_000)).aggregate(count)
  );
  for (const ts of [100, 1_100, 1_200, 2_500]) h.processElement(e("a", ts), ts);
  h.processWatermark(MAX_WATERMARK);
  assert.deepEqual(h.records, [
    { value: 1, timestamp: 999 }, // [-1000, 1000)
    { value: 3, timestamp: 1_999 }, // [0, 2000)
    { value: 3, timestamp: 2_999 }, // [1000, 3000)
    { value: 1, timestamp: 3_999 }, // [2000, 4000)
  ]);
});

Deno.test("Session windows merge their contents, and the merged windows' timers are deleted", async () => {
  const h = await openWindow((s) =>
    byKey(s).window(EventTimeSessionWindows.withGap(1_000)).allowedLateness(500).process(listing)
  );
  h.processElement(e("a", 0, 1), 0);
  h.processElement(e("a", 2_400, 5), 2_400);
  h.processElement(e("a", 500, 2), 500); // [500, 1500) grows [0, 1000) to [0, 1500)
  h.processElement(e("a", 1_400, 3), 1_400); // [1400, 2400) bridges [0, 1500) and [2400, 3400)
  h.processElement(e("b", 200, 7), 200);
  const snap = await h.snapshot();
  // Each live session has its end timer and its cleanup timer (end + 500); the merged ones none.
  assert.deepEqual(eventTimers(snap), [
    "0:3400@3399",
    "0:3400@3899",
    "200:1200@1199",
    "200:1200@1699",
  ]);
  assert.deepEqual(stateNamespaces(snap, "window-contents").sort(), ["0:1000", "200:1200"]);
  h.processWatermark(MAX_WATERMARK);
  assert.deepEqual(h.values(), ["b[200,1200):7", "a[0,3400):1,2,5,3"]);
  assert.deepEqual(h.records.map((r) => r.timestamp), [1_199, 3_399]);
  assert.deepEqual(stateNamespaces(await h.snapshot(2), "merging-window-set"), []);
});

Deno.test("Session windows keep their merging window set and contents across a checkpoint", async () => {
  const build = (s: DataStream<Event>) =>
    byKey(s).window(EventTimeSessionWindows.withGap(1_000)).reduce(sum);
  const before = await openWindow(build);
  before.processElement(e("a", 0, 1), 0);
  before.processElement(e("a", 800, 2), 800);
  const restore = OperatorTestHarness.restoreFrom([await before.snapshot()]);
  const after = await openWindow(build, { restore });
  after.processElement(e("a", 1_500, 4), 1_500); // merges with the restored [0, 1800)
  after.processWatermark(MAX_WATERMARK);
  assert.deepEqual(after.records, [{ value: e("a", 0, 7), timestamp: 2_499 }]);
});

Deno.test("Allowed lateness re-fires a window for a late element, and later elements go to the late side output", async () => {
  const late = new OutputTag<Event>("late");
  const h = await openWindow((s) =>
    byKey(s).window(TumblingEventTimeWindows.of(1_000)).allowedLateness(1_000)
      .sideOutputLateData(late).reduce(sum)
  );
  h.processElement(e("a", 100, 1), 100);
  h.processWatermark(1_500);
  assert.deepEqual(h.values(), [e("a", 100, 1)]);
  h.processElement(e("a", 600, 2), 600); // late but within the lateness: fires again at once
  assert.deepEqual(h.values(), [e("a", 100, 1), e("a", 100, 3)]);
  h.processWatermark(1_999); // cleanup of [0, 1000)
  h.processElement(e("a", 700, 4), 700); // too late
  assert.deepEqual(h.side.get("late"), [{ value: e("a", 700, 4), timestamp: 700 }]);
  assert.equal(h.operator.numLateRecordsDropped, 0);
  assert.equal(h.records.length, 2);
});

Deno.test("Late elements without a side output are dropped and counted in numLateRecordsDropped", async () => {
  const h = await openWindow((s) =>
    byKey(s).window(TumblingEventTimeWindows.of(1_000)).reduce(sum)
  );
  h.processWatermark(5_000);
  h.processElement(e("a", 4_999), 4_999);
  h.processElement(e("a", 1), 1);
  h.processElement(e("b", 5_001), 5_001); // on time
  assert.equal(h.operator.numLateRecordsDropped, 2);
  assert.deepEqual(h.operator.metrics(), { numLateRecordsDropped: 2 });
  h.processWatermark(MAX_WATERMARK);
  assert.deepEqual(h.values(), [e("b", 5_001)]);
});

Deno.test("A record without a timestamp in an event-time window fails with the value and the assigner", async () => {
  const h = await openWindow((s) =>
    byKey(s).window(TumblingEventTimeWindows.of(1_000)).reduce(sum)
  );
  assert.throws(
    () => h.processElement(e("a", 0), undefined),
    /TumblingEventTimeWindows needs each record's event timestamp.*current value is undefined/,
  );
});

Deno.test("A process window function sees its window, time, per-window and global state, and emits side outputs", async () => {
  const info = new OutputTag<string>("info");
  const perWindow = new ValueStateDescriptor<number>("firings");
  const total = new ValueStateDescriptor<number>("total");
  const cleared: string[] = [];
  const fn: ProcessWindowFunction<Event, string, string, TimeWindow> = {
    process(key, ctx, elements, out) {
      const firings = (ctx.windowState().getState(perWindow).value() ?? 0) + 1;
      ctx.windowState().getState(perWindow).update(firings);
      const seen = (ctx.globalState().getState(total).value() ?? 0) + elements.length;
      ctx.globalState().getState(total).update(seen);
      out.collect(
        `${key} ${ctx.window().namespace} firing ${firings} seen ${seen} wm ${ctx.currentWatermark()} pt ${ctx.currentProcessingTime()}`,
      );
      ctx.output(info, `${key}:${elements.length}`);
    },
    clear(ctx) {
      cleared.push(`${ctx.window().namespace}:${ctx.windowState().getState(perWindow).value()}`);
      ctx.windowState().getState(perWindow).clear();
    },
  };
  const h = await openWindow(
    (s) => byKey(s).window(TumblingEventTimeWindows.of(1_000)).allowedLateness(100).process(fn),
    { clock: new ManualClock(42) },
  );
  h.processElement(e("a", 10), 10);
  h.processWatermark(999);
  h.processElement(e("a", 20), 20); // late firing of the same window
  h.processElement(e("a", 1_010), 1_010);
  h.processWatermark(MAX_WATERMARK);
  assert.deepEqual(h.values(), [
    "a 0:1000 firing 1 seen 1 wm 999 pt 42",
    "a 0:1000 firing 2 seen 3 wm 999 pt 42",
    "a 1000:2000 firing 1 seen 4 wm Infinity pt 42",
  ]);
  assert.deepEqual(h.side.get("info"), [
    { value: "a:1", timestamp: 999 },
    { value: "a:2", timestamp: 999 },
    { value: "a:1", timestamp: 1_999 },
  ]);
  assert.deepEqual(cleared, ["0:1000:2", "1000:2000:1"]);
  const snap = await h.snapshot();
  assert.deepEqual(stateNamespaces(snap, "firings"), [], "per-window state cleared");
  const totals = snap.keyed!.states["total"]!.keyGroups;
  assert.deepEqual(totals.flatMap((g) => g.values), [4], "global state kept");
});

Deno.test("Per-window state of merging windows is refused, as in Flink", async () => {
  const fn: ProcessWindowFunction<Event, string, string, TimeWindow> = {
    process(_key, ctx, _elements, out) {
      out.collect(
        String(ctx.windowState().getState(new ValueStateDescriptor<number>("x")).value()),
      );
    },
  };
  const h = await openWindow((s) =>
    byKey(s).window(EventTimeSessionWindows.withGap(10)).process(fn)
  );
  h.processElement(e("a", 0), 0);
  assert.throws(
    () => h.processWatermark(MAX_WATERMARK),
    /Per-window state is not allowed when using merging windows/,
  );
});

Deno.test("reduce and aggregate with a process window function hand it the one incremental result", async () => {
  const describe: ProcessWindowFunction<unknown, string, string, TimeWindow> = {
    process(key, ctx, elements, out) {
      out.collect(`${key} ${ctx.window().namespace} ${JSON.stringify(elements)}`);
    },
  };
  const reduced = await openWindow((s) =>
    byKey(s).window(TumblingEventTimeWindows.of(10)).reduce(sum, describe)
  );
  const aggregated = await openWindow((s) =>
    byKey(s).window(TumblingEventTimeWindows.of(10)).aggregate(count, describe)
  );
  for (const h of [reduced, aggregated]) {
    h.processElement(e("k", 1, 2), 1);
    h.processElement(e("k", 2, 3), 2);
    h.processWatermark(MAX_WATERMARK);
  }
  assert.deepEqual(reduced.values(), ['k 0:10 [{"key":"k","ts":1,"n":5}]']);
  assert.deepEqual(aggregated.values(), ["k 0:10 [2]"]);
});

Deno.test("countWindow(size) emits every size elements of a key, and countWindow(size, slide) the last size every slide", async () => {
  const tumbling = await openWindow((s) => byKey(s).countWindow(2).reduce(sum));
  const sliding = await openWindow((s) => byKey(s).countWindow(3, 1).reduce(sum));
  for (const n of [1, 2, 3, 4, 5]) {
    tumbling.processElement(e("a", 0, n), undefined);
    sliding.processElement(e("a", 0, n), undefined);
  }
  assert.deepEqual(tumbling.values().map((x) => (x as Event).n), [3, 7]);
  assert.deepEqual(sliding.values().map((x) => (x as Event).n), [1, 3, 6, 9, 12]);
  assert.ok(tumbling.records.every((r) => r.timestamp === Number.MAX_SAFE_INTEGER));
});

Deno.test("A TimeEvictor keeps only the newest elements of a firing window", async () => {
  const h = await openWindow((s) =>
    byKey(s).window(TumblingEventTimeWindows.of(1_000)).evictor(TimeEvictor.of(300)).process(
      listing,
    )
  );
  for (const [ts, n] of [[100, 1], [650, 2], [900, 3], [700, 4]]) {
    h.processElement(e("a", ts!, n), ts);
  }
  h.processWatermark(999);
  assert.deepEqual(h.values(), ["a[0,1000):2,3,4"]);
});

Deno.test("ContinuousEventTimeTrigger fires a window early as event time passes each interval", async () => {
  const h = await openWindow((s) =>
    byKey(s).window(TumblingEventTimeWindows.of(10_000)).trigger(
      ContinuousEventTimeTrigger.of(3_000),
    )
      .reduce(sum)
  );
  h.processElement(e("a", 1_000, 1), 1_000);
  h.processWatermark(3_000);
  h.processElement(e("a", 4_000, 2), 4_000);
  h.processWatermark(6_000);
  h.processWatermark(MAX_WATERMARK);
  assert.deepEqual(h.records.map((r) => (r.value as Event).n), [1, 3, 3, 3]);
});

Deno.test("Processing-time tumbling windows fire when the ManualClock passes their end", async () => {
  const clock = new ManualClock(10_000);
  const h = await openWindow(
    (s) => byKey(s).window(TumblingProcessingTimeWindows.of(1_000)).reduce(sum),
    { clock },
  );
  h.processElement(e("a", 0, 1), undefined);
  h.setProcessingTime(10_500);
  h.processElement(e("a", 0, 2), undefined);
  h.setProcessingTime(10_998);
  assert.deepEqual(h.records, []);
  h.setProcessingTime(10_999);
  assert.deepEqual(h.records, [{ value: e("a", 0, 3), timestamp: 10_999 }]);
  h.setProcessingTime(11_200);
  h.processElement(e("a", 0, 4), undefined);
  h.processWatermark(MAX_WATERMARK); // event time does not fire processing-time windows
  assert.equal(h.records.length, 1);
  h.setProcessingTime(12_000);
  assert.deepEqual(h.records.slice(1), [{ value: e("a", 0, 4), timestamp: 11_999 }]);
});

Deno.test("Processing-time sessions merge as the ManualClock moves and fire after the gap", async () => {
  const clock = new ManualClock(0);
  const h = await openWindow(
    (s) => byKey(s).window(ProcessingTimeSessionWindows.withGap(100)).process(listing),
    { clock },
  );
  h.processElement(e("a", 0, 1), undefined);
  h.setProcessingTime(80);
  h.processElement(e("a", 0, 2), undefined);
  h.setProcessingTime(178);
  assert.deepEqual(h.values(), []);
  h.setProcessingTime(179); // [0, 180)'s maxTimestamp
  assert.deepEqual(h.values(), ["a[0,180):1,2"]);
});

Deno.test("windowAll evaluates the whole stream in one window per interval", async () => {
  const h = await openWindow((s) =>
    s.windowAll(TumblingEventTimeWindows.of(100)).process({
      process(ctx, elements, out) {
        out.collect(`${ctx.window().namespace}:${elements.map((x) => x.key).join("")}`);
      },
    })
  );
  for (const [k, ts] of [["a", 1], ["b", 50], ["c", 120]] as const) h.processElement(e(k, ts), ts);
  h.processWatermark(MAX_WATERMARK);
  assert.deepEqual(h.values(), ["0:100:ab", "100:200:c"]);
});

Deno.test("A restore at another parallelism keeps every open window, each in its key's new subtask", async () => {
  const build = (s: DataStream<Event>) =>
    byKey(s).window(TumblingEventTimeWindows.of(1_000)).reduce(sum);
  const keys = Array.from({ length: 20 }, (_, i) => `key-${i}`);
  const expected = keys.flatMap((k) => [`${k}:1@999`, `${k}:2@1999`]).sort();
  const fired = (h: OperatorTestHarness<WindowOperator>) =>
    h.records.map((r) => `${(r.value as Event).key}:${(r.value as Event).n}@${r.timestamp}`);
  const one = await openWindow(build);
  for (const k of keys) {
    one.processElement(e(k, 100, 1), 100);
    one.processElement(e(k, 1_100, 2), 1_100);
  }
  one.processWatermark(50);

  // One subtask's checkpoint restores into two: each gets its key groups' windows and timers.
  const restore = OperatorTestHarness.restoreFrom([await one.snapshot()]);
  const halves = await Promise.all(
    [0, 1].map((subtaskIndex) => openWindow(build, { restore, parallelism: 2, subtaskIndex })),
  );
  // And back: the two subtasks' checkpoints restore into one.
  const back = await openWindow(build, {
    restore: OperatorTestHarness.restoreFrom(await Promise.all(halves.map((h) => h.snapshot(2)))),
  });

  const split: string[] = [];
  for (const half of halves) {
    half.processWatermark(MAX_WATERMARK);
    assert.ok(half.records.length > 0, `subtask ${half.env.subtaskIndex} got windows`);
    split.push(...fired(half));
  }
  assert.deepEqual(split.sort(), expected);
  back.processWatermark(MAX_WATERMARK);
  assert.deepEqual(fired(back).sort(), expected);
});

/** EventTimeTrigger behind a wrapper, so the operator does not recognize it and takes the general path. */
function opaqueEventTimeTrigger(): Trigger<unknown, Window> {
  const t = EventTimeTrigger.create();
  return {
    onElement: (element, timestamp, window, ctx) => t.onElement(element, timestamp, window, ctx),
    onEventTime: (time, window, ctx) => t.onEventTime(time, window, ctx),
    onProcessingTime: (time, window, ctx) => t.onProcessingTime(time, window, ctx),
    clear: (window, ctx) => t.clear(window, ctx),
    canMerge: () => true,
    onMerge: (window, ctx) => t.onMerge(window, ctx),
  };
}

Deno.test("The default EventTimeTrigger's short path for windows with contents gives the general path's output, late records, state and timers", async (t) => {
  for (const [seed, lateness] of [[1, 700], [2, 700], [3, 0], [4, 0]] as const) {
    await t.step(`seed ${seed}, allowed lateness ${lateness} ms`, async () => {
      const late = new OutputTag<Event>("late");
      const build = (trigger?: Trigger<unknown, Window>) => (s: DataStream<Event>) => {
        const windowed = byKey(s).window(SlidingEventTimeWindows.of(1_000, 500));
        return (trigger === undefined ? windowed : windowed.trigger(trigger))
          .allowedLateness(lateness).sideOutputLateData(late).aggregate(count);
      };
      const random = mulberry32(seed);
      let known = await openWindow(build());
      let general = await openWindow(build(opaqueEventTimeTrigger()));
      let watermark = 0;
      for (let i = 0; i < 3_000; i++) {
        const key = "abcdefgh"[Math.floor(random() * 8)]!;
        // Mostly ahead of the watermark, some within the lateness, some beyond it.
        const ts = Math.max(0, watermark + Math.floor(random() * 2_600) - 1_300);
        for (const h of [known, general]) h.processElement(e(key, ts), ts);
        if (random() < 0.05) {
          watermark += Math.floor(random() * 400);
          for (const h of [known, general]) h.processWatermark(watermark);
        }
        if (i === 1_500) {
          const [a, b] = [await known.snapshot(), await general.snapshot()];
          assert.deepEqual(a.keyed, b.keyed);
          assert.deepEqual(a.timers, b.timers);
          const records = [known.records.length, general.records.length];
          known = await openWindow(build(), { restore: OperatorTestHarness.restoreFrom([a]) });
          general = await openWindow(build(opaqueEventTimeTrigger()), {
            restore: OperatorTestHarness.restoreFrom([b]),
          });
          assert.equal(records[0], records[1]);
        }
      }
      const [a, b] = [await known.snapshot(2), await general.snapshot(2)];
      assert.deepEqual(a.keyed, b.keyed);
      assert.deepEqual(a.timers, b.timers);
      for (const h of [known, general]) h.processWatermark(MAX_WATERMARK);
      assert.deepEqual(known.records, general.records);
      assert.deepEqual(known.side.get("late"), general.side.get("late"));
      assert.ok((known.side.get("late")?.length ?? 0) > 0, "some records came too late");
      assert.ok(known.records.length > 100, `windows fired: ${known.records.length}`);
    });
  }
});

Deno.test("A window restored from a job with another trigger fires at its end under the default trigger", async () => {
  const build = (counting: boolean) => (s: DataStream<Event>) => {
    const windowed = byKey(s).window(TumblingEventTimeWindows.of(1_000)).allowedLateness(500);
    return (counting ? windowed.trigger(CountTrigger.of(1_000)) : windowed).aggregate(count);
  };
  const before = await openWindow(build(true)); // registers no timer at the window's end
  before.processElement(e("a", 100), 100);
  const restore = OperatorTestHarness.restoreFrom([await before.snapshot()]);
  const after = await openWindow(build(false), { restore });
  after.processElement(e("a", 200), 200); // into the restored window's contents
  after.processWatermark(999);
  assert.deepEqual(after.records, [{ value: 2, timestamp: 999 }]);
  after.processWatermark(1_499); // cleanup
  after.processElement(e("a", 1_100), 1_100); // a new window, after every restored timer
  after.processElement(e("a", 1_200), 1_200);
  after.processWatermark(MAX_WATERMARK);
  assert.deepEqual(after.records.slice(1), [{ value: 2, timestamp: 1_999 }]);
});
