import assert from "node:assert/strict";
import {
  decideClaimedDiscard,
  refuseSavepoint,
  SavepointError,
  SavepointRequests,
} from "./savepoints.ts";
import { LocalDirectoryCheckpointStorage } from "../checkpoint/storage.ts";

Deno.test("SavepointRequests resolves a savepoint with its stored path and discards its job-storage copy after a later checkpoint", async () => {
  const r = new SavepointRequests();
  const done = r.add(4, "/sp");
  assert.ok(r.isSavepoint(4));
  assert.ok(!r.isSavepoint(3));
  const dirs: (string | undefined)[] = [];
  assert.equal(await r.completed(4, (d) => (dirs.push(d), Promise.resolve("/sp/x-4"))), "/sp/x-4");
  assert.equal(await done, "/sp/x-4");
  assert.deepEqual(dirs, ["/sp"]);
  assert.deepEqual(r.laterCheckpointCompleted(4), []);
  assert.deepEqual(r.laterCheckpointCompleted(5), [4]);
  assert.deepEqual(r.laterCheckpointCompleted(6), [], "each copy is discarded once");
  assert.equal(await r.completed(7, () => Promise.resolve("never")), undefined, "not a savepoint");
});

Deno.test("SavepointRequests rejects a savepoint that failed, could not be stored, or outlived its attempt", async () => {
  const r = new SavepointRequests();
  const failed = r.add(1, undefined);
  r.failed(1, "TIMEOUT: expired");
  await assert.rejects(
    failed,
    (e: unknown) =>
      e instanceof SavepointError && e.message === "Savepoint 1 failed: TIMEOUT: expired",
  );
  const unstored = r.add(2, undefined);
  assert.equal(await r.completed(2, () => Promise.reject(new Error("disk full"))), undefined);
  await assert.rejects(unstored, /completed but could not be stored: Error: disk full/);
  const pending = r.add(3, undefined);
  const stop = r.requestStop({ drain: true });
  assert.deepEqual(r.stopping, { drain: true, ...r.stopping });
  await assert.rejects(r.requestStop({}), /already in progress/);
  r.failAll("attempt 0 failed");
  await assert.rejects(pending, /Savepoint 3 failed: attempt 0 failed/);
  await assert.rejects(stop, /Stop with savepoint failed: attempt 0 failed/);
  assert.equal(r.stopping, undefined);
});

Deno.test("SavepointRequests: a stop's savepoint is the final checkpoint it is assigned", async () => {
  const r = new SavepointRequests();
  const stop = r.requestStop({ directory: "/d", drain: false });
  assert.ok(!r.isSavepoint(9));
  r.assignStop(9);
  assert.ok(r.isSavepoint(9));
  assert.equal(await r.completed(9, (d) => Promise.resolve(`${d}/sp-9`)), "/d/sp-9");
  assert.equal(await stop, "/d/sp-9");
  assert.equal(r.stopping, undefined);
});

Deno.test("refuseSavepoint() names why a savepoint cannot be taken, and accepts a running job", () => {
  const storage = () => new LocalDirectoryCheckpointStorage({ directory: "/tmp/x" });
  const facts = {
    jobId: "j-1",
    phase: "running",
    stopping: false,
    finishing: false,
    storage,
    directory: undefined,
  };
  assert.equal(refuseSavepoint(facts), undefined);
  assert.match(
    refuseSavepoint({ ...facts, phase: "restarting" })!.message,
    /not running \(restarting\)/,
  );
  assert.match(refuseSavepoint({ ...facts, stopping: true })!.message, /stopping with a savepoint/);
  assert.match(refuseSavepoint({ ...facts, finishing: true })!.message, /is finishing/);
  assert.match(refuseSavepoint({ ...facts, storage: undefined })!.message, /no savepoint storage/);
  const refused = refuseSavepoint({
    ...facts,
    directory: "/elsewhere",
    storage: () => {
      throw new RangeError("only the bucket");
    },
  });
  assert.match(
    refused!.message,
    /cannot store a savepoint in "\/elsewhere": RangeError: only the bucket/,
  );
});

Deno.test("decideClaimedDiscard() discards only a claimed checkpoint of another job, once the job retains its own", () => {
  const facts = {
    restoreMode: "CLAIM",
    restoredKind: "checkpoint",
    otherJob: true,
    completedCheckpoints: 2,
    retainedCheckpoints: 2,
  } as const;
  assert.equal(decideClaimedDiscard(facts), "discard");
  assert.equal(decideClaimedDiscard({ ...facts, completedCheckpoints: 1 }), "keep");
  assert.equal(decideClaimedDiscard({ ...facts, restoreMode: "NO_CLAIM" }), "keep");
  assert.equal(decideClaimedDiscard({ ...facts, restoredKind: "savepoint" }), "keep");
  assert.equal(decideClaimedDiscard({ ...facts, otherJob: false }), "keep");
});
