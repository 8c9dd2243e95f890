/**
 * A new leader's `CheckpointCoordinator` recovers every completed checkpoint
 * of the job from storage (Flink's `CompletedCheckpointStore` recovery):
 * the old leader died after completing checkpoint 5 and before discarding
 * checkpoint 4, both incremental, sharing blobs. The new leader must count
 * 4's shared blobs, discard 4 (beyond one retained), and keep every blob 5
 * and later checkpoints use; nothing of 4 may stay behind (the chaos run
 * with coordinator kills, seed 41, sqlite + incremental, found 4 left
 * behind with its shared blobs deleted: "retained [4,53] missing=3").
 */

import assert from "node:assert/strict";
import { LocalDirectoryCheckpointStorage } from "../checkpoint/storage.ts";
import type { CheckpointMetadata, StateHandle, SubtaskAck } from "../checkpoint/types.ts";
import type { CheckpointConfig } from "../api/executor.ts";
import { CheckpointCoordinator } from "./checkpoint_coordinator.ts";
import { ExecutionAttempt } from "./execution_attempt.ts";
import { retainedAtStart } from "./checkpoint_retention.ts";

const JOB = "job-takeover";
const TASK = { vertexId: "v1", subtask: 0 };

/** Writes checkpoint `id`'s private blob and shared blobs `writes`; its ack refers to `refs` too. */
async function take(
  storage: LocalDirectoryCheckpointStorage,
  id: number,
  attempt: number,
  writes: string[],
  refs: string[] = [],
): Promise<SubtaskAck> {
  const own = await storage.writeState(JOB, id, "v1-0.keyed", new Uint8Array([id]));
  const handles: StateHandle[] = [{ ...own, kind: "keyed", shared: false, uid: "count" }];
  for (const name of writes) {
    const blob = await storage.writeShared(JOB, name, new Uint8Array([id]));
    handles.push({ ...blob, kind: "keyed-incremental", shared: true, uid: "count" });
  }
  for (const name of refs) {
    handles.push({
      path: `shared/${name}`,
      bytes: 1,
      kind: "keyed-incremental",
      shared: true,
      uid: "count",
    });
  }
  return {
    ...TASK,
    attempt,
    checkpointId: id,
    handles,
    stateUids: ["count"],
    syncDurationMs: 0,
    asyncDurationMs: 0,
    alignmentDurationMs: 0,
    stateBytes: 1,
  };
}

/** The metadata the old leader wrote for `ack`'s checkpoint. */
function metadataOf(ack: SubtaskAck): CheckpointMetadata {
  return {
    version: 2,
    jobId: JOB,
    jobName: "takeover",
    checkpointId: ack.checkpointId,
    kind: "checkpoint",
    triggeredAt: 1,
    completedAt: 2,
    attempt: ack.attempt,
    totalBytes: 1,
    vertices: [{
      vertexId: "v1",
      operatorUids: ["count"],
      parallelism: 1,
      maxParallelism: 128,
      subtasks: [{ subtask: 0, handles: ack.handles, stateUids: ack.stateUids }],
    }],
  };
}

const checkpointing: CheckpointConfig = {
  intervalMs: 0,
  timeoutMs: 600_000,
  minPauseBetweenCheckpointsMs: 0,
  maxConcurrentCheckpoints: 1,
  retainedCheckpoints: 1,
  retainOnFinish: true,
};

/** What the job's storage holds: completed checkpoints, shared blobs, and referenced blobs missing. */
async function audit(storage: LocalDirectoryCheckpointStorage): Promise<{
  completed: number[];
  shared: string[];
  missing: string[];
  unreferenced: string[];
}> {
  const completed = await storage.listCompleted(JOB);
  const shared = await storage.listShared(JOB);
  const referenced = new Set<string>();
  const missing: string[] = [];
  for (const id of completed) {
    for (const v of (await storage.readMetadata(JOB, id)).vertices) {
      for (const s of v.subtasks) {
        for (const h of s.handles) {
          referenced.add(h.path);
          const there = await storage.readState(JOB, h).then(() => true, () => false);
          if (!there) missing.push(`chk-${id} -> ${h.path}`);
        }
      }
    }
  }
  return {
    completed,
    shared,
    missing,
    unreferenced: shared.filter((p) => !referenced.has(p)),
  };
}

Deno.test("a new leader registers the old leader's older checkpoints, discards those beyond retention and keeps every blob the retained ones use", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-takeover-" });
  try {
    const storage = new LocalDirectoryCheckpointStorage({ directory: dir });
    // The old leader (attempt 2): checkpoint 4 wrote a and b; 5 reuses b and wrote c.
    // It wrote 5's metadata and died before discarding 4.
    await storage.writeMetadata(metadataOf(await take(storage, 4, 2, ["a", "b"])));
    await storage.writeMetadata(metadataOf(await take(storage, 5, 2, ["c"], ["b"])));
    assert.deepEqual(await storage.listCompleted(JOB), [4, 5]);

    // The new leader resumes as attempt 3 from 5, recovering [4, 5].
    const attempt = new ExecutionAttempt({ number: 3, subtasks: 1, sourceSubtasks: 1 });
    const coordinator = new CheckpointCoordinator({
      host: {
        phase: () => "running",
        attempt: () => attempt,
        toTask: () => {},
        toAllTasks: () => {},
        failover: (error) => {
          throw error;
        },
      },
      jobId: JOB,
      jobName: "takeover",
      storage,
      checkpointing,
      tasks: [TASK],
      sources: [TASK],
      vertexInfos: [{
        vertexId: "v1",
        operatorUids: ["count"],
        parallelism: 1,
        maxParallelism: 128,
      }],
      restoreFrom: { jobId: JOB, checkpointId: 5 },
      recoveredCheckpoints: [4, 5],
    });
    coordinator.start();
    // The source ended: the final checkpoint, 6, reuses c and writes d.
    coordinator.sourcesEnded();
    await coordinator.acknowledged(await take(storage, 6, 3, ["d"], ["c"]));
    await coordinator.jobFinished();

    const after = await audit(storage);
    assert.deepEqual(after.completed, [6], "checkpoints 4 and 5 are discarded, 6 retained");
    assert.deepEqual(after.missing, [], "a retained checkpoint refers to a deleted blob");
    assert.deepEqual(after.shared, ["shared/c", "shared/d"]);
    assert.deepEqual(after.unreferenced, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("retainedAtStart keeps the restored checkpoint of this job and the recovered ones before it", () => {
  const own = { jobId: JOB, checkpointId: 9 };
  assert.deepEqual(retainedAtStart(JOB, own, [9, 4, 7]), [4, 7, 9]);
  assert.deepEqual(retainedAtStart(JOB, own, undefined), [9]);
  // A later id cannot be restored from here: not retained.
  assert.deepEqual(retainedAtStart(JOB, own, [9, 12]), [9]);
  assert.deepEqual(retainedAtStart(JOB, { jobId: "other", checkpointId: 9 }, [9]), []);
  assert.deepEqual(retainedAtStart(JOB, null, [3]), []);
});
