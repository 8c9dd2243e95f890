import assert from "node:assert/strict";
import { join } from "node:path";
import { LocalDirectoryCheckpointStorage } from "../checkpoint/storage.ts";
import type { CheckpointMetadata, StateHandle, SubtaskAck } from "../checkpoint/types.ts";
import { CheckpointRetention } from "./checkpoint_retention.ts";

const JOB = "job-r";

async function withStorage(
  fn: (storage: LocalDirectoryCheckpointStorage, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "weir-retention-" });
  try {
    await fn(new LocalDirectoryCheckpointStorage({ directory: dir }), dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Writes checkpoint `id`'s private blob and the shared blobs `writes`; returns its ack (referring to `refs` too). */
async function take(
  storage: LocalDirectoryCheckpointStorage,
  id: number,
  writes: string[],
  refs: string[] = [],
): Promise<SubtaskAck> {
  const own = await storage.writeState(JOB, id, "v1-0-a0.keyed", new Uint8Array([id]));
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
    vertexId: "v1",
    subtask: 0,
    attempt: 0,
    checkpointId: id,
    handles,
    stateUids: ["count"],
    syncDurationMs: 0,
    asyncDurationMs: 0,
    alignmentDurationMs: 0,
    stateBytes: 1,
  };
}

function metadataOf(ack: SubtaskAck): CheckpointMetadata {
  return {
    version: 2,
    jobId: JOB,
    jobName: "retention",
    checkpointId: ack.checkpointId,
    kind: "checkpoint",
    triggeredAt: 1,
    completedAt: 2,
    attempt: 0,
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

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

Deno.test("CheckpointRetention deletes a shared blob only when no retained checkpoint refers to it, and an aborted checkpoint's once a later one completes", async () => {
  await withStorage(async (storage, dir) => {
    const retention = new CheckpointRetention({ jobId: JOB, storage, retained: [] });
    // 1 writes a; 2 refers to a and writes b; 3 writes c and is aborted; 4 refers to b.
    for (const [id, writes, refs] of [[1, ["a"], []], [2, ["b"], ["a"]]] as const) {
      retention.triggered(id);
      const ack = await take(storage, id, [...writes], [...refs]);
      retention.acknowledged(ack);
      await storage.writeMetadata(metadataOf(ack));
      retention.written(id);
    }
    retention.discard([1]);
    await retention.settled();
    assert.equal(await exists(join(dir, JOB, "chk-1")), false, "checkpoint 1's folder is gone");
    assert.deepEqual(
      await storage.listShared(JOB),
      ["shared/a", "shared/b"],
      "2 still refers to a",
    );

    retention.triggered(3);
    retention.acknowledged(await take(storage, 3, ["c"]));
    retention.aborted(3);
    await retention.settled();
    assert.equal(await exists(join(dir, JOB, "chk-3")), false);
    assert.deepEqual(await storage.listShared(JOB), ["shared/a", "shared/b", "shared/c"]);

    retention.triggered(4); // after 3 was aborted
    const four = await take(storage, 4, [], ["b"]);
    retention.acknowledged(four);
    await storage.writeMetadata(metadataOf(four));
    retention.written(4);
    retention.discard([2]);
    await retention.settled();
    assert.deepEqual(await storage.listShared(JOB), ["shared/b"], "a and the aborted c are gone");
    assert.deepEqual(await storage.listAll(JOB), [4]);
  });
});

Deno.test("CheckpointRetention never aborts a checkpoint whose metadata was written, and releases a failover's aborted ones", async () => {
  await withStorage(async (storage) => {
    const retention = new CheckpointRetention({ jobId: JOB, storage, retained: [] });
    const five = await take(storage, 5, ["d"]);
    const six = await take(storage, 6, ["e"], ["d"]);
    retention.acknowledged(five);
    retention.acknowledged(six);
    await storage.writeMetadata(metadataOf(five));
    retention.written(5); // written while the failover aborted both
    retention.failedOver([5, 6]);
    await retention.settled();
    assert.equal(retention.registry.statusOf(5), "completed");
    assert.deepEqual(await storage.listShared(JOB), ["shared/d"], "6's own blob e goes, d stays");
    assert.deepEqual(await storage.listCompleted(JOB), [5]);

    // An aborted checkpoint's blob outlives it until the job ends.
    retention.acknowledged(await take(storage, 9, ["x"]));
    retention.aborted(9);
    await retention.settled();
    assert.deepEqual(await storage.listShared(JOB), ["shared/d", "shared/x"]);
    // A blob of a checkpoint aborted before any ack registered it (subtasks
    // leave shared blobs to the registry) goes when the job ends too.
    await storage.writeShared(JOB, "unacked", new Uint8Array([1]));
    retention.ended();
    await retention.settled();
    assert.deepEqual(await storage.listShared(JOB), ["shared/d"]);
  });
});

Deno.test("CheckpointRetention releases a failover's aborted checkpoints late without touching the next attempt's (chaos_incremental_test, seed 1610634379)", async () => {
  await withStorage(async (storage) => {
    const retention = new CheckpointRetention({ jobId: JOB, storage, retained: [] });
    // Attempt 1: checkpoint 10 completes, 11 is in flight when it fails.
    retention.triggered(10);
    const ten = await take(storage, 10, ["base-1"]);
    retention.acknowledged(ten);
    await storage.writeMetadata(metadataOf(ten));
    retention.written(10);
    retention.triggered(11);
    retention.acknowledged(await take(storage, 11, ["seg-11"], ["base-1"]));
    // Attempt 2 starts before the cancellation of attempt 1 is confirmed:
    // its checkpoint 12 writes a materialization and is aborted (declined
    // elsewhere); 13 is in flight, and its ack will reuse what 12 wrote.
    retention.triggered(12);
    retention.acknowledged(await take(storage, 12, ["mat-12"], ["base-1"]));
    retention.aborted(12);
    retention.triggered(13);
    // Now the failover of attempt 1 releases its aborted checkpoints: up to 11.
    retention.failedOver([11], 11);
    await retention.settled();
    assert.deepEqual(
      await storage.listShared(JOB),
      ["shared/base-1", "shared/mat-12"],
      "11's segment goes; 12 belongs to the running attempt and is held",
    );
    const thirteen = await take(storage, 13, ["seg-13"], ["mat-12"]);
    retention.acknowledged(thirteen);
    await storage.writeMetadata(metadataOf(thirteen));
    retention.written(13);
    retention.discard([10]);
    await retention.settled();
    assert.deepEqual(await storage.listShared(JOB), ["shared/mat-12", "shared/seg-13"]);
  });
});

Deno.test("CheckpointRetention rebuilds its registry from the resumed checkpoint's metadata", async () => {
  await withStorage(async (storage) => {
    const seven = await take(storage, 7, ["f", "g"]);
    await storage.writeMetadata(metadataOf(seven));
    const retention = new CheckpointRetention({ jobId: JOB, storage, retained: [7] });
    const eight = await take(storage, 8, ["h"], ["g"]);
    retention.acknowledged(eight);
    await storage.writeMetadata(metadataOf(eight));
    retention.written(8);
    retention.discard([7]);
    await retention.settled();
    assert.deepEqual(await storage.listShared(JOB), ["shared/g", "shared/h"], "f only 7 used");
    assert.equal(retention.registry.referenceCount("shared/g"), 1);
  });
});

Deno.test("CheckpointRetention keeps the shared blobs of a checkpoint whose discard failed, and retries it (chaos run: NATS outage + coordinator kills, seed 41)", async () => {
  await withStorage(async (storage, dir) => {
    let unreachable = true;
    const flaky = {
      discard: (jobId: string, id: number) =>
        unreachable ? Promise.reject(new Error("timeout")) : storage.discard(jobId, id),
      deleteShared: storage.deleteShared.bind(storage),
      listShared: storage.listShared.bind(storage),
      readMetadata: storage.readMetadata.bind(storage),
    };
    const retention = new CheckpointRetention({ jobId: JOB, storage: flaky, retained: [] });
    const complete = async (id: number, writes: string[], refs: string[] = []) => {
      retention.triggered(id);
      const ack = await take(storage, id, writes, refs);
      retention.acknowledged(ack);
      await storage.writeMetadata(metadataOf(ack));
      retention.written(id);
    };
    await complete(1, ["only-1"]);
    await complete(2, ["own-2"]);
    retention.discard([1]); // storage unreachable: chk-1 and its metadata stay
    await retention.settled();
    assert.deepEqual(await storage.listCompleted(JOB), [1, 2]);
    assert.deepEqual(
      await storage.listShared(JOB),
      ["shared/only-1", "shared/own-2"],
      "a checkpoint still complete in storage keeps every blob it refers to",
    );
    // The sweep at the end must not take them either while the discard keeps failing.
    assert.equal(retention.registry.referenceCount("shared/only-1"), 1);
    unreachable = false;
    await complete(3, ["own-3"]); // the next completion retries the discard
    retention.discard([2]);
    await retention.settled();
    assert.deepEqual(await storage.listCompleted(JOB), [3]);
    assert.deepEqual(await storage.listShared(JOB), ["shared/own-3"]);
    assert.equal(await exists(join(dir, JOB, "chk-1")), false);
  });
});

Deno.test("CheckpointRetention whose retained checkpoint's metadata cannot be read sweeps no shared blob at the job's end", async () => {
  await withStorage(async (storage) => {
    const seven = await take(storage, 7, ["f"]);
    await storage.writeMetadata(metadataOf(seven));
    let reads = 0;
    const unreadable = {
      discard: storage.discard.bind(storage),
      deleteShared: storage.deleteShared.bind(storage),
      listShared: storage.listShared.bind(storage),
      readMetadata: () => {
        reads++;
        return Promise.reject(new Error("timeout"));
      },
    };
    const retention = new CheckpointRetention({ jobId: JOB, storage: unreadable, retained: [7] });
    retention.ended();
    await retention.settled();
    assert.equal(reads, 3, "the read is retried before giving up");
    // Checkpoint 7 is still retained and refers to f: the registry does not know it, so f stays.
    assert.deepEqual(await storage.listShared(JOB), ["shared/f"]);
  });
});

Deno.test("CheckpointRetention discards a checkpoint only after the operations queued before the discard was asked for (changelog_state_backend_job_test: a later checkpoint's materialization deleted under it)", async () => {
  await withStorage(async (storage, dir) => {
    const retention = new CheckpointRetention({ jobId: JOB, storage, retained: [] });
    // 1 and 2 each write a materialization; 3 appends a segment to 2's.
    const one = await take(storage, 1, ["mat-1"]);
    const two = await take(storage, 2, ["mat-2"]);
    const three = await take(storage, 3, ["seg-3"], ["mat-2"]);
    for (const ack of [one, two, three]) await storage.writeMetadata(metadataOf(ack));
    for (const ack of [one, two]) {
      retention.triggered(ack.checkpointId);
      retention.acknowledged(ack);
      retention.written(ack.checkpointId);
    }
    await retention.settled();
    // The coordinator's calls, faster than the queue runs them (a slow disk):
    // 2's completion drops 1; 3 is triggered, acknowledged and written; its
    // completion drops 2. 2's discard must wait for 3's registration.
    retention.discard([1]);
    retention.triggered(3);
    retention.acknowledged(three);
    retention.written(3);
    retention.discard([2]);
    await retention.settled();
    assert.deepEqual(
      await storage.listShared(JOB),
      ["shared/mat-2", "shared/seg-3"],
      "3 refers to 2's materialization",
    );
    assert.deepEqual(await storage.listCompleted(JOB), [3]);
    assert.equal(await exists(join(dir, JOB, "chk-2")), false);
    assert.equal(retention.registry.referenceCount("shared/mat-2"), 1);
  });
});

Deno.test("CheckpointRetention keeps the old chain a final checkpoint taken beside a materializing one refers to, when that one's completion drops its predecessor first (chaos_incremental_test: retained checkpoint 45 missed a materialization and a segment)", async () => {
  await withStorage(async (storage) => {
    const retention = new CheckpointRetention({ jobId: JOB, storage, retained: [] });
    const chain = await take(storage, 43, ["mat-42", "seg-30"]);
    const materializing = await take(storage, 44, ["mat-44"]);
    const final = await take(storage, 45, ["seg-45"], ["mat-42", "seg-30"]);
    for (const ack of [chain, materializing, final]) await storage.writeMetadata(metadataOf(ack));
    retention.triggered(43);
    retention.acknowledged(chain);
    retention.written(43);
    retention.triggered(44);
    retention.triggered(45); // the final checkpoint, forced beside 44
    retention.acknowledged(materializing);
    retention.written(44);
    retention.discard([43]); // 45's ack is not in yet
    await retention.settled();
    assert.deepEqual(
      await storage.listShared(JOB),
      ["shared/mat-42", "shared/mat-44", "shared/seg-30", "shared/seg-45"],
      "45 is in flight: 43's blobs are held",
    );
    retention.acknowledged(final);
    retention.written(45);
    retention.discard([44]);
    retention.ended();
    await retention.settled();
    assert.deepEqual(
      await storage.listShared(JOB),
      ["shared/mat-42", "shared/seg-30", "shared/seg-45"],
      "the retained final checkpoint keeps its chain; 44's materialization goes",
    );
    assert.deepEqual(await storage.listCompleted(JOB), [45]);
    assert.deepEqual(retention.registry.checkpoints(), [45]);
  });
});
