import assert from "node:assert/strict";
import {
  bucketOfCleanup,
  cleanupTime,
  type IntervalJoinBounds,
  IntervalJoinOperator,
  isLate,
  relativeBounds,
} from "./interval_join_operator.ts";
import { OperatorTestHarness } from "./_operator_test_harness.ts";
import type { OperatorRestore } from "./operator.ts";
import type { IntervalJoinOperatorSpec, ProcessJoinFunction } from "../../api/interval_join.ts";
import { OutputTag } from "../../api/output_tag.ts";
import { MIN_WATERMARK } from "../../time/watermark.ts";
import { SuppressRestartsError } from "../../failure.ts";

/** An element of either side: key and label. */
type El = { key: string; label: string };

/** Emits `left.label+right.label@leftTs/rightTs`. */
const pairs: ProcessJoinFunction<El, El, string> = {
  processElement(left, right, ctx, out) {
    out.collect(
      `${left.label}+${right.label}@${ctx.getLeftTimestamp()}/${ctx.getRightTimestamp()}`,
    );
  },
};

function spec(
  lowerBound: number,
  upperBound: number,
  tags: { left?: OutputTag<unknown>; right?: OutputTag<unknown> } = {},
): IntervalJoinOperatorSpec {
  return {
    kind: "intervalJoin",
    fn: pairs as ProcessJoinFunction<unknown, unknown, unknown>,
    lowerBound,
    upperBound,
    leftLateDataTag: tags.left,
    rightLateDataTag: tags.right,
  };
}

async function open(s: IntervalJoinOperatorSpec, restore?: OperatorRestore) {
  return await OperatorTestHarness.open(
    (env, output) =>
      new IntervalJoinOperator({
        uid: "join",
        name: "IntervalJoin",
        env,
        output,
        keySelector: (e) => (e as El).key,
        keySelector2: (e) => (e as El).key,
        spec: s,
      }),
    restore === undefined ? {} : { restore },
  );
}

const left = (key: string, label: string): El => ({ key, label });
const right = left;

Deno.test("relativeBounds, cleanupTime and bucketOfCleanup follow Flink's IntervalJoinOperator for every sign of the bounds", () => {
  const cases: [IntervalJoinBounds, { left: number; right: number }][] = [
    // [lower, upper] -> cleanup time of an element at 100 on each side
    [{ lowerBound: -2, upperBound: 1 }, { left: 101, right: 102 }],
    [{ lowerBound: 0, upperBound: 5 }, { left: 105, right: 100 }],
    [{ lowerBound: -5, upperBound: 0 }, { left: 100, right: 105 }],
    [{ lowerBound: 3, upperBound: 7 }, { left: 107, right: 100 }],
    [{ lowerBound: -7, upperBound: -3 }, { left: 100, right: 107 }],
  ];
  for (const [bounds, expected] of cases) {
    const at = { left: cleanupTime("left", 100, bounds), right: cleanupTime("right", 100, bounds) };
    assert.deepEqual(at, expected, JSON.stringify(bounds));
    assert.equal(bucketOfCleanup("left", at.left, bounds), 100);
    assert.equal(bucketOfCleanup("right", at.right, bounds), 100);
  }
  assert.deepEqual(relativeBounds("right", { lowerBound: -2, upperBound: 1 }), {
    lower: -1,
    upper: 2,
  });
  assert.equal(isLate(5, MIN_WATERMARK), false);
  assert.equal(isLate(4, 5), true);
  assert.equal(isLate(5, 5), false);
});

Deno.test("IntervalJoinOperator joins each pair within [l + lower, l + upper] once, stamped with the later timestamp", async () => {
  const h = await open(spec(-2, 1));
  const op = h.operator;
  op.processElement1(left("a", "l0"), 0);
  op.processElement2(right("a", "r1"), 1); // l0+r1 (1 - 0 = 1 <= 1)
  op.processElement2(right("a", "r2"), 2); // 2 - 0 = 2 > 1: no pair
  op.processElement1(left("a", "l3"), 3); // r1 (1 - 3 = -2 >= -2), r2 (-1)
  op.processElement1(left("b", "l3b"), 3); // another key: nothing
  op.processElement2(right("a", "r4"), 4); // l3 (4 - 3 = 1)
  assert.deepEqual(h.records, [
    { value: "l0+r1@0/1", timestamp: 1 },
    { value: "l3+r1@3/1", timestamp: 3 },
    { value: "l3+r2@3/2", timestamp: 3 },
    { value: "l3+r4@3/4", timestamp: 4 },
  ]);
  await h.close();
});

