/**
 * Smoke test of `state_snapshot.ts` (`deno task bench:snapshot`): a tiny
 * run, whose check of every written snapshot must pass.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";

Deno.test("state_snapshot.ts checks the snapshots it writes and prints the pause, the write and the in-flight ratio", async () => {
  const run = await runBench([
    "run",
    "-A",
    "--v8-flags=--expose-gc",
    "bench/state_snapshot.ts",
    "--sizes",
    "1000,20000",
    "--rounds",
    "1",
  ]);
  const r = expectResult(run, [
    "keys",
    "pause_ms",
    "pause_max_ms",
    "full_copy_ms",
    "write_ms",
    "write_cpu_ms",
    "in_flight_ratio",
  ]);
  assert.equal(r.keys, 20000);
  assert.ok(r.in_flight_ratio! > 0);
});
