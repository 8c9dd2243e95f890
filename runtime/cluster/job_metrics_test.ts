import assert from "node:assert/strict";
import { aggregateVertexMetrics } from "./job_metrics.ts";
import type { SubtaskMetrics } from "../task/messages.ts";

const graph = {
  name: "n",
  vertices: [
    {
      id: "v0",
      name: "Source",
      parallelism: 2,
      maxParallelism: 128,
      isSource: true,
      operators: [{ uid: "src", name: "Source" }],
    },
    {
      id: "v1",
      name: "Sink",
      parallelism: 1,
      maxParallelism: 128,
      isSource: false,
      operators: [{ uid: "sink", name: "Sink" }],
    },
  ],
};

function metrics(over: Partial<SubtaskMetrics>): SubtaskMetrics {
  return {
    numRecordsIn: 0,
    numRecordsOut: 0,
    backPressuredTimeMsPerSecond: 0,
    durationMs: 1,
    ...over,
  } as SubtaskMetrics;
}

Deno.test("aggregateVertexMetrics() sums records and operator counters and averages back pressure over subtasks", () => {
  const out = aggregateVertexMetrics(
    graph,
    new Map([
      [
        "v0#0",
        metrics({
          numRecordsOut: 5,
          backPressuredTimeMsPerSecond: 100,
          operators: { src: { numLate: 1 } },
        }),
      ],
      [
        "v0#1",
        metrics({
          numRecordsOut: 7,
          backPressuredTimeMsPerSecond: 300,
          operators: { src: { numLate: 2, other: 4 } },
        }),
      ],
    ]),
  );
  assert.deepEqual(out, {
    v0: {
      name: "Source",
      numRecordsIn: 0,
      numRecordsOut: 12,
      backPressuredTimeMsPerSecond: 200,
      operators: { src: { numLate: 3, other: 4 } },
    },
    v1: {
      name: "Sink",
      numRecordsIn: 0,
      numRecordsOut: 0,
      backPressuredTimeMsPerSecond: 0,
      operators: {},
    },
  });
});

Deno.test("aggregateVertexMetrics() counts a subtask that reported nothing as zero back pressure", () => {
  const out = aggregateVertexMetrics(
    graph,
    new Map([["v0#0", metrics({ numRecordsIn: 3, backPressuredTimeMsPerSecond: 500 })]]),
  );
  assert.equal(out.v0?.numRecordsIn, 3);
  assert.equal(out.v0?.backPressuredTimeMsPerSecond, 250);
});
