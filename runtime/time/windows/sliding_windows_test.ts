import assert from "node:assert/strict";
import { SlidingEventTimeWindows, SlidingProcessingTimeWindows } from "./sliding_windows.ts";
import { EventTimeTrigger, ProcessingTimeTrigger } from "./triggers.ts";
import { ManualClock } from "../manual_clock.ts";

const noClock = { currentProcessingTime: () => 0 };
const starts = (windows: { start: number; end: number }[]) => windows.map((w) => [w.start, w.end]);

Deno.test("SlidingEventTimeWindows puts a timestamp in every window holding it, latest first", () => {
  const sliding = SlidingEventTimeWindows.of(5_000, 1_000);
  assert.deepEqual(starts(sliding.assignWindows("x", 0, noClock)), [
    [0, 5_000],
    [-1_000, 4_000],
    [-2_000, 3_000],
    [-3_000, 2_000],
    [-4_000, 1_000],
  ]);
  assert.deepEqual(starts(sliding.assignWindows("x", 4_999, noClock)).at(-1), [0, 5_000]);
  assert.equal(sliding.assignWindows("x", 4_999, noClock).length, 5);
  assert.ok(sliding.isEventTime());
  assert.ok(sliding.getDefaultTrigger() instanceof EventTimeTrigger);
});

Deno.test("SlidingEventTimeWindows covers each timestamp exactly once per window, when slide does not divide size", () => {
  const sliding = SlidingEventTimeWindows.of(1_000, 300);
  for (const t of [-701, -1, 0, 1, 299, 300, 999, 12_345]) {
    const windows = sliding.assignWindows("x", t, noClock);
    for (const w of windows) assert.ok(w.start <= t && t < w.end, `${t} in ${w}`);
    const expected = [];
    for (let s = Math.floor(t / 300) * 300; s > t - 1_000; s -= 300) expected.push(s);
    assert.deepEqual(windows.map((w) => w.start), expected, `windows of ${t}`);
  }
});

Deno.test("SlidingEventTimeWindows with an offset and slide == size acts as tumbling", () => {
  const sliding = SlidingEventTimeWindows.of(1_000, 1_000, 200);
  assert.deepEqual(starts(sliding.assignWindows("x", 150, noClock)), [[-800, 200]]);
  assert.deepEqual(starts(sliding.assignWindows("x", 200, noClock)), [[200, 1_200]]);
});

Deno.test("SlidingEventTimeWindows rejects bad parameters and records without a timestamp", () => {
  assert.throws(() => SlidingEventTimeWindows.of(0, 1), /'size'/);
  assert.throws(() => SlidingEventTimeWindows.of(10, 0), /'slide'.*current value is 0/);
  assert.throws(() => SlidingEventTimeWindows.of(10, 5, 5), /abs\(offset\) < slide/);
  assert.throws(
    () => SlidingEventTimeWindows.of(10, 5).assignWindows("x", undefined, noClock),
    TypeError,
  );
});

Deno.test("SlidingProcessingTimeWindows slides over the clock's time", () => {
  const clock = new ManualClock(10_500);
  const sliding = SlidingProcessingTimeWindows.of(2_000, 1_000);
  const windows = sliding.assignWindows("x", 0, { currentProcessingTime: () => clock.now() });
  assert.deepEqual(starts(windows), [[10_000, 12_000], [9_000, 11_000]]);
  assert.equal(sliding.isEventTime(), false);
  assert.ok(sliding.getDefaultTrigger() instanceof ProcessingTimeTrigger);
  assert.equal(String(sliding), "SlidingProcessingTimeWindows(2000, 1000)");
});
