import assert from "node:assert/strict";
import { JobFailover, type JobFailoverHost } from "./job_failover.ts";
import { FailoverRegions, type PipelinedRegion } from "./failover_regions.ts";
import { ExecutionAttempt } from "./execution_attempt.ts";
import { TaskFailureError } from "./job_result.ts";
import type { JobPhase } from "./job_phase.ts";
import type { CheckpointCoordinator } from "./checkpoint_coordinator.ts";
import type { AttemptCancellation } from "./attempt_cancellation.ts";
import { type CheckpointStorage, CheckpointStorageError } from "../checkpoint/storage.ts";
import type { RestorePoint } from "../task/messages.ts";
import { RestartStrategies } from "../api/restart_strategy_config.ts";

/** A promise and its resolver. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => open = resolve);
  return { promise, open };
}

/** Lets every settled promise's reactions run (no timers involved). */
async function drain(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
  await new Promise((resolve) => setTimeout(resolve, 0));
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

/** What the fake host saw, in order. */
type Event = string;

/**
 * A job coordinator stand-in of two forward pipelines at parallelism 2 (two
 * regions): it records what the failover does; cancellation waits and
 * metadata writes settle when the test opens their gates.
 */
function fakeJob(options: { latestWritten?: number; readError?: unknown } = {}) {
  const events: Event[] = [];
  let phase: JobPhase = "running";
  let attempt = new ExecutionAttempt({ number: 0, subtasks: 4, sourceSubtasks: 2 });
  for (const key of ["src#0", "src#1", "sink#0", "sink#1"]) attempt.markReady(key);
  const cancelled: ReturnType<typeof gate>[] = [];
  const writes = gate();
  writes.open();
  let writesSettled = writes.promise;
  const storage = {
    readMetadata(jobId: string, id: number) {
      events.push(`read ${jobId}/${id}`);
      return options.readError === undefined
        ? Promise.resolve({})
        : Promise.reject(options.readError);
    },
  } as unknown as CheckpointStorage;
  const checkpoints = {
    get latestWritten() {
      return options.latestWritten;
    },
    stopping: false,
    writesSettled: () => writesSettled,
    failingOver: () => {
      events.push("abort checkpoints");
      return [];
    },
    regionFailingOver: () => events.push("abort checkpoints (region)"),
    releaseAborted: () => {},
    restoring: (p: RestorePoint | null) => events.push(`restoring ${p?.checkpointId ?? "-"}`),
  } as unknown as CheckpointCoordinator;
  const cancellation = {
    cancel: () => events.push("cancel all"),
    cancelSubtasks: (keys: ReadonlySet<string>) => events.push(`cancel ${[...keys].join(",")}`),
    awaitEnded: () => {
      const g = gate();
      cancelled.push(g);
      return g.promise;
    },
  } as unknown as AttemptCancellation;
  const host: JobFailoverHost = {
    jobId: "j",
    jobName: "n",
    storage,
    restoreFrom: null,
    regions: FailoverRegions.ofJob({
      vertices: [{ id: "src", parallelism: 2 }, { id: "sink", parallelism: 2 }],
      edges: [{ source: 0, target: 1, partitioner: "forward" }],
    }),
    checkpoints,
    cancellation,
    phase: () => phase,
    setPhase: (p) => phase = p,
    attempt: () => attempt,
    setAttempt: (a) => attempt = a,
    deploymentFailingOver: () => events.push("deployment failing over"),
    deploy: (restore: RestorePoint | null, region?: PipelinedRegion) =>
      events.push(
        `deploy attempt ${attempt.number} ${region === undefined ? "all" : `region ${region.id}`}` +
          ` from ${restore?.checkpointId ?? "scratch"}`,
      ),
    startAttemptMetrics: () => {},
    end: (e) => {
      events.push(`end ${e.name}`);
      phase = "done";
    },
  };
  const failover = new JobFailover(host, {
    restartStrategy: RestartStrategies.fixedDelay(10, 0),
    failoverStrategy: "region",
    restartsBefore: 0,
  });
  return {
    events,
    failover,
    cancelled,
    /** Holds metadata writes in flight until the returned function is called. */
    holdWrites: () => {
      const g = gate();
      writesSettled = g.promise;
      return g.open;
    },
    /** What `JobCoordinator.suspend` does to the phase (`#end`: `done`). */
    suspend: () => phase = "done",
    phase: () => phase,
    attemptOf: (key: string) => attempt.attemptOf(key),
  };
}

const failureOf = (vertex: string, subtask: number) =>
  new TaskFailureError(vertex, subtask, 0, { name: "Error", message: "boom" });

Deno.test("a second region failing while the first region is cancelled becomes a full failover; the first region is never redeployed alone", async () => {
  const job = fakeJob({ latestWritten: 3 });
  const first = job.failover.fail(failureOf("src", 0));
  await drain();
  assert.deepEqual(job.events, ["cancel src#0,sink#0", "abort checkpoints (region)"]);
  assert.equal(job.failover.phase(), "restarting");
  // Region 1 fails while region 0 is being cancelled.
  const second = job.failover.fail(failureOf("sink", 1));
  await drain();
  assert.equal(job.phase(), "restarting");
  // Both cancellation waits end; the region's sequence is superseded, the full one deploys.
  for (const g of job.cancelled) g.open();
  await Promise.all([first, second]);
  assert.deepEqual(job.events, [
    "cancel src#0,sink#0",
    "abort checkpoints (region)",
    "deployment failing over",
    "abort checkpoints",
    "cancel all",
    "read j/3",
    "restoring 3",
    "deploy attempt 1 all from 3",
  ]);
  assert.equal(job.failover.restarts, 1);
  assert.equal(job.attemptOf("src#1"), 1);
  assert.equal(job.attemptOf("src#0"), 1);
  // The history: the region failover never redeployed (no attempt), then the full one.
  assert.deepEqual(
    job.failover.history.map((
      r,
    ) => [r.scope, r.region?.description, r.subtask, r.failedAttempt, r.attempt]),
    [
      ["region", "region 0 (src#0, sink#0)", "src#0", 0, undefined],
      ["full", undefined, "sink#1", 0, 1],
    ],
  );
});

Deno.test("a region failing while another region is redeployed becomes a full failover above the region's attempt", async () => {
  const job = fakeJob({ latestWritten: 3 });
  const first = job.failover.fail(failureOf("src", 0));
  await drain();
  job.cancelled[0]!.open();
  await first;
  assert.equal(job.events.at(-1), "deploy attempt 1 region 0 from 3");
  assert.equal(job.failover.phase(), "deploying");
  const second = job.failover.fail(failureOf("sink", 1));
  await drain();
  job.cancelled[1]!.open();
  await second;
  assert.equal(job.events.at(-1), "deploy attempt 2 all from 3");
  assert.equal(job.failover.restarts, 2);
  assert.equal(job.attemptOf("src#0"), 2);
  assert.equal(job.attemptOf("sink#1"), 2);
  assert.deepEqual(
    job.failover.history.map((r) => [r.scope, r.region?.id, r.failedAttempt, r.attempt]),
    [["region", 0, 0, 1], ["full", undefined, 1, 2]],
  );
});

Deno.test("a job suspended while a full failover waits for metadata writes reads no checkpoint and deploys nothing", async () => {
  const job = fakeJob({ latestWritten: 3 });
  const releaseWrites = job.holdWrites();
  const failing = job.failover.fail(new Error("worker lost"));
  await drain();
  job.cancelled[0]!.open();
  await drain();
  assert.equal(job.phase(), "restarting");
  job.suspend(); // leadership lost (JobSuspendedError): the next leader restores the job
  releaseWrites();
  await failing;
  assert.deepEqual(job.events.filter((e) => /^(read|restoring|deploy )/.test(e)), []);
});

Deno.test("a job suspended while a region failover waits for metadata writes reads no checkpoint and deploys nothing", async () => {
  const job = fakeJob({ latestWritten: 3 });
  const releaseWrites = job.holdWrites();
  const failing = job.failover.fail(failureOf("src", 1));
  await drain();
  job.cancelled[0]!.open();
  await drain();
  job.suspend();
  releaseWrites();
  await failing;
  assert.deepEqual(job.events.filter((e) => /^(read|restoring|deploy )/.test(e)), []);
});

Deno.test("a job suspended while the checkpoint to restore is being read tries no more and warns of nothing", async () => {
  const unreachable = new CheckpointStorageError("connection closed", {
    code: "IO",
    jobId: "j",
    path: "j/chk-3/_metadata",
  });
  const job = fakeJob({ latestWritten: 3, readError: unreachable });
  const releaseWrites = job.holdWrites();
  const failing = job.failover.fail(new Error("worker lost"));
  await drain();
  job.cancelled[0]!.open();
  await drain();
  const logged: string[] = [];
  const consoleError = console.error;
  console.error = (...args: unknown[]) => logged.push(args.join(" "));
  try {
    releaseWrites();
    await Promise.resolve(); // the read starts
    job.suspend();
    await failing;
  } finally {
    console.error = consoleError;
  }
  // The read under way when the job was suspended, no retry of it, and no warning of it.
  assert.deepEqual(
    job.events.filter((e) => e.startsWith("read")),
    ["read j/3"],
    job.events.join("; "),
  );
  assert.deepEqual(logged.filter((l) => /cannot read checkpoint/.test(l)), []);
  assert.deepEqual(job.events.filter((e) => /^(restoring|deploy )/.test(e)), []);
});
