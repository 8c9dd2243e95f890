/**
 * Smoke test of `checkpoint_storage.ts`: tiny blobs on the tests' NATS
 * server, every read compared with what was written.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench, TEST_NATS_URL } from "./_smoke.ts";

Deno.test("checkpoint_storage.ts writes, reads back and compares each blob, and prints ratios", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/checkpoint_storage.ts",
    "--nats",
    TEST_NATS_URL,
    "--sizes",
    "1000,20000",
    "--rounds",
    "2",
  ]);
  const r = expectResult(run, [
    "native_1000_put_ratio",
    "js_1000_get_ratio",
    "native_20000_put_ms",
    "js_20000_get_ratio",
    "rounds",
  ]);
  assert.equal(r.rounds, 2);
});
