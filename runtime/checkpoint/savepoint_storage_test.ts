import assert from "node:assert/strict";
import { join } from "node:path";
import {
  copyToSavepoint,
  localSavepointStorage,
  parseSavepointPath,
  readSavepointMetadata,
  savepointId,
  SavepointPathError,
  savepointReadingStorage,
} from "./savepoint_storage.ts";
import { CheckpointStorageError, LocalDirectoryCheckpointStorage } from "./storage.ts";
import type { CheckpointMetadata } from "./types.ts";

Deno.test("parseSavepointPath() takes directory and object-store paths apart and names a bad one", () => {
  assert.deepEqual(parseSavepointPath("/a/b/savepoint-j-1/"), {
    kind: "directory",
    directory: "/a/b",
    savepointId: "savepoint-j-1",
  });
  assert.deepEqual(parseSavepointPath("nats-object-store://bkt/savepoint-j-2/"), {
    kind: "object-store",
    bucket: "bkt",
    savepointId: "savepoint-j-2",
  });
  assert.throws(
    () => parseSavepointPath("/a/chk-3"),
    (e: unknown) =>
      e instanceof SavepointPathError && e.message.includes('"/a/chk-3"') &&
      e.message.includes("'chk-3' is not a savepoint id"),
  );
  assert.throws(() => parseSavepointPath("nats-object-store://bkt/"), /exactly a bucket/);
  assert.throws(() => parseSavepointPath(""), /it is empty/);
});

async function writeCheckpoint(
  storage: LocalDirectoryCheckpointStorage,
  jobId: string,
  id: number,
  kind: "checkpoint" | "savepoint",
): Promise<void> {
  const blob = await storage.writeState(jobId, id, "v0-0-a0.keyed-sum", new Uint8Array([1, 2, 3]));
  const meta = {
    version: 2,
    jobId,
    jobName: "job",
    checkpointId: id,
    kind,
    triggeredAt: 1,
    completedAt: 2,
    attempt: 0,
    totalBytes: 3,
    vertices: [{
      vertexId: "v0",
      operatorUids: ["sum"],
      parallelism: 1,
      maxParallelism: 128,
      subtasks: [{
        subtask: 0,
        stateUids: ["sum"],
        handles: [{ ...blob, kind: "keyed", shared: false, uid: "sum", keyGroupRange: [0, 127] }],
      }],
    }],
  } as unknown as CheckpointMetadata;
  await storage.writeMetadata(meta);
}

Deno.test("copyToSavepoint() makes a self-contained savepoint that a job reads through savepointReadingStorage and never writes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const jobStorage = new LocalDirectoryCheckpointStorage({ directory: join(dir, "chk") });
    await writeCheckpoint(jobStorage, "job-1", 5, "savepoint");
    const spStorage = localSavepointStorage(join(dir, "sp"));
    const path = await copyToSavepoint({
      from: jobStorage,
      jobId: "job-1",
      checkpointId: 5,
      to: spStorage,
    });
    assert.equal(path, join(dir, "sp", savepointId("job-1", 5)));
    // Self-contained: the job's checkpoints can go, the savepoint stays readable.
    await jobStorage.discardJob("job-1");
    const where = parseSavepointPath(path);
    const meta = await readSavepointMetadata(spStorage, where.savepointId);
    assert.equal(meta.jobId, "savepoint-job-1-5");
    assert.equal(meta.kind, "savepoint");
    const reading = savepointReadingStorage(
      new LocalDirectoryCheckpointStorage({ directory: join(dir, "chk") }),
      where.savepointId,
      spStorage,
    );
    const handle = meta.vertices[0]!.subtasks[0]!.handles[0]!;
    assert.deepEqual(await reading.readState(where.savepointId, handle), new Uint8Array([1, 2, 3]));
    assert.deepEqual(await reading.listCompleted(where.savepointId), [5]);
    await assert.rejects(reading.discard(where.savepointId, 5), CheckpointStorageError);
    await assert.rejects(reading.discardJob(where.savepointId), /savepoints are read-only/);
    assert.deepEqual(await spStorage.listCompleted(where.savepointId), [5], "still there");
    // Other jobs pass through to the job's storage.
    await reading.writeState("job-2", 1, "x", new Uint8Array([9]));
    assert.deepEqual(await reading.listAll("job-2"), [1]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readSavepointMetadata() refuses a directory without a savepoint, and a checkpoint", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const storage = localSavepointStorage(dir);
    await assert.rejects(
      readSavepointMetadata(storage, "savepoint-none-1"),
      (e: unknown) =>
        e instanceof SavepointPathError && e.message.includes("no completed savepoint"),
    );
    await writeCheckpoint(
      storage as LocalDirectoryCheckpointStorage,
      "savepoint-fake-2",
      2,
      "checkpoint",
    );
    await assert.rejects(
      readSavepointMetadata(storage, "savepoint-fake-2"),
      /its _metadata is of kind "checkpoint"/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
