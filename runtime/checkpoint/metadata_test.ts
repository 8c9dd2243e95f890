/**
 * {@linkcode parseCheckpointMetadata} and {@linkcode encodeCheckpointMetadata}
 * with inline handles (small state kept in the metadata, Flink's
 * `ByteStreamStateHandle`): the JSON round trip, the checks, and a round trip
 * through both storages (a temporary directory; the shared NATS server's
 * Object Store, a bucket of its own destroyed in `finally`) and through a
 * savepoint copy.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { connect, jetstreamApi } from "../actor/nats_deps.ts";
import { TEST_NATS_URL } from "../../tests/_nats_server.ts";
import { encodeCheckpointMetadata, parseCheckpointMetadata } from "./metadata.ts";
import { LocalDirectoryCheckpointStorage } from "./local_directory_storage.ts";
import { ObjectStoreCheckpointStorage } from "./object_store_storage.ts";
import { metadata } from "./storage_conformance.ts";
import type { CheckpointMetadata, StateHandle } from "./types.ts";
import { servingInline } from "./snapshot_contract.ts";
import {
  copyToSavepoint,
  localSavepointStorage,
  readSavepointMetadata,
  savepointId,
} from "./savepoint_storage.ts";

const SMALL = new Uint8Array([0, 1, 2, 254, 255, 10, 13, 34]);

/** Checkpoint `id` of job-1 whose subtask holds a stored keyed blob and an inline timers blob. */
function withInline(id: number, inline: Partial<StateHandle> = {}): CheckpointMetadata {
  const base = metadata(id);
  const vertex = base.vertices[0]!;
  const sub = vertex.subtasks[0]!;
  return {
    ...base,
    vertices: [{
      ...vertex,
      subtasks: [{
        ...sub,
        handles: [...sub.handles, {
          path: `chk-${id}/map-0-a0.timers-count`,
          bytes: SMALL.length,
          kind: "timers",
          shared: false,
          uid: "count",
          inline: SMALL,
          ...inline,
        }],
      }],
    }],
  };
}

function inlineOf(meta: CheckpointMetadata): Uint8Array | undefined {
  return meta.vertices[0]!.subtasks[0]!.handles.find((h) => h.kind === "timers")?.inline;
}

Deno.test("encodeCheckpointMetadata writes inline bytes as base64 and parseCheckpointMetadata reads them back", () => {
  const text = encodeCheckpointMetadata(withInline(3));
  assert.ok(text.includes(`"inline":"${btoa(String.fromCharCode(...SMALL))}"`), text);
  const parsed = parseCheckpointMetadata(JSON.parse(text));
  assert.deepEqual(inlineOf(parsed), SMALL);
  assert.ok(inlineOf(parsed) instanceof Uint8Array);
  assert.equal(parsed.vertices[0]!.subtasks[0]!.handles[0]!.inline, undefined, "stored blob");
  // As the coordinator builds it (bytes, not base64), the same.
  assert.deepEqual(parseCheckpointMetadata(withInline(3)), parsed);
});

Deno.test("encodeCheckpointMetadata encodes a view of a larger buffer as the view only", () => {
  const big = new Uint8Array(64).fill(5);
  big.set(SMALL, 20);
  const view = big.subarray(20, 20 + SMALL.length);
  const parsed = parseCheckpointMetadata(
    JSON.parse(encodeCheckpointMetadata(withInline(4, { inline: view }))),
  );
  assert.deepEqual(inlineOf(parsed), SMALL);
});

