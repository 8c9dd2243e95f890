/**
 * Smoke test of `inline_state.ts`: one tiny round on a cluster of its own
 * (a private NATS server: cluster subjects are `weir.cluster.*`). Its
 * checks (counts and checksums) must pass, and the counts it reports must
 * show the feature: with the default memory threshold this small job
 * writes no state object to the Object Store, with 0 it writes some.
 * Nothing is asserted on timing.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";

Deno.test("inline_state.ts writes no state object with the default threshold and some with 0", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/inline_state.ts",
    "--rounds",
    "1",
    "--records",
    "20000",
    "--rate",
    "20000",
  ]);
  const r = expectResult(run, [
    "writes_base",
    "writes_inline",
    "msgs_base",
    "msgs_inline",
    "rounds",
  ]);
  assert.equal(r.rounds, 1);
  assert.equal(r.writes_inline, 0, run.output);
  assert.ok(r.writes_base! > 0, run.output);
  assert.ok(r.msgs_inline! < r.msgs_base!, run.output);
});