Deno.test("exclusive bounds given to the API arrive moved by 1 ms: (-2, 1) joins differences -1..0 only", async () => {
  const h = await open(spec(-1, 0));
  h.operator.processElement1(left("a", "l"), 10);
  for (const ts of [8, 9, 10, 11]) h.operator.processElement2(right("a", `r${ts}`), ts);
  assert.deepEqual(h.values(), ["l+r9@10/9", "l+r10@10/10"]);
  await h.close();
});

Deno.test("the buffers empty as the watermark passes each element's cleanup time, and elements behind the watermark are dropped and counted", async () => {
  const h = await open(spec(-2, 1));
  const op = h.operator;
  op.processElement1(left("a", "l0"), 0); // cleanup at 0 + 1
  op.processElement2(right("b", "r5"), 5); // cleanup at 5 + 2
  assert.deepEqual(op.bufferedKeys(), { left: 1, right: 1 });
  h.processWatermark(1);
  assert.deepEqual(op.bufferedKeys(), { left: 0, right: 1 });
  h.processWatermark(6);
  assert.deepEqual(op.bufferedKeys(), { left: 0, right: 1 });
  // l6 is on time and still meets r5 (5 - 6 = -1); its own cleanup is at 6 + 1.
  op.processElement1(left("b", "l6"), 6);
  op.processElement1(left("b", "late"), 5); // 5 < watermark 6
  assert.deepEqual(op.bufferedKeys(), { left: 1, right: 1 });
  h.processWatermark(7);
  assert.deepEqual(op.bufferedKeys(), { left: 0, right: 0 });
  assert.deepEqual(h.values(), ["l6+r5@6/5"]);
  assert.equal(op.numLateRecordsDropped, 1);
  assert.deepEqual(op.metrics(), { numLateRecordsDropped: 1 });
  await h.close();
});

Deno.test("late elements go to their side's late-data output when a tag is set", async () => {
  const leftLate = new OutputTag<unknown>("left-late");
  const rightLate = new OutputTag<unknown>("right-late");
  const h = await open(spec(0, 0, { left: leftLate, right: rightLate }));
  h.processWatermark(10);
  h.operator.processElement1(left("a", "l"), 9);
  h.operator.processElement2(right("a", "r"), 8);
  h.operator.processElement2(right("a", "on-time"), 10);
  assert.deepEqual(h.side.get("left-late"), [{ value: left("a", "l"), timestamp: 9 }]);
  assert.deepEqual(h.side.get("right-late"), [{ value: right("a", "r"), timestamp: 8 }]);
  assert.equal(h.operator.numLateRecordsDropped, 0);
  await h.close();
});

Deno.test("buffers and cleanup timers survive a snapshot and restore: the output equals the run without it", async () => {
  const steps = (
    op: IntervalJoinOperator,
    h: { processWatermark(wm: number): void },
    from: number,
  ) => {
    const script: (() => void)[] = [
      () => op.processElement1(left("a", "l0"), 0),
      () => op.processElement2(right("a", "r1"), 1),
      () => h.processWatermark(1),
      () => op.processElement2(right("a", "r2"), 2),
      // --- snapshot here in the restored run ---
      () => op.processElement1(left("a", "l2"), 2), // r1 (still buffered: cleanup at 3), r2
      () => h.processWatermark(3),
      () => op.processElement1(left("a", "l3"), 3), // r2 (cleanup at 4), not r1 (removed)
      () => op.processElement1(left("a", "late"), 2), // late: dropped
      () => h.processWatermark(10),
    ];
    for (let i = from; i < (from === 0 ? 4 : script.length); i++) script[i]!();
  };
  const straight = await open(spec(-2, 1));
  steps(straight.operator, straight, 0);
  steps(straight.operator, straight, 4);
  const first = await open(spec(-2, 1));
  steps(first.operator, first, 0);
  const snapshot = await first.snapshot(1);
  const emittedBefore = first.values();
  await first.close();
  const restored = await open(spec(-2, 1), OperatorTestHarness.restoreFrom([snapshot]));
  steps(restored.operator, restored, 4);
  assert.deepEqual([...emittedBefore, ...restored.values()], straight.values());
  assert.deepEqual(straight.values(), [
    "l0+r1@0/1",
    "l2+r1@2/1",
    "l2+r2@2/2",
    "l3+r2@3/2",
  ]);
  assert.equal(restored.operator.numLateRecordsDropped, 1);
  assert.deepEqual(restored.operator.bufferedKeys(), { left: 0, right: 0 });
  await straight.close();
  await restored.close();
});

Deno.test("an element without a timestamp ends the job (no restart), naming the operator and side", async () => {
  const h = await open(spec(0, 1));
  assert.throws(
    () => h.operator.processElement2(right("a", "r"), undefined),
    (e: unknown) =>
      e instanceof SuppressRestartsError &&
      /IntervalJoin.*right element without a timestamp \(key a\)/.test(e.message),
  );
  await h.close();
});
