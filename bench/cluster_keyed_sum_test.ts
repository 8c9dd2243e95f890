/**
 * Smoke test of `cluster_keyed_sum.ts` (`deno task bench:cluster`): a tiny
 * run with a coordinator and two workers, whose count and checksum checks
 * must pass in local mode, at max rate and at a fixed rate.
 *
 * The benchmark starts a NATS server of its own (no `--nats`): a cluster
 * needs a server (or account) to itself, as its subjects are
 * `weir.cluster.*`, and other cluster tests run at the same time.
 *
 * @module
 */

import assert from "node:assert/strict";
import { expectResult, runBench } from "./_smoke.ts";

Deno.test("cluster_keyed_sum.ts checks the sources' and sinks' checksums and prints interleaved medians", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/cluster_keyed_sum.ts",
    "--records",
    "20000",
    "--rounds",
    "1",
    "--fraction",
    "0.05",
    "--duration-s",
    "0.5",
  ]);
  const r = expectResult(run, [
    "local_eps",
    "cluster_eps",
    "local_eps_cpu",
    "cluster_eps_cpu",
    "ratio",
    "ratio_cpu",
    "fixed_eps",
    "rounds",
  ]);
  assert.equal(r.rounds, 1);
  assert.match(run.output, /every run's counts and checksums checked/);
});

Deno.test("cluster_keyed_sum.ts with one worker of two slots (exchanges through ports) checks the same checksums", async () => {
  const run = await runBench([
    "run",
    "-A",
    "bench/cluster_keyed_sum.ts",
    "--workers",
    "1",
    "--slots",
    "2",
    "--records",
    "20000",
    "--rounds",
    "1",
    "--fraction",
    "0.05",
    "--duration-s",
    "0.5",
  ]);
  const r = expectResult(run, ["local_eps", "cluster_eps", "cluster_eps_cpu", "rounds"]);
  assert.equal(r.rounds, 1);
  assert.match(run.output, /coordinator \+ 1 worker\(s\) x 2 slot\(s\)/);
});
