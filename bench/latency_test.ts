/**
 * Smoke test of `latency.ts` (`deno task bench:latency`): a tiny run with a
 * coordinator and two workers on a NATS server of its own, whose count and
 * checksum checks must pass at max rate and at a fixed rate; and the parsing
 * of variant names.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";
import { parseVariant } from "./latency.ts";

Deno.test("latency.ts checks every run's counts and checksums and prints percentiles per variant", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/latency.ts",
    "--max-records",
    "20000",
    "--max-runs",
    "1",
    "--rounds",
    "1",
    "--fraction",
    "0.05",
    "--duration-s",
    "0.5",
    "--variants",
    "bt10,bt1-cr16-alo",
  ]);
  const r = expectResult(run, [
    "max_eps",
    "target_eps",
    "bt10_eps",
    "bt10_p99_ms",
    "bt10_p999_ms",
    "bt1_cr16_alo_eps",
    "bt1_cr16_alo_max_ms",
    "bt10_timer_p99_ms",
    "rounds",
  ]);
  assert.equal(r.rounds, 1);
  assert.ok(r.max_eps! > 0 && r.bt10_eps! > 0);
  assert.match(run.output, /every run's counts and checksums checked/);
  assert.match(run.output, /checkpoints of all runs \(\d+;/);
  assert.match(
    run.output,
    /maximum sustainable load: [\d.]+[Mk] records\/s \(median of 1 runs; after the warm-up alone [\d.]+[Mk] records\/s\)/,
  );
});

Deno.test("a latency variant's name sets buffer timeout, credits, checkpoints and mode", () => {
  assert.deepEqual(parseVariant("bt10"), {
    bufferTimeoutMs: 10,
    credits: 8,
    checkpointMs: 1000,
    mode: "exactly-once",
  });
  assert.deepEqual(parseVariant("bt0-cr32-nocp"), {
    bufferTimeoutMs: 0,
    credits: 32,
    checkpointMs: 0,
    mode: "exactly-once",
  });
  assert.equal(parseVariant("bt5-alo").mode, "at-least-once");
  assert.throws(() => parseVariant("bt10-cr0"), /current value is 'bt10-cr0'/);
  assert.throws(() => parseVariant("fast"), /bt<ms>\[-cr<credits>\]\[-nocp\|-alo\]/);
});
