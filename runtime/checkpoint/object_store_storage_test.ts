/**
 * {@linkcode ObjectStoreCheckpointStorage} against the shared NATS server
 * (`WEIR_TEST_NATS_URL`, see `tests/_nats_server.ts`): the conformance suite, then what only an Object
 * Store has (racing writers, digests, tombstones, a closed connection). Each
 * test uses a bucket of its own, destroyed in `finally`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { connect, jetstreamApi, type NatsConnection, objApi } from "../actor/nats_deps.ts";
import {
  DEFAULT_CHECKPOINT_BUCKET,
  ObjectStoreCheckpointStorage,
  type ObjectStoreCheckpointStorageOptions,
} from "./object_store_storage.ts";
import { CheckpointStorageError } from "./storage.ts";
import {
  checkpointStorageConformanceSuite,
  type CheckpointStorageFixture,
  commit,
  metadata,
} from "./storage_conformance.ts";
import { TEST_NATS_URL } from "../../tests/_nats_server.ts";

/** The Object Store key of an object name (its UTF-8 bytes as a binary string). */
function keyOf(objectName: string): string {
  return String.fromCharCode(...new TextEncoder().encode(objectName));
}

/** The object name of an Object Store key. */
function nameOf(key: string): string {
  return new TextDecoder().decode(Uint8Array.from(key, (c) => c.charCodeAt(0)));
}

interface Fixture extends CheckpointStorageFixture {
  readonly storage: ObjectStoreCheckpointStorage;
  readonly nc: NatsConnection;
  readonly bucket: string;
  /** The bucket, opened with the plain Object Store client. */
  readonly raw: objApi.ObjectStore;
  readonly jsm: jetstreamApi.JetStreamManager;
}

async function openFixture(
  options: Partial<ObjectStoreCheckpointStorageOptions> = {},
): Promise<Fixture> {
  const nc = await connect({ servers: TEST_NATS_URL });
  const bucket = `weir-test-chk-${crypto.randomUUID().slice(0, 8)}`;
  try {
    const storage = await ObjectStoreCheckpointStorage.open({ connection: nc, bucket, ...options });
    const raw = await new objApi.Objm(nc).open(bucket);
    const jsm = await jetstreamApi.jetstreamManager(nc);
    const key = (jobId: string, checkpointId: number, name: string) =>
      keyOf(`${jobId}/chk-${checkpointId}/${name}`);
    return {
      storage,
      nc,
      bucket,
      raw,
      jsm,
      sharedPathOf: (jobId, name) => `nats-object-store://${bucket}/${jobId}/shared/${name}`,
      pathOf: (jobId, checkpointId, name) =>
        `nats-object-store://${bucket}/${jobId}/chk-${checkpointId}/${name}`,
      locationOf: (jobId, checkpointId) =>
        `nats-object-store://${bucket}/${jobId}/chk-${checkpointId}`,
      async corrupt(jobId, checkpointId, name, content) {
        await raw.putBlob({ name: key(jobId, checkpointId, name) }, content);
      },
      async truncate(jobId, checkpointId, name) {
        const data = await raw.getBlob(key(jobId, checkpointId, name));
        assert.ok(data, `${name} exists`);
        await raw.putBlob({ name: key(jobId, checkpointId, name) }, data.subarray(0, -1));
      },
      async entries(jobId) {
        return (await raw.list())
          .map((info) => nameOf(info.name))
          .filter((name) => name.startsWith(`${jobId}/`))
          .map((name) => name.slice(jobId.length + 1))
          .sort();
      },
      async close() {
        // A test may have closed the fixture's connection: delete over a new one then.
        const conn = nc.isClosed() ? await connect({ servers: TEST_NATS_URL }) : nc;
        try {
          await (await jetstreamApi.jetstreamManager(conn)).streams.delete(`OBJ_${bucket}`);
        } finally {
          await conn.close();
          await nc.close();
        }
      },
    };
  } catch (error) {
    await jetstreamApi.jetstreamManager(nc)
      .then((jsm) => jsm.streams.delete(`OBJ_${bucket}`))
      .catch(() => {});
    await nc.close();
    throw error;
  }
}

