import assert from "node:assert/strict";
import { join } from "node:path";
import {
  CheckpointStorageError,
  LocalDirectoryCheckpointStorage,
  parseCheckpointMetadata,
} from "./storage.ts";
import type { CheckpointMetadata } from "./types.ts";

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

function metadata(
  checkpointId: number,
  extra: Partial<CheckpointMetadata> = {},
): CheckpointMetadata {
  return {
    version: 1,
    jobId: "job-1",
    jobName: "demo",
    checkpointId,
    kind: "checkpoint",
    triggeredAt: 1000,
    completedAt: 1200,
    attempt: 0,
    vertices: [
      {
        vertexId: "map",
        operatorUids: ["count"],
        parallelism: 1,
        maxParallelism: 128,
        subtasks: [
          {
            subtask: 0,
            keyedHandle: { path: `chk-${checkpointId}/map#0`, bytes: 3 },
            operatorHandle: null,
            keyGroupRange: [0, 127],
            stateUids: [],
          },
        ],
      },
    ],
    totalBytes: 3,
    ...extra,
  };
}

async function commit(
  storage: LocalDirectoryCheckpointStorage,
  checkpointId: number,
): Promise<void> {
  await storage.writeState("job-1", checkpointId, "map#0", new Uint8Array([1, 2, 3]));
  await storage.writeMetadata(metadata(checkpointId));
}

async function names(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
}

Deno.test("LocalDirectoryCheckpointStorage writes state under <jobId>/chk-<id>/<name> and reads it back", async () => {
  await withStorage(async (storage, dir) => {
    const data = new Uint8Array([9, 8, 7, 6]);
    const handle = await storage.writeState("job-1", 3, "map#0-a1", data);
    assert.deepEqual(handle, { path: "chk-3/map#0-a1", bytes: 4 });
    assert.deepEqual(
      await Deno.readFile(join(dir, "checkpoints", "job-1", "chk-3", "map#0-a1")),
      data,
    );
    assert.deepEqual(await storage.readState("job-1", handle), data);
    // No temp file is left behind.
    assert.deepEqual(await names(join(dir, "checkpoints", "job-1", "chk-3")), ["map#0-a1"]);
  });
});

Deno.test("LocalDirectoryCheckpointStorage overwrites a state blob written twice", async () => {
  await withStorage(async (storage) => {
    await storage.writeState("job-1", 1, "s", new Uint8Array([1]));
    const h = await storage.writeState("job-1", 1, "s", new Uint8Array([2, 2]));
    assert.deepEqual(await storage.readState("job-1", h), new Uint8Array([2, 2]));
  });
});

Deno.test("LocalDirectoryCheckpointStorage reports a missing or truncated state blob with its path and checkpoint", async () => {
  await withStorage(async (storage, dir) => {
    await assert.rejects(
      () => storage.readState("job-1", { path: "chk-2/nope", bytes: 1 }),
      (e: unknown) => {
        assert.ok(e instanceof CheckpointStorageError);
        assert.equal(e.code, "NOT_FOUND");
        assert.equal(e.checkpointId, 2);
        assert.equal(e.jobId, "job-1");
        assert.equal(e.path, join(dir, "checkpoints", "job-1", "chk-2", "nope"));
        assert.match(e.message, /checkpoint 2 of job "job-1".*chk-2\/nope/);
        assert.ok(e.cause instanceof Deno.errors.NotFound);
        return true;
      },
    );
    const h = await storage.writeState("job-1", 2, "s", new Uint8Array([1, 2, 3]));
    await assert.rejects(
      () => storage.readState("job-1", { ...h, bytes: 4 }),
      (e: unknown) =>
        e instanceof CheckpointStorageError && e.code === "CORRUPT" && /4 bytes.*3/.test(e.message),
    );
  });
});

Deno.test("LocalDirectoryCheckpointStorage rejects names and handle paths that could escape the job directory", async () => {
  await withStorage(async (storage) => {
    const data = new Uint8Array([1]);
    for (const name of ["", "../x", "a/b", "a\\b", ".hidden", "_metadata", "x".repeat(300)]) {
      await assert.rejects(
        () => storage.writeState("job-1", 1, name, data),
        RangeError,
        JSON.stringify(name),
      );
    }
    await assert.rejects(
      () => storage.writeState("..", 1, "s", data),
      /'jobId'.*current value is "\.\."/,
    );
    await assert.rejects(
      () => storage.writeState("job-1", 0, "s", data),
      /'checkpointId'.*current value is 0/,
    );
    for (
      const path of [
        "../../etc/passwd",
        "chk-1/../../x",
        "/abs/chk-1/x",
        "chk-1/_metadata",
        "chk-01/x",
      ]
    ) {
      await assert.rejects(() => storage.readState("job-1", { path, bytes: 1 }), RangeError, path);
    }
  });
});

