import assert from "node:assert/strict";
import {
  aggregate,
  bySubtask,
  lowWatermark,
  metricIds,
  metricNumber,
  subtaskRows,
} from "./metrics.ts";
import { NO_WATERMARK } from "./format.ts";

Deno.test("bySubtask groups <subtask>.<name> ids and skips malformed ones", () => {
  const m = bySubtask([
    { id: "0.numRecordsIn", value: "5" },
    { id: "1.numRecordsIn", value: "7" },
    { id: "0.numRecordsOut", value: "3" },
    { id: "numRecordsIn", value: "9" },
    { id: "x.numRecordsIn", value: "9" },
    { id: "2.numRecordsIn" },
  ]);
  assert.deepEqual([...m.keys()], [0, 1]);
  assert.deepEqual(m.get(0), { numRecordsIn: "5", numRecordsOut: "3" });
});

Deno.test("metricIds lists every subtask's names", () => {
  assert.equal(metricIds(2, ["a", "b"]), "0.a,0.b,1.a,1.b");
  assert.equal(metricIds(0, ["a"]), "");
});

Deno.test("metricNumber keeps absent values absent", () => {
  assert.equal(metricNumber("2.5"), 2.5);
  assert.equal(metricNumber(undefined), undefined);
  assert.equal(metricNumber(""), undefined);
  assert.equal(metricNumber("abc"), undefined);
});

Deno.test("aggregate reads one aggregate of one metric", () => {
  const m = [{ id: "numRecordsInPerSecond", sum: 12, max: 8 }];
  assert.equal(aggregate(m, "numRecordsInPerSecond", "sum"), 12);
  assert.equal(aggregate(m, "numRecordsInPerSecond", "avg"), undefined);
  assert.equal(aggregate(m, "numRecordsOutPerSecond", "sum"), undefined);
});

Deno.test("lowWatermark takes the lowest input watermark, ignoring Long.MIN_VALUE", () => {
  assert.equal(
    lowWatermark([
      { id: "0.currentInputWatermark", value: "9007199254740993" },
      { id: "1.currentInputWatermark", value: "9007199254740992" },
      { id: "2.currentInputWatermark", value: NO_WATERMARK },
      { id: "0.currentOutputWatermark", value: "1" },
    ]),
    "9007199254740992",
  );
  assert.equal(lowWatermark([{ id: "0.currentInputWatermark", value: NO_WATERMARK }]), undefined);
});

Deno.test("subtaskRows joins the routes per subtask and leaves missing ones absent", () => {
  const rows = subtaskRows({
    parallelism: 2,
    subtasks: [{ subtask: 0, status: "RUNNING", attempt: 1, host: "w1#0" }],
    metrics: [{ id: "0.numRecordsInPerSecond", value: "10.5" }, {
      id: "1.numRecordsIn",
      value: "4",
    }],
    backpressure: {
      status: "ok",
      "backpressure-level": "low",
      subtasks: [{
        subtask: 1,
        "backpressure-level": "low",
        ratio: 0.3,
        idleRatio: 0.1,
        busyRatio: 0.6,
      }],
    },
    watermarks: [
      { id: "0.currentInputWatermark", value: "1000" },
      { id: "0.currentOutputWatermark", value: NO_WATERMARK },
    ],
    stateSizes: new Map([[1, 2048]]),
  });
  assert.equal(rows.length, 2);
  assert.equal(rows[0]?.inPerSecond, 10.5);
  assert.equal(rows[0]?.host, "w1#0");
  assert.equal(rows[0]?.inputWatermark, "1000");
  assert.equal(rows[0]?.outputWatermark, undefined);
  assert.equal(rows[0]?.backPressureRatio, undefined);
  assert.equal(rows[1]?.status, "UNKNOWN");
  assert.equal(rows[1]?.recordsIn, 4);
  assert.equal(rows[1]?.busyRatio, 0.6);
  assert.equal(rows[1]?.stateSize, 2048);
});

Deno.test("subtaskRows takes record counts from the vertex details when metrics are absent", () => {
  const rows = subtaskRows({
    parallelism: 1,
    subtasks: [{
      subtask: 0,
      status: "FINISHED",
      attempt: 0,
      metrics: { "read-records": 12, "write-records": 7 },
    }],
  });
  assert.equal(rows[0]?.recordsIn, 12);
  assert.equal(rows[0]?.recordsOut, 7);
  assert.equal(rows[0]?.inPerSecond, undefined);
});
