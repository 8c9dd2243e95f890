import assert from "node:assert/strict";
import { TriggerTestHarness } from "../../task/operators/_trigger_test_harness.ts";
import {
  ContinuousEventTimeTrigger,
  CountTrigger,
  EventTimeTrigger,
  NeverTrigger,
  ProcessingTimeTrigger,
  PurgingTrigger,
} from "./triggers.ts";
import { isFire, isPurge, type Trigger, TriggerResult } from "./trigger.ts";
import { GlobalWindow, TimeWindow, type Window } from "./window.ts";

function harness<W extends Window = TimeWindow>(
  trigger: Trigger<unknown, W>,
  startMs = 0,
): TriggerTestHarness<unknown, W> {
  const windowOf = (ns: string) =>
    (ns === "global" ? GlobalWindow.fromNamespace(ns) : TimeWindow.fromNamespace(ns)) as W;
  return new TriggerTestHarness<unknown, W>(trigger, windowOf, startMs);
}

const w = (start: number, end: number) => new TimeWindow(start, end);

Deno.test("isFire and isPurge read the four TriggerResults as Flink's enum does", () => {
  const table = Object.values(TriggerResult).map((r) => [r, isFire(r), isPurge(r)]);
  assert.deepEqual(table, [
    ["CONTINUE", false, false],
    ["FIRE", true, false],
    ["PURGE", false, true],
    ["FIRE_AND_PURGE", true, true],
  ]);
});

Deno.test("EventTimeTrigger fires each window once the watermark reaches its maxTimestamp", () => {
  const h = harness(EventTimeTrigger.create());
  assert.equal(h.processElement("a", 0, w(0, 2)), "CONTINUE");
  assert.equal(h.processElement("b", 2, w(2, 4)), "CONTINUE");
  assert.deepEqual(h.eventTimeTimers().map((t) => [t.timestamp, t.namespace]), [
    [1, "0:2"],
    [3, "2:4"],
  ]);
  assert.deepEqual(h.advanceWatermark(0), []);
  assert.deepEqual(h.advanceWatermark(1).map((t) => [t.namespace, t.result]), [["0:2", "FIRE"]]);
  assert.deepEqual(h.advanceWatermark(10).map((t) => [t.namespace, t.result]), [["2:4", "FIRE"]]);
  assert.equal(h.numStateEntries(), 0);
});

Deno.test("EventTimeTrigger fires at once for an element of a window the watermark already passed", () => {
  const h = harness(EventTimeTrigger.create());
  h.advanceWatermark(5);
  assert.equal(h.processElement("late", 1, w(0, 2)), "FIRE");
  assert.deepEqual(h.eventTimeTimers(), []);
});

Deno.test("EventTimeTrigger answers CONTINUE to a timer other than the window's end", () => {
  const h = harness(EventTimeTrigger.create());
  h.processElement("a", 0, w(0, 10));
  h.timers.registerEventTimeTimer("k", 4, "0:10"); // e.g. another trigger's timer
  assert.deepEqual(h.advanceWatermark(4).map((t) => t.result), ["CONTINUE"]);
  assert.equal(h.processElement("b", 5, w(0, 10)), "CONTINUE");
});

Deno.test("EventTimeTrigger.clear deletes the window's timer and no other", () => {
  const h = harness(EventTimeTrigger.create());
  h.processElement("a", 0, w(0, 2));
  h.processElement("b", 2, w(2, 4));
  h.clearTriggerState(w(0, 2));
  assert.deepEqual(h.eventTimeTimers().map((t) => t.namespace), ["2:4"]);
  assert.deepEqual(h.advanceWatermark(100).map((t) => t.namespace), ["2:4"]);
});

Deno.test("EventTimeTrigger merges by re-registering the merged window's end, unless the watermark passed it", () => {
  const h = harness(EventTimeTrigger.create());
  assert.ok(EventTimeTrigger.create().canMerge());
  h.processElement("a", 0, w(0, 2));
  h.processElement("b", 2, w(2, 4));
  h.mergeWindows(w(0, 4), [w(0, 2), w(2, 4)]);
  assert.deepEqual(h.eventTimeTimers().map((t) => [t.timestamp, t.namespace]), [[3, "0:4"]]);
  h.advanceWatermark(20);
  h.mergeWindows(w(0, 8), [w(0, 4)]); // behind the watermark: no timer
  assert.deepEqual(h.eventTimeTimers(), []);
});

