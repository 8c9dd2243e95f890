import assert from "node:assert/strict";
import { PendingCheckpoint } from "./pending.ts";
import { CheckpointTracker } from "./tracker.ts";
import type { CheckpointPlan, VertexInfo } from "./pending.ts";
import { CheckpointFailureReason } from "./types.ts";
import type { StateHandle, SubtaskAck, SubtaskRef } from "./types.ts";

const TASKS: SubtaskRef[] = [
  { vertexId: "src", subtask: 0 },
  { vertexId: "map", subtask: 0 },
  { vertexId: "map", subtask: 1 },
];

const VERTICES: VertexInfo[] = [
  { vertexId: "src", operatorUids: ["source"], parallelism: 1, maxParallelism: 128 },
  { vertexId: "map", operatorUids: ["count", "filter"], parallelism: 2, maxParallelism: 128 },
];

function keyedHandle(path: string, keyGroupRange: [number, number]): StateHandle {
  return { path, bytes: 10, kind: "keyed", shared: false, uid: "count", keyGroupRange };
}

function ack(
  vertexId: string,
  subtask: number,
  checkpointId: number,
  extra: Partial<SubtaskAck> = {},
): SubtaskAck {
  return {
    vertexId,
    subtask,
    attempt: 0,
    checkpointId,
    handles: [keyedHandle(`chk-${checkpointId}/${vertexId}#${subtask}`, [0, 127])],
    stateUids: [],
    syncDurationMs: 1,
    asyncDurationMs: 2,
    alignmentDurationMs: 0,
    stateBytes: 10,
    ...extra,
  };
}

function ackAll(tracker: CheckpointTracker, checkpointId: number): PendingCheckpoint | undefined {
  let completed: PendingCheckpoint | undefined;
  for (const t of TASKS) {
    completed = tracker.acknowledge(ack(t.vertexId, t.subtask, checkpointId)).completed;
  }
  return completed;
}

const PLAN: CheckpointPlan = { attempt: 0, tasks: TASKS };

function pending(checkpointId = 1): PendingCheckpoint {
  return new PendingCheckpoint({ checkpointId, triggeredAt: 1000, attempt: 0, tasks: TASKS });
}

Deno.test("PendingCheckpoint returns SUCCESS for the first ack of each subtask", () => {
  const p = pending();
  assert.equal(p.acknowledge(ack("src", 0, 1)), "SUCCESS");
  assert.equal(p.numberOfAcknowledged, 1);
  assert.deepEqual(p.notYetAcknowledged(), ["map#0", "map#1"]);
  assert.equal(p.isFullyAcknowledged, false);
});

Deno.test("PendingCheckpoint returns DUPLICATE for a second ack from the same subtask", () => {
  const p = pending();
  p.acknowledge(ack("map", 1, 1));
  assert.equal(p.acknowledge(ack("map", 1, 1, { stateBytes: 99 })), "DUPLICATE");
  assert.equal(p.stats().totalBytes, 10);
});

Deno.test("PendingCheckpoint returns UNKNOWN for a subtask, checkpoint or attempt not in its plan", () => {
  const p = pending();
  assert.equal(p.acknowledge(ack("map", 2, 1)), "UNKNOWN");
  assert.equal(p.acknowledge(ack("sink", 0, 1)), "UNKNOWN");
  assert.equal(p.acknowledge(ack("src", 0, 2)), "UNKNOWN");
  assert.equal(p.acknowledge(ack("src", 0, 1, { attempt: 1 })), "UNKNOWN");
  assert.equal(p.numberOfAcknowledged, 0);
});

Deno.test("after a region failover, each subtask acknowledges under its own attempt", () => {
  // map#1 was restarted by a region failover as attempt 3; src#0 and map#0 still run attempt 0.
  const p = new PendingCheckpoint({
    checkpointId: 1,
    triggeredAt: 1000,
    attempt: 3,
    tasks: TASKS,
    taskAttempts: new Map([["src#0", 0], ["map#0", 0], ["map#1", 3]]),
  });
  assert.equal(p.acknowledge(ack("map", 1, 1, { attempt: 0 })), "UNKNOWN");
  assert.equal(p.acknowledge(ack("src", 0, 1, { attempt: 3 })), "UNKNOWN");
  assert.equal(p.acknowledge(ack("src", 0, 1, { attempt: 0 })), "SUCCESS");
  assert.equal(p.acknowledge(ack("map", 0, 1, { attempt: 0 })), "SUCCESS");
  assert.equal(p.acknowledge(ack("map", 1, 1, { attempt: 3 })), "SUCCESS");
  assert.equal(p.isFullyAcknowledged, true);
});

