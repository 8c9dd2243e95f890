import assert from "node:assert/strict";
import { END_OF_TIME, GlobalWindow, TimeWindow } from "./window.ts";

Deno.test("TimeWindow holds [start, end) and its maxTimestamp is end - 1", () => {
  const w = new TimeWindow(1_000, 2_000);
  assert.equal(w.maxTimestamp(), 1_999);
  assert.equal(String(w), "TimeWindow{start=1000, end=2000}");
});

Deno.test("TimeWindow namespaces round-trip, negative bounds included", () => {
  for (const [start, end] of [[0, 1], [1_000, 2_000], [-1_000, 0], [-5, -2]]) {
    const w = new TimeWindow(start!, end!);
    assert.equal(w.namespace, `${start}:${end}`);
    assert.deepEqual(TimeWindow.fromNamespace(w.namespace), w);
  }
});

Deno.test("TimeWindow.fromNamespace rejects what no TimeWindow produces, naming the value", () => {
  for (const bad of ["", "global", "1000", "1:2:3", "a:b", "1.5:3", "01:3", "5:5", "6:5", " 1:2"]) {
    assert.throws(() => TimeWindow.fromNamespace(bad), RangeError, JSON.stringify(bad));
  }
});

Deno.test("A TimeWindow needs integer bounds with start < end", () => {
  assert.throws(() => new TimeWindow(5, 5), /current value is \[5, 5\)/);
  assert.throws(() => new TimeWindow(0, 1.5), RangeError);
  assert.throws(() => new TimeWindow(Number.NaN, 1), RangeError);
});

Deno.test("getWindowStartWithOffset aligns to size plus offset, for negative timestamps too", () => {
  const start = TimeWindow.getWindowStartWithOffset;
  assert.equal(start(0, 0, 1_000), 0);
  assert.equal(start(999, 0, 1_000), 0);
  assert.equal(start(1_000, 0, 1_000), 1_000);
  assert.equal(start(-1, 0, 1_000), -1_000);
  assert.equal(start(-1_000, 0, 1_000), -1_000);
  assert.equal(start(-1_001, 0, 1_000), -2_000);
  assert.equal(start(150, 100, 1_000), 100);
  assert.equal(start(50, 100, 1_000), -900);
  assert.equal(start(50, -100, 1_000), -100);
  assert.equal(start(950, -100, 1_000), 900);
});

Deno.test("TimeWindow.intersects counts touching windows, and cover spans both", () => {
  const a = new TimeWindow(0, 5);
  assert.ok(a.intersects(new TimeWindow(5, 8)));
  assert.ok(a.intersects(new TimeWindow(-3, 0)));
  assert.ok(!a.intersects(new TimeWindow(6, 8)));
  assert.deepEqual(a.cover(new TimeWindow(3, 9)), new TimeWindow(0, 9));
});

Deno.test("TimeWindow.mergeWindows reports each run of overlapping windows with its cover", () => {
  const merges: [string[], string][] = [];
  TimeWindow.mergeWindows(
    [
      new TimeWindow(20, 25),
      new TimeWindow(0, 5),
      new TimeWindow(30, 35),
      new TimeWindow(4, 9),
      new TimeWindow(9, 12),
      new TimeWindow(22, 24),
      new TimeWindow(0, 5), // a duplicate counts once
    ],
    (merged, result) => merges.push([merged.map((w) => w.namespace), result.namespace]),
  );
  assert.deepEqual(merges, [
    [["0:5", "4:9", "9:12"], "0:12"],
    [["20:25", "22:24"], "20:25"],
  ]);
});

Deno.test("GlobalWindow is one window that never ends", () => {
  assert.equal(GlobalWindow.get(), GlobalWindow.fromNamespace("global"));
  assert.equal(GlobalWindow.get().maxTimestamp(), END_OF_TIME);
  assert.equal(END_OF_TIME, Number.MAX_SAFE_INTEGER);
  assert.throws(() => GlobalWindow.fromNamespace("0:1"), /current value is "0:1"/);
});
