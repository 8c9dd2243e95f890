import assert from "node:assert/strict";
import { Rounds, type Sample } from "../_rounds.ts";
import { BASELINE, ENGINE, type RunFigures, summarize, table } from "./report.ts";

const sample = (
  variant: string,
  round: number,
  o: { wallMs: number; cpuMs: number; count?: number },
): Sample<RunFigures> => ({
  variant,
  round,
  wallMs: o.wallMs,
  cpuMs: o.cpuMs,
  cpu: { selfMs: o.cpuMs, childrenMs: 0 },
  value: {
    count: o.count ?? 10,
    seconds: o.wallMs / 1000,
    checkpoints: variant === ENGINE ? 2 : 0,
  },
});

// 1000 events; per CPU second: engine 1000, 500, 250; baseline 2000, 2000, 500.
const rounds = new Rounds([
  [
    sample(ENGINE, 1, { wallMs: 2000, cpuMs: 1000 }),
    sample(BASELINE, 1, { wallMs: 500, cpuMs: 500 }),
  ],
  [
    sample(ENGINE, 2, { wallMs: 2000, cpuMs: 2000 }),
    sample(BASELINE, 2, { wallMs: 500, cpuMs: 500 }),
  ],
  [
    sample(ENGINE, 3, { wallMs: 4000, cpuMs: 4000 }),
    sample(BASELINE, 3, { wallMs: 2000, cpuMs: 2000 }),
  ],
]);

Deno.test("summarize reports medians per CPU second and the median of per-round ratios", () => {
  const r = summarize({ query: "q1", events: 1000, rounds });
  assert.equal(r.rounds, 3);
  assert.equal(r.count, 10);
  assert.equal(r.eps, 500); // 1000 events / 2 s (median of 2, 2, 4 s)
  assert.equal(r.epsPerCore, 500); // median of 1000, 500, 250
  assert.equal(r.baselineEpsPerCore, 2000); // median of 2000, 2000, 500
  assert.equal(r.cores, 1); // median of 0.5, 1, 1
  // Per round: 0.5, 0.25, 0.5 -> 0.5; the ratio of the medians would be 0.25.
  assert.equal(r.ratio, 0.5);
  assert.equal(r.ratioMin, 0.25);
  assert.equal(r.ratioMax, 0.5);
  assert.equal(r.checkpoints, 2);
  assert.match(
    table([r]),
    /\| q1 \| 1000 \| 10 \| 500 \| 1\.00 \| 500 \| 2000 \| 2000 \| 50\.0% \| 25\.0%–50\.0% \| 2 \|/,
  );
});

Deno.test("summarize rejects a run without CPU time and rounds that counted differently", () => {
  const still = new Rounds([[
    sample(ENGINE, 1, { wallMs: 1, cpuMs: 0 }),
    sample(BASELINE, 1, { wallMs: 1, cpuMs: 1 }),
  ]]);
  assert.throws(
    () => summarize({ query: "q0", events: 10, rounds: still }),
    {
      name: "RangeError",
      message: /engine run of round 1 measured no CPU time: current value is 0 ms/,
    },
  );
  const drift = new Rounds([
    [sample(ENGINE, 1, { wallMs: 1, cpuMs: 1 }), sample(BASELINE, 1, { wallMs: 1, cpuMs: 1 })],
    [
      sample(ENGINE, 2, { wallMs: 1, cpuMs: 1, count: 9 }),
      sample(BASELINE, 2, { wallMs: 1, cpuMs: 1 }),
    ],
  ]);
  assert.throws(
    () => summarize({ query: "q0", events: 10, rounds: drift }),
    { name: "RangeError", message: /round 2 counted 9 records, round 1 10/ },
  );
});