async function withFixture(
  fn: (f: Fixture) => Promise<void>,
  options: Partial<ObjectStoreCheckpointStorageOptions> = {},
): Promise<void> {
  const f = await openFixture(options);
  try {
    await fn(f);
  } finally {
    await f.close();
  }
}

/** Messages left in the bucket's stream: chunks, metadata and tombstones. */
async function messagesIn(f: Fixture): Promise<number> {
  return (await f.jsm.streams.info(`OBJ_${f.bucket}`)).state.messages;
}

checkpointStorageConformanceSuite("ObjectStoreCheckpointStorage", () => openFixture());

Deno.test("ObjectStoreCheckpointStorage.open creates the bucket once, however many processes race", async () => {
  const connections = await Promise.all([1, 2, 3].map(() => connect({ servers: TEST_NATS_URL })));
  const bucket = `weir-test-chk-${crypto.randomUUID().slice(0, 8)}`;
  try {
    const storages = await Promise.all(
      connections.map((connection) => ObjectStoreCheckpointStorage.open({ connection, bucket })),
    );
    assert.equal(objApi.getSha256Backend(), "native");
    await commit(storages[0]!, 1);
    for (const s of storages) assert.deepEqual(await s.listCompleted("job-1"), [1]);
    const again = await ObjectStoreCheckpointStorage.open({ connection: connections[1]!, bucket });
    assert.deepEqual(await again.listCompleted("job-1"), [1], "opening again keeps the bucket");
    assert.equal(again.jobLocation("job-1"), `nats-object-store://${bucket}/job-1/`);
  } finally {
    const jsm = await jetstreamApi.jetstreamManager(connections[0]!);
    await jsm.streams.delete(`OBJ_${bucket}`);
    for (const nc of connections) await nc.close();
  }
});

Deno.test("ObjectStoreCheckpointStorage.open rejects a bad bucket name or replica count", async () => {
  const nc = await connect({ servers: TEST_NATS_URL });
  try {
    assert.equal(DEFAULT_CHECKPOINT_BUCKET, "weir-checkpoints");
    for (const bucket of ["", "a.b", "a b", "a>"]) {
      await assert.rejects(
        () => ObjectStoreCheckpointStorage.open({ connection: nc, bucket }),
        RangeError,
        JSON.stringify(bucket),
      );
    }
    await assert.rejects(
      () => ObjectStoreCheckpointStorage.open({ connection: nc, bucket: "x", replicas: 0 }),
      /'replicas' must be a positive integer: current value is 0/,
    );
  } finally {
    await nc.close();
  }
});

Deno.test("ObjectStoreCheckpointStorage lets exactly one of several racing writers complete a checkpoint", async () => {
  await withFixture(async (f) => {
    const writers = await Promise.all([1, 2, 3].map(() => connect({ servers: TEST_NATS_URL })));
    try {
      const storages = [
        f.storage,
        ...await Promise.all(
          writers.map((connection) =>
            ObjectStoreCheckpointStorage.open({ connection, bucket: f.bucket })
          ),
        ),
      ];
      for (let id = 1; id <= 5; id++) {
        const outcomes = await Promise.allSettled(
          storages.map((s, i) => s.writeMetadata(metadata(id, { jobName: `writer-${i}` }))),
        );
        const won = outcomes.flatMap((o, i) => o.status === "fulfilled" ? [i] : []);
        assert.equal(won.length, 1, `checkpoint ${id}: one winner, got ${won.length}`);
        for (const o of outcomes) {
          if (o.status === "fulfilled") continue;
          assert.ok(o.reason instanceof CheckpointStorageError, String(o.reason));
          assert.equal(o.reason.code, "ALREADY_EXISTS", o.reason.message);
        }
        const meta = await f.storage.readMetadata("job-1", id);
        assert.equal(meta.jobName, `writer-${won[0]}`, "the winner's metadata is the one kept");
      }
    } finally {
      for (const nc of writers) await nc.close();
    }
  });
});

