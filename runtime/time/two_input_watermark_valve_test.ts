import assert from "node:assert/strict";
import { TwoInputWatermarkValve } from "./two_input_watermark_valve.ts";
import { StatusWatermarkValve } from "./status_watermark_valve.ts";
import { MAX_WATERMARK } from "./watermark.ts";

const wm = (watermark: number) => ({ kind: "watermark", watermark });
const status = (s: "idle" | "active") => ({ kind: "status", status: s });

Deno.test("the watermark of two inputs is the minimum over both, each input the minimum over its channels", () => {
  // Channels 0, 1 feed input 1 (two producers); channel 2 feeds input 2.
  const valve = new TwoInputWatermarkValve([1, 1, 2]);
  assert.deepEqual(valve.inputWatermark(0, 100), []);
  assert.deepEqual(valve.inputWatermark(2, 300), []); // input 1's channel 1 still at -Infinity
  assert.deepEqual(valve.inputWatermark(1, 200), [wm(100)]);
  assert.deepEqual(valve.inputWatermark(0, 250), [wm(200)]);
  assert.deepEqual(valve.inputWatermark(1, 400), [wm(250)]);
  assert.deepEqual(valve.inputWatermark(0, 500), [wm(300)]); // input 2 holds it now
  assert.equal(valve.lastOutputWatermark, 300);
});

Deno.test("an idle input drops out of the minimum until it is active again", () => {
  const valve = new TwoInputWatermarkValve([1, 2]);
  assert.deepEqual(valve.inputWatermark(0, 100), []);
  assert.deepEqual(valve.inputWatermarkStatus(1, "idle"), [wm(100)]);
  assert.deepEqual(valve.inputWatermark(0, 150), [wm(150)]);
  assert.deepEqual(valve.inputWatermarkStatus(1, "active"), []); // input 2 rejoins below 150
  assert.deepEqual(valve.inputWatermark(0, 180), []); // held back by input 2 at -Infinity
  assert.deepEqual(valve.inputWatermark(1, 170), [wm(170)]);
  assert.equal(valve.lastOutputStatus, "active");
});

Deno.test("when both inputs turn idle no watermark of the other input is flushed (Flink's CombinedWatermarkStatus), unlike one valve over all channels", () => {
  const two = new TwoInputWatermarkValve([1, 2]);
  const one = new StatusWatermarkValve(2);
  for (const v of [two, one]) {
    v.inputWatermark(0, 100);
    v.inputWatermark(1, 50);
  }
  assert.deepEqual(two.inputWatermarkStatus(0, "idle"), []); // input 1 flushes 100 for itself only
  assert.deepEqual(two.inputWatermarkStatus(1, "idle"), [status("idle")]);
  assert.equal(two.lastOutputWatermark, 50);
  // One valve over both inputs' channels would emit input 1's 100 here.
  one.inputWatermarkStatus(0, "idle");
  assert.deepEqual(one.inputWatermarkStatus(1, "idle"), [wm(100), status("idle")]);
  // Activity again: active first sees the watermark it can emit.
  assert.deepEqual(two.inputWatermarkStatus(1, "active"), [status("active")]);
  assert.deepEqual(two.inputWatermark(1, 60), [wm(60)]);
});

Deno.test("an ended input never holds event time back, nor carries an idle input to the end of time", () => {
  const valve = new TwoInputWatermarkValve([1, 2, 2]);
  valve.inputWatermark(1, 10);
  valve.inputWatermark(2, 20);
  assert.deepEqual(valve.endOfData(0), [wm(10)]);
  assert.deepEqual(valve.inputWatermarkStatus(1, "idle"), [wm(20)]);
  assert.deepEqual(valve.inputWatermarkStatus(2, "idle"), [status("idle")]);
  assert.equal(valve.lastOutputWatermark, 20, "not MAX_WATERMARK: input 2 is idle, not ended");
  assert.deepEqual(valve.inputWatermarkStatus(2, "active"), [status("active")]);
  assert.deepEqual(valve.endOfData(1), []);
  assert.deepEqual(valve.endOfData(2), [wm(MAX_WATERMARK)]);
});

Deno.test("a two-input valve names a channel without an input number and an input without channels", () => {
  assert.throws(
    () => new TwoInputWatermarkValve([1, 0]),
    /Channel 1 .* input 1 or 2: current value is 0/,
  );
  assert.throws(
    () => new TwoInputWatermarkValve([1, 1]),
    /channels on both inputs: current counts are 2 and 0/,
  );
  assert.throws(
    () => new TwoInputWatermarkValve([1, 2]).inputWatermark(5, 1),
    /No input channel 5/,
  );
});
