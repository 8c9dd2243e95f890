/**
 * Cluster mode end to end: a coordinator and worker processes (`cli.ts`) on
 * a NATS server of the test's own, and jobs imported over HTTP (the job
 * module and Weir both come from `http://` URLs, as on another host).
 *
 * Exactly-once under SIGKILL with JetStream is checked by the chaos test;
 * here the print sink's final sums show the job completed.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { waitUntil } from "./_wait.ts";

/** Final running sums per key of 1..1000 keyed by n % 3. */
const FINAL_SUMS = ["sum=166833", "sum=167167", "sum=166500"];

/** How long a job client may run before the test kills it and fails, in ms. */
const JOB_TIMEOUT_MS = 120_000;

async function withCluster(
  fn: (cluster: TestCluster, jobUrl: string) => Promise<void>,
): Promise<void> {
  const nats = await startNatsServer({ jetstream: true });
  const server = serveDirectory();
  const cluster = new TestCluster({ nats: nats.url, workers: 2, slots: 2 });
  try {
    await cluster.start();
    await fn(cluster, `${server.url}tests/jobs/cluster_smoke.ts`);
  } catch (error) {
    console.error(cluster.logs());
    throw error;
  } finally {
    await cluster.stop();
    await server.close();
    await nats.stop();
  }
}

function submit(cluster: TestCluster, jobUrl: string, ...args: string[]): Proc {
  return new Proc("job", ["run", "-A", jobUrl, "--nats", cluster.options.nats, ...args]);
}

function workerOutput(cluster: TestCluster): string {
  return cluster.workers.map((w) => w.output).join("\n");
}

async function listJson(cluster: TestCluster) {
  const { code, output } = await cluster.cli("list", "--json");
  assert.equal(code, 0, output);
  return JSON.parse(output.trim().split("\n").at(-1)!) as {
    jobs: { jobId: string; status: string; name: string; error?: string }[];
    workers: { workerId: string; pid: number }[];
  };
}

Deno.test({
  name:
    "cluster: a job imported over HTTP runs on two workers, survives a subtask failure, and is listed",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withCluster(async (cluster, jobUrl) => {
      const before = await listJson(cluster);
      assert.equal(before.workers.length, 2);
      const job = submit(cluster, jobUrl, "--fail-once");
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      assert.match(job.output, /RESULT restarts=1 /);
      // Both workers ran subtasks (slots interleave across processes) ...
      for (const w of cluster.workers) {
        assert.match(w.output, /starting a thread for job/);
        assert.match(w.output, /sum=/);
      }
      // ... and the job's final sums were printed.
      for (const sum of FINAL_SUMS) assert.ok(workerOutput(cluster).includes(sum), sum);
      const after = await listJson(cluster);
      assert.equal(after.jobs[0]?.status, "FINISHED");
      assert.equal(after.jobs[0]?.name, "cluster smoke");
      // The subtask's exception did not take any worker process down.
      assert.deepEqual(
        after.workers.map((w) => w.pid).sort(),
        before.workers.map((w) => w.pid).sort(),
      );
    });
  },
});

Deno.test({
  name: "cluster: a SIGKILLed worker fails the attempt and the job restarts on the workers left",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withCluster(async (cluster, jobUrl) => {
      const job = submit(cluster, jobUrl, "--count", "1000", "--rate", "100");
      // Kill a worker once its subtasks printed output (checkpoints every 200 ms).
      const victim = cluster.workers[0]!;
      await victim.waitFor(/sum=/, 60_000);
      await new Promise((r) => setTimeout(r, 500));
      await victim.kill("SIGKILL");
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      const restarts = Number(/RESULT restarts=(\d+)/.exec(job.output)?.[1]);
      assert.ok(restarts >= 1, job.output);
      assert.match(cluster.coordinator.output, /lost: it sent no heartbeat/);
      for (const sum of FINAL_SUMS) assert.ok(cluster.workers[1]!.output.includes(sum), sum);
    });
  },
});

Deno.test({
  name:
    "cluster: bad job modules fail the job with a clear error and leave the workers running; cancel",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withCluster(async (cluster, jobUrl) => {
      const pids = (await listJson(cluster)).workers.map((w) => w.pid).sort();

      const throwing = submit(cluster, jobUrl, "--throw-in-slot");
      assert.equal((await throwing.endWithin(JOB_TIMEOUT_MS)).code, 1);
      assert.match(throwing.output, /boom while loading on a slot thread/);

      const varying = submit(cluster, jobUrl, "--vary-graph");
      assert.equal((await varying.endWithin(JOB_TIMEOUT_MS)).code, 1);
      assert.match(varying.output, /different graph.*fingerprint/);

      const endless = submit(cluster, jobUrl, "--count", "100000000", "--rate", "100");
      await cluster.workers[0]!.waitFor(/sum=/, 60_000);
      const running = (await listJson(cluster)).jobs.find((j) => j.status === "RUNNING");
      assert.ok(running, "a running job");
      const cancel = await cluster.cli("cancel", running.jobId);
      assert.equal(cancel.code, 0, cancel.output);
      assert.equal((await endless.endWithin(JOB_TIMEOUT_MS)).code, 1);
      assert.match(endless.output, /was cancelled/);

      const after = await listJson(cluster);
      assert.equal(after.jobs.find((j) => j.jobId === running.jobId)?.status, "CANCELED");
      assert.deepEqual(after.workers.map((w) => w.pid).sort(), pids);
    });
  },
});

Deno.test({
  name: "cluster: a job that failed for good resumes from its latest checkpoint in the bucket",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withCluster(async (cluster, jobUrl) => {
      const failing = submit(cluster, jobUrl, "--fail-always", "--rate", "500");
      assert.equal((await failing.endWithin(JOB_TIMEOUT_MS)).code, 1);
      const hint = /resumeFrom\(\{ jobId: "([^"]+)", checkpointId: (\d+) \}\)/.exec(failing.output);
      assert.ok(hint, failing.output);
      const marks = cluster.workers.map((w) => w.output.length);
      const resumed = submit(cluster, jobUrl, "--resume", hint[1]!);
      assert.equal((await resumed.endWithin(JOB_TIMEOUT_MS)).code, 0, resumed.output);
      assert.match(
        cluster.coordinator.output,
        new RegExp(`from checkpoint \\d+ of job ${hint[1]}`),
      );
      // The resumed run reaches the same final sums (each sink subtask prints in order, so
      // once they are all out, every line of the run is) ...
      const resumedOutput = () => cluster.workers.map((w, i) => w.output.slice(marks[i])).join("");
      await waitUntil(() => FINAL_SUMS.every((sum) => resumedOutput().includes(sum)), {
        timeoutMs: 10_000,
        missing: () =>
          `final sums the resumed run did not print: ${
            FINAL_SUMS.filter((sum) => !resumedOutput().includes(sum)).join(", ")
          }`,
      });
      // ... from the retained checkpoint: the records it covers are not read again. The print
      // sink prints a sum per record read, so fewer than the 1000 records are printed.
      const printed = resumedOutput().match(/sum=\d+/g)?.length ?? 0;
      assert.ok(printed < 1000, `the resumed run printed ${printed} sums, one per record read`);
    });
  },
});
