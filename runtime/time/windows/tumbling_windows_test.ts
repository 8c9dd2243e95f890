import assert from "node:assert/strict";
import { TumblingEventTimeWindows, TumblingProcessingTimeWindows } from "./tumbling_windows.ts";
import { EventTimeTrigger, ProcessingTimeTrigger } from "./triggers.ts";
import { TimeWindow } from "./window.ts";
import { ManualClock } from "../manual_clock.ts";

const noClock = { currentProcessingTime: () => 0 };

Deno.test("TumblingEventTimeWindows puts each timestamp in the one window holding it", () => {
  const tumbling = TumblingEventTimeWindows.of(5_000);
  const at = (t: number) => tumbling.assignWindows("x", t, noClock);
  assert.deepEqual(at(0), [new TimeWindow(0, 5_000)]);
  assert.deepEqual(at(4_999), [new TimeWindow(0, 5_000)]);
  assert.deepEqual(at(5_000), [new TimeWindow(5_000, 10_000)]);
  assert.deepEqual(at(-1), [new TimeWindow(-5_000, 0)]);
  assert.ok(tumbling.isEventTime());
  assert.ok(tumbling.getDefaultTrigger() instanceof EventTimeTrigger);
  assert.equal(String(tumbling), "TumblingEventTimeWindows(5000)");
});

Deno.test("TumblingEventTimeWindows shifts windows by the offset", () => {
  const shifted = TumblingEventTimeWindows.of(5_000, 100);
  assert.deepEqual(shifted.assignWindows("x", 99, noClock), [new TimeWindow(-4_900, 100)]);
  assert.deepEqual(shifted.assignWindows("x", 100, noClock), [new TimeWindow(100, 5_100)]);
  const negative = TumblingEventTimeWindows.of(5_000, -100);
  assert.deepEqual(negative.assignWindows("x", 4_900, noClock), [new TimeWindow(4_900, 9_900)]);
});

Deno.test("TumblingEventTimeWindows rejects bad parameters and records without a timestamp", () => {
  assert.throws(() => TumblingEventTimeWindows.of(0), /'size'.*current value is 0/);
  assert.throws(() => TumblingEventTimeWindows.of(-1), RangeError);
  assert.throws(() => TumblingEventTimeWindows.of(1.5), RangeError);
  assert.throws(
    () => TumblingEventTimeWindows.of(10, 10),
    /abs\(offset\) < size.*current value is 10/,
  );
  assert.throws(() => TumblingEventTimeWindows.of(10, -11), RangeError);
  const tumbling = TumblingEventTimeWindows.of(10);
  assert.throws(
    () => tumbling.assignWindows("x", undefined, noClock),
    /needs each record's event timestamp.*current value is undefined/,
  );
  assert.throws(() => tumbling.assignWindows("x", 1.5, noClock), /current value is 1.5/);
});

Deno.test("TumblingProcessingTimeWindows uses the clock's time, not the record's", () => {
  const clock = new ManualClock(12_345);
  const context = { currentProcessingTime: () => clock.now() };
  const tumbling = TumblingProcessingTimeWindows.of(1_000);
  assert.deepEqual(tumbling.assignWindows("x", 1, context), [new TimeWindow(12_000, 13_000)]);
  clock.advance(655);
  assert.deepEqual(tumbling.assignWindows("x", undefined, context), [
    new TimeWindow(13_000, 14_000),
  ]);
  assert.deepEqual(
    TumblingProcessingTimeWindows.of(1_000, 500).assignWindows("x", undefined, context),
    [new TimeWindow(12_500, 13_500)],
  );
  assert.equal(tumbling.isEventTime(), false);
  assert.ok(tumbling.getDefaultTrigger() instanceof ProcessingTimeTrigger);
  assert.throws(() => TumblingProcessingTimeWindows.of(100, 100), RangeError);
});

Deno.test("Tumbling assigners parse the namespaces of their windows", () => {
  const w = new TimeWindow(-5_000, 0);
  assert.deepEqual(TumblingEventTimeWindows.of(5_000).windowFromNamespace(w.namespace), w);
  assert.deepEqual(TumblingProcessingTimeWindows.of(5_000).windowFromNamespace(w.namespace), w);
  assert.throws(() => TumblingEventTimeWindows.of(5_000).windowFromNamespace("global"), RangeError);
});
