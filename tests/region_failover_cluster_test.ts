/**
 * Region failover in cluster mode: a coordinator and two worker processes
 * of one slot each run `jobs/region_failover_job.ts` (two forward pipelines
 * at parallelism 2, so two pipelined regions). The map of subtask 0 throws
 * once on attempt 0. Region 0 restarts as attempt 1; region 1's map opens
 * once, on attempt 0, and closes in the same slot thread; and the final
 * count and sum in each map's operator state are those of a run without
 * failure (exactly-once state: the region restored its checkpoint and its
 * source rewound to the checkpointed offsets).
 *
 * @module
 */

import assert from "node:assert/strict";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";

const COUNT = 2000;
const JOB_TIMEOUT_MS = 120_000;

/** Subtask `i` of the interleaved sequence 1..COUNT at parallelism 2: its count and sum. */
function expected(subtask: number): { count: number; sum: number } {
  let count = 0;
  let sum = 0;
  for (let n = 1 + subtask; n <= COUNT; n += 2) {
    count++;
    sum += n;
  }
  return { count, sum };
}

Deno.test({
  name:
    "cluster: a map failure restarts only its region; the other region's subtask keeps its attempt and thread, and state stays exactly-once",
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
        `${server.url}tests/jobs/region_failover_job.ts`,
        "--nats",
        nats.url,
        "--count",
        String(COUNT),
      ]);
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      assert.match(job.output, /RESULT restarts=1/);
      const output = cluster.workers.map((w) => w.output).join("\n");
      const opens = [...output.matchAll(/region-job open subtask=(\d) attempt=(\d+) thread=(\S+)/g)]
        .map((m) => ({ subtask: Number(m[1]), attempt: Number(m[2]), thread: m[3]! }));
      const closes = [
        ...output.matchAll(
          /region-job close subtask=(\d) attempt=(\d+) thread=(\S+) count=(\d+) sum=(\d+)/g,
        ),
      ].map((m) => ({
        subtask: Number(m[1]),
        attempt: Number(m[2]),
        thread: m[3]!,
        count: Number(m[4]),
        sum: Number(m[5]),
      }));
      const context = `opens ${JSON.stringify(opens)}; closes ${JSON.stringify(closes)}`;
      // Region 1 was never redeployed: one open, on attempt 0, and its close in that thread.
      const open1 = opens.filter((o) => o.subtask === 1);
      assert.deepEqual(open1.map((o) => o.attempt), [0], context);
      const close1 = closes.filter((c) => c.subtask === 1);
      assert.equal(close1.length, 1, context);
      assert.equal(close1[0]!.thread, open1[0]!.thread, context);
      assert.deepEqual({ count: close1[0]!.count, sum: close1[0]!.sum }, expected(1), context);
      // Region 0 restarted once, as attempt 1, which ended with the exact state.
      assert.deepEqual(opens.filter((o) => o.subtask === 0).map((o) => o.attempt), [0, 1], context);
      const close0 = closes.filter((c) => c.subtask === 0 && c.attempt === 1);
      assert.equal(close0.length, 1, context);
      assert.deepEqual({ count: close0[0]!.count, sum: close0[0]!.sum }, expected(0), context);
      assert.match(cluster.logs(), /region failover of region 0 \(v0#0, v1#0, v2#0\)/);
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
