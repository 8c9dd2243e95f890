/**
 * Smoke test of `incremental_checkpoint.ts`: a 1 MB state, its restore check
 * passing, and its figures parsing. Nothing is asserted on timing.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";

Deno.test("incremental_checkpoint.ts restores what it checkpointed and uploads less per incremental checkpoint", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/incremental_checkpoint.ts",
    "--mb",
    "1",
    "--checkpoints",
    "2",
    "--records",
    "20000",
    "--rounds",
    "1",
  ]);
  const r = expectResult(run, ["full_bytes", "incremental_bytes", "write_ratio"]);
  assert.ok(r.incremental_bytes! < r.full_bytes! / 10, JSON.stringify(r));
});