Deno.test("PendingCheckpoint returns DISCARDED for every ack after abort, keeping the first reason", () => {
  const p = pending();
  p.acknowledge(ack("src", 0, 1));
  assert.equal(p.abort(CheckpointFailureReason.TIMEOUT), true);
  assert.equal(p.abort(CheckpointFailureReason.DECLINED), false);
  assert.equal(p.failureReason?.code, "TIMEOUT");
  assert.equal(p.isDiscarded, true);
  assert.equal(p.acknowledge(ack("map", 0, 1)), "DISCARDED");
  assert.equal(p.acknowledge(ack("src", 0, 1)), "DISCARDED");
  assert.equal(p.isFullyAcknowledged, false);
});

Deno.test("PendingCheckpoint is fully acknowledged once every planned subtask acked", () => {
  const p = pending();
  for (const t of TASKS) p.acknowledge(ack(t.vertexId, t.subtask, 1));
  assert.equal(p.isFullyAcknowledged, true);
  assert.deepEqual(p.notYetAcknowledged(), []);
});

Deno.test("PendingCheckpoint sums bytes and takes the longest durations", () => {
  const p = pending();
  p.acknowledge(ack("src", 0, 1, { stateBytes: 5, syncDurationMs: 7, asyncDurationMs: 1 }));
  p.acknowledge(
    ack("map", 0, 1, { stateBytes: 100, alignmentDurationMs: 42, asyncDurationMs: 30 }),
  );
  assert.deepEqual(p.stats(), {
    checkpointId: 1,
    kind: "checkpoint",
    triggeredAt: 1000,
    numberOfTasks: 3,
    numberOfAcknowledged: 2,
    totalBytes: 105,
    maxSyncDurationMs: 7,
    maxAsyncDurationMs: 30,
    maxAlignmentDurationMs: 42,
  });
});

Deno.test("PendingCheckpoint builds metadata sorted by vertex and subtask", () => {
  const p = pending(4);
  p.acknowledge(
    ack("map", 1, 4, { handles: [keyedHandle("chk-4/map#1", [64, 127])], stateBytes: 3 }),
  );
  p.acknowledge(ack("src", 0, 4, { handles: [], stateBytes: 0 }));
  p.acknowledge(
    ack("map", 0, 4, {
      handles: [keyedHandle("chk-4/map#0", [0, 63])],
      stateUids: ["count"],
      stateBytes: 4,
    }),
  );
  const meta = p.toMetadata({
    jobId: "j1",
    jobName: "demo",
    completedAt: 1500,
    vertices: VERTICES,
  });
  assert.deepEqual(meta, {
    version: 2,
    jobId: "j1",
    jobName: "demo",
    checkpointId: 4,
    kind: "checkpoint",
    triggeredAt: 1000,
    completedAt: 1500,
    attempt: 0,
    totalBytes: 7,
    vertices: [
      {
        vertexId: "map",
        operatorUids: ["count", "filter"],
        parallelism: 2,
        maxParallelism: 128,
        subtasks: [
          {
            subtask: 0,
            handles: [keyedHandle("chk-4/map#0", [0, 63])],
            stateUids: ["count"],
          },
          {
            subtask: 1,
            handles: [keyedHandle("chk-4/map#1", [64, 127])],
            stateUids: [],
          },
        ],
      },
      {
        vertexId: "src",
        operatorUids: ["source"],
        parallelism: 1,
        maxParallelism: 128,
        subtasks: [{ subtask: 0, handles: [], stateUids: [] }],
      },
    ],
  });
});

