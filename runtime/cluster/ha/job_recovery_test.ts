import assert from "node:assert/strict";
import { type JobRecoveryFacts, planJobRecovery } from "./job_recovery.ts";

const running: JobRecoveryFacts = {
  jobId: "audit-0a1b",
  status: "RUNNING",
  attempt: 2,
  restoreFrom: null,
  completedCheckpoints: [],
};

Deno.test("planJobRecovery resumes a running job from its latest completed checkpoint in storage, recovering every completed one", () => {
  // The store lags (checkpoint 11 completed after the last write): storage is the truth.
  const plan = planJobRecovery({
    ...running,
    latestCheckpointId: 10,
    completedCheckpoints: [10, 11],
  });
  assert.deepEqual(plan, {
    kind: "resume",
    attempt: 3,
    restoreFrom: { jobId: "audit-0a1b", checkpointId: 11 },
    fromSubmission: false,
    // The old leader died before discarding 10: the new one registers and discards it.
    recoveredCheckpoints: [10, 11],
  });
});

Deno.test("planJobRecovery resumes from the submission's point when no checkpoint completed", async (t) => {
  await t.step("from scratch", () => {
    assert.deepEqual(planJobRecovery(running), {
      kind: "resume",
      attempt: 3,
      restoreFrom: null,
      fromSubmission: true,
      recoveredCheckpoints: [],
    });
  });
  await t.step("from the savepoint it was submitted with", () => {
    const restoreFrom = { jobId: "savepoint-old-7", checkpointId: 7 };
    assert.deepEqual(planJobRecovery({ ...running, restoreFrom }), {
      kind: "resume",
      attempt: 3,
      restoreFrom,
      fromSubmission: true,
      recoveredCheckpoints: [],
    });
  });
});

Deno.test("planJobRecovery fails a job whose recorded checkpoint is gone from storage", () => {
  const plan = planJobRecovery({ ...running, latestCheckpointId: 4 });
  assert.equal(plan.kind, "fail");
  if (plan.kind === "fail") {
    assert.match(plan.reason, /job audit-0a1b completed checkpoint 4/);
    assert.match(plan.reason, /not restarted from scratch/);
  }
});

Deno.test("planJobRecovery only serves ended jobs", () => {
  for (const status of ["FINISHED", "FAILED", "CANCELED"] as const) {
    assert.deepEqual(planJobRecovery({ ...running, status, completedCheckpoints: [3] }), {
      kind: "serve-ended",
    });
  }
});
