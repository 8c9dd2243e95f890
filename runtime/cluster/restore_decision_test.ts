import assert from "node:assert/strict";
import { decideRestore, restoreTarget } from "./restore_decision.ts";
import { CheckpointStorageError } from "../checkpoint/storage.ts";
import { SuppressRestartsError } from "../failure.ts";

const boom = new Error("subtask map#0 failed");

Deno.test("a failover restores the latest checkpoint this coordinator wrote, even when the job was resumed from another", () => {
  assert.deepEqual(
    restoreTarget({ jobId: "j", latestWritten: 7, restoreFrom: { jobId: "old", checkpointId: 3 } }),
    { jobId: "j", checkpointId: 7 },
  );
});

Deno.test("a failover before any checkpoint restores the checkpoint the job started from, or starts from scratch", () => {
  const from = { jobId: "old", checkpointId: 3 };
  assert.deepEqual(
    restoreTarget({ jobId: "j", latestWritten: undefined, restoreFrom: from }),
    from,
  );
  assert.equal(restoreTarget({ jobId: "j", latestWritten: undefined, restoreFrom: null }), null);
});

Deno.test("readable metadata, or no target at all, restores the target", () => {
  const facts = {
    jobId: "j",
    jobName: "n",
    latestWritten: 4,
    restoreFrom: null,
    restartingAfter: boom,
  };
  assert.deepEqual(decideRestore({ ...facts, target: { jobId: "j", checkpointId: 4 } }), {
    kind: "restore",
    point: { jobId: "j", checkpointId: 4 },
  });
  assert.deepEqual(
    decideRestore({ ...facts, latestWritten: undefined, target: null }),
    { kind: "restore", point: null },
  );
});

Deno.test("storage out of reach is a failed restart for the restart strategy, not a lost checkpoint", () => {
  const io = new CheckpointStorageError("connection refused", {
    code: "IO",
    jobId: "j",
    path: "j/chk-4/_metadata",
  });
  const decision = decideRestore({
    jobId: "j",
    jobName: "n",
    latestWritten: 4,
    restoreFrom: null,
    target: { jobId: "j", checkpointId: 4 },
    readError: { error: io },
    restartingAfter: boom,
  });
  assert.equal(decision.kind, "retry");
  assert.ok(decision.kind === "retry");
  assert.equal(decision.failure, io);
  assert.match(
    decision.warning,
    /job j: cannot read checkpoint 4 to restore it: .*connection refused/,
  );
});

Deno.test("lost metadata of the latest completed checkpoint fails the job for good, naming it and the failure being recovered from", () => {
  const gone = new CheckpointStorageError("no _metadata", {
    code: "NOT_FOUND",
    jobId: "j",
    path: "j/chk-4/_metadata",
  });
  const decision = decideRestore({
    jobId: "j",
    jobName: "billing",
    latestWritten: 4,
    restoreFrom: null,
    target: { jobId: "j", checkpointId: 4 },
    readError: { error: gone },
    restartingAfter: boom,
  });
  assert.ok(decision.kind === "fail");
  assert.match(
    decision.message,
    /^Job j 'billing' failed for good: cannot restore checkpoint 4, the latest checkpoint it completed: /,
  );
  assert.match(
    decision.message,
    /no _metadata.*Restoring an older checkpoint could commit records twice \(it was restarting after Error: subtask map#0 failed\)/,
  );
  assert.ok(decision.cause instanceof SuppressRestartsError);
  assert.equal(decision.cause.cause, gone);
});

Deno.test("a corrupt checkpoint the job was resumed from fails the job for good, naming the other job", () => {
  const decision = decideRestore({
    jobId: "j",
    jobName: "n",
    latestWritten: undefined,
    restoreFrom: { jobId: "old", checkpointId: 3 },
    target: { jobId: "old", checkpointId: 3 },
    readError: {
      error: new CheckpointStorageError("bad magic", {
        code: "CORRUPT",
        jobId: "old",
        path: "old/chk-3/_metadata",
      }),
    },
    restartingAfter: "a string failure",
  });
  assert.ok(decision.kind === "fail");
  assert.match(
    decision.message,
    /cannot restore checkpoint 3 of job old, the checkpoint it started from: .*bad magic.*after a string failure\)/,
  );
});
