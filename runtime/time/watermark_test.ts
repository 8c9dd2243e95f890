import assert from "node:assert/strict";
import { ManualClock } from "./manual_clock.ts";
import { WatermarkStrategy } from "./watermark.ts";
import type { WatermarkOutput } from "./watermark.ts";

function recording(): WatermarkOutput & { watermarks: number[] } {
  const watermarks: number[] = [];
  return { watermarks, emitWatermark: (w) => watermarks.push(w), markIdle() {}, markActive() {} };
}

const context = { clock: new ManualClock() };

Deno.test("forBoundedOutOfOrderness emits the largest timestamp seen minus the bound minus 1 ms, periodically", () => {
  const generator = WatermarkStrategy.forBoundedOutOfOrderness(100).createGenerator!(context);
  const out = recording();
  generator.onPeriodicEmit(out);
  assert.deepEqual(out.watermarks, [], "nothing before the first event");
  generator.onEvent("a", 1_000, out);
  generator.onEvent("b", 900, out);
  assert.deepEqual(out.watermarks, [], "not punctuated");
  generator.onPeriodicEmit(out);
  assert.deepEqual(out.watermarks, [899]);
});

Deno.test("forMonotonousTimestamps trails the largest timestamp by 1 ms", () => {
  const generator = WatermarkStrategy.forMonotonousTimestamps().createGenerator!(context);
  const out = recording();
  generator.onEvent("a", 42, out);
  generator.onPeriodicEmit(out);
  assert.deepEqual(out.watermarks, [41]);
});

Deno.test("a bounded-out-of-orderness generator resumes from its snapshot", () => {
  const strategy = WatermarkStrategy.forBoundedOutOfOrderness(10);
  const before = strategy.createGenerator!(context);
  before.onEvent("a", 500, recording());
  const state = before.snapshotState!();
  assert.equal(state, 500);
  const after = strategy.createGenerator!(context);
  after.restoreState!(state);
  after.onEvent("late", 100, recording());
  const out = recording();
  after.onPeriodicEmit(out);
  assert.deepEqual(out.watermarks, [489]);
  assert.throws(
    () => after.restoreState!("500"),
    /must be the largest timestamp seen \(a number\), current value is "500"/,
  );
});

Deno.test("noWatermarks has no generator, and refinements keep what was set", () => {
  const assigner = (r: { ts: number }) => r.ts;
  const none = WatermarkStrategy.noWatermarks<{ ts: number }>();
  assert.equal(none.createGenerator, undefined);
  const refined = none.withTimestampAssigner(assigner).withIdleness(5_000);
  assert.equal(refined.timestampAssigner, assigner);
  assert.equal(refined.idleTimeoutMs, 5_000);
  assert.equal(refined.createGenerator, undefined);
  assert.equal(none.idleTimeoutMs, undefined, "strategies are immutable");
  const withGenerator = WatermarkStrategy.forMonotonousTimestamps<{ ts: number }>()
    .withIdleness(1_000)
    .withTimestampAssigner(assigner);
  assert.equal(withGenerator.idleTimeoutMs, 1_000);
  assert.notEqual(withGenerator.createGenerator, undefined);
});

Deno.test("forGenerator uses the supplier, which gets the job's clock", () => {
  const clock = new ManualClock(77);
  let seenNow = 0;
  const strategy = WatermarkStrategy.forGenerator<string>((ctx) => {
    seenNow = ctx.clock.now();
    return {
      onEvent: (_e, ts, out) => out.emitWatermark(ts),
      onPeriodicEmit() {},
    };
  });
  const out = recording();
  strategy.createGenerator!({ clock }).onEvent("x", 5, out);
  assert.deepEqual(out.watermarks, [5]);
  assert.equal(seenNow, 77);
});

Deno.test("strategies reject bad parameters, stating the current value", () => {
  assert.throws(
    () => WatermarkStrategy.forBoundedOutOfOrderness(-1),
    /'maxOutOfOrdernessMs' must be a finite number >= 0: current value is -1/,
  );
  assert.throws(
    () => WatermarkStrategy.noWatermarks().withIdleness(0),
    /'idleTimeoutMs' must be a positive finite number: current value is 0/,
  );
  assert.throws(
    () => WatermarkStrategy.forGenerator(42 as never),
    /needs a function: current value is number/,
  );
});
