/**
 * The behavioural suite every {@linkcode CheckpointStorage} must pass, run by
 * each implementation's test file (one suite, several implementations, as
 * Hono's `common.case.test.ts`):
 *
 * ```ts ignore
 * import { checkpointStorageConformanceSuite } from "./storage_conformance.ts";
 *
 * checkpointStorageConformanceSuite("LocalDirectoryCheckpointStorage", async () => {
 *   const dir = await Deno.makeTempDir();
 *   // ... a fixture over a storage rooted in dir (see CheckpointStorageFixture)
 * });
 * ```
 *
 * It checks the semantics `storage.ts` documents, through the interface only:
 * blobs read back as written; a missing blob is `NOT_FOUND` and a truncated
 * one `CORRUPT`, both naming the blob's path and checkpoint; names that could
 * escape the job are refused; `_metadata` is the commit point, written last,
 * never overwritten and validated before it is written; incomplete
 * checkpoints are skipped and corrupt `_metadata` never is; ids sort
 * numerically; `discard` and `discardJob` are idempotent and touch only their
 * checkpoint or job. The shared namespace (`_storage_conformance_shared.ts`):
 * shared blobs read back through `readState`, survive `discard` of the
 * checkpoint that wrote them, are deleted by `deleteShared` (idempotently: an
 * absent blob is no error) and `discardJob`, and `listShared` lists exactly
 * one job's. What a storage stores on disk or in a bucket is reached through
 * the fixture's hooks, so the suite can damage it the way a crash or a bad
 * disk would.
 *
 * Each test gets a fresh fixture and takes well under a second on a working
 * storage; none depends on timing.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type CheckpointStorage, CheckpointStorageError } from "./storage.ts";
import { sharedNamespaceCases } from "./_storage_conformance_shared.ts";
import type { CheckpointMetadata } from "./types.ts";

/** What the suite's factory makes for each test: a storage, plus hooks that reach behind it. */
export interface CheckpointStorageFixture {
  /** The storage under test, empty. */
  readonly storage: CheckpointStorage;
  /**
   * The `path` a {@linkcode CheckpointStorageError} names for the blob
   * `<jobId>/chk-<id>/<name>` (`name` may be `_metadata`).
   */
  pathOf(jobId: string, checkpointId: number, name: string): string;
  /** What `writeMetadata` returns for checkpoint `checkpointId` of `jobId`. */
  locationOf(jobId: string, checkpointId: number): string;
  /**
   * Replaces (or creates) the stored bytes of `<jobId>/chk-<id>/<name>` behind
   * the storage's back, as a bad disk or a buggy writer would: the storage must
   * find the blob there afterwards, with its bookkeeping (size, digest)
   * matching the new bytes.
   */
  corrupt(jobId: string, checkpointId: number, name: string, content: Uint8Array): Promise<void>;
  /** Drops the last byte of a stored blob, as a torn write would. */
  truncate(jobId: string, checkpointId: number, name: string): Promise<void>;
  /** The `path` a {@linkcode CheckpointStorageError} names for the shared blob `<jobId>/shared/<name>`. */
  sharedPathOf(jobId: string, name: string): string;
  /**
   * Every blob stored for the job, as `chk-<id>/<name>` or `shared/<name>`,
   * sorted: to check that discards leave nothing behind.
   */
  entries(jobId: string): Promise<string[]>;
  /** Releases whatever the factory made (directories, buckets, connections). */
  close(): Promise<void>;
}

/**
 * Registers the conformance tests (`Deno.test`, named "<name> ...") for one
 * {@linkcode CheckpointStorage} implementation.
 *
 * @param name the implementation's name in test names, e.g. `"LocalDirectoryCheckpointStorage"`.
 * @param factory makes a fresh {@linkcode CheckpointStorageFixture} for each test.
 */
