/**
 * The shared-namespace cases of the checkpoint storage conformance suite
 * (`storage_conformance.ts` registers them for every implementation):
 * shared blobs read back through `readState`, survive `discard` of the
 * checkpoint that wrote them, are deleted by `deleteShared` (idempotently)
 * and `discardJob`, `listShared` lists exactly one job's, and retention
 * driven by the `SharedStateRegistry` deletes nothing still referenced and
 * leaves nothing behind.
 *
 * @module
 */

import assert from "node:assert/strict";
import { CheckpointStorageError } from "./storage.ts";
import { SharedStateRegistry } from "./shared_state_registry.ts";
import type { CheckpointStorage } from "./storage.ts";
import type { CheckpointStorageFixture } from "./storage_conformance.ts";
import type { CheckpointMetadata } from "./types.ts";

/** Registers one conformance test; given by the suite. */
export type ConformanceTest = (
  what: string,
  fn: (f: CheckpointStorageFixture, t: Deno.TestContext) => Promise<void>,
) => void;

/** The suite's helpers the cases use (passed in, so this module imports the suite's types only). */
export interface ConformanceHelpers {
  /** Completes checkpoint `checkpointId` of `job-1` (blob `map#0`, then metadata). */
  commit(storage: CheckpointStorage, checkpointId: number): Promise<void>;
  /** The metadata `commit` writes. */
  metadata(checkpointId: number): CheckpointMetadata;
}

/**
 * Registers the shared-namespace cases through the suite's `test`.
 *
 * @param test registers one case with a fresh fixture.
 * @param helpers the suite's `commit` and `metadata`.
 */
