import assert from "node:assert/strict";
import { type IntervalJoinShape, matchInterval } from "./interval_join.ts";
import { formatRow } from "./row.ts";

const shape: IntervalJoinShape = {
  joinType: "LeftOuterJoin",
  filter: null,
  leftArity: 1,
  rightArity: 1,
  leftTime: 0,
  rightTime: 0,
  lower: -2_000, // l.rt - r.rt in [-2 s, 1 s]
  upper: 1_000,
};

Deno.test("matchInterval pairs a left row with right rows in [t - upper, t - lower]", () => {
  const right = [
    [8_000, [{ fields: [8_000], matched: false }]],
    [9_000, [{ fields: [9_000], matched: true }]],
    [12_000, [{ fields: [12_000], matched: false }]],
    [12_001, [{ fields: [12_001], matched: false }]],
  ] as const;
  const m = matchInterval(shape, [10_000], 10_000, true, right);
  assert.deepEqual(m.pairs.map(formatRow), ["+I(10000,9000)", "+I(10000,12000)"]);
  assert.deepEqual(m.newlyMatched, [[12_000, 0]], "only rows not matched before");
});

Deno.test("matchInterval pairs a right row with left rows in [t + lower, t + upper], through the filter", () => {
  const left = [
    [7_000, [{ fields: [7_000], matched: false }]],
    [9_500, [{ fields: [9_500], matched: false }, { fields: [9_501], matched: false }]],
  ] as const;
  const filtered = { ...shape, filter: (f: readonly unknown[]) => f[0] !== 9_501 };
  const m = matchInterval(filtered, [10_000], 10_000, false, left);
  assert.deepEqual(m.pairs.map(formatRow), ["+I(9500,10000)"]);
  assert.deepEqual(m.newlyMatched, [[9_500, 0]]);
});