Deno.test("ObjectStoreCheckpointStorage detects a flipped bit by the object's SHA-256 digest", async () => {
  await withFixture(async (f) => {
    const flip = async (name: string) => {
      const info = await f.raw.info(keyOf(`job-1/chk-1/${name}`));
      assert.ok(info);
      const chunks = `$O.${f.bucket}.C.${info.nuid}`;
      const data = await f.raw.getBlob(keyOf(`job-1/chk-1/${name}`));
      assert.ok(data);
      const flipped = new Uint8Array(data);
      flipped[0] = flipped[0]! ^ 1;
      await f.jsm.streams.purge(`OBJ_${f.bucket}`, { filter: chunks });
      await jetstreamApi.jetstream(f.nc).publish(chunks, flipped);
    };
    await commit(f.storage, 1);
    await flip("map#0");
    await assert.rejects(
      () => f.storage.readState("job-1", { path: "chk-1/map#0", bytes: 3 }),
      (e: unknown) =>
        e instanceof CheckpointStorageError && e.code === "CORRUPT" && /digest/.test(e.message) &&
        e.path === f.pathOf("job-1", 1, "map#0"),
    );
    await flip("_metadata");
    await assert.rejects(
      () => f.storage.latestCompleted("job-1"),
      (e: unknown) =>
        e instanceof CheckpointStorageError && e.code === "CORRUPT" && /digest/.test(e.message),
    );
  });
});

Deno.test("ObjectStoreCheckpointStorage fails a read whose chunks never arrive instead of waiting forever", async () => {
  await withFixture(async (f) => {
    const h = await f.storage.writeState("job-1", 1, "s", new Uint8Array([1, 2, 3]));
    const info = await f.raw.info(keyOf("job-1/chk-1/s"));
    assert.ok(info);
    await f.jsm.streams.purge(`OBJ_${f.bucket}`, { filter: `$O.${f.bucket}.C.${info.nuid}` });
    await assert.rejects(
      () => f.storage.readState("job-1", h),
      (e: unknown) =>
        e instanceof CheckpointStorageError && e.code === "IO" &&
        /no chunk of object "job-1\/chk-1\/s" arrived for 200 ms/.test(e.message),
    );
  }, { readStallTimeoutMs: 200 });
});

