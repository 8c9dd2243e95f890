/**
 * Smoke test of `latency_uploads.ts`: a short run against the test NATS
 * server gives every mode's p99, and refuses a non-positive option naming it.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench, TEST_NATS_URL } from "./_smoke.ts";

Deno.test("latency_uploads.ts prints the p99 of data messages under each upload mode", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/latency_uploads.ts",
    "--nats",
    TEST_NATS_URL,
    "--duration-s",
    "8",
    "--blob-kib",
    "16",
  ]);
  const r = expectResult(run, ["none_p99_ms", "shared_p99_ms", "own_conn_p99_ms", "thread_p99_ms"]);
  assert.ok(Object.values(r).every((ms) => ms > 0));
  assert.match(run.output, /thread: p50 [\d.]+ ms, p99 [\d.]+ ms, .*\(n = [1-9]\d*\)/);
});

Deno.test("latency_uploads.ts refuses a non-positive option, naming it", async () => {
  const run = await runBench(["run", "-A", "bench/latency_uploads.ts", "--period-ms", "0"]);
  assert.notEqual(run.code, 0);
  assert.match(run.output, /--period-ms must be positive: current value is 0/);
});
