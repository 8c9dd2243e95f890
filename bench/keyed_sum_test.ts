/**
 * Smoke test of `keyed_sum.ts` (`deno task bench`): a tiny run, whose
 * per-run checks (updates and checksum of every sink) must pass.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";

Deno.test("keyed_sum.ts checks every run and prints medians of interleaved rounds with CPU figures", async () => {
  const run = await runBench([
    "run",
    "-A",
    "--v8-flags=--expose-gc",
    "bench/keyed_sum.ts",
    "--records",
    "20000",
    "--rounds",
    "2",
  ]);
  const r = expectResult(run, [
    "hand_eps",
    "engine_eps",
    "engine_cp_eps",
    "hand_eps_cpu",
    "engine_eps_cpu",
    "engine_cp_eps_cpu",
    "ratio",
    "ratio_cpu",
    "rounds",
  ]);
  assert.equal(r.rounds, 2);
  assert.ok(r.engine_eps_cpu! > 0 && r.hand_eps_cpu! > 0, run.output);
  assert.match(run.output, /round 2: engine\+cp/);
  assert.match(run.output, /every run's 20000 updates and checksum \d+ checked/);
});
