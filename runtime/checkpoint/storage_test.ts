import assert from "node:assert/strict";
import { join } from "node:path";
import {
  CheckpointStorageError,
  LocalDirectoryCheckpointStorage,
  parseCheckpointMetadata,
} from "./storage.ts";
import { checkpointStorageConformanceSuite, commit, metadata } from "./storage_conformance.ts";

checkpointStorageConformanceSuite("LocalDirectoryCheckpointStorage", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-storage-test-" });
  const root = join(dir, "checkpoints");
  const blob = (jobId: string, checkpointId: number, name: string) =>
    join(root, jobId, `chk-${checkpointId}`, name);
  return {
    storage: new LocalDirectoryCheckpointStorage({ directory: root }),
    pathOf: blob,
    sharedPathOf: (jobId, name) => join(root, jobId, "shared", name),
    locationOf: (jobId, checkpointId) => join(root, jobId, `chk-${checkpointId}`),
    async corrupt(jobId, checkpointId, name, content) {
      await Deno.mkdir(join(root, jobId, `chk-${checkpointId}`), { recursive: true });
      await Deno.writeFile(blob(jobId, checkpointId, name), content);
    },
    async truncate(jobId, checkpointId, name) {
      const path = blob(jobId, checkpointId, name);
      await Deno.truncate(path, (await Deno.stat(path)).size - 1);
    },
    entries: async (jobId) => (await files(join(root, jobId))).sort(),
    close: () => Deno.remove(dir, { recursive: true }),
  };
});

/** The files under `dir`, recursively, as `/`-separated paths relative to it (none if it is gone). */
async function files(dir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) out.push(...(await files(join(dir, e.name))).map((f) => `${e.name}/${f}`));
      else out.push(e.name);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return out;
}

async function withStorage(
  fn: (storage: LocalDirectoryCheckpointStorage, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "weir-storage-test-" });
  try {
    await fn(new LocalDirectoryCheckpointStorage({ directory: join(dir, "checkpoints") }), dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

Deno.test("LocalDirectoryCheckpointStorage writes each blob as a file of its own, leaving no temp file", async () => {
  await withStorage(async (storage, dir) => {
    const data = new Uint8Array([9, 8, 7, 6]);
    await storage.writeState("job-1", 3, "map#0-a1", data);
    const chk = join(dir, "checkpoints", "job-1", "chk-3");
    assert.deepEqual(await Deno.readFile(join(chk, "map#0-a1")), data);
    assert.deepEqual(await names(chk), ["map#0-a1"]);
    await storage.writeMetadata(metadata(3));
    assert.deepEqual(await names(chk), ["_metadata", "map#0-a1"]);
    assert.deepEqual(JSON.parse(await Deno.readTextFile(join(chk, "_metadata"))), metadata(3));
    assert.equal(storage.jobLocation("job-1"), join(dir, "checkpoints", "job-1"));
  });
});

Deno.test("LocalDirectoryCheckpointStorage reports a missing state file with the NotFound cause", async () => {
  await withStorage(async (storage) => {
    await assert.rejects(
      () => storage.readState("job-1", { path: "chk-2/nope", bytes: 1 }),
      (e: unknown) =>
        e instanceof CheckpointStorageError && e.cause instanceof Deno.errors.NotFound,
    );
  });
});

Deno.test("LocalDirectoryCheckpointStorage ignores temp files and unrelated entries left in the job directory", async (t) => {
  await withStorage(async (storage, dir) => {
    const jobDir = join(dir, "checkpoints", "job-1");
    await commit(storage, 1);
    await commit(storage, 2);

    await t.step("a chk dir holding only a temp file of _metadata", async () => {
      await Deno.mkdir(join(jobDir, "chk-4"));
      await Deno.writeTextFile(
        join(jobDir, "chk-4", "._metadata.0a1b2c.tmp"),
        '{"version":1,"jobId":',
      );
      assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 2);
    });

    await t.step("unrelated entries in the job directory", async () => {
      await Deno.writeTextFile(join(jobDir, "chk-9"), "a file, not a dir");
      await Deno.mkdir(join(jobDir, "savepoint-x"));
      assert.deepEqual(await storage.listAll("job-1"), [1, 2, 4]);
      assert.deepEqual(await storage.listCompleted("job-1"), [1, 2]);
      assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 2);
    });
  });
});

Deno.test("LocalDirectoryCheckpointStorage discard and discardJob remove the directories", async () => {
  await withStorage(async (storage, dir) => {
    await commit(storage, 1);
    await commit(storage, 2);
    await storage.discard("job-1", 2);
    assert.deepEqual(await names(join(dir, "checkpoints", "job-1")), ["chk-1"]);
    await storage.writeMetadata(metadata(1, { jobId: "job-2" }));
    await storage.discardJob("job-1");
    assert.deepEqual(await names(join(dir, "checkpoints")), ["job-2"]);
  });
});

Deno.test("LocalDirectoryCheckpointStorage wraps I/O failures with the path and checkpoint id", async () => {
  await withStorage(async (_storage, dir) => {
    // The "root directory" is a file, so nothing can be created under it.
    const file = join(dir, "not-a-dir");
    await Deno.writeTextFile(file, "");
    const storage = new LocalDirectoryCheckpointStorage({ directory: file });
    await assert.rejects(
      () => storage.writeState("job-1", 4, "s", new Uint8Array([1])),
      (e: unknown) => {
        assert.ok(e instanceof CheckpointStorageError);
        assert.equal(e.code, "IO");
        assert.equal(e.checkpointId, 4);
        assert.equal(e.path, join(file, "job-1", "chk-4", "s"));
        assert.match(e.message, /Cannot write state "s" of checkpoint 4 of job "job-1"/);
        assert.ok(e.cause instanceof Error);
        return true;
      },
    );
  });
});