Deno.test("ProcessingTimeTrigger fires when the ManualClock reaches the window's maxTimestamp", () => {
  const h = harness(ProcessingTimeTrigger.create(), 1_000);
  assert.equal(h.processElement("a", undefined, w(1_000, 2_000)), "CONTINUE");
  assert.deepEqual(h.processingTimeTimers().map((t) => t.timestamp), [1_999]);
  assert.deepEqual(h.advanceProcessingTime(1_998), []);
  assert.deepEqual(h.advanceProcessingTime(1_999).map((t) => [t.namespace, t.result]), [
    ["1000:2000", "FIRE"],
  ]);
  assert.deepEqual(h.advanceWatermark(5_000), [], "event time does not fire it");
});

Deno.test("ProcessingTimeTrigger clears its timer and merges unless processing time passed the end", () => {
  const h = harness(ProcessingTimeTrigger.create());
  h.processElement("a", undefined, w(0, 10));
  h.clearTriggerState(w(0, 10));
  assert.deepEqual(h.processingTimeTimers(), []);
  h.processElement("a", undefined, w(0, 10));
  h.processElement("b", undefined, w(5, 15));
  h.mergeWindows(w(0, 15), [w(0, 10), w(5, 15)]);
  assert.deepEqual(h.processingTimeTimers().map((t) => [t.timestamp, t.namespace]), [[14, "0:15"]]);
  h.advanceProcessingTime(100);
  h.mergeWindows(w(0, 30), [w(0, 15)]);
  assert.deepEqual(h.processingTimeTimers(), [], "no timer in the past");
});

Deno.test("CountTrigger fires every maxCount elements and restarts its count, per key and window", () => {
  const h = harness<Window>(CountTrigger.of(3));
  const g = GlobalWindow.get();
  const results = [1, 2, 3, 4, 5, 6, 7].map((n) => h.processElement(n, undefined, g));
  assert.deepEqual(results, [
    "CONTINUE",
    "CONTINUE",
    "FIRE",
    "CONTINUE",
    "CONTINUE",
    "FIRE",
    "CONTINUE",
  ]);
  assert.equal(h.processElement(1, undefined, g, "other-key"), "CONTINUE");
  assert.equal(h.processElement(1, undefined, w(0, 10)), "CONTINUE", "another window counts apart");
  assert.deepEqual(h.eventTimeTimers(), []);
  assert.deepEqual(h.processingTimeTimers(), []);
});

Deno.test("CountTrigger adds up the counts of merged windows and clears its state", () => {
  const h = harness(CountTrigger.of(4));
  h.processElement(1, 0, w(0, 5));
  h.processElement(2, 1, w(0, 5));
  h.processElement(3, 4, w(4, 9));
  h.mergeWindows(w(0, 9), [w(0, 5), w(4, 9)]);
  assert.equal(h.processElement(4, 6, w(0, 9)), "FIRE", "2 + 1 merged, then a 4th");
  h.processElement(5, 7, w(0, 9));
  assert.equal(h.numStateEntries(), 1);
  h.clearTriggerState(w(0, 9));
  assert.equal(h.numStateEntries(), 0);
});

Deno.test("CountTrigger.of rejects a count that is not a positive integer", () => {
  for (const bad of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => CountTrigger.of(bad), RangeError, `${bad}`);
  }
  assert.throws(() => CountTrigger.of(0), /current value is 0/);
});

Deno.test("ContinuousEventTimeTrigger fires every interval of event time and at the window's end", () => {
  const h = harness(ContinuousEventTimeTrigger.of(3));
  assert.equal(h.processElement("a", 2, w(0, 10)), "CONTINUE");
  assert.deepEqual(h.eventTimeTimers().map((t) => t.timestamp).sort((a, b) => a - b), [3, 9]);
  assert.equal(h.processElement("b", 4, w(0, 10)), "CONTINUE", "no second periodic timer");
  assert.equal(h.eventTimeTimers().length, 2);
  const fired = h.advanceWatermark(9).map((t) => [t.timestamp, t.result]);
  assert.deepEqual(fired, [[3, "FIRE"], [6, "FIRE"], [9, "FIRE"]]);
  h.clearTriggerState(w(0, 10));
  assert.equal(h.numStateEntries(), 0);
  assert.deepEqual(h.eventTimeTimers(), []);
});

