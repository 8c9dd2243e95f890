/**
 * The local dashboard's actions raced: two stop-with-savepoints at once, two
 * cancels at once, a savepoint beside a cancel, over the REST API of a job
 * run in this process.
 */

import assert from "node:assert/strict";
import { startEndlessLocalJob } from "./_local_dashboard_test_kit.ts";
import { LocalDashboard } from "./local_dashboard.ts";
import type { LocalJob } from "./local_executor.ts";
import { summarizeJobGraph } from "../graph/job_graph_summary.ts";

const TIMEOUT_MS = 60_000;

/** A parsed JSON body, walked freely by the assertions. */
// deno-lint-ignore no-explicit-any
type Loose = Record<string, any>;

async function send(base: string, method: string, path: string): Promise<[number, Loose]> {
  const res = await fetch(new URL(path, base), { method });
  return [res.status, await res.json()];
}

/** The final state of savepoint operation `id`: polled until no longer IN_PROGRESS. */
async function operation(base: string, jobId: string, id: string): Promise<Loose> {
  const deadline = Date.now() + TIMEOUT_MS;
  while (Date.now() < deadline) {
    const [status, body] = await send(base, "GET", `/jobs/${jobId}/savepoints/${id}`);
    assert.equal(status, 200, JSON.stringify(body));
    if (body.status.id !== "IN_PROGRESS") return body;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`savepoint operation ${id} still in progress after ${TIMEOUT_MS} ms`);
}

/** A local run of an endless job, served by a dashboard on a free port. */
async function servedRun(dir: string): Promise<{ dashboard: LocalDashboard; job: LocalJob }> {
  const dashboard = LocalDashboard.start({ port: 0 });
  const { job, graph, checkpointing } = await startEndlessLocalJob(dir, "raced actions");
  dashboard.attach({
    job,
    graph: summarizeJobGraph(graph),
    checkpointing,
    moduleUrl: "file:///raced.ts",
  });
  return { dashboard, job };
}

Deno.test("local dashboard: two stop-with-savepoints at once: one stops the job with its savepoint, the other fails naming why; the job ends FINISHED", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-raced-stop-" });
  const { dashboard, job } = await servedRun(dir);
  const ended = job.result.then(() => "finished", (e: Error) => e.message);
  try {
    const base = dashboard.url;
    const replies = await Promise.all([
      send(base, "POST", `/jobs/${job.jobId}/stop`),
      send(base, "POST", `/jobs/${job.jobId}/stop`),
    ]);
    const ops = [];
    for (const [status, body] of replies) {
      assert.equal(status, 202, JSON.stringify(body));
      ops.push(await operation(base, job.jobId, body["request-id"]));
    }
    const stored = ops.filter((o) => o.operation.location !== undefined);
    const refused = ops.filter((o) => o.operation["failure-cause"] !== undefined);
    assert.equal(stored.length, 1, JSON.stringify(ops));
    assert.equal(refused.length, 1, JSON.stringify(ops));
    assert.ok(ops.every((o) => o.status.id === "COMPLETED"));
    assert.match(stored[0]!.operation.location, /savepoints\/savepoint-raced-actions-/);
    assert.ok((await Deno.stat(stored[0]!.operation.location)).isDirectory);
    assert.match(
      refused[0]!.operation["failure-cause"]["stack-trace"],
      new RegExp(`job ${job.jobId} is stopping with a savepoint already`),
    );
    assert.equal(await ended, "finished");
    const [, overview] = await send(base, "GET", "/jobs/overview");
    assert.equal(overview.jobs[0].state, "FINISHED");
    // Ended: a further stop is refused at once.
    const [late, lateBody] = await send(base, "POST", `/jobs/${job.jobId}/stop`);
    assert.deepEqual([late, lateBody], [409, { errors: [`Job ${job.jobId} is FINISHED`] }]);
  } finally {
    await dashboard.close();
    await job.result.catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("local dashboard: two cancels at once, and a savepoint beside them", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-raced-cancel-" });
  const { dashboard, job } = await servedRun(dir);
  const ended = job.result.then(() => "finished", (e: Error) => e.message);
  try {
    const base = dashboard.url;
    const replies = await Promise.all([
      send(base, "POST", `/jobs/${job.jobId}/savepoints`),
      send(base, "PATCH", `/jobs/${job.jobId}?mode=cancel`),
      send(base, "PATCH", `/jobs/${job.jobId}?mode=cancel`),
    ]);
    const [savepoint, first, second] = replies;
    assert.equal(savepoint[0], 202, JSON.stringify(savepoint));
    assert.deepEqual(first, [202, {}]);
    // The second cancel finds the job cancelled (the first cancel ends it
    // before the second is handled) or still running (then it cancels again,
    // which is harmless): never a 500.
    assert.ok(
      second[0] === 202 ||
        (second[0] === 409 &&
          second[1].errors[0] === `job ${job.jobId} is already CANCELED`),
      JSON.stringify(second),
    );
    // The savepoint either completed before the cancel or failed naming the end.
    const op = await operation(base, job.jobId, savepoint[1]["request-id"]);
    assert.equal(op.status.id, "COMPLETED");
    if (op.operation.location === undefined) {
      assert.match(op.operation["failure-cause"]["stack-trace"], /failed: job .* ended|cancel/);
    }
    assert.equal(await ended, `Job ${job.jobId} was cancelled`);
    const [, overview] = await send(base, "GET", "/jobs/overview");
    assert.equal(overview.jobs[0].state, "CANCELED");
  } finally {
    await dashboard.close();
    await job.result.catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});
