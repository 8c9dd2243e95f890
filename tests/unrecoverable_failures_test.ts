/**
 * Errors a retry cannot fix end a cluster job at once, with their cause
 * (`runtime/failure.ts`, Flink's `SuppressRestartsException`), under the
 * default restart strategy of a cluster job (checkpointing on: restart
 * without limit): a missing input file (absolute, and relative to the
 * worker's directory), a missing JetStream stream, a job module that throws
 * while a worker loads it, an invalid setting found while it loads there,
 * and a graph that differs on the worker. For each, the client exits
 * non-zero within a bound, prints the cause once and no uncaught stack, never
 * says the job restarted, and `weir list` shows the job FAILED at attempt 0.
 *
 * A job submitted while no worker is registered is listed as
 * WAITING_FOR_RESOURCES (the client says what it waits for), and runs once
 * a worker joins.
 *
 * The cluster (a coordinator and a worker, `cli.ts` processes) runs on a
 * NATS server of the test's own. Job modules are imported by `file://` URL
 * (same host).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Proc, REPO_ROOT, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { waitUntil } from "./_wait.ts";

/** The job module, by path (workers import its `file://` URL). */
const JOB = join(REPO_ROOT, "tests/jobs/unrecoverable_job.ts");

/** A bound for failing, not a measurement: before the fix, these jobs restarted forever. */
const CLIENT_TIMEOUT_MS = 120_000;

interface ListedJob {
  readonly jobId: string;
  readonly status: string;
  readonly attempt: number;
  readonly error?: string;
  readonly waitingForSlots?: string;
}

async function listJobs(cluster: TestCluster): Promise<ListedJob[]> {
  const { code, output } = await cluster.cli("list", "--json");
  assert.equal(code, 0, output);
  return (JSON.parse(output.trim().split("\n").at(-1)!) as { jobs: ListedJob[] }).jobs;
}

function submit(cluster: TestCluster, ...args: string[]): Proc {
  return new Proc("job", ["run", "-A", JOB, "--nats", cluster.options.nats, ...args]);
}

/** The job id the client printed on submission. */
function submittedId(output: string): string {
  const id = /weir: submitted job (\S+) /.exec(output)?.[1];
  assert.ok(id !== undefined, `no submission line in:\n${output}`);
  return id;
}

/**
 * Runs the job with `args` to its end and asserts it failed once: exit code
 * 1, every one of `parts` in the client's output, the error printed once
 * (`once`, a text of it, appears once), no restart, no uncaught stack, and
 * the job FAILED at attempt 0 in `weir list`.
 */
async function assertFailsOnce(
  cluster: TestCluster,
  args: readonly string[],
  expected: { readonly once: string; readonly parts: readonly string[] },
): Promise<void> {
  const client = submit(cluster, ...args);
  const status = await client.endWithin(CLIENT_TIMEOUT_MS);
  const out = client.output;
  assert.equal(status.code, 1, out);
  for (const part of [expected.once, ...expected.parts]) {
    assert.ok(out.includes(part), `"${part}" not in:\n${out}`);
  }
  assert.equal(out.split(expected.once).length - 1, 1, `"${expected.once}" not once:\n${out}`);
  assert.doesNotMatch(out, /restarted as attempt/, out);
  assert.doesNotMatch(out, /Uncaught|\n {4}at /, out);
  assert.match(out, /failed without restarts/, out);
  const jobId = submittedId(out);
  const listed = (await listJobs(cluster)).find((j) => j.jobId === jobId);
  assert.equal(listed?.status, "FAILED", JSON.stringify(listed));
  assert.equal(listed?.attempt, 0, JSON.stringify(listed));
  assert.doesNotMatch(
    cluster.coordinator.output,
    new RegExp(`job ${jobId}: restarting as attempt`),
    cluster.coordinator.output,
  );
}

