import assert from "node:assert/strict";
import { computeKeyGroupRangeForOperatorIndex } from "../../state/key_group.ts";
import { ManualClock } from "../../time/manual_clock.ts";
import { MAX_WATERMARK, WatermarkStrategy } from "../../time/watermark.ts";
import type { OperatorEnvironment, Output } from "./operator.ts";
import { operatorRestore, takeSnapshot } from "./_snapshot_kit.ts";
import { TimestampsAndWatermarksOperator } from "./timestamps_and_watermarks_operator.ts";

interface Reading {
  readonly id: string;
  readonly at: number;
}

const strategy = WatermarkStrategy.forBoundedOutOfOrderness<Reading>(10)
  .withTimestampAssigner((r) => r.at);

async function open(
  options: { strategy?: WatermarkStrategy<Reading>; floor?: number } = {},
) {
  const clock = new ManualClock(1_000);
  const wakeups: number[] = [];
  const env: OperatorEnvironment = {
    jobId: "job-1",
    jobName: "assign",
    vertexId: "v1",
    subtaskIndex: 0,
    parallelism: 1,
    maxParallelism: 128,
    keyGroupRange: computeKeyGroupRangeForOperatorIndex(128, 1, 0),
    attempt: 0,
    clock,
    checkpointingMode: "exactly-once",
    requestWakeup: (t) => wakeups.push(t),
  };
  const seen: string[] = [];
  const output: Output = {
    collect: (v, ts) => seen.push(`${(v as Reading).id}@${ts}`),
    collectSide: () => {},
    emitWatermark: (w) => seen.push(`wm ${w}`),
    emitWatermarkStatus: (s) => seen.push(s),
  };
  const op = new TimestampsAndWatermarksOperator({
    uid: "assign",
    name: "Timestamps/Watermarks",
    fn: (options.strategy ?? strategy) as WatermarkStrategy<unknown>,
    env,
    output,
    keySelector: undefined,
    autoWatermarkIntervalMs: 100,
  });
  await op.initializeState(
    options.floor === undefined
      ? undefined
      : operatorRestore(undefined, { watermark: options.floor }),
  );
  await op.open();
  const tick = (t: number) => {
    clock.setTime(t);
    op.onProcessingTime(t);
  };
  return { op, seen, wakeups, tick };
}

Deno.test("assignTimestampsAndWatermarks stamps each record and emits periodic watermarks on its wake-ups", async () => {
  const { op, seen, wakeups, tick } = await open();
  assert.deepEqual(wakeups, [1_100]);
  op.processElement({ id: "a", at: 500 }, 7);
  op.processElement({ id: "b", at: 450 }, undefined);
  tick(1_050);
  assert.deepEqual(seen, ["a@500", "b@450"], "not due yet");
  tick(1_100);
  assert.deepEqual(seen, ["a@500", "b@450", "wm 489"]);
  assert.deepEqual(wakeups, [1_100, 1_100, 1_200]);
});

Deno.test("assignTimestampsAndWatermarks ignores upstream watermarks and status, except MAX_WATERMARK", async () => {
  const { op, seen, tick } = await open();
  op.processWatermark(5_000);
  op.processWatermarkStatus("idle");
  op.processElement({ id: "a", at: 100 }, undefined);
  tick(1_100);
  assert.deepEqual(seen, ["a@100", "wm 89"]);
  op.processWatermark(MAX_WATERMARK);
  tick(1_200);
  assert.deepEqual(seen, ["a@100", "wm 89", `wm ${MAX_WATERMARK}`]);
});

Deno.test("assignTimestampsAndWatermarks with idleness marks its output idle, and a record makes it active first", async () => {
  const { op, seen, tick } = await open({ strategy: strategy.withIdleness(300) });
  op.processElement({ id: "a", at: 100 }, undefined);
  for (let t = 1_100; t <= 1_400; t += 100) tick(t);
  assert.deepEqual(seen, ["a@100", "wm 89", "idle"]);
  op.processElement({ id: "b", at: 200 }, undefined);
  assert.deepEqual(seen.slice(-2), ["active", "b@200"]);
});

Deno.test("assignTimestampsAndWatermarks checkpoints its last watermark and emits nothing at or below it after a restore", async () => {
  const before = await open();
  before.op.processElement({ id: "a", at: 1_000 }, undefined);
  before.tick(1_100);
  const snapshot = await takeSnapshot(await before.op.snapshotState(1, 0, "checkpoint"));
  assert.equal(snapshot.watermark, 989);

  const after = await open({ floor: snapshot.watermark! });
  after.op.processElement({ id: "replayed", at: 800 }, undefined);
  after.tick(1_100);
  after.op.processElement({ id: "next", at: 1_200 }, undefined);
  after.tick(1_200);
  assert.deepEqual(after.seen, ["replayed@800", "next@1200", "wm 1189"]);
});

Deno.test("assignTimestampsAndWatermarks emits a last periodic watermark at the end of input", async () => {
  const { op, seen } = await open();
  op.processElement({ id: "a", at: 70 }, undefined);
  await op.endInput();
  assert.deepEqual(seen, ["a@70", "wm 59"]);
  const fresh = await open();
  const none = await takeSnapshot(await fresh.op.snapshotState(1, 0, "checkpoint"));
  assert.equal(none.watermark, undefined, "no watermark, no floor");
  assert.deepEqual(none.handles, [], "nothing to keep, nothing written");
});
