import assert from "node:assert/strict";
import { WatermarkOutputMultiplexer } from "./watermark_multiplexer.ts";
import type { WatermarkOutput } from "./watermark.ts";

/** An underlying output that records what it was told, as strings. */
function recording(): WatermarkOutput & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    emitWatermark: (w) => seen.push(`wm ${w}`),
    markIdle: () => seen.push("idle"),
    markActive: () => seen.push("active"),
  };
}

Deno.test("the combined watermark is the minimum over outputs that are not idle", () => {
  const out = recording();
  const mux = new WatermarkOutputMultiplexer(out);
  const a = mux.registerNewOutput();
  const b = mux.registerNewOutput();
  a.immediate.emitWatermark(10);
  assert.deepEqual(out.seen, [], "b still holds it at -Infinity");
  b.immediate.emitWatermark(4);
  a.immediate.emitWatermark(20);
  b.immediate.markIdle();
  assert.deepEqual(out.seen, ["wm 4", "wm 20"]);
  assert.equal(mux.combinedWatermark, 20);
});

Deno.test("the combined output turns idle once when every output is idle, and active before the next watermark", () => {
  const out = recording();
  const mux = new WatermarkOutputMultiplexer(out);
  const a = mux.registerNewOutput();
  const b = mux.registerNewOutput();
  a.immediate.markIdle();
  b.immediate.markIdle();
  b.immediate.markIdle();
  assert.deepEqual(out.seen, ["idle"]);
  assert.equal(mux.idle, true);
  b.immediate.markActive();
  b.immediate.emitWatermark(7);
  assert.deepEqual(out.seen, ["idle", "active", "wm 7"]);
});

Deno.test("deferred outputs update the combined watermark only at onPeriodicEmit", () => {
  const out = recording();
  const mux = new WatermarkOutputMultiplexer(out);
  const a = mux.registerNewOutput();
  const b = mux.registerNewOutput();
  a.deferred.emitWatermark(5);
  b.deferred.emitWatermark(8);
  assert.deepEqual(out.seen, []);
  mux.onPeriodicEmit();
  assert.deepEqual(out.seen, ["wm 5"]);
  a.deferred.markIdle();
  b.deferred.markIdle();
  mux.onPeriodicEmit();
  assert.deepEqual(out.seen, ["wm 5", "idle"]);
  a.deferred.emitWatermark(9); // a watermark clears idleness, as in Flink
  mux.onPeriodicEmit();
  assert.deepEqual(out.seen, ["wm 5", "idle", "active", "wm 9"]);
});

Deno.test("with no output registered the multiplexer emits nothing", () => {
  const out = recording();
  const mux = new WatermarkOutputMultiplexer(out);
  mux.onPeriodicEmit();
  const a = mux.registerNewOutput();
  assert.equal(mux.unregisterOutput(a), true);
  mux.onPeriodicEmit();
  assert.deepEqual(out.seen, []);
  assert.equal(mux.size, 0);
});

Deno.test("unregistering the output that held the minimum advances the combined watermark; it never decreases", () => {
  const out = recording();
  const mux = new WatermarkOutputMultiplexer(out);
  const a = mux.registerNewOutput();
  const b = mux.registerNewOutput();
  a.immediate.emitWatermark(3);
  b.immediate.emitWatermark(30);
  assert.equal(mux.unregisterOutput(a), true);
  assert.equal(mux.unregisterOutput(a), false, "already gone");
  const c = mux.registerNewOutput(); // a new split starts behind
  c.immediate.emitWatermark(10);
  assert.deepEqual(out.seen, ["wm 3", "wm 30"]);
  assert.equal(mux.combinedWatermark, 30);
});

Deno.test("an output registered with an initial watermark starts from it (a restored split)", () => {
  const out = recording();
  const mux = new WatermarkOutputMultiplexer(out);
  const restored = mux.registerNewOutput(500);
  restored.immediate.emitWatermark(400);
  assert.equal(restored.watermark, 500, "a lower watermark does not move it back");
  mux.onPeriodicEmit();
  assert.deepEqual(out.seen, ["wm 500"]);
});
