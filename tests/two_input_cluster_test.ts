/**
 * Two-input operators in cluster mode: `examples/dynamic_thresholds.ts
 * --nats` (a keyed stream connected with a broadcast stream, a
 * `KeyedBroadcastProcessFunction` at parallelism 2) runs on a coordinator
 * and two workers of one slot each, so input edges (a hash edge numbered 1,
 * a broadcast edge numbered 2) cross processes. The alert lines the workers
 * print, sorted, must be exactly the alerts computed without Weir.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";
import { alertsOf, READINGS, THRESHOLDS } from "../examples/dynamic_thresholds.ts";

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
