import assert from "node:assert/strict";
import {
  acceptSubmission,
  checkSubmission,
  jobCoordinatorOptions,
  jobRestoreSettings,
  jobSpecReply,
  type SubmissionContext,
  submittedJobStatus,
} from "./job_submission.ts";
import type { SubmitRequest } from "./cluster_protocol.ts";
import type { JobCoordinator } from "./coordinator.ts";
import type { LeaderJobRecords } from "./ha/leader_job_records.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { Transport } from "../actor/types.ts";

const request: SubmitRequest = {
  jobId: "job-1",
  moduleUrl: "file:///job.ts",
  args: ["--n", "3"],
  graph: {
    name: "numbers",
    fingerprint: "fp",
    vertices: [
      {
        id: "v0",
        name: "Source",
        parallelism: 2,
        maxParallelism: 128,
        isSource: true,
        operators: [],
      },
      {
        id: "v1",
        name: "Sink",
        parallelism: 3,
        maxParallelism: 128,
        isSource: false,
        operators: [],
      },
    ],
  },
  checkpointing: {
    intervalMs: 100,
    timeoutMs: 60_000,
    minPauseBetweenCheckpointsMs: 0,
    maxConcurrentCheckpoints: 1,
    retainedCheckpoints: 1,
    retainOnFinish: false,
  },
  restartStrategy: { type: "none" },
};

/** Job store records that log what is written, or fail with `error`. */
function records(error?: Error) {
  const written: string[] = [];
  const r = {
    epoch: 7,
    submitted: (job: { request: SubmitRequest }) => {
      written.push(`submitted ${job.request.jobId}`);
      return error === undefined ? Promise.resolve() : Promise.reject(error);
    },
    attemptDeploying: (jobId: string, attempt: number) => {
      written.push(`deploying ${jobId} ${attempt}`);
      return Promise.resolve();
    },
  } as unknown as LeaderJobRecords;
  return { records: r, written };
}

function context(over: Partial<SubmissionContext> = {}): SubmissionContext {
  return {
    storage: {} as CheckpointStorage,
    checkpointBucket: "chk",
    jobCoordinator: () => ({}) as JobCoordinator,
    now: () => 1234,
    ...over,
  };
}

Deno.test("checkSubmission refuses an invalid or taken job id, naming it", () => {
  assert.deepEqual(checkSubmission({ ...request, jobId: "a b" }, () => false), {
    ok: false,
    error: 'TypeError: invalid job id "a b"',
  });
  assert.deepEqual(checkSubmission(null, () => false), {
    ok: false,
    error: "TypeError: invalid job id undefined",
  });
  assert.deepEqual(checkSubmission(request, (id) => id === "job-1"), {
    ok: false,
    error: "Error: a job with id job-1 was already submitted",
  });
  assert.deepEqual(checkSubmission(request, () => false), { ok: true, request });
});

Deno.test("a submitted job runs on attempt 0 with its module, args and largest parallelism", () => {
  assert.deepEqual(submittedJobStatus(request, 99), {
    jobId: "job-1",
    name: "numbers",
    status: "RUNNING",
    attempt: 0,
    startedAt: 99,
    moduleUrl: "file:///job.ts",
    args: ["--n", "3"],
    defaultParallelism: undefined,
    parallelism: 3,
  });
  assert.deepEqual(jobRestoreSettings(request), { kind: "checkpoint", mode: "NO_CLAIM" });
  assert.deepEqual(
    jobRestoreSettings({
      ...request,
      resume: { jobId: "job-0", savepointPath: "/sp", restoreMode: "CLAIM" },
    }),
    { kind: "savepoint", mode: "CLAIM" },
  );
});

Deno.test("acceptSubmission records the job in the job store before accepting it", async () => {
  const { records: r, written } = records();
  const outcome = await acceptSubmission(request, context({ records: r }));
  assert.equal(outcome.kind, "accepted");
  if (outcome.kind !== "accepted") return;
  assert.equal(outcome.entry.status.startedAt, 1234);
  assert.deepEqual(written, ["submitted job-1"]);
});

Deno.test("acceptSubmission refuses a configuration the coordinator refuses, and a job store out of reach", async () => {
  const invalid = await acceptSubmission(
    request,
    context({
      jobCoordinator: () => {
        throw new RangeError("cancellationTimeoutMs must be >= 0: current value is -1");
      },
    }),
  );
  assert.deepEqual(invalid, {
    kind: "refused",
    error: "InvalidConfigurationError: job job-1 'numbers' has an invalid configuration: " +
      "RangeError: cancellationTimeoutMs must be >= 0: current value is -1",
  });
  const { records: r } = records(new Error("timeout"));
  assert.deepEqual(await acceptSubmission(request, context({ records: r })), {
    kind: "refused",
    error: "cannot record job job-1 in the job store: Error: timeout",
  });
});

Deno.test("jobCoordinatorOptions stamps the leader epoch and records each attempt before it deploys", async () => {
  const { records: r, written } = records();
  const process = {
    transport: {} as Transport,
    storage: {} as CheckpointStorage,
    checkpointBucket: "chk",
    workers: () => ["w-0"],
  };
  const plain = jobCoordinatorOptions(request, null, process);
  assert.equal(plain.leaderEpoch, undefined);
  assert.equal(plain.beforeDeploy, undefined);
  assert.equal(plain.deployTimeoutMs, 60_000);
  assert.equal(plain.firstAttempt, 0);
  const ha = jobCoordinatorOptions(request, { jobId: "job-1", checkpointId: 4 }, {
    ...process,
    records: r,
  }, {
    firstAttempt: 3,
    recoveredCheckpoints: [4],
    restoreSettings: { kind: "checkpoint", mode: "NO_CLAIM" },
  });
  assert.equal(ha.leaderEpoch, 7);
  assert.equal(ha.firstAttempt, 3);
  await ha.beforeDeploy!(3);
  assert.deepEqual(written, ["deploying job-1 3"]);
});

Deno.test("jobSpecReply serves a running job's module and fingerprint, and names a job it does not run", () => {
  const entry = {
    request,
    coordinator: {} as JobCoordinator,
    status: submittedJobStatus(request, 0),
  };
  assert.deepEqual(jobSpecReply("job-1", entry, "chk"), {
    ok: true,
    spec: {
      jobId: "job-1",
      moduleUrl: "file:///job.ts",
      args: ["--n", "3"],
      fingerprint: "fp",
      checkpointBucket: "chk",
      defaultParallelism: undefined,
    },
  });
  assert.deepEqual(jobSpecReply("nope", undefined, "chk"), {
    ok: false,
    error: "no running job nope",
  });
  assert.deepEqual(
    jobSpecReply("job-1", { ...entry, status: { ...entry.status, status: "FINISHED" } }, "chk"),
    { ok: false, error: "no running job job-1" },
  );
});