Deno.test("LocalDirectoryCheckpointStorage commits a checkpoint by writing _metadata last", async () => {
  await withStorage(async (storage, dir) => {
    await storage.writeState("job-1", 1, "map#0", new Uint8Array([1, 2, 3]));
    assert.equal(await storage.latestCompleted("job-1"), undefined);
    const location = await storage.writeMetadata(metadata(1));
    assert.equal(location, join(dir, "checkpoints", "job-1", "chk-1"));
    assert.deepEqual(await storage.readMetadata("job-1", 1), metadata(1));
    assert.deepEqual(await storage.latestCompleted("job-1"), metadata(1));
    assert.deepEqual(await names(location), ["_metadata", "map#0"]);
  });
});

Deno.test("LocalDirectoryCheckpointStorage writes metadata for a stateless checkpoint", async () => {
  await withStorage(async (storage) => {
    await storage.writeMetadata(metadata(1, { vertices: [], totalBytes: 0 }));
    assert.deepEqual(await storage.listCompleted("job-1"), [1]);
  });
});

Deno.test("LocalDirectoryCheckpointStorage refuses to overwrite the metadata of a completed checkpoint", async () => {
  await withStorage(async (storage) => {
    await commit(storage, 1);
    await assert.rejects(
      () => storage.writeMetadata(metadata(1, { jobName: "other" })),
      (e: unknown) =>
        e instanceof CheckpointStorageError && e.code === "ALREADY_EXISTS" && e.checkpointId === 1,
    );
    assert.equal((await storage.readMetadata("job-1", 1)).jobName, "demo");
  });
});

Deno.test("LocalDirectoryCheckpointStorage rejects malformed metadata before writing it", async () => {
  await withStorage(async (storage) => {
    const bad = { ...metadata(1), kind: "snapshot" } as unknown as CheckpointMetadata;
    await assert.rejects(() => storage.writeMetadata(bad), TypeError, "'metadata.kind'");
    assert.deepEqual(await storage.listAll("job-1"), []);
  });
});

Deno.test("LocalDirectoryCheckpointStorage latestCompleted skips incomplete checkpoints left by a crash", async (t) => {
  await withStorage(async (storage, dir) => {
    const jobDir = join(dir, "checkpoints", "job-1");
    await commit(storage, 1);
    await commit(storage, 2);

    await t.step("a chk dir with state but without _metadata", async () => {
      await storage.writeState("job-1", 3, "map#0", new Uint8Array([1, 2, 3]));
      assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 2);
    });

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
      assert.deepEqual(await storage.listAll("job-1"), [1, 2, 3, 4]);
      assert.deepEqual(await storage.listCompleted("job-1"), [1, 2]);
      assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 2);
    });
  });
});

/** Asserts `e` is the `CORRUPT` error of checkpoint `checkpointId`'s `_metadata` at `path`. */
function isCorruptMetadata(
  e: unknown,
  checkpointId: number,
  path: string,
  detail: RegExp,
): true {
  assert.ok(e instanceof CheckpointStorageError, String(e));
  assert.equal(e.code, "CORRUPT");
  assert.equal(e.jobId, "job-1");
  assert.equal(e.checkpointId, checkpointId);
  assert.equal(e.path, path);
  assert.ok(e.message.includes(path), e.message);
  assert.match(e.message, new RegExp(`checkpoint ${checkpointId} exists but is corrupt`));
  assert.match(e.message, detail);
  return true;
}

