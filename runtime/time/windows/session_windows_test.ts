import assert from "node:assert/strict";
import { EventTimeSessionWindows, ProcessingTimeSessionWindows } from "./session_windows.ts";
import { EventTimeTrigger, ProcessingTimeTrigger } from "./triggers.ts";
import { TimeWindow } from "./window.ts";
import { ManualClock } from "../manual_clock.ts";
import { isMergingWindowAssigner } from "./window_assigner.ts";

const noClock = { currentProcessingTime: () => 0 };

Deno.test("EventTimeSessionWindows gives each element the window [t, t + gap)", () => {
  const sessions = EventTimeSessionWindows.withGap(5_000);
  assert.deepEqual(sessions.assignWindows("x", 1_000, noClock), [new TimeWindow(1_000, 6_000)]);
  assert.deepEqual(sessions.assignWindows("x", -10, noClock), [new TimeWindow(-10, 4_990)]);
  assert.ok(isMergingWindowAssigner(sessions));
  assert.ok(sessions.isEventTime());
  assert.ok(sessions.getDefaultTrigger() instanceof EventTimeTrigger);
  assert.throws(() => EventTimeSessionWindows.withGap(0), /'gap'.*current value is 0/);
  assert.throws(() => sessions.assignWindows("x", undefined, noClock), TypeError);
});

Deno.test("Session assigners merge overlapping and touching windows, and nothing else", () => {
  const merges: string[] = [];
  EventTimeSessionWindows.withGap(5).mergeWindows(
    [new TimeWindow(0, 5), new TimeWindow(5, 10), new TimeWindow(11, 16), new TimeWindow(30, 35)],
    (merged, result) =>
      merges.push(`${merged.map((w) => w.namespace).join("+")}=${result.namespace}`),
  );
  assert.deepEqual(merges, ["0:5+5:10=0:10"]);
});

Deno.test("EventTimeSessionWindows.withDynamicGap takes each element's gap and checks it", () => {
  const sessions = EventTimeSessionWindows.withDynamicGap<{ gap: number }>((e) => e.gap);
  assert.deepEqual(sessions.assignWindows({ gap: 7 }, 100, noClock), [new TimeWindow(100, 107)]);
  assert.throws(
    () => sessions.assignWindows({ gap: 0 }, 100, noClock),
    /DynamicEventTimeSessionWindows needs 'gap'.*current value is 0/,
  );
  const byObject = EventTimeSessionWindows.withDynamicGap<string>({ extract: (s) => s.length });
  assert.deepEqual(byObject.assignWindows("abc", 0, noClock), [new TimeWindow(0, 3)]);
  assert.ok(byObject.getDefaultTrigger() instanceof EventTimeTrigger);
  assert.throws(
    () => EventTimeSessionWindows.withDynamicGap(42 as unknown as (e: unknown) => number),
    /current value is 42/,
  );
});

Deno.test("ProcessingTimeSessionWindows start sessions at the clock's time", () => {
  const clock = new ManualClock(2_000);
  const context = { currentProcessingTime: () => clock.now() };
  const sessions = ProcessingTimeSessionWindows.withGap(500);
  assert.deepEqual(sessions.assignWindows("x", 1, context), [new TimeWindow(2_000, 2_500)]);
  assert.equal(sessions.isEventTime(), false);
  assert.ok(sessions.getDefaultTrigger() instanceof ProcessingTimeTrigger);
  const dynamic = ProcessingTimeSessionWindows.withDynamicGap<number>((n) => n);
  clock.advance(100);
  assert.deepEqual(dynamic.assignWindows(50, undefined, context), [new TimeWindow(2_100, 2_150)]);
  assert.throws(() => dynamic.assignWindows(-1, undefined, context), RangeError);
});
