import assert from "node:assert/strict";
import { join } from "node:path";
import type { StateHandle } from "../checkpoint/types.ts";
import { LocalStateStore, type TaskLocalStateStore } from "./local_state_store.ts";

function handle(path: string, bytes: number, shared = false): StateHandle {
  return { path, bytes, kind: shared ? "keyed-incremental" : "keyed", shared, uid: "state" };
}

function bytesOf(n: number, seed: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
}

/** Runs `fn` with one subtask's store under a fresh directory, removed afterwards. */
async function withStore(fn: (sub: TaskLocalStateStore, root: string) => Promise<void>) {
  const root = await Deno.makeTempDir({ prefix: "weir-local-state-test-" });
  try {
    const store = new LocalStateStore({ directory: root, workerId: "w-1" });
    await fn(
      store.forSubtask({ jobId: "j1", vertexId: "v2", subtask: 1, keyGroupRange: [64, 127] }),
      root,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

/** A remote reader that records what it was asked for. */
function remoteReader(blobs: Map<string, Uint8Array>) {
  const asked: string[] = [];
  const read = (h: StateHandle) => {
    asked.push(h.path);
    const b = blobs.get(h.path);
    return b ? Promise.resolve(b) : Promise.reject(new Error(`no remote blob ${h.path}`));
  };
  return { read, asked };
}

Deno.test("TaskLocalStateStore restores a sealed copy locally, without reading checkpoint storage", async () => {
  await withStore(async (sub) => {
    const h = handle("chk-3/v2-1-a0.keyed-state", 3_000_000);
    const data = bytesOf(h.bytes, 1);
    sub.storeBlob(3, h, data);
    await sub.seal(3, [h]);
    const remote = remoteReader(new Map());
    const read = sub.restoreReader(3, remote.read);
    assert.deepEqual(await read(h), data);
    assert.deepEqual(read.stats, { local: 1, localBytes: h.bytes, remote: 0 });
    assert.deepEqual(remote.asked, []);
  });
});

Deno.test("TaskLocalStateStore falls back to checkpoint storage for a corrupt, truncated, missing or unsealed copy", async (t) => {
  const a = handle("chk-5/v2-1-a0.keyed-a", 1000);
  const b = handle("chk-5/v2-1-a0.keyed-b", 1000);
  const c = handle("chk-5/v2-1-a0.timers", 10);
  const remoteBlobs = new Map([[a.path, bytesOf(1000, 7)], [b.path, bytesOf(1000, 8)], [
    c.path,
    bytesOf(10, 9),
  ]]);
  await t.step(
    "corrupt (same size) and truncated files, and a handle not in the copy",
    async () => {
      await withStore(async (sub) => {
        sub.storeBlob(5, a, remoteBlobs.get(a.path)!);
        sub.storeBlob(5, b, remoteBlobs.get(b.path)!);
        await sub.seal(5, [a, b]);
        const dir = sub.checkpointDirectory(5);
        const fileA = join(dir, encodeURIComponent(a.path));
        const corrupt = await Deno.readFile(fileA);
        corrupt[500] = corrupt[500]! ^ 0xff;
        await Deno.writeFile(fileA, corrupt);
        await Deno.truncate(join(dir, encodeURIComponent(b.path)), 400);
        const remote = remoteReader(remoteBlobs);
        const read = sub.restoreReader(5, remote.read);
        assert.deepEqual(await read(a), remoteBlobs.get(a.path));
        assert.deepEqual(await read(b), remoteBlobs.get(b.path));
        assert.deepEqual(await read(c), remoteBlobs.get(c.path));
        assert.deepEqual(read.stats, { local: 0, localBytes: 0, remote: 3 });
        assert.deepEqual(remote.asked, [a.path, b.path, c.path]);
      });
    },
  );
  await t.step("written but never sealed (the worker died before the manifest)", async () => {
    await withStore(async (sub) => {
      sub.storeBlob(5, a, remoteBlobs.get(a.path)!);
      await sub.abort(4); // another checkpoint: waits for nothing of 5
      const remote = remoteReader(remoteBlobs);
      const read = sub.restoreReader(5, remote.read);
      assert.deepEqual(await read(a), remoteBlobs.get(a.path));
      assert.equal(read.stats.remote, 1);
    });
  });
  await t.step("a copy of another checkpoint is not used", async () => {
    await withStore(async (sub) => {
      sub.storeBlob(4, a, remoteBlobs.get(a.path)!);
      await sub.seal(4, [a]);
      const remote = remoteReader(remoteBlobs);
      const read = sub.restoreReader(5, remote.read);
      await read(a);
      assert.deepEqual(read.stats, { local: 0, localBytes: 0, remote: 1 });
    });
  });
});

Deno.test("LocalStateStore keys copies by worker, job, vertex, subtask and key-group range", async () => {
  const root = await Deno.makeTempDir({ prefix: "weir-local-state-test-" });
  try {
    const h = handle("chk-1/v2-1-a0.keyed-state", 100);
    const key = { jobId: "j1", vertexId: "v2", subtask: 1, keyGroupRange: [64, 127] as const };
    const mine = new LocalStateStore({ directory: root, workerId: "w-1" }).forSubtask(key);
    mine.storeBlob(1, h, bytesOf(100, 1));
    await mine.seal(1, [h]);
    const others = [
      new LocalStateStore({ directory: root, workerId: "w-2" }).forSubtask(key),
      new LocalStateStore({ directory: root, workerId: "w-1" }).forSubtask({
        ...key,
        keyGroupRange: [43, 85],
      }),
      new LocalStateStore({ directory: root, workerId: "w-1" }).forSubtask({ ...key, subtask: 0 }),
    ];
    for (const other of others) {
      const read = other.restoreReader(1, () => Promise.resolve(bytesOf(100, 1)));
      await read(h);
      assert.deepEqual(read.stats.local, 0, other.directory);
    }
    const again = new LocalStateStore({ directory: root, workerId: "w-1" }).forSubtask(key);
    const read = again.restoreReader(1, () => Promise.reject(new Error("remote")));
    await read(h);
    assert.equal(read.stats.local, 1);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("TaskLocalStateStore keeps only the latest confirmed copy and drops aborted ones", async () => {
  await withStore(async (sub) => {
    for (const id of [1, 2, 3]) {
      const h = handle(`chk-${id}/v2-1-a0.keyed-state`, 10);
      sub.storeBlob(id, h, bytesOf(10, id));
      await sub.seal(id, [h]);
    }
    await sub.confirm(2);
    const dirs = async () => {
      const names: string[] = [];
      for await (const e of Deno.readDir(sub.directory)) names.push(e.name);
      return names.sort();
    };
    assert.deepEqual(await dirs(), ["chk-2", "chk-3"]);
    await sub.abort(3);
    assert.deepEqual(await dirs(), ["chk-2"]);
  });
});

Deno.test("TaskLocalStateStore links the shared blobs an incremental checkpoint still refers to", async () => {
  await withStore(async (sub) => {
    const base = handle("shared/v2-1-a0.changelog-state-x-1", 2000, true);
    sub.storeBlob(1, base, bytesOf(2000, 3));
    await sub.seal(1, [base]);
    const delta = handle("shared/v2-1-a0.changelog-state-x-2", 50, true);
    sub.storeBlob(2, delta, bytesOf(50, 4));
    await sub.seal(2, [base, delta]);
    await sub.confirm(2); // removes chk-1: the link in chk-2 keeps the base's bytes
    const read = sub.restoreReader(2, () => Promise.reject(new Error("remote")));
    assert.deepEqual(await read(base), bytesOf(2000, 3));
    assert.deepEqual(await read(delta), bytesOf(50, 4));
    assert.deepEqual(read.stats, { local: 2, localBytes: 2050, remote: 0 });
  });
});

Deno.test("LocalStateStore rejects ids that could leave its directory, naming the value", () => {
  assert.throws(
    () => new LocalStateStore({ directory: "/tmp/x", workerId: "../w" }),
    /worker id must match .*"\.\.\/w"/,
  );
  const store = new LocalStateStore({ directory: "/tmp/x", workerId: "w" });
  assert.throws(
    () => store.forSubtask({ jobId: "a/b", vertexId: "v1", subtask: 0, keyGroupRange: [0, 1] }),
    /job id must match .*"a\/b"/,
  );
  assert.throws(
    () => store.forSubtask({ jobId: "j", vertexId: "v1", subtask: -1, keyGroupRange: [0, 1] }),
    /invalid subtask -1/,
  );
});

Deno.test("TaskLocalStateStore: a completion that arrives while the checkpoint's copy is sealing keeps the shared blobs it links", async () => {
  await withStore(async (sub) => {
    const base = handle("shared/v2-1-a0.materialization-state-x-1", 2000, true);
    sub.storeBlob(1, base, bytesOf(2000, 3));
    await sub.seal(1, [base]);
    const delta = handle("shared/v2-1-a0.changelog-state-x-2", 50, true);
    sub.storeBlob(2, delta, bytesOf(50, 4));
    // The subtask seals after its ack; the coordinator's completion may come first.
    const sealing = sub.seal(2, [base, delta]);
    const confirming = sub.confirm(2);
    await Promise.all([sealing, confirming]);
    const read = sub.restoreReader(2, () => Promise.reject(new Error("remote")));
    assert.deepEqual(await read(base), bytesOf(2000, 3));
    assert.deepEqual(await read(delta), bytesOf(50, 4));
    assert.deepEqual(read.stats, { local: 2, localBytes: 2050, remote: 0 });
  });
});
