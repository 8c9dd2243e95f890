/**
 * Smoke test of `cluster_recovery.ts` (`deno task bench:recovery`): one
 * recovery of the baseline case (local recovery on, the killed worker
 * restarted with its id). The benchmark fails when the coordinator's structured events (`worker-lost`,
 * `attempt-deploying`, `attempt-running`, `checkpoint-completed`) are
 * missing, or when a restored record found no state for its key.
 *
 * The benchmark starts a NATS server of its own (no `--nats`): a cluster
 * needs a server (or account) to itself, as its subjects are
 * `weir.cluster.*`, and other cluster tests run at the same time.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";

Deno.test("cluster_recovery.ts splits a real recovery into phases from the coordinator's events", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/cluster_recovery.ts",
    "--rounds",
    "1",
    "--only",
    "baseline",
    "--baseline-keys",
    "10",
    "--checkpoint-ms",
    "300",
    // The product's default: a loaded CI machine can stall a worker for over a second.
    "--heartbeat-timeout",
    "3000",
  ]);
  const r = expectResult(run, ["baseline_ms", "rounds"]);
  assert.equal(r.rounds, 1);
  assert.match(run.output, /killed attempt \d+, recovered as attempt \d+ from #\d+/);
  // Each run reports where the restarted attempt read its keyed handles from.
  assert.match(run.output, /keyed reads local\/remote \d+\/\d+\)/);
});
