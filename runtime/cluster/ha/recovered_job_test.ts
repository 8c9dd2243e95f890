import assert from "node:assert/strict";
import type { SubmitRequest } from "../cluster_protocol.ts";
import type { StoredJob } from "./job_store.ts";
import { failedRecovery, storedJobStatus, storedOutcome, takeoverReason } from "./recovered_job.ts";

const stored: StoredJob = {
  request: {
    jobId: "j-1",
    moduleUrl: "http://example.invalid/job.ts",
    args: [],
    graph: { name: "g", vertices: [{ parallelism: 2 }, { parallelism: 3 }] },
  } as unknown as SubmitRequest,
  restoreFrom: null,
  restoreSettings: { kind: "checkpoint", mode: "NO_CLAIM" },
  status: "CANCELED",
  attempt: 4,
  submittedAt: 100,
  endedAt: 200,
  error: "JobFailedError: Job j-1 was cancelled",
  leaderEpoch: 2,
};

Deno.test("storedJobStatus rebuilds the status the store recorded", () => {
  const s = storedJobStatus(stored);
  assert.equal(s.status, "CANCELED");
  assert.equal(s.attempt, 4);
  assert.equal(s.startedAt, 100);
  assert.equal(s.endedAt, 200);
  assert.equal(s.parallelism, 3);
});

Deno.test("storedOutcome is the stored outcome, else a failure naming the status", () => {
  const outcome = storedOutcome(stored);
  assert.equal(outcome.t, "failed");
  if (outcome.t === "failed") assert.match(outcome.error.message, /was cancelled/);
  const result = { t: "result" as const, result: {} as never };
  assert.equal(storedOutcome({ ...stored, outcome: result }), result);
});

Deno.test("failedRecovery fails the job with the reason and the time", () => {
  const f = failedRecovery({ ...stored, status: "RUNNING" }, "checkpoint 4 is gone", 900);
  assert.equal(f.status.status, "FAILED");
  assert.equal(f.status.endedAt, 900);
  assert.equal(f.error, "JobFailedError: checkpoint 4 is gone");
  assert.equal(f.outcome.t, "failed");
});

Deno.test("takeoverReason names the new epoch and the attempt taken over", () => {
  assert.equal(
    takeoverReason(3, 7),
    "the leading coordinator changed (leader epoch 3 took the job over at attempt 7)",
  );
});