Deno.test("LocalDirectoryCheckpointStorage never skips a _metadata that exists but is corrupt", async (t) => {
  const cases = [
    { name: "does not parse", content: "{ damaged", detail: /JSON/ },
    { name: "is empty", content: "", detail: /JSON/ },
    {
      name: "is malformed",
      content: JSON.stringify({ ...metadata(3), vertices: 7 }),
      detail: /'metadata.vertices' must be an array/,
    },
    {
      name: "belongs to another checkpoint",
      content: JSON.stringify(metadata(2)),
      detail: /belongs to checkpoint 2/,
    },
  ];
  for (const c of cases) {
    await t.step(`when the newest one ${c.name}`, async () => {
      await withStorage(async (storage, dir) => {
        await commit(storage, 1);
        await commit(storage, 2);
        const path = join(dir, "checkpoints", "job-1", "chk-3", "_metadata");
        await storage.writeState("job-1", 3, "map#0", new Uint8Array([1, 2, 3]));
        await Deno.writeTextFile(path, c.content);
        await assert.rejects(
          () => storage.latestCompleted("job-1"),
          (e: unknown) => isCorruptMetadata(e, 3, path, c.detail),
        );
        await assert.rejects(
          () => storage.listCompleted("job-1"),
          (e: unknown) => isCorruptMetadata(e, 3, path, c.detail),
        );
      });
    });
  }

  await t.step("an incomplete checkpoint above a corrupt one is still skipped", async () => {
    await withStorage(async (storage, dir) => {
      await commit(storage, 1);
      await commit(storage, 2);
      const path = join(dir, "checkpoints", "job-1", "chk-2", "_metadata");
      await Deno.writeTextFile(path, "{ damaged");
      await storage.writeState("job-1", 3, "map#0", new Uint8Array([1, 2, 3]));
      await assert.rejects(
        () => storage.latestCompleted("job-1"),
        (e: unknown) => isCorruptMetadata(e, 2, path, /JSON/),
      );
    });
  });

  await t.step("listCompleted reports an older corrupt one too", async () => {
    await withStorage(async (storage, dir) => {
      await commit(storage, 1);
      await commit(storage, 2);
      const path = join(dir, "checkpoints", "job-1", "chk-1", "_metadata");
      await Deno.writeTextFile(path, "{ damaged");
      assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 2);
      await assert.rejects(
        () => storage.listCompleted("job-1"),
        (e: unknown) => isCorruptMetadata(e, 1, path, /JSON/),
      );
    });
  });
});

Deno.test("LocalDirectoryCheckpointStorage orders checkpoint ids numerically", async () => {
  await withStorage(async (storage) => {
    for (const id of [9, 10, 2]) await commit(storage, id);
    assert.deepEqual(await storage.listCompleted("job-1"), [2, 9, 10]);
    assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 10);
  });
});

Deno.test("LocalDirectoryCheckpointStorage discard removes a checkpoint and is idempotent", async () => {
  await withStorage(async (storage, dir) => {
    await commit(storage, 1);
    await commit(storage, 2);
    await storage.discard("job-1", 2);
    await storage.discard("job-1", 2);
    await storage.discard("job-1", 77);
    assert.deepEqual(await names(join(dir, "checkpoints", "job-1")), ["chk-1"]);
    assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 1);
    await assert.rejects(
      () => storage.readMetadata("job-1", 2),
      (e: unknown) => e instanceof CheckpointStorageError && e.code === "NOT_FOUND",
    );
  });
});

Deno.test("LocalDirectoryCheckpointStorage discardJob removes only that job", async () => {
  await withStorage(async (storage, dir) => {
    await commit(storage, 1);
    await storage.writeMetadata(metadata(1, { jobId: "job-2" }));
    await storage.discardJob("job-1");
    await storage.discardJob("job-1");
    assert.deepEqual(await names(join(dir, "checkpoints")), ["job-2"]);
    assert.deepEqual(await storage.listCompleted("job-1"), []);
    assert.equal(await storage.latestCompleted("job-1"), undefined);
    assert.deepEqual(await storage.listCompleted("job-2"), [1]);
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
    () => parseCheckpointMetadata({ ...metadata(1), version: 2 }),
    /'metadata.version' must be 1: current value is 2/,
  );
  const badHandle = metadata(1);
  const v = badHandle.vertices[0]!;
  assert.throws(
    () =>
      parseCheckpointMetadata({
        ...badHandle,
        vertices: [{
          ...v,
          subtasks: [{
            subtask: 0,
            keyedHandle: { path: 5, bytes: 1 },
            operatorHandle: null,
            keyGroupRange: null,
            stateUids: [],
          }],
        }],
      }),
    /'metadata.vertices\[0\].subtasks\[0\].keyedHandle.path' must be a string: current value is 5/,
  );
});
