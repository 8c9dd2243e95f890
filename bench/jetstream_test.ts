/**
 * Smoke test of `jetstream.ts` (`deno task bench:jetstream`): a tiny run
 * against the test NATS server, whose per-run checks (committed count and
 * checksum of the transactional sink's output, the blackhole's count and
 * checksum) must pass.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench, TEST_NATS_URL } from "./_smoke.ts";

Deno.test("jetstream.ts checks every run's committed output and prints the transactional/blackhole ratio", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/jetstream.ts",
    "--records",
    "20000",
    "--rounds",
    "2",
    "--batch-bytes",
    "4096",
    "--server",
    TEST_NATS_URL,
  ]);
  const r = expectResult(run, [
    "records",
    "eps",
    "blackhole_eps",
    "ratio",
    "eps_cpu",
    "blackhole_eps_cpu",
    "ratio_cpu",
    "rounds",
  ]);
  assert.equal(r.records, 20000);
  assert.equal(r.rounds, 2);
  assert.match(run.output, /round 2: blackhole/);
  assert.match(run.output, /every run's count and checksum \d+ checked/);
});
