import assert from "node:assert/strict";
import { CountEvictor, DeltaEvictor, TimeEvictor } from "./evictors.ts";
import type { TimestampedValue } from "./evictor.ts";
import { GlobalWindow } from "./window.ts";
import { ManualClock } from "../manual_clock.ts";

const clock = new ManualClock(1_000);
const ctx = { currentProcessingTime: () => clock.now(), currentWatermark: () => 0 };
const g = GlobalWindow.get();

function elements<T>(...pairs: [T, number | undefined][]): TimestampedValue<T>[] {
  return pairs.map(([value, timestamp]) => ({ value, timestamp }));
}

Deno.test("CountEvictor keeps the last maxCount elements, before or after the function", () => {
  const before = elements([1, 1], [2, 2], [3, 3], [4, 4]);
  CountEvictor.of(3).evictBefore(before, g, ctx);
  assert.deepEqual(before.map((e) => e.value), [2, 3, 4]);
  CountEvictor.of(3).evictAfter(before, g, ctx);
  assert.equal(before.length, 3, "evictAfter does nothing unless doEvictAfter");

  const after = elements([1, 1], [2, 2], [3, 3]);
  CountEvictor.of(1, true).evictBefore(after, g, ctx);
  assert.equal(after.length, 3, "evictBefore does nothing with doEvictAfter");
  CountEvictor.of(1, true).evictAfter(after, g, ctx);
  assert.deepEqual(after.map((e) => e.value), [3]);

  const few = elements([1, 1]);
  CountEvictor.of(5).evictBefore(few, g, ctx);
  assert.equal(few.length, 1);
  assert.throws(() => CountEvictor.of(0), /'maxCount'.*current value is 0/);
});

Deno.test("TimeEvictor keeps elements newer than the newest timestamp minus windowSize", () => {
  const list = elements(["a", 1_000], ["b", 4_000], ["c", 2_500], ["d", 3_000], ["e", 5_000], [
    "f",
    3_001,
  ]);
  TimeEvictor.of(2_000).evictBefore(list, g, ctx);
  assert.deepEqual(
    list.map((e) => e.value),
    ["b", "e", "f"],
    "5000 - 2000: the cutoff 3000 itself goes",
  );
  const after = elements(["a", 0], ["b", 10]);
  TimeEvictor.of(5, true).evictBefore(after, g, ctx);
  assert.equal(after.length, 2);
  TimeEvictor.of(5, true).evictAfter(after, g, ctx);
  assert.deepEqual(after.map((e) => e.value), ["b"]);
  assert.throws(() => TimeEvictor.of(-1), RangeError);
});

Deno.test("TimeEvictor leaves elements alone when the first has no timestamp, as Flink", () => {
  const list = elements(["a", undefined], ["b", 10_000]);
  TimeEvictor.of(1).evictBefore(list, g, ctx);
  assert.equal(list.length, 2);
  assert.deepEqual(elements<string>().length, 0);
  const empty: TimestampedValue<string>[] = [];
  TimeEvictor.of(1).evictBefore(empty, g, ctx);
  assert.equal(empty.length, 0);
});

Deno.test("DeltaEvictor evicts elements at threshold or more from the last element", () => {
  const list = elements([1, 0], [8, 0], [5, 0], [9, 0], [10, 0]);
  DeltaEvictor.of<number>(5, (a, b) => Math.abs(a - b)).evictBefore(list, g, ctx);
  assert.deepEqual(list.map((e) => e.value), [8, 9, 10], "|1-10| and |5-10| are >= 5");
  const after = elements([1, 0], [10, 0]);
  const byObject = DeltaEvictor.of<number>(5, { getDelta: (a, b) => b - a }, true);
  byObject.evictBefore(after, g, ctx);
  assert.equal(after.length, 2);
  byObject.evictAfter(after, g, ctx);
  assert.deepEqual(after.map((e) => e.value), [10]);
  assert.throws(() => DeltaEvictor.of(Number.NaN, () => 0), RangeError);
  assert.throws(() => DeltaEvictor.of(1, null as unknown as () => number), /current value is null/);
});
