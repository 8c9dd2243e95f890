/**
 * Unit tests of the benchmarks' rounds: interleaving, medians, per-round
 * ratios and CPU readings.
 *
 * @module
 */

import assert from "node:assert/strict";
import { cpuBetween, median, readCpu, runRounds } from "./_rounds.ts";

Deno.test("runRounds() runs the variants interleaved, A B A B, and tells each what ran before it", async () => {
  const order: string[] = [];
  const rounds = await runRounds<number>({
    rounds: 3,
    variants: [
      { name: "a", run: ({ round }) => (order.push(`a${round}`), 10 * round) },
      {
        name: "b",
        run: ({ round, earlier }) => {
          order.push(`b${round}`);
          assert.deepEqual(earlier.map((s) => s.variant), ["a"]);
          return 2 * earlier[0]!.value;
        },
      },
    ],
  });
  assert.deepEqual(order, ["a1", "b1", "a2", "b2", "a3", "b3"]);
  assert.equal(rounds.count, 3);
  assert.deepEqual(rounds.samples("b").map((s) => [s.round, s.value]), [[1, 20], [2, 40], [3, 60]]);
  assert.equal(rounds.median("a", (s) => s.value), 20);
});

Deno.test("Rounds.ratio() gives per-round ratios, their median and the ratio of medians", async () => {
  const values: Record<string, number[]> = { engine: [2, 9, 3], baseline: [4, 10, 12] };
  const rounds = await runRounds<number>({
    rounds: 3,
    variants: ["baseline", "engine"].map((name) => ({
      name,
      run: ({ round }) => values[name]![round - 1]!,
    })),
  });
  const r = rounds.ratio("engine", "baseline", (s) => s.value);
  assert.deepEqual(r.perRound, [0.5, 0.9, 0.25]);
  assert.equal(r.medianOfRatios, 0.5);
  assert.equal(r.ratioOfMedians, 3 / 10);
  assert.throws(
    () => rounds.samples("nope"),
    /no variant 'nope': the variants are baseline, engine/,
  );
});

Deno.test("runRounds() refuses a round count that is not a positive integer, and duplicate names", async () => {
  const v = { name: "a", run: () => 1 };
  await assert.rejects(
    () => runRounds({ rounds: 0, variants: [v] }),
    /'rounds' must be a positive integer: current value is 0/,
  );
  await assert.rejects(() => runRounds({ rounds: 1, variants: [v, v] }), /distinct names/);
});

Deno.test("runRounds() stops at the first failed check of a variant", async () => {
  let runs = 0;
  await assert.rejects(
    () =>
      runRounds({
        rounds: 3,
        variants: [{
          name: "a",
          run: () => {
            if (++runs === 2) throw new Error("checksum: expected 1, got 2");
            return 0;
          },
        }],
      }),
    /expected 1, got 2/,
  );
  assert.equal(runs, 2);
});

Deno.test("median() takes the middle value, or the mean of the two middle ones", () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(median([])));
});

Deno.test("readCpu() counts the CPU time of a child process once it was waited for", async () => {
  const before = readCpu();
  if (before.childrenMs === undefined) return; // no /proc: nothing to check
  // A child that burns CPU until it has used 300 ms of it (CPU time, not a sleep).
  const script = "const t=performance.now();" +
    "while(process.cpuUsage().user<300000 && performance.now()-t<30000){}";
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", `import process from "node:process";${script}`],
  }).output();
  assert.equal(out.code, 0);
  const used = cpuBetween(before, readCpu());
  assert.ok(used.childrenMs! >= 250, `children used ${used.childrenMs} ms of CPU`);
});