Deno.test("PendingCheckpoint refuses to build metadata before full acknowledgement or for unknown vertices", () => {
  const p = pending();
  p.acknowledge(ack("src", 0, 1));
  assert.throws(
    () => p.toMetadata({ jobId: "j1", jobName: "x", completedAt: 0, vertices: VERTICES }),
    /checkpoint 1 of job j1: still waiting for map#0, map#1/,
  );
  p.acknowledge(ack("map", 0, 1));
  p.acknowledge(ack("map", 1, 1));
  assert.throws(
    () => p.toMetadata({ jobId: "j1", jobName: "x", completedAt: 0, vertices: [VERTICES[0]!] }),
    /vertex map is not among the job's vertices/,
  );
  p.abort(CheckpointFailureReason.JOB_FAILING);
  assert.throws(
    () => p.toMetadata({ jobId: "j1", jobName: "x", completedAt: 0, vertices: VERTICES }),
    /it was aborted \(JOB_FAILING\)/,
  );
});

Deno.test("PendingCheckpoint refuses the metadata of a savepoint whose ack lists shared state", () => {
  const p = new PendingCheckpoint({
    checkpointId: 5,
    triggeredAt: 1000,
    attempt: 0,
    tasks: TASKS,
    kind: "savepoint",
  });
  p.acknowledge(ack("src", 0, 5));
  p.acknowledge(ack("map", 0, 5));
  const shared: StateHandle = {
    path: "shared/v1-1-a0.keyed-count-3",
    bytes: 10,
    kind: "keyed-incremental",
    shared: true,
    uid: "count",
    keyGroupRange: [64, 127],
  };
  p.acknowledge(ack("map", 1, 5, { handles: [shared] }));
  assert.throws(
    () => p.toMetadata({ jobId: "j1", jobName: "demo", completedAt: 1, vertices: VERTICES }),
    /savepoint 5 of job j1: subtask map#1 acknowledged shared state 'shared\/v1-1-a0.keyed-count-3'.*self-contained/,
  );
});

Deno.test("PendingCheckpoint rejects an empty task set and a non-positive id", () => {
  assert.throws(
    () => new PendingCheckpoint({ checkpointId: 1, triggeredAt: 0, attempt: 0, tasks: [] }),
    /'tasks' must not be empty/,
  );
  assert.throws(
    () => new PendingCheckpoint({ checkpointId: 0, triggeredAt: 0, attempt: 0, tasks: TASKS }),
    /'checkpointId' must be a positive integer: current value is 0/,
  );
});

Deno.test("CheckpointTracker skips triggering while disabled or its scheduler is stopped", () => {
  const disabled = new CheckpointTracker({ intervalMs: 0 });
  disabled.startScheduler(0);
  assert.equal(disabled.isEnabled, false);
  assert.deepEqual(disabled.decideTrigger(1e9), {
    kind: "skip",
    reason: CheckpointFailureReason.DISABLED,
  });
  const stopped = new CheckpointTracker({ intervalMs: 100 });
  assert.equal(stopped.decideTrigger(1e9).kind, "skip");
  stopped.startScheduler(0);
  assert.equal(stopped.decideTrigger(100).kind, "trigger");
  stopped.stopScheduler();
  assert.equal(stopped.decideTrigger(200).kind, "skip");
});

Deno.test("CheckpointTracker waits for the interval, measured from the last trigger", () => {
  const t = new CheckpointTracker({ intervalMs: 1000, maxConcurrentCheckpoints: 5 });
  t.startScheduler(0);
  assert.deepEqual(t.decideTrigger(999), { kind: "wait", untilMs: 1000, reason: "interval" });
  assert.deepEqual(t.decideTrigger(1000), { kind: "trigger", checkpointId: 1 });
  t.startCheckpoint(1, 1200, PLAN);
  assert.deepEqual(t.decideTrigger(1300), { kind: "wait", untilMs: 2200, reason: "interval" });
  assert.deepEqual(t.decideTrigger(2200), { kind: "trigger", checkpointId: 2 });
});

Deno.test("CheckpointTracker decideTrigger changes nothing until startCheckpoint", () => {
  const t = new CheckpointTracker({ intervalMs: 10 });
  t.startScheduler(0);
  assert.deepEqual(t.decideTrigger(10), { kind: "trigger", checkpointId: 1 });
  assert.deepEqual(t.decideTrigger(11), { kind: "trigger", checkpointId: 1 });
  assert.equal(t.counts.triggered, 0);
});

