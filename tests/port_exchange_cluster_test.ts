/**
 * Cluster mode with subtasks in two slot threads of one worker process:
 * their exchanges go through `MessagePort`s (`runtime/actor/port_transport.ts`),
 * so a NATS subscriber sees the control plane on the subtask mailboxes but
 * no data-plane message (buffer, in-band event or credit); a SIGKILL of
 * that worker still ends in exact sums after the job restarts on a new one;
 * and so does one slot thread crashing (an uncaught error) while the other
 * runs on.
 *
 * @module
 */

import assert from "node:assert/strict";
import { connect } from "../runtime/actor/nats_deps.ts";
import { decode } from "../runtime/actor/codec.ts";
import { isBufferFrame } from "../runtime/task/buffer_frame.ts";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";

/** Final running sums per key of 1..1000 keyed by n % 3 (`jobs/cluster_smoke.ts`). */
const FINAL_SUMS = ["sum=166833", "sum=167167", "sum=166500"];
const JOB_TIMEOUT_MS = 120_000;

/** Counts of what a NATS subscriber saw on the subtask mailboxes. */
interface MailboxCounts {
  /** Buffers, in-band events and credits. */
  dataPlane: number;
  /** Anything else (the coordinator's start, checkpoint triggers, ...). */
  control: number;
}

async function withOneWorker(
  fn: (cluster: TestCluster, jobUrl: string, seen: MailboxCounts) => Promise<void>,
): Promise<void> {
  const nats = await startNatsServer({ jetstream: true });
  const server = serveDirectory();
  const cluster = new TestCluster({ nats: nats.url, workers: 1, slots: 2 });
  const watcher = await connect({ servers: nats.url, name: "weir-test-mailbox-watcher" });
  const seen: MailboxCounts = { dataPlane: 0, control: 0 };
  watcher.subscribe("weir.*.*.task.>", {
    callback: (_error, msg) => {
      if (isBufferFrame(msg.data)) return void seen.dataPlane++;
      const t = (decode(msg.data) as { t?: unknown }).t;
      if (t === "buf" || t === "evt" || t === "credit") seen.dataPlane++;
      else seen.control++;
    },
  });
  try {
    await watcher.flush();
    await cluster.start();
    await fn(cluster, `${server.url}tests/jobs/cluster_smoke.ts`, seen);
  } catch (error) {
    console.error(cluster.logs());
    throw error;
  } finally {
    await watcher.close();
    await cluster.stop();
    await server.close();
    await nats.stop();
  }
}

function submit(cluster: TestCluster, jobUrl: string, ...args: string[]): Proc {
  return new Proc("job", ["run", "-A", jobUrl, "--nats", cluster.options.nats, ...args]);
}

/** The messages the slot threads said went through ports, summed over every release line. */
function portMessages(output: string): number {
  return [...output.matchAll(/: (\d+) messages \(\d+ bytes\) went through ports/g)]
    .reduce((n, m) => n + Number(m[1]), 0);
}

Deno.test({
  name:
    "cluster: two slot threads of one worker exchange through ports, and no data-plane message crosses NATS",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withOneWorker(async (cluster, jobUrl, seen) => {
      const job = submit(cluster, jobUrl, "--count", "1000");
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      const worker = cluster.workers[0]!;
      for (const sum of FINAL_SUMS) assert.ok(worker.output.includes(sum), sum);
      await worker.waitFor(/went through ports/, 30_000);
      assert.ok(portMessages(worker.output) > 0, worker.output);
      assert.ok(
        seen.control > 0,
        "the watcher saw no control message: it watches the wrong subjects",
      );
      assert.equal(seen.dataPlane, 0, "data-plane messages went through NATS");
    });
  },
});

Deno.test({
  name:
    "cluster: a SIGKILLed worker whose slot threads exchanged through ports is replaced and the sums are exact",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withOneWorker(async (cluster, jobUrl) => {
      const job = submit(cluster, jobUrl, "--count", "1000", "--rate", "100");
      const victim = cluster.workers[0]!;
      await victim.waitFor(/sum=/, 60_000);
      await victim.kill("SIGKILL");
      const replacement = await cluster.startWorker();
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      const restarts = Number(/RESULT restarts=(\d+)/.exec(job.output)?.[1]);
      assert.ok(restarts >= 1, job.output);
      for (const sum of FINAL_SUMS) assert.ok(replacement.output.includes(sum), sum);
      await replacement.waitFor(/went through ports/, 30_000);
      assert.ok(portMessages(replacement.output) > 0, replacement.output);
    });
  },
});

Deno.test({
  name:
    "cluster: a slot thread that crashes mid-run while its port peer runs on restarts the job, and the sums are exact",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await withOneWorker(async (cluster, jobUrl) => {
      const job = submit(
        cluster,
        jobUrl,
        "--count",
        "1000",
        "--rate",
        "200",
        "--crash-thread-once",
      );
      const status = await job.endWithin(JOB_TIMEOUT_MS);
      assert.equal(status.code, 0, job.output);
      const restarts = Number(/RESULT restarts=(\d+)/.exec(job.output)?.[1]);
      assert.ok(restarts >= 1, job.output);
      const worker = cluster.workers[0]!;
      assert.match(
        worker.output,
        /uncaught error in the slot thread of job .*planned uncaught error/,
      );
      for (const sum of FINAL_SUMS) assert.ok(worker.output.includes(sum), sum);
      await worker.waitFor(/went through ports/, 30_000);
      assert.ok(portMessages(worker.output) > 0, worker.output);
    });
  },
});