Deno.test("ObjectStoreCheckpointStorage reports an object deleted while its chunks are awaited as missing, not as a stall", async () => {
  await withFixture(async (f) => {
    // A checkpoint discarded (subsumed) while a listing reads its metadata: the read has
    // the object's info, its chunks are gone, then the object is deleted. Before, the read
    // waited the whole stall timeout (30 s by default) and failed with IO.
    await commit(f.storage, 1);
    const info = await f.raw.info(keyOf("job-1/chk-1/_metadata"));
    assert.ok(info);
    await f.jsm.streams.purge(`OBJ_${f.bucket}`, { filter: `$O.${f.bucket}.C.${info.nuid}` });
    const read = f.storage.readMetadata("job-1", 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await f.raw.delete(keyOf("job-1/chk-1/_metadata"));
    await assert.rejects(
      () => read,
      (e: unknown) => e instanceof CheckpointStorageError && e.code === "NOT_FOUND",
    );
    assert.deepEqual(await f.storage.listCompleted("job-1"), []);
  }, { readStallTimeoutMs: 20_000 });
});

Deno.test("ObjectStoreCheckpointStorage discards leave neither chunks nor tombstones, and finish a torn delete", async () => {
  await withFixture(async (f) => {
    const big = new Uint8Array(3 * 1024 * 1024 + 1);
    await commit(f.storage, 1);
    await f.storage.writeState("job-1", 2, "big#0", big);
    await commit(f.storage, 2);
    await f.storage.discard("job-1", 1);
    // A crash after the tombstone of a delete: the object is gone for readers but still listed.
    await f.raw.delete(keyOf("job-1/chk-2/_metadata"));
    assert.deepEqual(await f.storage.listAll("job-1"), [2]);
    assert.deepEqual(await f.storage.listCompleted("job-1"), []);
    await f.storage.discardJob("job-1");
    assert.deepEqual(await f.storage.listAll("job-1"), []);
    assert.equal(await messagesIn(f), 0);
  });
});

Deno.test("ObjectStoreCheckpointStorage shared deletes leave neither chunks nor tombstones, and finish a torn delete", async () => {
  await withFixture(async (f) => {
    const big = new Uint8Array(2 * 1024 * 1024 + 1);
    for (const n of ["a", "b", "c"]) await f.storage.writeShared("job-1", n, big);
    await f.storage.deleteShared("job-1", ["shared/a"]);
    // A crash after the tombstone of a delete: gone for readers, its subject still there.
    await f.raw.delete(keyOf("job-1/shared/b"));
    assert.deepEqual(await f.storage.listShared("job-1"), ["shared/c"], "no tombstone listed");
    await assert.rejects(
      () => f.storage.readState("job-1", { path: "shared/b", bytes: big.byteLength }),
      (e: unknown) => e instanceof CheckpointStorageError && e.code === "NOT_FOUND",
    );
    await f.storage.deleteShared("job-1", ["shared/b"]); // retention repeats the deletion
    await f.storage.writeShared("job-1", "d", new Uint8Array([1]));
    await f.raw.delete(keyOf("job-1/shared/d"));
    await f.storage.discardJob("job-1");
    assert.deepEqual(await f.storage.listShared("job-1"), []);
    assert.equal(await messagesIn(f), 0);
  });
});

Deno.test("ObjectStoreCheckpointStorage lists only <jobId>/chk-<id>/<name> objects of the job", async () => {
  await withFixture(async (f) => {
    await commit(f.storage, 1);
    for (const name of ["job-1/notes.txt", "job-1/chk-x/y", "job-1/chk-2/a/b", "job-1", "other"]) {
      await f.raw.putBlob({ name }, new Uint8Array([1]));
    }
    assert.deepEqual(await f.storage.listAll("job-1"), [1]);
    assert.deepEqual(await f.storage.listCompleted("job-1"), [1]);
    await f.storage.discardJob("job-1");
    assert.deepEqual(
      (await f.raw.list()).map((o) => o.name).sort(),
      ["job-1", "job-1/chk-2/a/b", "job-1/chk-x/y", "job-1/notes.txt", "other"],
    );
  });
});

Deno.test("ObjectStoreCheckpointStorage wraps failures of a closed connection as IO, naming the object", async () => {
  await withFixture(async (f) => {
    const h = await f.storage.writeState("job-1", 4, "s", new Uint8Array([1]));
    await f.nc.close();
    const io = (checkpointId: number | undefined, path: string, what: RegExp) => (e: unknown) => {
      assert.ok(e instanceof CheckpointStorageError, String(e));
      assert.equal(e.code, "IO");
      assert.equal(e.jobId, "job-1");
      assert.equal(e.checkpointId, checkpointId);
      assert.equal(e.path, path);
      assert.match(e.message, what);
      assert.ok(e.cause instanceof Error);
      return true;
    };
    await assert.rejects(
      () => f.storage.writeState("job-1", 4, "t", new Uint8Array([1])),
      io(4, f.pathOf("job-1", 4, "t"), /Cannot write state "t" of checkpoint 4 of job "job-1"/),
    );
    await assert.rejects(
      () => f.storage.readState("job-1", h),
      io(4, f.pathOf("job-1", 4, "s"), /Cannot read state "chk-4\/s" of checkpoint 4/),
    );
    await assert.rejects(
      () => f.storage.writeMetadata(metadata(4)),
      io(4, f.pathOf("job-1", 4, "_metadata"), /Cannot write the metadata of checkpoint 4/),
    );
    await assert.rejects(
      () => f.storage.readMetadata("job-1", 4),
      io(4, f.pathOf("job-1", 4, "_metadata"), /Cannot read the metadata of checkpoint 4/),
    );
    const job = `nats-object-store://${f.bucket}/job-1/`;
    await assert.rejects(
      () => f.storage.listAll("job-1"),
      io(undefined, job, /Cannot list the checkpoints of job "job-1"/),
    );
    await assert.rejects(
      () => f.storage.discardJob("job-1"),
      io(undefined, job, /Cannot list the checkpoints of job "job-1"/),
    );
  });
});
