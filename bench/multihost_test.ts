/**
 * Smoke test of `multihost.ts` (`deno task bench:multihost`): a tiny run of
 * one round on 2 simulated hosts, whose count and checksum checks must pass
 * for both variants (single host, and one worker per network namespace).
 * Needs root and iproute2's `ip`, like the benchmark; skipped, saying which
 * is missing, otherwise.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";
import { netnsUnavailable } from "../tests/_netns.ts";

const skip = netnsUnavailable();
if (skip !== undefined) console.warn(`bench/multihost_test.ts is skipped: ${skip}`);

Deno.test({
  name: "multihost.ts checks both variants' checksums on simulated hosts and prints their ratio",
  ignore: skip !== undefined,
  fn: async () => {
    const run = await runBench([
      "run",
      "-A",
      "bench/multihost.ts",
      "--records",
      "20000",
      "--rounds",
      "1",
      "--hosts",
      "2",
    ]);
    const r = expectResult(run, [
      "single_eps",
      "multihost_eps",
      "single_eps_cpu",
      "multihost_eps_cpu",
      "ratio",
      "ratio_cpu",
      "rounds",
    ]);
    assert.equal(r.rounds, 1);
    assert.match(run.output, /every run's counts and checksums checked/);
  },
});
