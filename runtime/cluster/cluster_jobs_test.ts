import assert from "node:assert/strict";
import { type ClusterJob, ClusterJobs } from "./cluster_jobs.ts";
import type { JobCoordinator } from "./coordinator.ts";
import type { JobStatus, SubmitRequest } from "./cluster_protocol.ts";

const registration = { until: 1_500, epoch: 2 };

function job(jobId: string, status: Partial<JobStatus> = {}, waitingForSlots?: string): ClusterJob {
  const coordinator = {
    attempt: 3,
    lastFailure: undefined,
    restartedAfter: undefined,
    waitingForSlots,
  } as unknown as JobCoordinator;
  return {
    request: { jobId } as SubmitRequest,
    coordinator,
    status: {
      jobId,
      name: jobId,
      status: "RUNNING",
      attempt: 0,
      startedAt: 100,
      moduleUrl: "file:///job.ts",
      args: [],
      defaultParallelism: 1,
      parallelism: 1,
      ...status,
    },
  };
}

Deno.test("ClusterJobs shows a job waiting for workers to register as WAITING_FOR_RESOURCES, saying so", () => {
  const jobs = new ClusterJobs();
  const waiting = { ...job("a"), awaitingWorkers: true };
  jobs.add(waiting);
  const status = jobs.statusOf(waiting, registration, 1_200);
  assert.equal(status.status, "WAITING_FOR_RESOURCES");
  assert.match(
    status.waitingForSlots!,
    /register with the leading coordinator \(epoch 2\) before deploying attempt 3 \(300 ms left\)/,
  );
  waiting.awaitingWorkers = false;
  assert.equal(jobs.statusOf(waiting, registration, 1_200).status, "RUNNING");
  assert.equal(
    jobs.statusOf(job("b", {}, "waiting for slots"), registration, 0).status,
    "WAITING_FOR_RESOURCES",
  );
});

Deno.test("ClusterJobs lists running jobs first, then ended ones (also stored), newest first, and forgets the oldest ended with their savepoints", () => {
  const jobs = new ClusterJobs();
  jobs.add(job("old", { status: "FINISHED", endedAt: 200 }));
  jobs.add(job("run", { startedAt: 150 }));
  jobs.add(job("new", { status: "FAILED", endedAt: 400 }));
  const stored = job("stored", { status: "CANCELED", endedAt: 300 }).status;
  jobs.serveEnded("stored", { status: stored, outcome: { t: "failed", error: {} as never } });
  jobs.rememberSavepoint("old", "t1", "nats-object-store://b/savepoint-old-1");
  assert.equal(jobs.savepointLocation("old", "t1"), "nats-object-store://b/savepoint-old-1");
  assert.deepEqual(jobs.statuses(registration, 0).map((s) => s.jobId), [
    "run",
    "new",
    "stored",
    "old",
  ]);
  assert.deepEqual(jobs.forgetEnded(1), ["old"]);
  assert.equal(jobs.get("old"), undefined);
  assert.equal(jobs.savepointLocation("old", "t1"), undefined);
  assert.ok(jobs.has("new") && jobs.has("run"));
  assert.equal(jobs.storedEnded("stored")?.status.status, "CANCELED");
});
