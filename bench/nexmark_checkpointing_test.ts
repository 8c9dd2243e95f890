/**
 * Smoke test of `nexmark_checkpointing.ts`: both queries, every variant,
 * with checkpoints often enough that several complete, the equal-count
 * check passing and the figures parsing. Nothing is asserted on timing.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";

Deno.test("nexmark_checkpointing.ts commits as many records with full and incremental checkpoints as without", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/nexmark_checkpointing.ts",
    "--events",
    "100000",
    "--rounds",
    "1",
    "--interval",
    "50",
  ]);
  // The last RESULT line: the keyed count with incremental checkpoints.
  const r = expectResult(run, [
    "eps_cpu",
    "ratio_cpu",
    "checkpoints",
    "sync_ms_max",
    "bytes_median",
  ]);
  assert.ok(r.checkpoints! >= 2, JSON.stringify(r));
  for (const variant of ["none", "full", "incremental"]) {
    for (const query of ["dedup", "count"]) {
      assert.match(run.output, new RegExp(`RESULT query=${query} variant=${variant} `));
    }
  }
});
