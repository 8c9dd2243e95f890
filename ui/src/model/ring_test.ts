import assert from "node:assert/strict";
import { counterRate, emptySeries, latest, pushSample } from "./ring.ts";

Deno.test("pushSample keeps the latest samples up to the capacity, oldest first", () => {
  let s = emptySeries(2, 3);
  for (let i = 1; i <= 5; i++) s = pushSample(s, i * 1000, [i, i * 10]);
  assert.deepEqual(s.times, [3, 4, 5]);
  assert.deepEqual(s.lines, [[3, 4, 5], [30, 40, 50]]);
  assert.equal(latest(s, 1), 50);
});

Deno.test("pushSample replaces the latest sample at the same time", () => {
  let s = emptySeries(1, 3);
  s = pushSample(s, 1000, [1]);
  s = pushSample(s, 1000, [2]);
  assert.deepEqual(s.times, [1]);
  assert.deepEqual(s.lines, [[2]]);
});

Deno.test("pushSample turns missing and non-finite values into gaps", () => {
  let s = emptySeries(3, 10);
  s = pushSample(s, 1000, [undefined, NaN, null]);
  assert.deepEqual(s.lines, [[null], [null], [null]]);
  assert.equal(latest(s, 0), undefined);
});

Deno.test("pushSample refuses a sample with the wrong number of values", () => {
  assert.throws(
    () => pushSample(emptySeries(2), 0, [1]),
    /one value per line \(2\): current value has 1/,
  );
});

Deno.test("emptySeries refuses a capacity of 0", () => {
  assert.throws(() => emptySeries(1, 0), /capacity must be a positive integer: current value is 0/);
});

Deno.test("pushSample does not change the series it was given", () => {
  const s = pushSample(emptySeries(1, 2), 1000, [1]);
  pushSample(s, 2000, [2]);
  assert.deepEqual(s.lines, [[1]]);
});

Deno.test("counterRate derives records per second and skips resets", () => {
  assert.equal(counterRate(undefined, 10, 1000), undefined);
  assert.equal(counterRate({ count: 100, timeMs: 1000 }, 600, 3000), 250);
  assert.equal(counterRate({ count: 100, timeMs: 1000 }, 50, 2000), undefined);
  assert.equal(counterRate({ count: 100, timeMs: 1000 }, 200, 1000), undefined);
});