Deno.test("CheckpointTracker skips with TOO_MANY_PENDING at maxConcurrentCheckpoints", () => {
  const t = new CheckpointTracker({ intervalMs: 10, maxConcurrentCheckpoints: 2 });
  t.startScheduler(0);
  t.startCheckpoint(1, 10, PLAN);
  assert.equal(t.decideTrigger(20).kind, "trigger");
  t.startCheckpoint(2, 20, PLAN);
  assert.deepEqual(t.decideTrigger(30), {
    kind: "skip",
    reason: CheckpointFailureReason.TOO_MANY_PENDING,
  });
  t.decline(1);
  assert.deepEqual(t.decideTrigger(30), { kind: "trigger", checkpointId: 3 });
});

Deno.test("CheckpointTracker waits for the min pause measured from the last completion", () => {
  const t = new CheckpointTracker({
    intervalMs: 100,
    minPauseBetweenCheckpointsMs: 500,
    maxConcurrentCheckpoints: 3,
  });
  t.startScheduler(0);
  t.startCheckpoint(1, 100, PLAN);
  // A min pause forces one checkpoint at a time, whatever maxConcurrentCheckpoints says.
  assert.equal(t.decideTrigger(250).kind, "skip");
  ackAll(t, 1);
  t.completed(1, "/x/chk-1", 300);
  assert.deepEqual(t.decideTrigger(301), { kind: "wait", untilMs: 800, reason: "min-pause" });
  assert.deepEqual(t.decideTrigger(800), { kind: "trigger", checkpointId: 2 });
});

Deno.test("CheckpointTracker force-triggers savepoints regardless of the rules", () => {
  const t = new CheckpointTracker({ intervalMs: 0 });
  assert.deepEqual(t.decideTrigger(0, { force: true }), { kind: "trigger", checkpointId: 1 });
  const sp = t.startCheckpoint(1, 0, { ...PLAN, kind: "savepoint" });
  assert.equal(sp.kind, "savepoint");
  assert.deepEqual(t.decideTrigger(1, { force: true }), { kind: "trigger", checkpointId: 2 });
});

Deno.test("CheckpointTracker savepoints neither count against max concurrent nor move the interval", () => {
  const t = new CheckpointTracker({ intervalMs: 1000 });
  t.startScheduler(0);
  t.startCheckpoint(1, 500, { ...PLAN, kind: "savepoint" });
  assert.deepEqual(t.decideTrigger(1000), { kind: "trigger", checkpointId: 2 });
});

Deno.test("CheckpointTracker starts ids at 1 and refuses ids that do not increase", () => {
  const t = new CheckpointTracker({ intervalMs: 10 });
  assert.equal(t.lastCheckpointId, 0);
  t.startCheckpoint(1, 0, PLAN);
  assert.throws(
    () => t.startCheckpoint(1, 0, PLAN),
    /Cannot start checkpoint 1: ids must be integers above the last one handed out \(1\)/,
  );
  t.startCheckpoint(5, 0, PLAN);
  assert.equal(t.lastCheckpointId, 5);
});

Deno.test("CheckpointTracker reports completion on the last ack and counts it on completed()", () => {
  const t = new CheckpointTracker({ intervalMs: 10 });
  t.startCheckpoint(1, 100, PLAN);
  assert.deepEqual(t.acknowledge(ack("src", 0, 1)), { result: "SUCCESS" });
  assert.deepEqual(t.acknowledge(ack("src", 0, 1)), { result: "DUPLICATE" });
  assert.deepEqual(t.acknowledge(ack("map", 0, 1)), { result: "SUCCESS" });
  const last = t.acknowledge(ack("map", 1, 1, { alignmentDurationMs: 12 }));
  assert.equal(last.result, "SUCCESS");
  assert.equal(last.completed?.checkpointId, 1);
  assert.deepEqual(t.counts, { triggered: 1, completed: 0, failed: 0, inProgress: 1 });
  const out = t.completed(1, "/ckpt/j/chk-1", 440);
  assert.deepEqual(out.discard, []);
  assert.deepEqual(out.subsumed, []);
  assert.deepEqual(t.counts, { triggered: 1, completed: 1, failed: 0, inProgress: 0 });
  assert.equal(t.latestCompleted?.durationMs, 340);
  assert.equal(t.latestCompleted?.totalBytes, 30);
  assert.equal(t.latestCompleted?.location, "/ckpt/j/chk-1");
  assert.equal(
    t.summary(),
    "checkpoints: 1 triggered, 1 completed, 0 failed, 0 in progress; latest #1 in 340 ms, 30 B (sync 1 ms, async 2 ms, alignment 12 ms)",
  );
});

