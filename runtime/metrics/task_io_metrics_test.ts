import assert from "node:assert/strict";
import { TaskIOMetrics } from "./task_io_metrics.ts";

const counters = (numRecordsIn: number, numRecordsOut: number) => ({
  numRecordsIn,
  numRecordsOut,
  epochMs: 5,
});

Deno.test("TaskIOMetrics splits a window into busy, idle and back-pressured time", () => {
  const io = new TaskIOMetrics(0);
  io.startWait("idle", 100);
  io.endWait(300); // 200 ms idle
  io.startWait("backPressured", 500);
  io.endWait(600); // 100 ms back-pressured
  const s = io.sample(1000, counters(40, 20));
  assert.deepEqual(s.idleTimeMsPerSecond, 200);
  assert.deepEqual(s.backPressuredTimeMsPerSecond, 100);
  assert.deepEqual(s.busyTimeMsPerSecond, 700);
  assert.deepEqual(s.numRecordsInPerSecond, 40);
  assert.deepEqual(s.numRecordsOutPerSecond, 20);
  assert.deepEqual(io.backPressuredMs, 100);
});

Deno.test("TaskIOMetrics record rates cover the meter's span (Flink's MeterView), the subtask's life before it", () => {
  const io = new TaskIOMetrics(0, 2000);
  io.sample(1000, counters(100, 0));
  const young = io.sample(2000, counters(100, 40)); // 2 s old: over its whole life
  assert.deepEqual([young.numRecordsInPerSecond, young.numRecordsOutPerSecond], [50, 20]);
  const s = io.sample(3000, counters(300, 50)); // over 1000..3000
  assert.deepEqual(s.numRecordsIn, 300);
  assert.deepEqual(s.numRecordsInPerSecond, 100);
  assert.deepEqual(s.numRecordsOutPerSecond, 25);
  assert.deepEqual(s.busyTimeMsPerSecond, 1000);
  // A burst every other second reads steady, where a 1 s window read 0, 200, 0, ...
  const bursty = new TaskIOMetrics(0, 2000);
  const rates = [0, 200, 200, 400, 400, 600].map((n, i) =>
    bursty.sample(1000 * (i + 1), counters(n, 0)).numRecordsInPerSecond
  );
  assert.deepEqual(rates, [0, 100, 100, 100, 100, 100]);
});

Deno.test("TaskIOMetrics refuses a meter span that is not a positive number", () => {
  for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => new TaskIOMetrics(0, bad), /meterSpanMs must be a positive number/);
  }
});

Deno.test("TaskIOMetrics splits a wait still open at the sample between two windows", () => {
  const io = new TaskIOMetrics(0);
  io.startWait("idle", 500);
  const first = io.sample(1000, counters(0, 0));
  assert.deepEqual(first.idleTimeMsPerSecond, 500);
  io.endWait(1250);
  const second = io.sample(2000, counters(0, 0));
  assert.deepEqual(second.idleTimeMsPerSecond, 250);
  assert.deepEqual(second.busyTimeMsPerSecond, 750);
  assert.deepEqual(io.idleMs, 750);
});

Deno.test("TaskIOMetrics reports watermarks as numbers, and none as null", () => {
  const io = new TaskIOMetrics(0);
  const none = io.sample(10, {
    ...counters(0, 0),
    inputWatermark: Number.NEGATIVE_INFINITY,
    outputWatermark: undefined,
  });
  assert.deepEqual([none.currentInputWatermark, none.currentOutputWatermark], [null, null]);
  const some = io.sample(20, { ...counters(0, 0), inputWatermark: 7, outputWatermark: 9 });
  assert.deepEqual([some.currentInputWatermark, some.currentOutputWatermark], [7, 9]);
});
