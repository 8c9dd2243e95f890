/**
 * The interval join in cluster mode: `jobs/interval_join_job.ts
 * --fail-once` (clicks at parallelism 1, buys at parallelism 2, the join at
 * parallelism 2) runs on a coordinator and two workers of two slots each,
 * so both input edges of the two-input operator cross threads and
 * processes. It fails once after a completed checkpoint and restarts from
 * one; every pair it prints (at least once: the print sink is not
 * transactional) must be one the bounds admit, and none may be missing.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { expectedPairs } from "./jobs/interval_join_job.ts";

const JOB_TIMEOUT_MS = 180_000;

Deno.test({
  name:
    "cluster: an interval join restarts from a checkpoint after a failure and prints every pair, and only those",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const nats = await startNatsServer({ jetstream: true });
    const server = serveDirectory();
    const cluster = new TestCluster({ nats: nats.url, workers: 2, slots: 2 });
    try {
      await cluster.start();
      const job = new Proc("job", [
        "run",
        "-A",
        `${server.url}tests/jobs/interval_join_job.ts`,
        "--nats",
        nats.url,
        "--fail-once",
      ]);
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      const result = /RESULT restarts=(\d+) checkpoints=(\d+)/.exec(job.output);
      assert.ok(result, job.output);
      assert.equal(result[1], "1", job.output);
      assert.match(
        cluster.coordinator.output,
        /restarting as attempt 1 \(restart 1\) from checkpoint \d+/,
        "the restart restored a checkpoint",
      );
      const output = cluster.workers.map((w) => w.output).join("\n");
      const lines = [...output.matchAll(/^join:\d+> (.*)$/gm)].map((m) => m[1]!);
      const expected = expectedPairs();
      assert.ok(expected.length > 500, `expected pairs: ${expected.length}`);
      assert.deepEqual([...new Set(lines)].sort(), expected);
    } catch (error) {
      console.error(cluster.logs());
      throw error;
    } finally {
      await cluster.stop();
      await server.close();
      await nats.stop();
    }
  },
});
