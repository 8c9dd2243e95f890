/**
 * Smoke test of `sqlite_state.ts` (`deno task bench:sqlite`): a tiny run,
 * whose per-run check (the sum over all keys read back) must pass.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";

Deno.test("sqlite_state.ts checks every run and prints the SQLite/heap ratios inside and beyond the cache", async () => {
  const run = await runBench([
    "run",
    "-A",
    "--v8-flags=--expose-gc",
    "bench/sqlite_state.ts",
    "--records",
    "5000",
    "--cache",
    "100",
    "--rounds",
    "2",
  ]);
  const r = expectResult(run, [
    "heap_fit_eps",
    "sqlite_fit_eps",
    "heap_10x_eps",
    "sqlite_10x_eps",
    "ratio_fit",
    "ratio_10x",
    "rounds",
  ]);
  assert.equal(r.rounds, 2);
  assert.ok(r.sqlite_10x_eps! > 0 && r.heap_10x_eps! > 0, run.output);
  assert.match(run.output, /round 2: sqlite-10x/);
  assert.match(run.output, /every run's sum over all keys checked/);
});
