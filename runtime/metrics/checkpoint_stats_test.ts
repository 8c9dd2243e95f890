import assert from "node:assert/strict";
import { CheckpointStatsTracker, summarize } from "./checkpoint_stats.ts";
import type { SubtaskAck } from "../checkpoint/types.ts";

function ack(checkpointId: number, vertexId: string, subtask: number, bytes = 10): SubtaskAck {
  return {
    vertexId,
    subtask,
    attempt: 0,
    checkpointId,
    handles: [
      { path: `chk-${checkpointId}/a`, bytes, kind: "keyed", shared: false, uid: "u" },
      { path: "shared/b", bytes: 100, kind: "keyed-incremental", shared: true, uid: "u" },
    ],
    stateUids: ["u"],
    syncDurationMs: 2,
    asyncDurationMs: 8,
    alignmentDurationMs: 3,
    stateBytes: bytes,
    startDelayMs: 4,
  };
}

Deno.test("CheckpointStatsTracker follows a checkpoint from trigger to completion", () => {
  const t = new CheckpointStatsTracker();
  t.reportPending({ checkpointId: 1, kind: "checkpoint", triggeredAt: 1000, numSubtasks: 2 });
  t.reportAck(ack(1, "v0", 0), 1010);
  let s = t.snapshot();
  assert.deepEqual(s.counts.inProgress, 1);
  assert.deepEqual(s.history[0]!.status, "IN_PROGRESS");
  assert.deepEqual(s.history[0]!.numAcknowledged, 1);
  t.reportAck(ack(1, "v1", 0, 30), 1020);
  t.reportAck(ack(1, "v1", 0, 30), 1021); // a duplicate counts once
  t.reportCompleted(1, 1025, "nats-object-store://b/job/chk-1");
  s = t.snapshot();
  assert.deepEqual(s.counts, { restored: 0, total: 1, inProgress: 0, completed: 1, failed: 0 });
  const c = s.latestCompleted!;
  assert.deepEqual(c.endToEndDurationMs, 25);
  assert.deepEqual(c.checkpointedSize, 40);
  assert.deepEqual(c.stateSize, 240);
  assert.deepEqual(c.externalPath, "nats-object-store://b/job/chk-1");
  assert.deepEqual(c.subtasks["v1"]![0]!.startDelayMs, 4);
  assert.deepEqual(c.subtasks["v1"]![0]!.endToEndDurationMs, 20);
  assert.deepEqual(s.summary.endToEndDurationMs.max, 25);
  assert.deepEqual(t.details(1)?.status, "COMPLETED");
});

Deno.test("CheckpointStatsTracker counts failures, savepoints and restores apart", () => {
  const t = new CheckpointStatsTracker();
  t.reportPending({ checkpointId: 1, kind: "checkpoint", triggeredAt: 0, numSubtasks: 1 });
  t.reportFailed(1, 50, "TIMEOUT: expired");
  t.reportFailed(1, 60, "again"); // already failed: ignored
  t.reportPending({ checkpointId: 2, kind: "savepoint", triggeredAt: 100, numSubtasks: 1 });
  t.reportAck(ack(2, "v0", 0), 110);
  t.reportCompleted(2, 120, "sp");
  t.reportRestored({ checkpointId: 2, jobId: "j", kind: "savepoint", restoredAt: 130 });
  const s = t.snapshot();
  assert.deepEqual(s.counts.failed, 1);
  assert.deepEqual(s.latestFailed?.failureMessage, "TIMEOUT: expired");
  assert.deepEqual(s.latestFailed?.endToEndDurationMs, 50);
  assert.deepEqual(s.latestSavepoint?.checkpointId, 2);
  assert.deepEqual(s.latestCompleted, undefined);
  assert.deepEqual(s.latestRestored?.checkpointId, 2);
  assert.deepEqual(s.counts.restored, 1);
  assert.deepEqual(s.history.map((e) => e.checkpointId), [2, 1]);
});

Deno.test("CheckpointStatsTracker keeps the latest historySize checkpoints, but never drops one in progress", () => {
  const t = new CheckpointStatsTracker({ historySize: 2 });
  t.reportPending({ checkpointId: 1, kind: "checkpoint", triggeredAt: 0, numSubtasks: 1 });
  for (const id of [2, 3]) {
    t.reportPending({ checkpointId: id, kind: "checkpoint", triggeredAt: id, numSubtasks: 1 });
    t.reportFailed(id, id + 1, "x");
  }
  assert.deepEqual(t.snapshot().history.map((e) => e.checkpointId), [3, 1]);
  assert.deepEqual(t.details(2)?.checkpointId, undefined);
  assert.deepEqual(t.details(3)?.checkpointId, 3); // still the latest failed
});

Deno.test("CheckpointStatsTracker refuses a history size that is not a positive integer", () => {
  assert.throws(
    () => new CheckpointStatsTracker({ historySize: 0 }),
    /'historySize' must be a positive integer: current value is 0/,
  );
});

Deno.test("summarize() gives min, max, mean and nearest-rank percentiles", () => {
  const s = summarize([5, 1, 3, 2, 4]);
  assert.deepEqual([s.min, s.max, s.avg, s.p50, s.p90], [1, 5, 3, 3, 5]);
  assert.deepEqual(summarize([]).p99, 0);
});
