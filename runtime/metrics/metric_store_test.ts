import assert from "node:assert/strict";
import { MetricStore } from "./metric_store.ts";
import type { SubtaskMetricsSample } from "./task_io_metrics.ts";

function sample(over: Partial<SubtaskMetricsSample> = {}): SubtaskMetricsSample {
  return {
    numRecordsIn: 10,
    numRecordsOut: 5,
    numRecordsInPerSecond: 2,
    numRecordsOutPerSecond: 1,
    busyTimeMsPerSecond: 600,
    idleTimeMsPerSecond: 300,
    backPressuredTimeMsPerSecond: 100,
    currentInputWatermark: 50,
    currentOutputWatermark: 40,
    sampledAt: 0,
    ...over,
  };
}

Deno.test("MetricStore sums counts and averages times over a vertex's subtasks", () => {
  const store = new MetricStore();
  store.update(0, "v1", 0, sample());
  store.update(
    0,
    "v1",
    1,
    sample({ backPressuredTimeMsPerSecond: 300, currentInputWatermark: 20 }),
  );
  const v = store.vertex("v1", 2);
  assert.deepEqual(v.reportingSubtasks, 2);
  assert.deepEqual(v.numRecordsIn, 20);
  assert.deepEqual(v.numRecordsOutPerSecond, 2);
  assert.deepEqual(v.backPressuredTimeMsPerSecond, 200);
  assert.deepEqual(v.maxBackPressuredTimeMsPerSecond, 300);
  assert.deepEqual(v.currentInputWatermark, 20);
  assert.deepEqual(v.currentOutputWatermark, 40);
});

Deno.test("MetricStore gives no vertex watermark while a subtask has none", () => {
  const store = new MetricStore();
  store.update(0, "v1", 0, sample());
  assert.deepEqual(store.vertex("v1", 2).currentInputWatermark, null);
  store.update(0, "v1", 1, sample({ currentOutputWatermark: null }));
  assert.deepEqual(store.vertex("v1", 2).currentOutputWatermark, null);
  assert.deepEqual(store.vertex("v1", 2).currentInputWatermark, 50);
});

Deno.test("MetricStore keeps only the current attempt's samples", () => {
  const store = new MetricStore();
  store.update(0, "v1", 0, sample({ numRecordsIn: 99 }));
  assert.deepEqual(store.update(1, "v1", 1, sample()), true);
  assert.deepEqual(store.subtask("v1", 0), undefined);
  assert.deepEqual(store.update(0, "v1", 0, sample()), false);
  assert.deepEqual(store.vertex("v1", 2).numRecordsIn, 10);
  assert.deepEqual(store.attempt, 1);
});

Deno.test("MetricStore drops the samples of earlier attempts when a new one starts", () => {
  const store = new MetricStore();
  store.update(0, "v1", 0, sample());
  store.startAttempt(1);
  assert.deepEqual(store.vertex("v1", 1).reportingSubtasks, 0);
  store.startAttempt(0); // older: ignored
  assert.equal(store.attempt, 1);
});
