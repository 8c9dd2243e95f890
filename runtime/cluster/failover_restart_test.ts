import assert from "node:assert/strict";
import { planRestart, type RestartPlanOptions, resumeHint } from "./failover_restart.ts";
import type { RestartBackoff, RestartDecision } from "./restart_strategy.ts";
import { type CheckpointStorage, CheckpointStorageError } from "../checkpoint/storage.ts";
import { JobFailedError } from "./job_result.ts";
import { SuppressRestartsError } from "../failure.ts";

/** A restart strategy that answers `decisions` in turn and records the failures it saw. */
function scripted(decisions: RestartDecision[]): RestartBackoff & { seen: unknown[] } {
  const seen: unknown[] = [];
  return {
    seen,
    config: { type: "none" },
    onFailure(_nowMs, error) {
      seen.push(error);
      const next = decisions.shift();
      if (next === undefined) throw new Error("scripted restart strategy ran out of decisions");
      return next;
    },
    wouldRestart: () => decisions[0]?.kind === "restart",
    onRecovered() {},
  };
}

/** Storage whose `readMetadata` throws `errors` in turn, then succeeds; records what was read. */
function storage(errors: unknown[]): CheckpointStorage & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    readMetadata(jobId: string, checkpointId: number) {
      reads.push(`${jobId}/${checkpointId}`);
      const e = errors.shift();
      return e === undefined ? Promise.resolve({}) : Promise.reject(e);
    },
  } as unknown as CheckpointStorage & { reads: string[] };
}

function options(over: Partial<RestartPlanOptions>): RestartPlanOptions {
  return {
    jobId: "j",
    jobName: "n",
    storage: storage([]),
    restoreFrom: null,
    backoff: scripted([]),
    latestWritten: () => undefined,
    writesSettled: () => Promise.resolve(),
    cancelled: Promise.resolve(),
    restarting: () => true,
    ...over,
  };
}

const boom = new Error("subtask map#0 failed");

Deno.test("planRestart() restarts from the latest written checkpoint after reading its metadata", async () => {
  const s = storage([]);
  const plan = await planRestart(
    boom,
    options({
      storage: s,
      backoff: scripted([{ kind: "restart", delayMs: 0, attempt: 1 }]),
      latestWritten: () => 4,
    }),
  );
  assert.deepEqual(plan, { kind: "restart", point: { jobId: "j", checkpointId: 4 } });
  assert.deepEqual(s.reads, ["j/4"]);
});

Deno.test("planRestart() restarts from scratch without a checkpoint, reading nothing", async () => {
  const s = storage([]);
  const plan = await planRestart(
    boom,
    options({ storage: s, backoff: scripted([{ kind: "restart", delayMs: 0, attempt: 1 }]) }),
  );
  assert.deepEqual(plan, { kind: "restart", point: null });
  assert.deepEqual(s.reads, []);
});

Deno.test("planRestart() asks the restart strategy again when storage is out of reach", async () => {
  const io = new CheckpointStorageError("connection refused", {
    code: "IO",
    jobId: "j",
    path: "j/chk-4/_metadata",
  });
  const backoff = scripted([
    { kind: "restart", delayMs: 0, attempt: 1 },
    { kind: "restart", delayMs: 0, attempt: 2 },
  ]);
  const plan = await planRestart(
    boom,
    options({ storage: storage([io]), backoff, latestWritten: () => 4 }),
  );
  assert.deepEqual(plan, { kind: "restart", point: { jobId: "j", checkpointId: 4 } });
  assert.deepEqual(backoff.seen, [boom, io]);
});

Deno.test("planRestart() fails the job with a resume hint when the restart strategy gives up", async () => {
  let settled = false;
  const plan = await planRestart(
    boom,
    options({
      backoff: scripted([{ kind: "fail", reason: "no restarts" }]),
      latestWritten: () => 9,
      writesSettled: () => {
        settled = true;
        return Promise.resolve();
      },
    }),
  );
  assert.equal(plan.kind, "fail");
  assert.ok(plan.kind === "fail" && plan.error instanceof JobFailedError);
  assert.equal(
    plan.kind === "fail" ? plan.error.message : "",
    `Job j 'n' failed: no restarts; its latest completed checkpoint is 9: resume with ` +
      `resumeFrom({ jobId: "j", checkpointId: 9 })`,
  );
  assert.equal(plan.kind === "fail" ? plan.error.cause : undefined, boom);
  assert.ok(settled, "metadata writes in flight settle before the hint names the latest one");
});

Deno.test("planRestart() fails the job for good when the checkpoint to restore is lost", async () => {
  const gone = new CheckpointStorageError("no _metadata", {
    code: "NOT_FOUND",
    jobId: "j",
    path: "j/chk-4/_metadata",
  });
  const plan = await planRestart(
    boom,
    options({
      storage: storage([gone]),
      backoff: scripted([{ kind: "restart", delayMs: 0, attempt: 1 }]),
      latestWritten: () => 4,
    }),
  );
  assert.ok(plan.kind === "fail");
  assert.ok(plan.error.cause instanceof SuppressRestartsError);
  assert.match(plan.error.message, /cannot restore checkpoint 4/);
});

Deno.test("planRestart() is abandoned when the job left the restarting phase during the wait", async () => {
  const s = storage([]);
  const plan = await planRestart(
    boom,
    options({
      storage: s,
      backoff: scripted([{ kind: "restart", delayMs: 0, attempt: 1 }]),
      latestWritten: () => 4,
      restarting: () => false,
    }),
  );
  assert.deepEqual(plan, { kind: "abandoned" });
  assert.deepEqual(s.reads, []);
});

Deno.test("resumeHint() names the latest written checkpoint, else where the job started, else nothing", () => {
  assert.equal(
    resumeHint({ jobId: "j", latestWritten: 3, restoreFrom: { jobId: "old", checkpointId: 1 } }),
    `; its latest completed checkpoint is 3: resume with resumeFrom({ jobId: "j", checkpointId: 3 })`,
  );
  assert.equal(
    resumeHint({
      jobId: "j",
      latestWritten: undefined,
      restoreFrom: { jobId: "old", checkpointId: 1 },
    }),
    `; it completed no checkpoint of its own: resume again from where it started, with ` +
      `resumeFrom({ jobId: "old", checkpointId: 1 })`,
  );
  assert.equal(
    resumeHint({ jobId: "j", latestWritten: undefined, restoreFrom: null }),
    "; it has no completed checkpoint",
  );
});