Deno.test("ContinuousEventTimeTrigger fires at once behind the watermark, and keeps the earliest time on merge", () => {
  const late = harness(ContinuousEventTimeTrigger.of(5));
  late.advanceWatermark(100);
  assert.equal(late.processElement("x", 3, w(0, 10)), "FIRE");

  const h = harness(ContinuousEventTimeTrigger.of(10));
  h.processElement("a", 12, w(12, 40)); // next fire at 20
  h.processElement("b", 35, w(35, 60)); // next fire at 40
  h.mergeWindows(w(12, 60), [w(12, 40), w(35, 60)]);
  const periodic = h.eventTimeTimers().filter((t) => t.namespace === "12:60").map((t) =>
    t.timestamp
  );
  assert.deepEqual(periodic, [20]);
  // As in Flink, clearing a merged window finds its fire time already moved
  // into the result, so the merged window's own periodic timer stays; it
  // fires harmlessly (the operator ignores timers of windows no longer live).
  assert.deepEqual(h.advanceWatermark(20).map((t) => [t.namespace, t.result]), [
    ["12:40", "CONTINUE"],
    ["12:60", "FIRE"],
  ]);
});

Deno.test("PurgingTrigger turns every FIRE of its nested trigger into FIRE_AND_PURGE", () => {
  const purging = PurgingTrigger.of(CountTrigger.of(2));
  assert.equal(String(purging), "PurgingTrigger(CountTrigger(2))");
  assert.ok(purging.canMerge());
  const h = harness<GlobalWindow>(purging);
  const g = GlobalWindow.get();
  assert.deepEqual([1, 2, 3, 4].map((n) => h.processElement(n, undefined, g)), [
    "CONTINUE",
    "FIRE_AND_PURGE",
    "CONTINUE",
    "FIRE_AND_PURGE",
  ]);
  const onTime = harness(PurgingTrigger.of(EventTimeTrigger.create()));
  onTime.processElement("a", 0, w(0, 2));
  assert.deepEqual(onTime.advanceWatermark(1).map((t) => t.result), ["FIRE_AND_PURGE"]);
});

Deno.test("PurgingTrigger cannot merge around a trigger that cannot", () => {
  const plain: Trigger<unknown, Window> = {
    onElement: () => "FIRE",
    onEventTime: () => "CONTINUE",
    onProcessingTime: () => "CONTINUE",
    clear: () => {},
  };
  const purging = PurgingTrigger.of(plain);
  assert.equal(purging.canMerge(), false);
  const h = harness(purging);
  assert.throws(() => h.mergeWindows(w(0, 4), [w(0, 2)]), /cannot merge/);
});

Deno.test("NeverTrigger never fires, registers nothing and keeps no state", () => {
  const h = harness<GlobalWindow>(NeverTrigger.create());
  for (let i = 0; i < 5; i++) {
    assert.equal(h.processElement(i, i, GlobalWindow.get()), "CONTINUE");
  }
  assert.deepEqual(h.advanceWatermark(Number.POSITIVE_INFINITY), []);
  assert.equal(h.numStateEntries(), 0);
  assert.deepEqual(h.eventTimeTimers(), []);
});

Deno.test("A trigger that answers something other than a TriggerResult fails, naming the value and the method", () => {
  const typo = {
    onElement: () => "FIRE_PURGE" as TriggerResult,
    onEventTime: () => "CONTINUE" as const,
    onProcessingTime: () => "CONTINUE" as const,
    clear: () => {},
    toString: () => "Typo()",
  };
  const h = harness(typo);
  assert.throws(
    () => h.processElement("a", 0, w(0, 2)),
    /Typo\(\) of the trigger test harness returned no TriggerResult from onElement for window TimeWindow\{start=0, end=2\}: current value is "FIRE_PURGE"/,
  );
});

Deno.test("getPartitionedState refuses a descriptor of no known state kind", () => {
  const odd: Trigger<unknown, Window> = {
    onElement: (_e, _t, _w, ctx) => {
      ctx.getPartitionedState({ kind: "queue", name: "q" } as never);
      return "CONTINUE";
    },
    onEventTime: () => "CONTINUE",
    onProcessingTime: () => "CONTINUE",
    clear: () => {},
  };
  assert.throws(
    () => harness(odd).processElement("a", 0, w(0, 2)),
    /'q' needs a value, list, map.*current kind is "queue"/,
  );
});