Deno.test("CheckpointTracker answers late acks by the checkpoint's outcome", () => {
  const t = new CheckpointTracker({ intervalMs: 10, maxConcurrentCheckpoints: 2 });
  t.startCheckpoint(1, 0, PLAN);
  ackAll(t, 1);
  t.completed(1, "l", 5);
  t.startCheckpoint(2, 10, PLAN);
  t.decline(2);
  // A late ack of a completed checkpoint must not lead to deleting its state.
  assert.deepEqual(t.acknowledge(ack("src", 0, 1)), { result: "DUPLICATE" });
  assert.deepEqual(t.acknowledge(ack("src", 0, 2)), { result: "DISCARDED" });
  assert.deepEqual(t.acknowledge(ack("src", 0, 9)), { result: "UNKNOWN" });
});

Deno.test("CheckpointTracker completing a checkpoint subsumes older pending checkpoints but not savepoints", () => {
  const t = new CheckpointTracker({ intervalMs: 10, maxConcurrentCheckpoints: 5 });
  t.startCheckpoint(1, 0, PLAN);
  t.startCheckpoint(2, 1, { ...PLAN, kind: "savepoint" });
  t.startCheckpoint(3, 2, PLAN);
  t.startCheckpoint(4, 3, PLAN);
  ackAll(t, 3);
  const out = t.completed(3, "l3", 10);
  assert.deepEqual(out.subsumed.map((p) => p.checkpointId), [1]);
  assert.equal(out.subsumed[0]?.failureReason?.code, "SUBSUMED");
  assert.deepEqual(t.pendingCheckpoints().map((p) => p.checkpointId), [2, 4]);
  assert.deepEqual(t.counts, { triggered: 4, completed: 1, failed: 1, inProgress: 2 });
});

Deno.test("CheckpointTracker retains the last N completed checkpoints and never discards savepoints", () => {
  const t = new CheckpointTracker({ intervalMs: 10, retainedCheckpoints: 2 });
  const discarded: number[][] = [];
  for (let id = 1; id <= 5; id++) {
    t.startCheckpoint(id, id * 10, { ...PLAN, kind: id === 2 ? "savepoint" : "checkpoint" });
    ackAll(t, id);
    discarded.push(t.completed(id, `l${id}`, id * 10 + 5).discard);
  }
  assert.deepEqual(discarded, [[], [], [], [1], [3]]);
  assert.deepEqual(t.retainedCheckpointIds, [4, 5]);
});

Deno.test("CheckpointTracker refuses to complete a checkpoint that is not fully acknowledged", () => {
  const t = new CheckpointTracker({ intervalMs: 10 });
  t.startCheckpoint(1, 0, PLAN);
  assert.throws(
    () => t.completed(1, "l", 1),
    /Cannot complete checkpoint 1: it is not fully acknowledged/,
  );
  assert.throws(() => t.completed(2, "l", 1), /Cannot complete checkpoint 2: it is not pending/);
});