export function checkpointStorageConformanceSuite(
  name: string,
  factory: () => Promise<CheckpointStorageFixture>,
): void {
  const test = (
    what: string,
    fn: (f: CheckpointStorageFixture, t: Deno.TestContext) => Promise<void>,
  ) =>
    Deno.test(`${name} ${what}`, async (t) => {
      const fixture = await factory();
      try {
        await fn(fixture, t);
      } finally {
        await fixture.close();
      }
    });

  test("writes state blobs under <jobId>/chk-<id>/<name> and reads them back", async (f, t) => {
    const { storage } = f;
    for (
      const [label, blobName, bytes] of [
        ["a small blob", "map#0-a1", 4],
        ["an empty blob", "empty#0", 0],
        ["a blob larger than a NATS message (3 MiB + 5 bytes)", "big#1", 3 * 1024 * 1024 + 5],
        ["a blob with a non-ASCII name", "map-ü€#0", 7],
      ] as const
    ) {
      await t.step(label, async () => {
        const data = new Uint8Array(bytes).map((_, i) => (i * 31 + 7) % 251);
        const handle = await storage.writeState("job-1", 3, blobName, data);
        assert.deepEqual(handle, { path: `chk-3/${blobName}`, bytes });
        const back = await storage.readState("job-1", handle);
        assert.equal(Object.getPrototypeOf(back), Uint8Array.prototype, "a plain Uint8Array");
        assert.deepEqual(back, data);
      });
    }
    assert.deepEqual(
      await f.entries("job-1"),
      ["chk-3/big#1", "chk-3/empty#0", "chk-3/map#0-a1", "chk-3/map-ü€#0"],
    );
    assert.deepEqual(await storage.listAll("job-1"), [3]);
  });

  test("overwrites a state blob written twice", async ({ storage }) => {
    await storage.writeState("job-1", 1, "s", new Uint8Array([1]));
    const h = await storage.writeState("job-1", 1, "s", new Uint8Array([2, 2]));
    assert.deepEqual(await storage.readState("job-1", h), new Uint8Array([2, 2]));
  });

  test("reports a missing or truncated state blob with its path and checkpoint", async (f) => {
    const { storage } = f;
    await assert.rejects(
      () => storage.readState("job-1", { path: "chk-2/nope", bytes: 1 }),
      (e: unknown) => {
        assert.ok(e instanceof CheckpointStorageError, String(e));
        assert.equal(e.code, "NOT_FOUND");
        assert.equal(e.checkpointId, 2);
        assert.equal(e.jobId, "job-1");
        assert.equal(e.path, f.pathOf("job-1", 2, "nope"));
        assert.match(e.message, /checkpoint 2 of job "job-1".*chk-2\/nope/);
        return true;
      },
    );
    const h = await storage.writeState("job-1", 2, "s", new Uint8Array([1, 2, 3]));
    await assert.rejects(
      () => storage.readState("job-1", { ...h, bytes: 4 }),
      (e: unknown) =>
        e instanceof CheckpointStorageError && e.code === "CORRUPT" && e.checkpointId === 2 &&
        e.path === f.pathOf("job-1", 2, "s") && /says 4 bytes.* 3\b/.test(e.message),
    );
    await f.truncate("job-1", 2, "s");
    await assert.rejects(
      () => storage.readState("job-1", h),
      (e: unknown) =>
        e instanceof CheckpointStorageError && e.code === "CORRUPT" &&
        /says 3 bytes.* 2\b/.test(e.message),
    );
  });

  test("rejects ids, names and handle paths that could escape the job", async ({ storage }) => {
    const data = new Uint8Array([1]);
    for (const bad of ["", "../x", "a/b", "a\\b", ".hidden", "_metadata", "x".repeat(300)]) {
      await assert.rejects(
        () => storage.writeState("job-1", 1, bad, data),
        RangeError,
        JSON.stringify(bad),
      );
    }
    for (const jobId of ["..", "", "a/b", "_metadata"]) {
      await assert.rejects(
        () => storage.writeState(jobId, 1, "s", data),
        RangeError,
        `'jobId'`,
      );
      await assert.rejects(() => storage.listAll(jobId), RangeError, `'jobId'`);
    }
    for (const id of [0, -1, 1.5, Number.NaN]) {
      await assert.rejects(
        () => storage.writeState("job-1", id, "s", data),
        /'checkpointId'.*current value is/,
      );
    }
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
    assert.deepEqual(await storage.listAll("job-1"), []);
  });

  test("commits a checkpoint by writing _metadata last", async (f) => {
    const { storage } = f;
    await storage.writeState("job-1", 1, "map#0", new Uint8Array([1, 2, 3]));
    assert.equal(await storage.latestCompleted("job-1"), undefined);
    assert.deepEqual(await storage.listCompleted("job-1"), []);
    const location = await storage.writeMetadata(metadata(1));
    assert.equal(location, f.locationOf("job-1", 1));
    assert.deepEqual(await storage.readMetadata("job-1", 1), metadata(1));
    assert.deepEqual(await storage.latestCompleted("job-1"), metadata(1));
    assert.deepEqual(await f.entries("job-1"), ["chk-1/_metadata", "chk-1/map#0"]);
  });

  test("reports the metadata of a checkpoint that is not complete as NOT_FOUND", async (f) => {
    await f.storage.writeState("job-1", 4, "map#0", new Uint8Array([1]));
    for (const id of [4, 5]) {
      await assert.rejects(
        () => f.storage.readMetadata("job-1", id),
        (e: unknown) =>
          e instanceof CheckpointStorageError && e.code === "NOT_FOUND" && e.checkpointId === id &&
          e.path === f.pathOf("job-1", id, "_metadata"),
      );
    }
  });

  test("writes the metadata of a stateless checkpoint", async ({ storage }) => {
    await storage.writeMetadata(metadata(1, { vertices: [], totalBytes: 0 }));
    assert.deepEqual(await storage.listCompleted("job-1"), [1]);
  });

  test("refuses to overwrite the metadata of a completed checkpoint", async (f) => {
    await commit(f.storage, 1);
    await assert.rejects(
      () => f.storage.writeMetadata(metadata(1, { jobName: "other" })),
      (e: unknown) =>
        e instanceof CheckpointStorageError && e.code === "ALREADY_EXISTS" &&
        e.checkpointId === 1 && e.path === f.pathOf("job-1", 1, "_metadata"),
    );
    assert.equal((await f.storage.readMetadata("job-1", 1)).jobName, "demo");
  });

  test("rejects malformed metadata before writing it", async (f) => {
    const bad = { ...metadata(1), kind: "snapshot" } as unknown as CheckpointMetadata;
    await assert.rejects(() => f.storage.writeMetadata(bad), TypeError, "'metadata.kind'");
    assert.deepEqual(await f.storage.listAll("job-1"), []);
    assert.deepEqual(await f.entries("job-1"), []);
  });

  test("latestCompleted skips incomplete checkpoints", async ({ storage }) => {
    await commit(storage, 1);
    await commit(storage, 2);
    await storage.writeState("job-1", 3, "map#0", new Uint8Array([1, 2, 3]));
    assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 2);
    assert.deepEqual(await storage.listAll("job-1"), [1, 2, 3]);
    assert.deepEqual(await storage.listCompleted("job-1"), [1, 2]);
  });

  test("never skips a _metadata that exists but is corrupt", async (f, t) => {
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
      {
        name: "belongs to another job",
        content: JSON.stringify(metadata(3, { jobId: "job-2" })),
        detail: /belongs to checkpoint 3 of job "job-2"/,
      },
    ];
    const { storage } = f;
    await commit(storage, 1);
    await commit(storage, 2);
    await storage.writeState("job-1", 3, "map#0", new Uint8Array([1, 2, 3]));
    const path = f.pathOf("job-1", 3, "_metadata");
    for (const c of cases) {
      await t.step(`when the newest one ${c.name}`, async () => {
        await f.corrupt("job-1", 3, "_metadata", new TextEncoder().encode(c.content));
        await assert.rejects(
          () => storage.readMetadata("job-1", 3),
          (e: unknown) =>
            e instanceof CheckpointStorageError && e.code === "CORRUPT" && e.path === path &&
            c.detail.test(e.message),
        );
        await assert.rejects(
          () => storage.latestCompleted("job-1"),
          (e: unknown) => isCorruptMetadata(e, 3, path, c.detail),
        );
        await assert.rejects(
          () => storage.listCompleted("job-1"),
          (e: unknown) => isCorruptMetadata(e, 3, path, c.detail),
        );
      });
    }

    await t.step("an incomplete checkpoint above a corrupt one is still skipped", async () => {
      await storage.discard("job-1", 3);
      await storage.writeState("job-1", 4, "map#0", new Uint8Array([1, 2, 3]));
      const path2 = f.pathOf("job-1", 2, "_metadata");
      await f.corrupt("job-1", 2, "_metadata", new TextEncoder().encode("{ damaged"));
      await assert.rejects(
        () => storage.latestCompleted("job-1"),
        (e: unknown) => isCorruptMetadata(e, 2, path2, /JSON/),
      );
    });

    await t.step("listCompleted reports an older corrupt one too", async () => {
      await storage.discard("job-1", 2);
      await commit(storage, 5);
      const path1 = f.pathOf("job-1", 1, "_metadata");
      await f.corrupt("job-1", 1, "_metadata", new TextEncoder().encode("{ damaged"));
      assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 5);
      await assert.rejects(
        () => storage.listCompleted("job-1"),
        (e: unknown) => isCorruptMetadata(e, 1, path1, /JSON/),
      );
    });
  });

  test("orders checkpoint ids numerically", async ({ storage }) => {
    for (const id of [9, 10, 2]) await commit(storage, id);
    await storage.writeState("job-1", 11, "map#0", new Uint8Array([1]));
    assert.deepEqual(await storage.listAll("job-1"), [2, 9, 10, 11]);
    assert.deepEqual(await storage.listCompleted("job-1"), [2, 9, 10]);
    assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 10);
  });

  test("discard removes a checkpoint, state included, and is idempotent", async (f) => {
    const { storage } = f;
    await commit(storage, 1);
    await commit(storage, 2);
    await storage.writeState("job-1", 2, "extra#1", new Uint8Array([4]));
    await storage.writeState("job-1", 3, "map#0", new Uint8Array([5])); // incomplete
    await storage.discard("job-1", 2);
    await storage.discard("job-1", 2);
    await storage.discard("job-1", 3);
    await storage.discard("job-1", 77);
    assert.deepEqual(await f.entries("job-1"), ["chk-1/_metadata", "chk-1/map#0"]);
    assert.deepEqual(await storage.listAll("job-1"), [1]);
    assert.equal((await storage.latestCompleted("job-1"))?.checkpointId, 1);
    await assert.rejects(
      () => storage.readMetadata("job-1", 2),
      (e: unknown) => e instanceof CheckpointStorageError && e.code === "NOT_FOUND",
    );
    await assert.rejects(
      () => storage.readState("job-1", { path: "chk-2/map#0", bytes: 3 }),
      (e: unknown) => e instanceof CheckpointStorageError && e.code === "NOT_FOUND",
    );
    // The id of a discarded checkpoint is free again.
    await commit(storage, 2);
    assert.deepEqual(await storage.listCompleted("job-1"), [1, 2]);
  });

  test("discardJob removes only that job, and is idempotent", async (f) => {
    const { storage } = f;
    await commit(storage, 1);
    await storage.writeState("job-1", 2, "map#0", new Uint8Array([1])); // incomplete
    await storage.writeMetadata(metadata(1, { jobId: "job-2" }));
    await storage.writeMetadata(metadata(1, { jobId: "job-10" })); // "job-1" is its prefix
    await storage.discardJob("job-1");
    await storage.discardJob("job-1");
    await storage.discardJob("never-ran");
    assert.deepEqual(await f.entries("job-1"), []);
    assert.deepEqual(await storage.listAll("job-1"), []);
    assert.equal(await storage.latestCompleted("job-1"), undefined);
    assert.deepEqual(await storage.listCompleted("job-2"), [1]);
    assert.deepEqual(await storage.listCompleted("job-10"), [1]);
    assert.deepEqual(await f.entries("job-10"), ["chk-1/_metadata"]);
  });

  sharedNamespaceCases(test, { commit, metadata });
}

