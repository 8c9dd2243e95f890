/**
 * Tests of the checkpoint upload thread (`checkpoint_uploads.ts`) against the
 * test NATS server: writes go through the thread and read back through the
 * slot's own storage, errors keep their class and fields, and a crashed
 * thread fails its writes and is replaced on the next write.
 *
 * @module
 */

import assert from "node:assert/strict";
import { connect, objApi } from "../actor/nats_deps.ts";
import { CheckpointStorageError } from "../checkpoint/storage.ts";
import { ObjectStoreCheckpointStorage } from "../checkpoint/object_store_storage.ts";
import { TEST_NATS_URL } from "../../tests/_nats_server.ts";
import { CheckpointUploadThread, uploadingOffThread } from "./checkpoint_uploads.ts";
import { fromUploadError, toUploadError } from "./checkpoint_upload_thread.ts";

async function withBucket(
  fn: (storage: ObjectStoreCheckpointStorage, bucket: string) => Promise<void>,
): Promise<void> {
  const nc = await connect({ servers: TEST_NATS_URL });
  const bucket = `weir-test-uploads-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await fn(await ObjectStoreCheckpointStorage.open({ connection: nc, bucket }), bucket);
  } finally {
    await (await new objApi.Objm(nc).open(bucket)).destroy().catch(() => {});
    await nc.close();
  }
}

Deno.test("uploadingOffThread() writes state in the upload thread and reads it back on this one", async () => {
  await withBucket(async (inner, bucket) => {
    const uploads = new CheckpointUploadThread({
      nats: { servers: TEST_NATS_URL },
      bucket,
      slotId: "test-s0",
    });
    try {
      const storage = uploadingOffThread(inner, uploads);
      const job = `job-${crypto.randomUUID().slice(0, 8)}`;
      const encoderBuffer = new Uint8Array(300_000).map((_, i) => i % 251);
      const data = encoderBuffer.subarray(1000, 201_000); // a view, as an encoder's output may be
      const [a, b] = await Promise.all([
        storage.writeState(job, 1, "v1-0-a0.keyed", data),
        storage.writeState(job, 1, "v1-1-a0.keyed", new Uint8Array([1, 2, 3])),
      ]);
      assert.equal(uploads.pendingWrites, 0);
      assert.equal(a.bytes, 200_000);
      assert.deepEqual(await storage.readState(job, a), data);
      assert.deepEqual(await inner.readState(job, b), new Uint8Array([1, 2, 3]));
      assert.equal(encoderBuffer[1000], 1000 % 251, "the caller's buffer is left intact");
      await assert.rejects(
        () => storage.writeState(job, 1, "bad/name", new Uint8Array([1])),
        (e: unknown) => e instanceof RangeError && /bad\/name/.test(e.message),
      );
      await storage.discard(job, 1);
    } finally {
      uploads.close();
    }
  });
});

Deno.test("a checkpoint upload thread that crashes fails its writes and is replaced by the next write", async () => {
  await withBucket(async (_inner, bucket) => {
    const uploads = new CheckpointUploadThread({
      nats: { servers: TEST_NATS_URL },
      bucket,
      slotId: "test-s1",
      moduleUrl: new URL("./testdata/crashing_upload_thread.ts", import.meta.url),
    });
    try {
      const job = `job-${crypto.randomUUID().slice(0, 8)}`;
      await assert.rejects(
        () => uploads.writeState(job, 1, "crash-1", new Uint8Array([1])),
        /upload thread of slot test-s1 failed: .*injected crash writing crash-1/,
      );
      assert.equal(uploads.pendingWrites, 0);
      const handle = await uploads.writeState(job, 2, "ok-2", new Uint8Array([7]));
      assert.equal(handle.bytes, 1);
    } finally {
      uploads.close();
    }
    await assert.rejects(
      () => uploads.writeState("j", 3, "late", new Uint8Array([1])),
      /upload thread of slot test-s1 is closed/,
    );
  });
});

Deno.test("a checkpoint upload thread that cannot reach NATS fails the write naming the bucket", async () => {
  const uploads = new CheckpointUploadThread({
    nats: { servers: "nats://127.0.0.1:1" },
    bucket: "weir-test-unreachable",
    slotId: "test-s2",
  });
  try {
    await assert.rejects(
      () => uploads.writeState("j", 1, "x", new Uint8Array([1])),
      /slot test-s2 cannot open bucket "weir-test-unreachable": Cannot connect to NATS/,
    );
  } finally {
    uploads.close();
  }
});

Deno.test("a CheckpointStorageError crosses the thread boundary with its code, job, checkpoint and path", () => {
  const original = new CheckpointStorageError("Cannot write state x of checkpoint 4 of job j", {
    code: "IO",
    jobId: "j",
    checkpointId: 4,
    path: "j/chk-4/x",
    cause: new Error("timeout"),
  });
  const back = fromUploadError(structuredClone(toUploadError(original)));
  assert.ok(back instanceof CheckpointStorageError);
  assert.equal(back.message, original.message);
  assert.deepEqual([back.code, back.jobId, back.checkpointId, back.path], [
    "IO",
    "j",
    4,
    "j/chk-4/x",
  ]);
  const other = fromUploadError(toUploadError(new TypeError("bad")));
  assert.deepEqual([other.name, other.message], ["TypeError", "bad"]);
});