Deno.test("CheckpointTracker expires checkpoints older than the timeout, except ones being finalized", () => {
  const t = new CheckpointTracker({ intervalMs: 10, timeoutMs: 1000, maxConcurrentCheckpoints: 3 });
  t.startCheckpoint(1, 0, PLAN);
  t.startCheckpoint(2, 100, PLAN);
  t.startCheckpoint(3, 200, PLAN);
  ackAll(t, 1); // fully acknowledged: the coordinator is writing its metadata
  assert.equal(t.nextExpiryMs, 1100);
  assert.deepEqual(t.expire(1099), []);
  const expired = t.expire(1100);
  assert.deepEqual(expired.map((p) => p.checkpointId), [2]);
  assert.equal(expired[0]?.failureReason?.code, "TIMEOUT");
  assert.equal(t.acknowledge(ack("src", 0, 2)).result, "DISCARDED");
  assert.equal(t.nextExpiryMs, 1200);
  assert.deepEqual(t.pendingCheckpoints().map((p) => p.checkpointId), [1, 3]);
  assert.equal(t.latestFailed?.checkpointId, 2);
  assert.match(t.summary(), /last failure #2: TIMEOUT$/);
});

Deno.test("CheckpointTracker declines a checkpoint whose metadata could not be written", () => {
  const t = new CheckpointTracker({ intervalMs: 10 });
  t.startCheckpoint(1, 0, PLAN);
  const done = ackAll(t, 1);
  assert.ok(done);
  const aborted = t.decline(1, CheckpointFailureReason.FINALIZE_FAILED);
  assert.equal(aborted, done);
  assert.equal(aborted?.failureReason?.code, "FINALIZE_FAILED");
  assert.equal(t.decline(1), undefined);
  assert.deepEqual(t.counts, { triggered: 1, completed: 0, failed: 1, inProgress: 0 });
});

Deno.test("CheckpointTracker abortAll aborts every pending checkpoint on failover", () => {
  const t = new CheckpointTracker({ intervalMs: 10, maxConcurrentCheckpoints: 2 });
  t.startScheduler(0);
  t.startCheckpoint(1, 0, PLAN);
  t.startCheckpoint(2, 0, PLAN);
  const aborted = t.abortAll();
  assert.deepEqual(aborted.map((p) => [p.checkpointId, p.failureReason?.code]), [
    [1, "JOB_FAILING"],
    [2, "JOB_FAILING"],
  ]);
  assert.equal(t.counts.inProgress, 0);
  assert.equal(t.isSchedulerRunning, true);
  // Ids keep increasing after the failover.
  assert.deepEqual(t.decideTrigger(1000), { kind: "trigger", checkpointId: 3 });
});

Deno.test("CheckpointTracker restoreCounter continues ids across attempts and seeds retention", () => {
  const t = new CheckpointTracker({ intervalMs: 10, retainedCheckpoints: 1 });
  t.restoreCounter(7, [6, 7]);
  assert.deepEqual(t.decideTrigger(0, { force: true }), { kind: "trigger", checkpointId: 8 });
  t.startCheckpoint(8, 0, PLAN);
  ackAll(t, 8);
  assert.deepEqual(t.completed(8, "l", 1).discard, [6, 7]);
  t.restoreCounter(3); // never backwards
  assert.equal(t.lastCheckpointId, 8);
  assert.throws(
    () => t.restoreCounter(-1),
    /'latestCompletedId' must be a non-negative integer: current value is -1/,
  );
});

Deno.test("CheckpointTracker rejects invalid options, stating the current value", () => {
  assert.throws(
    () => new CheckpointTracker({ intervalMs: -5 }),
    /'intervalMs' must be a non-negative number or Infinity: current value is -5/,
  );
  assert.throws(
    () => new CheckpointTracker({ intervalMs: 10, timeoutMs: 0 }),
    /'timeoutMs'.*current value is 0/,
  );
  assert.throws(
    () => new CheckpointTracker({ intervalMs: 10, maxConcurrentCheckpoints: 0 }),
    /'maxConcurrentCheckpoints' must be a positive integer: current value is 0/,
  );
  assert.throws(
    () => new CheckpointTracker({ intervalMs: 10, retainedCheckpoints: 1.5 }),
    /'retainedCheckpoints'.*1.5/,
  );
  assert.throws(
    () => new CheckpointTracker({ intervalMs: 10, minPauseBetweenCheckpointsMs: -1 }),
    /'minPauseBetweenCheckpointsMs'.*-1/,
  );
});

Deno.test("CheckpointTracker subsumeExcessRetained drops the oldest recovered checkpoints beyond retention", () => {
  const t = new CheckpointTracker({ intervalMs: 10, retainedCheckpoints: 2 });
  assert.deepEqual(t.subsumeExcessRetained(), []);
  t.restoreCounter(9, [4, 9, 7, 5]);
  assert.deepEqual(t.subsumeExcessRetained(), [4, 5]);
  assert.deepEqual(t.retainedCheckpointIds, [7, 9]);
  assert.deepEqual(t.subsumeExcessRetained(), []);
  assert.equal(t.lastCheckpointId, 9);
});