Deno.test({
  name: "cluster: errors a retry cannot fix fail the job once with their cause; a job waiting " +
    "for workers is listed as WAITING_FOR_RESOURCES and runs when one joins",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    const nats = await startNatsServer({ jetstream: true });
    const cluster = new TestCluster({ nats: nats.url, workers: 0, slots: 2 });
    const dir = await Deno.makeTempDir({ prefix: "weir-unrecoverable-" });
    try {
      await cluster.start();

      await t.step("a job submitted without workers waits for them, then runs", async () => {
        const client = submit(cluster, "--case", "ok", "--count", "100");
        try {
          await client.waitFor(/is WAITING_FOR_RESOURCES: waiting for slots/, 60_000);
          const jobId = submittedId(client.output);
          const waiting = (await listJobs(cluster)).find((j) => j.jobId === jobId);
          assert.equal(waiting?.status, "WAITING_FOR_RESOURCES", JSON.stringify(waiting));
          assert.match(waiting?.waitingForSlots ?? "", /0 registered, at least 1 needed/);
          await cluster.startWorker();
          const status = await client.endWithin(CLIENT_TIMEOUT_MS);
          assert.equal(status.code, 0, client.output);
          assert.match(client.output, /RESULT restarts=0/);
          const done = (await listJobs(cluster)).find((j) => j.jobId === jobId);
          assert.equal(done?.status, "FINISHED", JSON.stringify(done));
        } finally {
          await client.kill();
        }
      });

      await t.step("a missing input file", async () => {
        const path = join(dir, "missing.csv");
        await assertFailsOnce(cluster, ["--case", "missing-file", "--input", path], {
          once: `Cannot read ${path} in FileSource`,
          parts: ["FileNotReadableError", "no such file", "attempt 0"],
        });
      });

      await t.step("a missing input file given by a relative path", async () => {
        const path = `weir-missing-${crypto.randomUUID().slice(0, 8)}.csv`;
        await assertFailsOnce(cluster, ["--case", "missing-file", "--input", path], {
          // The worker resolves it against its own working directory, and says so.
          once: `Cannot read ${path} (resolved against the working directory ${REPO_ROOT} ` +
            `of this process: ${join(REPO_ROOT, path)})`,
          parts: ["FileNotReadableError"],
        });
      });

      await t.step("a missing JetStream stream", async () => {
        const stream = `weir-missing-${crypto.randomUUID().slice(0, 8)}`;
        await assertFailsOnce(
          cluster,
          ["--case", "missing-stream", "--stream", stream, "--servers", nats.url],
          { once: `the stream ${stream} does not exist`, parts: ["JetStreamStreamNotFoundError"] },
        );
      });

      await t.step("a job module that throws while a worker loads it", async () => {
        await assertFailsOnce(cluster, ["--case", "load-throws"], {
          once: "Error: induced failure while the job module loads on a worker",
          parts: ["JobModuleLoadError", `module file://${JOB} on slot`],
        });
      });

      await t.step("an invalid setting found while a worker loads the module", async () => {
        await assertFailsOnce(cluster, ["--case", "invalid-config"], {
          once: "RangeError: buffer timeout must be >= 0 ms: current value is -5",
          parts: ["JobModuleLoadError", `module file://${JOB} on slot`],
        });
      });

      await t.step("a graph that differs on the worker", async () => {
        await assertFailsOnce(cluster, ["--case", "graph-mismatch"], {
          once: "the job module built a different graph",
          parts: ["JobGraphMismatchError", "fingerprint"],
        });
      });

      // The worker survived every one of them.
      await waitUntil(async () => (await listJobs(cluster)).length >= 7, {
        timeoutMs: 30_000,
        missing: () => "the coordinator lists fewer than 7 jobs",
      });
      assert.equal(cluster.workers.length, 1);
      assert.doesNotMatch(cluster.coordinator.output, /lost: it/, cluster.coordinator.output);
    } catch (error) {
      console.error(cluster.logs());
      throw error;
    } finally {
      await cluster.stop();
      await nats.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "local mode: a job whose input file does not exist exits non-zero once, naming the path",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "weir-unrecoverable-local-" });
    try {
      const path = join(dir, "missing.csv");
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-lock", JOB, "--case", "missing-file", "--input", path],
        cwd: dir,
        env: { WEIR_NATS_URL: "" },
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      }).output();
      const out = new TextDecoder().decode(output.stderr) + new TextDecoder().decode(output.stdout);
      assert.equal(output.signal, null, `killed after ${CLIENT_TIMEOUT_MS} ms:\n${out}`);
      assert.equal(output.code, 1, out);
      const once = `Cannot read ${path} in FileSource`;
      assert.equal(out.split(once).length - 1, 1, `"${once}" not once:\n${out}`);
      assert.match(out, /FileNotReadableError/, out);
      assert.match(out, /failed without restarts/, out);
      assert.doesNotMatch(out, /Uncaught|\n {4}at |attempt 1/, out);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "local mode: a job that fails on every attempt ends after the default 3 restarts, " +
    "with its cause",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-lock", JOB, "--case", "fails-always"],
      env: { WEIR_NATS_URL: "" },
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
    }).output();
    const out = new TextDecoder().decode(output.stderr) + new TextDecoder().decode(output.stdout);
    assert.equal(output.signal, null, `killed after ${CLIENT_TIMEOUT_MS} ms:\n${out}`);
    assert.equal(output.code, 1, out);
    assert.match(out, /fixed-delay used all 3 restart attempts/, out);
    assert.match(out, /induced failure on every attempt/, out);
    assert.match(out, /attempt 3/, out);
    assert.doesNotMatch(out, /attempt 4|Uncaught|\n {4}at /, out);
  },
});
