/**
 * Tests of the latency benchmark's analyses: the overlay of slow updates on
 * checkpoint triggers (`latency_timeline.ts`) and the GC pause summary
 * (`latency_gc.ts`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { describeGcPauses, parseGcTrace } from "./latency_gc.ts";
import {
  checkpointTriggerTimes,
  describeOverlay,
  overlayTimeline,
  steadyRate,
} from "./latency_timeline.ts";

const COORDINATOR_LOG = [
  "2026-12-01T17:47:39.778Z INFO coordinator job latency-bench-43cde4ae: checkpoints: 1 " +
  "triggered, 1 completed, 0 failed, 0 in progress; latest #1 in 203 ms, 206.2 KiB " +
  "(sync 12 ms, async 94 ms, alignment 67 ms)",
  "2026-12-01T17:47:40.823Z INFO coordinator job latency-bench-43cde4ae: checkpoints: 2 " +
  "triggered, 2 completed, 0 failed, 0 in progress; latest #2 in 248 ms, 206.2 KiB " +
  "(sync 6 ms, async 189 ms, alignment 40 ms)",
  "2026-12-01T17:47:41.707Z INFO coordinator job latency-bench-43cde4ae 'latency-bench' " +
  "finished: checkpoints: 2 triggered, 2 completed, 0 failed, 0 in progress; latest #2 in " +
  "248 ms, 206.1 KiB (sync 0 ms, async 25 ms, alignment 2 ms); restarts: 0",
].join("\n");

Deno.test("checkpointTriggerTimes() takes each checkpoint's completion time less its duration, once", () => {
  assert.deepEqual(checkpointTriggerTimes(COORDINATOR_LOG), [
    Date.parse("2026-12-01T17:47:39.778Z") - 203,
    Date.parse("2026-12-01T17:47:40.823Z") - 248,
  ]);
  assert.deepEqual(checkpointTriggerTimes("no checkpoint lines"), []);
});

Deno.test("overlayTimeline() merges sinks' windows and counts slow updates after triggers", () => {
  const overlay = overlayTimeline(
    [
      { subtask: 0, windows: [[1000, 10, 5_000, 0], [1050, 10, 30_000, 4], [1500, 10, 25_000, 2]] },
      { subtask: 1, windows: [[1050, 20, 40_000, 6], [1100, 5, 1_000, 0]] },
    ],
    [1040],
    100,
  );
  assert.equal(overlay.windows, 4);
  assert.equal(overlay.updates, 55);
  assert.equal(overlay.slow, 12);
  // 1000 overlaps the trigger at 1040; 1050 and 1100 start within 100 ms after it.
  assert.equal(overlay.windowsAfterCheckpoint, 3);
  assert.equal(overlay.slowAfterCheckpoint, 10);
  assert.deepEqual(overlay.worst.map((w) => [w.startMs, w.slow, w.maxUs, w.sinceTriggerMs]), [
    [1050, 10, 40_000, 10],
    [1500, 2, 25_000, 460],
  ]);
  assert.match(
    describeOverlay(overlay, 100),
    /slow \(> 20 ms\) updates 12 of 55 \(22%\); .*75% of the time, 83% of the slow updates; .*\+10: 10\/30 max 40/,
  );
});

Deno.test("parseGcTrace() sums V8 --trace-gc pauses per isolate and kind, skipping other lines", () => {
  const trace = [
    "[11665:0x564f964c6000]      166 ms: Scavenge 20.3 (25.2) -> 18.4 (27.5) MB, pooled: 0.0 MB, " +
    "27.68 / 0.00 ms (average mu = 1.000, current mu = 1.000) allocation failure; ",
    "2026-12-01T17:47:38.108Z INFO worker slot w0-s0: starting a thread",
    "[11665:0x564f964c6000]      297 ms: Scavenge 39.7 (48.8) -> 35.3 (52.7) MB, pooled: 0.0 MB, " +
    "2.5 / 0.00 ms (average mu = 1.000, current mu = 1.000) allocation failure; ",
    "[11665:0x7f0718060000]      398 ms: Incremental Mark-Compact 55.3 (72.6) -> 2.7 (41.5) MB, " +
    "pooled: 9.5 MB, 4.94 / 0.00 ms (+ 0.0 ms in 1 steps since start of marking) finalize",
  ].join("\n");
  const isolates = parseGcTrace(trace);
  assert.deepEqual(isolates.map((i) => [i.isolate, [...i.pauses]]), [
    ["11665:0x564f964c6000", [["Scavenge", [27.68, 2.5]]]],
    ["11665:0x7f0718060000", [["Incremental Mark-Compact", [4.94]]]],
  ]);
  assert.match(
    describeGcPauses(isolates),
    /GC 11665:0x564f964c6000: Scavenge 2x, 30 ms, max 27\.7 ms, 1 > 10 ms/,
  );
  assert.equal(describeGcPauses([]), "GC: no --trace-gc lines");
});

Deno.test("steadyRate() counts the updates between the first and last windows over the time between them", () => {
  const rate = steadyRate([
    { subtask: 0, windows: [[1000, 999, 1, 0], [1050, 40, 1, 0], [1100, 60, 1, 0]] },
    // a window with no update (1150) still counts as time; 1200 is the last (partial) one
    { subtask: 1, windows: [[1050, 10, 1, 0], [1200, 5, 1, 0]] },
  ]);
  assert.equal(rate, (40 + 60 + 10) / 0.15);
  assert.equal(steadyRate([{ subtask: 0, windows: [[0, 5, 1, 0], [50, 5, 1, 0]] }]), undefined);
});
