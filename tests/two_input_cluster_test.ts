/**
 * Two-input operators in cluster mode: `examples/dynamic_thresholds.ts
 * --nats` (a keyed stream connected with a broadcast stream, a
 * `KeyedBroadcastProcessFunction` at parallelism 2) runs on a coordinator
 * and two workers of one slot each, so input edges (a hash edge numbered 1,
 * a broadcast edge numbered 2) cross processes. The alert lines the workers
 * print, sorted, must be exactly the alerts computed without Weir.
 *
 * `jobs/two_input_job.ts --fail-once` (a `KeyedCoProcessFunction` with
 * keyed state and event-time timers over inputs of different parallelism)
 * fails once after checkpoints and restarts from one on the cluster: every
 * line it prints (at least once: the print sink is not transactional) must
 * be right and none missing.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { alertsOf, READINGS, THRESHOLDS } from "../examples/dynamic_thresholds.ts";
import { expectedLines } from "./jobs/two_input_job.ts";

const JOB_TIMEOUT_MS = 180_000;

Deno.test({
  name:
    "cluster: the dynamic thresholds example's two-input operator gives exactly the expected alerts across two workers",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const nats = await startNatsServer({ jetstream: true });
    const server = serveDirectory();
    const cluster = new TestCluster({ nats: nats.url, workers: 2, slots: 1 });
    try {
      await cluster.start();
      const job = new Proc("job", [
        "run",
        "-A",
        `${server.url}examples/dynamic_thresholds.ts`,
        "--nats",
        nats.url,
      ]);
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      const output = cluster.workers.map((w) => w.output).join("\n");
      for (const w of cluster.workers) assert.match(w.output, /starting a thread for job/);
      const alerts = [...output.matchAll(/^alert:\d+> (.*)$/gm)].map((m) => m[1]!);
      assert.deepEqual(alerts.sort(), alertsOf(READINGS, THRESHOLDS).sort(), output);
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

Deno.test({
  name:
    "cluster: a keyed co-process job restarts from a checkpoint after a failure and loses nothing",
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
        `${server.url}tests/jobs/two_input_job.ts`,
        "--nats",
        nats.url,
        "--fail-once",
      ]);
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      const restarts = /RESULT restarts=(\d+) checkpoints=(\d+)/.exec(job.output);
      assert.ok(restarts, job.output);
      assert.equal(restarts[1], "1", job.output);
      assert.match(
        cluster.coordinator.output,
        /restarting as attempt 1 \(restart 1\) from checkpoint \d+/,
        "the restart restored a checkpoint",
      );
      const output = cluster.workers.map((w) => w.output).join("\n");
      const lines = [...output.matchAll(/^join:\d+> (.*)$/gm)].map((m) => m[1]!);
      assert.deepEqual([...new Set(lines)].sort(), expectedLines());
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
