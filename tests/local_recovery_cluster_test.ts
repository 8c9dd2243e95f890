/**
 * Local recovery in cluster mode (`runtime/task/local_state_store.ts`):
 * a worker process is SIGKILLed and restarted at once with the same id;
 * the coordinator sees the new process replace the old one, restarts the
 * job, and deploys the same subtasks to the same slots (round-robin over
 * the same workers). The restarted worker's keyed subtask restores from
 * its local copy (its `local-recovery-read` log lines) or, when the copy
 * was damaged while the worker was down, from checkpoint storage (its
 * `local-recovery-fallback` lines). Either way the job's final running sums
 * per key are exact: state was neither lost nor counted twice.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { startNatsServer } from "./_nats_server.ts";

/** Final running sums per key of 1..3000 keyed by n % 3 (`tests/jobs/cluster_smoke.ts`). */
const FINAL_SUMS = ["sum=1501500", "sum=1499500", "sum=1500500"];

/** How long a job client may run before the test kills it and fails, in ms. */
const JOB_TIMEOUT_MS = 120_000;

/**
 * Runs the smoke job on two workers with local recovery under a fresh
 * directory, SIGKILLs the first worker once its keyed subtask printed sums
 * and three checkpoints completed, calls `whileDown` with the victim's local state
 * directory, restarts it with the same id, and waits for the job's end.
 * @returns the restarted worker's output.
 */
async function killAndRestart(whileDown: (victimDir: string) => Promise<void>): Promise<string> {
  const nats = await startNatsServer({ jetstream: true });
  const server = serveDirectory();
  const localDir = await Deno.makeTempDir({ prefix: "weir-local-recovery-test-" });
  const cluster = new TestCluster({
    nats: nats.url,
    workers: 2,
    slots: 2,
    // Long enough that the restarted process replaces the victim (new instance, same id)
    // before the heartbeat timeout would deploy the job to the other worker alone.
    heartbeatTimeoutMs: 15_000,
    workerArgs: ["--local-state-dir", localDir],
    // Slot threads log their restore reads at info.
    env: { WEIR_LOG_LEVEL: "info" },
  });
  let job: Proc | undefined;
  try {
    await cluster.start();
    job = new Proc("job", [
      "run",
      "-A",
      `${server.url}tests/jobs/cluster_smoke.ts`,
      "--nats",
      nats.url,
      "--count",
      "3000",
      "--rate",
      "100",
      // Threshold 0: the tiny keyed state is a blob with a local copy, not inline in the metadata.
      "--memory-threshold",
      "0",
    ]);
    const victim = cluster.workers[0]!;
    const victimId = `w0-${Deno.pid}`;
    await victim.waitFor(/sum=/, 60_000);
    // Checkpoints every 200 ms: wait for three to complete (sealed locally after their acks).
    await cluster.coordinator.waitFor(
      /checkpoints: \d+ triggered, ([3-9]|\d\d+) completed/,
      60_000,
    );
    await new Promise((r) => setTimeout(r, 300));
    await victim.kill("SIGKILL");
    await whileDown(join(localDir, victimId));
    const restarted = await cluster.startWorker(victimId);
    const status = await job.endWithin(JOB_TIMEOUT_MS);
    assert.equal(status.code, 0, job.output);
    assert.match(job.output, /RESULT restarts=[1-9]/);
    assert.match(cluster.coordinator.output, /was replaced by another process with the same id/);
    const out = cluster.workers.map((w) => w.output).join("\n");
    for (const sum of FINAL_SUMS) assert.ok(out.includes(sum), `${sum} missing`);
    return restarted.output;
  } catch (error) {
    console.error(cluster.logs());
    if (job) console.error(`----- job\n${job.output}`);
    throw error;
  } finally {
    if (job) {
      try {
        job.child.kill("SIGKILL");
      } catch {
        // ended
      }
      await job.wait();
    }
    await cluster.stop();
    await server.close();
    await nats.stop();
    await Deno.remove(localDir, { recursive: true }).catch(() => {});
  }
}

/** Every file under `dir` (recursively), without the manifests. */
async function stateFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) out.push(...await stateFiles(path));
    else if (e.isFile && !e.name.startsWith("_manifest")) out.push(path);
  }
  return out;
}

Deno.test({
  name:
    "local recovery: a SIGKILLed worker restarted with its id restores its keyed subtask from its local copy, with exact sums",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    let filesWhileDown = 0;
    const output = await killAndRestart(async (dir) => {
      filesWhileDown = (await stateFiles(dir)).length;
    });
    assert.ok(filesWhileDown > 0, "the victim left local copies");
    // The keyed subtask's state (vertex v1, uid 'sum') came from the local copy.
    assert.match(
      output,
      /v1#0 of job .*: chk-\d+\/v1-0-a\d+\.keyed-sum \(\d+ bytes\) read from the local copy/,
    );
    assert.doesNotMatch(output, /local file fails its SHA-1/);
  },
});

Deno.test({
  name: "local recovery: a corrupt local copy falls back to checkpoint storage, with exact sums",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const output = await killAndRestart(async (dir) => {
      const files = await stateFiles(dir);
      assert.ok(files.length > 0, "the victim left local copies");
      for (const [i, file] of files.entries()) {
        const bytes = await Deno.readFile(file);
        if (i % 2 === 0 && bytes.length > 1) {
          await Deno.truncate(file, bytes.length - 1); // a partial copy
        } else if (bytes.length > 0) {
          bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0xff; // a corrupt one
          await Deno.writeFile(file, bytes);
        }
      }
    });
    assert.match(
      output,
      /read from checkpoint storage \((local file fails its SHA-1|local file has \d+ bytes|no sealed local copy)/,
    );
    assert.doesNotMatch(output, /keyed-sum \(\d+ bytes\) read from the local copy/);
  },
});