export function sharedNamespaceCases(test: ConformanceTest, helpers: ConformanceHelpers): void {
  const { commit, metadata } = helpers;
  test("writes shared blobs under <jobId>/shared/<name> and reads them back", async (f, t) => {
    const { storage } = f;
    for (
      const [label, blobName, bytes] of [
        ["a small blob", "map#0-a1-1", 4],
        ["an empty blob", "empty#0-a1-1", 0],
        ["a blob larger than a NATS message (2 MiB + 3 bytes)", "big#1-a1-1", 2 * 1024 * 1024 + 3],
        ["a blob with a non-ASCII name", "map-ü€#0-a1-1", 7],
      ] as const
    ) {
      await t.step(label, async () => {
        const data = new Uint8Array(bytes).map((_, i) => (i * 17 + 3) % 251);
        const handle = await storage.writeShared("job-1", blobName, data);
        assert.deepEqual(handle, { path: `shared/${blobName}`, bytes });
        const back = await storage.readState("job-1", handle);
        assert.equal(Object.getPrototypeOf(back), Uint8Array.prototype, "a plain Uint8Array");
        assert.deepEqual(back, data);
      });
    }
    const all = ["big#1-a1-1", "empty#0-a1-1", "map#0-a1-1", "map-ü€#0-a1-1"].map((n) =>
      `shared/${n}`
    );
    assert.deepEqual(await storage.listShared("job-1"), all);
    assert.deepEqual(await f.entries("job-1"), all);
    assert.deepEqual(await storage.listAll("job-1"), [], "the shared namespace is no checkpoint");
    assert.equal(await storage.latestCompleted("job-1"), undefined);
  });

  test("overwrites a shared blob written twice", async ({ storage }) => {
    await storage.writeShared("job-1", "s", new Uint8Array([1]));
    const h = await storage.writeShared("job-1", "s", new Uint8Array([2, 2]));
    assert.deepEqual(await storage.readState("job-1", h), new Uint8Array([2, 2]));
    assert.deepEqual(await storage.listShared("job-1"), ["shared/s"]);
  });

  test("keeps a shared blob when the checkpoint that wrote it is discarded", async (f) => {
    const { storage } = f;
    const base = await storage.writeShared("job-1", "base-1", new Uint8Array([7, 7, 7]));
    await commit(storage, 1);
    await commit(storage, 2);
    await storage.discard("job-1", 1);
    await storage.discard("job-1", 2);
    await storage.writeState("job-1", 3, "map#0", new Uint8Array([1])); // incomplete
    await storage.discard("job-1", 3);
    assert.deepEqual(await storage.listAll("job-1"), []);
    assert.deepEqual(await storage.readState("job-1", base), new Uint8Array([7, 7, 7]));
    assert.deepEqual(await storage.listShared("job-1"), ["shared/base-1"]);
    assert.deepEqual(await f.entries("job-1"), ["shared/base-1"]);
  });

  test("deleteShared deletes exactly the listed blobs, and an absent one is no error", async (f) => {
    const { storage } = f;
    for (const n of ["a", "b", "c", "d"]) {
      await storage.writeShared("job-1", n, new TextEncoder().encode(n));
    }
    await commit(storage, 1);
    await storage.deleteShared("job-1", ["shared/b", "shared/d"]);
    assert.deepEqual(await storage.listShared("job-1"), ["shared/a", "shared/c"]);
    // A retention repeating what a crash interrupted, and blobs never written.
    await storage.deleteShared("job-1", ["shared/b", "shared/d", "shared/never-written"]);
    await storage.deleteShared("job-1", []);
    await storage.deleteShared("never-ran", ["shared/a"]);
    assert.deepEqual(await storage.listShared("job-1"), ["shared/a", "shared/c"]);
    assert.deepEqual(
      await f.entries("job-1"),
      ["chk-1/_metadata", "chk-1/map#0", "shared/a", "shared/c"],
      "the checkpoint is untouched",
    );
    await assert.rejects(
      () => storage.readState("job-1", { path: "shared/b", bytes: 1 }),
      (e: unknown) => {
        assert.ok(e instanceof CheckpointStorageError, String(e));
        assert.equal(e.code, "NOT_FOUND");
        assert.equal(e.checkpointId, undefined);
        assert.equal(e.path, f.sharedPathOf("job-1", "b"));
        assert.match(e.message, /shared state "shared\/b" of job "job-1"/);
        return true;
      },
    );
    await storage.deleteShared("job-1", ["shared/a", "shared/c"]);
    assert.deepEqual(await storage.listShared("job-1"), []);
    assert.deepEqual(await f.entries("job-1"), ["chk-1/_metadata", "chk-1/map#0"]);
  });

  test("reports a shared blob whose size differs from its handle as CORRUPT", async (f) => {
    const h = await f.storage.writeShared("job-1", "s", new Uint8Array([1, 2, 3]));
    await assert.rejects(
      () => f.storage.readState("job-1", { ...h, bytes: 4 }),
      (e: unknown) =>
        e instanceof CheckpointStorageError && e.code === "CORRUPT" &&
        e.checkpointId === undefined && e.path === f.sharedPathOf("job-1", "s") &&
        /says 4 bytes.* 3\b/.test(e.message),
    );
  });

  test("rejects shared names and paths that could escape the namespace", async (f) => {
    const { storage } = f;
    const data = new Uint8Array([1]);
    await storage.writeShared("job-1", "keep", data);
    for (const bad of ["", "../x", "a/b", "a\\b", ".hidden", "_metadata", "x".repeat(300)]) {
      await assert.rejects(
        () => storage.writeShared("job-1", bad, data),
        RangeError,
        JSON.stringify(bad),
      );
    }
    await assert.rejects(() => storage.writeShared("..", "s", data), RangeError, `'jobId'`);
    await assert.rejects(() => storage.listShared("a/b"), RangeError, `'jobId'`);
    for (
      const path of ["chk-1/map#0", "shared/../x", "shared/a/b", "shared/", "keep", "/shared/keep"]
    ) {
      await assert.rejects(
        () => storage.deleteShared("job-1", ["shared/keep", path]),
        RangeError,
        JSON.stringify(path),
      );
    }
    for (const path of ["shared/.hidden", "shared/a/b", "shared/_metadata", "shared"]) {
      await assert.rejects(() => storage.readState("job-1", { path, bytes: 1 }), RangeError, path);
    }
    assert.deepEqual(await storage.listShared("job-1"), ["shared/keep"], "nothing was deleted");
    assert.deepEqual(await f.entries("job-1"), ["shared/keep"]);
  });

  test("lists exactly one job's shared blobs, and discardJob removes them", async (f) => {
    const { storage } = f;
    assert.deepEqual(await storage.listShared("job-1"), []);
    await storage.writeShared("job-1", "x", new Uint8Array([1]));
    await storage.writeShared("job-10", "y", new Uint8Array([2])); // "job-1" is its prefix
    await storage.writeShared("job-2", "x", new Uint8Array([3]));
    await commit(storage, 1);
    assert.deepEqual(await storage.listShared("job-1"), ["shared/x"]);
    assert.deepEqual(await storage.listShared("job-10"), ["shared/y"]);
    await storage.discardJob("job-1");
    assert.deepEqual(await storage.listShared("job-1"), []);
    assert.deepEqual(await f.entries("job-1"), []);
    assert.deepEqual(await storage.listShared("job-10"), ["shared/y"]);
    assert.deepEqual(
      await storage.readState("job-2", { path: "shared/x", bytes: 1 }),
      new Uint8Array([3]),
    );
  });

  test("retention driven by the SharedStateRegistry never deletes a referenced blob and leaves none behind", async (f) => {
    // Incremental checkpoints: each writes one new shared delta and refers to
    // the base and every delta since; checkpoint 4 rebases. Checkpoint 3 is
    // aborted after writing its delta (held until 4 completes). Retain the
    // latest 2 completed.
    const { storage } = f;
    const registry = new SharedStateRegistry();
    const retained: { id: number; handles: { path: string; bytes: number }[] }[] = [];
    let refs: { path: string; bytes: number }[] = [];
    const retain = async (id: number) => {
      await storage.writeMetadata(metadata(id));
      // Completing releases the checkpoints aborted before it was triggered.
      await storage.deleteShared("job-1", registry.complete(id));
      retained.push({ id, handles: refs });
      while (retained.length > 2) {
        const old = retained.shift()!;
        await storage.discard("job-1", old.id);
        await storage.deleteShared("job-1", registry.discard(old.id));
      }
      for (const c of retained) {
        for (const h of c.handles) {
          assert.equal((await storage.readState("job-1", h)).byteLength, h.bytes, h.path);
        }
      }
    };
    for (let id = 1; id <= 6; id++) {
      if (id === 1 || id === 4) refs = []; // a full (re)base
      const delta = await storage.writeShared("job-1", `delta-${id}`, new Uint8Array(id));
      await storage.writeState("job-1", id, "map#0", new Uint8Array([1, 2, 3]));
      const handles = [...refs, delta];
      registry.begin(id);
      registry.register(id, handles.map((h) => ({ path: h.path, shared: true })));
      if (id === 3) {
        await storage.discard("job-1", 3);
        registry.abort(3); // delta-3 is held until checkpoint 4 completes
        continue;
      }
      refs = handles;
      await retain(id);
    }
    assert.deepEqual(await storage.listShared("job-1"), [
      "shared/delta-4",
      "shared/delta-5",
      "shared/delta-6",
    ]);
    for (const c of retained.splice(0)) {
      await storage.discard("job-1", c.id);
      await storage.deleteShared("job-1", registry.discard(c.id));
    }
    assert.deepEqual(await storage.listShared("job-1"), []);
    assert.deepEqual(await f.entries("job-1"), [], "nothing left behind");
  });
}