Deno.test("parseCheckpointMetadata names the first malformed field", () => {
  assert.deepEqual(parseCheckpointMetadata(JSON.parse(JSON.stringify(metadata(3)))), metadata(3));
  assert.throws(
    () => parseCheckpointMetadata(null),
    /'metadata' must be an object: current value is null/,
  );
  assert.throws(
    () => parseCheckpointMetadata({ ...metadata(1), version: 3 }),
    /'metadata.version' must be 1 or 2: current value is 3/,
  );
  const withHandle = (handle: Record<string, unknown>, kind = "checkpoint") => {
    const m = metadata(1);
    const v = m.vertices[0]!;
    return {
      ...m,
      kind,
      vertices: [{ ...v, subtasks: [{ subtask: 0, handles: [handle], stateUids: [] }] }],
    };
  };
  const good = { path: "chk-1/a", bytes: 1, kind: "timers", shared: false, uid: "u" };
  assert.throws(
    () => parseCheckpointMetadata(withHandle({ ...good, path: 5 })),
    /'metadata.vertices\[0\].subtasks\[0\].handles\[0\].path' must be a string: current value is 5/,
  );
  assert.throws(
    () => parseCheckpointMetadata(withHandle({ ...good, kind: "blob" })),
    /'metadata.vertices\[0\].subtasks\[0\].handles\[0\].kind' must be one of keyed, .*: current value is "blob"/,
  );
  assert.throws(
    () => parseCheckpointMetadata(withHandle({ ...good, path: "shared/a" })),
    /handles\[0\].path' must be a path under 'chk-<n>\/'.*current value is "shared\/a"/,
  );
  assert.throws(
    () => parseCheckpointMetadata(withHandle({ ...good, path: "chk-1/../../etc" })),
    /handles\[0\].path' must be a path under 'chk-<n>\/' without '..'/,
  );
  assert.throws(
    () => parseCheckpointMetadata(withHandle({ ...good, keyGroupRange: [9, 3] })),
    /handles\[0\].keyGroupRange' must be \[first, last\] with 0 <= first <= last: current value is \[9,3\]/,
  );
  const shared = { ...good, path: "shared/a", shared: true };
  assert.equal(
    parseCheckpointMetadata(withHandle(shared)).vertices[0]!.subtasks[0]!.handles[0]!.shared,
    true,
  );
  assert.throws(
    () => parseCheckpointMetadata(withHandle(shared, "savepoint")),
    /handles\[0\].shared' must be false in a savepoint \(self-contained\): current value is true/,
  );
});

/** A version-1 `_metadata`, as Weir wrote it before state handles had kinds. */
const V1_METADATA = {
  version: 1,
  jobId: "job-old",
  jobName: "demo",
  checkpointId: 7,
  kind: "checkpoint",
  triggeredAt: 1000,
  completedAt: 1200,
  attempt: 2,
  vertices: [
    {
      vertexId: "v1",
      operatorUids: ["count", "print"],
      parallelism: 2,
      maxParallelism: 128,
      subtasks: [
        {
          subtask: 0,
          keyedHandle: { path: "chk-7/v1-0-a2.keyed", bytes: 40 },
          operatorHandle: { path: "chk-7/v1-0-a2.op", bytes: 12 },
          keyGroupRange: [0, 63],
          stateUids: ["count"],
        },
        {
          subtask: 1,
          keyedHandle: null,
          operatorHandle: null,
          keyGroupRange: null,
          stateUids: [],
        },
      ],
    },
  ],
  totalBytes: 52,
};

Deno.test("parseCheckpointMetadata reads version 1 as version 2 with legacy handles", () => {
  const meta = parseCheckpointMetadata(structuredClone(V1_METADATA));
  assert.equal(meta.version, 2);
  assert.deepEqual(meta.vertices[0]!.subtasks, [
    {
      subtask: 0,
      handles: [
        {
          path: "chk-7/v1-0-a2.keyed",
          bytes: 40,
          kind: "keyed",
          shared: false,
          uid: "",
          keyGroupRange: [0, 63],
          legacyV1: true,
        },
        {
          path: "chk-7/v1-0-a2.op",
          bytes: 12,
          kind: "operator",
          shared: false,
          uid: "",
          legacyV1: true,
        },
      ],
      stateUids: ["count"],
    },
    { subtask: 1, handles: [], stateUids: [] },
  ]);
  // Written back, it stays version 2 and reads the same.
  assert.deepEqual(parseCheckpointMetadata(JSON.parse(JSON.stringify(meta))), meta);
  assert.throws(
    () =>
      parseCheckpointMetadata({
        ...V1_METADATA,
        vertices: [{
          ...V1_METADATA.vertices[0]!,
          subtasks: [{
            ...V1_METADATA.vertices[0]!.subtasks[0]!,
            keyedHandle: { path: 5, bytes: 1 },
          }],
        }],
      }),
    /'metadata.vertices\[0\].subtasks\[0\].keyedHandle.path' must be a string: current value is 5/,
  );
});