Deno.test("parseCheckpointMetadata refuses an inline handle that is shared, of another length, or not bytes, naming the field", () => {
  const at = "metadata.vertices[0].subtasks[0].handles[1]";
  assert.throws(
    () => parseCheckpointMetadata(withInline(5, { shared: true, path: "shared/x" })),
    {
      name: "TypeError",
      message: `'${at}.shared' must be false for an inline handle: current value is true`,
    },
  );
  assert.throws(
    () => parseCheckpointMetadata(withInline(5, { bytes: 9 })),
    { name: "TypeError", message: `'${at}.bytes' must be the inline length 8: current value is 9` },
  );
  const json = JSON.parse(encodeCheckpointMetadata(withInline(5)));
  json.vertices[0].subtasks[0].handles[1].inline = "not base64!";
  assert.throws(() => parseCheckpointMetadata(json), {
    name: "TypeError",
    message:
      `'${at}.inline' must be bytes (a Uint8Array, or base64 in JSON): current value is "not base64!"`,
  });
  json.vertices[0].subtasks[0].handles[1].inline = [1, 2];
  assert.throws(() => parseCheckpointMetadata(json), {
    message:
      `'${at}.inline' must be bytes (a Uint8Array, or base64 in JSON): current value is [1,2]`,
  });
});

Deno.test("servingInline answers inline handles from their bytes and reads the others", async () => {
  const reads: string[] = [];
  const read = servingInline((h: StateHandle) => {
    reads.push(h.path);
    return Promise.resolve(new Uint8Array([42]));
  });
  const [stored, inline] = withInline(6).vertices[0]!.subtasks[0]!.handles;
  assert.deepEqual(await read(inline!), SMALL);
  assert.deepEqual(await read(stored!), new Uint8Array([42]));
  assert.deepEqual(reads, ["chk-6/map#0"]);
});

Deno.test("LocalDirectoryCheckpointStorage keeps inline handles through writeMetadata and readMetadata", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-inline-meta-" });
  try {
    const storage = new LocalDirectoryCheckpointStorage({ directory: dir });
    await storage.writeState("job-1", 7, "map#0", new Uint8Array([1, 2, 3]));
    await storage.writeMetadata(withInline(7));
    assert.deepEqual(inlineOf(await storage.readMetadata("job-1", 7)), SMALL);
    assert.deepEqual(inlineOf((await storage.latestCompleted("job-1"))!), SMALL);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ObjectStoreCheckpointStorage keeps inline handles through writeMetadata and readMetadata", async () => {
  const nc = await connect({ servers: TEST_NATS_URL });
  const bucket = `weir-test-inline-${crypto.randomUUID().slice(0, 8)}`;
  try {
    const storage = await ObjectStoreCheckpointStorage.open({ connection: nc, bucket });
    await storage.writeState("job-1", 8, "map#0", new Uint8Array([1, 2, 3]));
    await storage.writeMetadata(withInline(8));
    assert.deepEqual(inlineOf(await storage.readMetadata("job-1", 8)), SMALL);
  } finally {
    await (await jetstreamApi.jetstreamManager(nc)).streams.delete(`OBJ_${bucket}`).catch(() => {});
    await nc.close();
  }
});

Deno.test("copyToSavepoint copies stored blobs only: inline handles travel in the savepoint's metadata", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-inline-sp-" });
  try {
    const jobStorage = new LocalDirectoryCheckpointStorage({ directory: join(dir, "chk") });
    await jobStorage.writeState("job-1", 9, "map#0", new Uint8Array([1, 2, 3]));
    await jobStorage.writeMetadata({ ...withInline(9), kind: "savepoint" });
    const to = localSavepointStorage(join(dir, "sp"));
    const path = await copyToSavepoint({ from: jobStorage, jobId: "job-1", checkpointId: 9, to });
    await jobStorage.discardJob("job-1");
    const id = savepointId("job-1", 9);
    const meta = await readSavepointMetadata(to, id);
    assert.deepEqual(inlineOf(meta), SMALL);
    const files: string[] = [];
    for await (const e of Deno.readDir(join(path, "chk-9"))) files.push(e.name);
    assert.deepEqual(files.sort(), ["_metadata", "map#0"]);
    const [stored, inline] = meta.vertices[0]!.subtasks[0]!.handles;
    const read = servingInline((h: StateHandle) => to.readState(id, h));
    assert.deepEqual(await read(stored!), new Uint8Array([1, 2, 3]));
    assert.deepEqual(await read(inline!), SMALL);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
