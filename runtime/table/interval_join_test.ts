import assert from "node:assert/strict";
import {
  type IntervalJoinShape,
  matchInterval,
  RowTimeIntervalJoinFunction,
} from "./interval_join.ts";
import { formatRow, type Row } from "./row.ts";
import { OperatorTestHarness } from "../task/operators/_operator_test_harness.ts";
import { CoProcessOperator } from "../task/operators/co_process_operators.ts";
import type { KeyedCoProcessFunction } from "../api/functions.ts";
import type { Key } from "../state/key_group.ts";

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

Deno.test("a row whose interval the watermark passed is padded on an outer side and dropped and counted on an inner one", async () => {
  const h = await OperatorTestHarness.open((env, output) =>
    new CoProcessOperator({
      uid: "interval-join",
      name: "IntervalJoin",
      fn: new RowTimeIntervalJoinFunction(
        { ...shape, leftArity: 2, rightArity: 2, leftTime: 1, rightTime: 1 },
        "IntervalJoin",
      ) as unknown as KeyedCoProcessFunction<Key, unknown, unknown, unknown>,
      env,
      output,
      keySelector: (r) => JSON.stringify([(r as Row).fields[0]]),
      keySelector2: (r) => JSON.stringify([(r as Row).fields[0]]),
    })
  );
  const row = (k: string, t: number): Row => ({ kind: "INSERT", fields: [k, t] });
  h.operator.processElement1(row("a", 10_000), undefined); // left, expires at 12 s
  h.operator.processElement2(row("a", 10_500), undefined); // right, expires at 11.5 s: pairs
  h.processWatermark(20_000); // both expire; the left one matched, nothing padded
  h.operator.processElement1(row("a", 15_000), undefined); // late left (outer): padded at once
  h.operator.processElement2(row("a", 16_000), undefined); // late right (inner): dropped
  assert.deepEqual((h.values() as Row[]).map(formatRow), [
    "+I(a,10000,a,10500)",
    "+I(a,15000,null,null)",
  ]);
  assert.deepEqual(h.operator.metrics(), { numLateRecordsDropped: 1 });
  await h.close();
});
