/**
 * Smoke test of `cluster_channel.ts` (`deno task bench:cluster`): a tiny run
 * with a coordinator and two workers, whose count and checksum checks must
 * pass for raw NATS, for Weir, and for Weir between two slot threads of one
 * worker (through a port).
 *
 * The benchmark starts a NATS server of its own (no `--nats`): a cluster
 * needs a server (or account) to itself, as its subjects are
 * `weir.cluster.*`, and other cluster tests run at the same time.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";

Deno.test("cluster_channel.ts checks raw and Weir runs and prints interleaved medians and ratios", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/cluster_channel.ts",
    "--records",
    "20000",
    "--rounds",
    "1",
  ]);
  const r = expectResult(run, [
    "raw_eps",
    "weir_eps",
    "raw_eps_cpu",
    "weir_eps_cpu",
    "ratio",
    "ratio_cpu",
    "ports_eps",
    "ports_eps_cpu",
    "ports_ratio",
    "ports_ratio_cpu",
    "rounds",
  ]);
  assert.equal(r.rounds, 1);
  assert.match(run.output, /round 1: weir/);
  assert.match(run.output, /round 1: ports/);
});
