/**
 * Cluster mode's in-thread exchanges (DESIGN.md §15, `thread_local.ts`):
 * subtasks of one job on one slot thread pass keyBy records as the objects
 * themselves; records for a subtask in another process are encoded. The job
 * (`jobs/in_thread_exchange_job.ts`) counts, in its keyed subtasks, the
 * records that arrived as the very objects made in their thread.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";

const COUNT = 2000;
const JOB_TIMEOUT_MS = 120_000;

/** Runs the job on `workers` workers of one slot each; returns the keyed subtasks' counts. */
async function run(workers: number): Promise<{ shared: number; copied: number }> {
  const nats = await startNatsServer({ jetstream: true });
  const server = serveDirectory();
  const cluster = new TestCluster({ nats: nats.url, workers, slots: 1 });
  try {
    await cluster.start();
    const job = new Proc("job", [
      "run",
      "-A",
      `${server.url}tests/jobs/in_thread_exchange_job.ts`,
      "--nats",
      nats.url,
      "--count",
      String(COUNT),
    ]);
    const status = await job.endWithin(JOB_TIMEOUT_MS);
    assert.equal(status.code, 0, job.output);
    assert.match(job.output, /RESULT restarts=0/);
    const output = cluster.workers.map((w) => w.output).join("\n");
    const lines = [...output.matchAll(/exchange subtask=(\d) shared=(\d+) copied=(\d+)/g)];
    assert.equal(lines.length, 2, `expected one line per keyed subtask:\n${output}`);
    return {
      shared: lines.reduce((n, m) => n + Number(m[2]), 0),
      copied: lines.reduce((n, m) => n + Number(m[3]), 0),
    };
  } catch (error) {
    console.error(cluster.logs());
    throw error;
  } finally {
    await cluster.stop();
    await server.close();
    await nats.stop();
  }
}

Deno.test({
  name: "cluster: subtasks on one slot thread pass keyBy records as the objects themselves",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    assert.deepEqual(await run(1), { shared: COUNT, copied: 0 });
  },
});

Deno.test({
  name: "cluster: keyBy records for a subtask in another process arrive encoded, none lost",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { shared, copied } = await run(2);
    assert.equal(shared + copied, COUNT);
    assert.ok(copied > 0, `no record crossed processes (${shared} shared)`);
  },
});
