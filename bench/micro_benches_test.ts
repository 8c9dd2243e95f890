/**
 * Smoke test of the `deno bench` micro-benchmarks beside the runtime's code
 * (`runtime/**\/*_bench.ts`): each runs one iteration per benchmark
 * (`WEIR_BENCH_SMOKE=1`), so its set-up checks (codecs give back what they
 * were given, the state backend holds every key, every window's total
 * equals its records') run and must pass.
 *
 * @module
 */

import assert from "node:assert/strict";
import { runBench } from "./_smoke.ts";

const BENCHES = [
  "runtime/actor/codec_bench.ts",
  "runtime/task/record_codec_bench.ts",
  "runtime/state/heap_keyed_backend_bench.ts",
  "runtime/task/operators/window_operator_bench.ts",
];

Deno.test("the runtime's micro-benchmarks run and their checks pass", async (t) => {
  for (const file of BENCHES) {
    await t.step(file, async () => {
      const run = await runBench(["bench", "-A", "--no-check", file], { WEIR_BENCH_SMOKE: "1" });
      assert.equal(run.code, 0, run.output);
      assert.match(run.output, /summary/, run.output);
    });
  }
});