/**
 * The metadata the suite commits: one keyed subtask whose handle points at
 * the 3-byte blob `chk-<id>/map#0`.
 *
 * @param checkpointId the checkpoint.
 * @param extra fields to override (e.g. `jobId`).
 * @returns the metadata.
 */
export function metadata(
  checkpointId: number,
  extra: Partial<CheckpointMetadata> = {},
): CheckpointMetadata {
  return {
    version: 2,
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
            handles: [{
              path: `chk-${checkpointId}/map#0`,
              bytes: 3,
              kind: "keyed",
              shared: false,
              uid: "count",
              keyGroupRange: [0, 127],
            }],
            stateUids: ["count"],
          },
        ],
      },
    ],
    totalBytes: 3,
    ...extra,
  };
}

/**
 * Completes checkpoint `checkpointId` of `job-1`: its blob `map#0`, then its metadata.
 *
 * @param storage the storage.
 * @param checkpointId the checkpoint.
 */
export async function commit(storage: CheckpointStorage, checkpointId: number): Promise<void> {
  await storage.writeState("job-1", checkpointId, "map#0", new Uint8Array([1, 2, 3]));
  await storage.writeMetadata(metadata(checkpointId));
}

/** Asserts `e` is the `CORRUPT` error of checkpoint `checkpointId`'s `_metadata` at `path`. */
function isCorruptMetadata(e: unknown, checkpointId: number, path: string, detail: RegExp): true {
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
