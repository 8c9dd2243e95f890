import assert from "node:assert/strict";
import { StatusWatermarkValve, type ValveAction } from "./status_watermark_valve.ts";
import { MAX_WATERMARK } from "./watermark.ts";

const wm = (watermark: number): ValveAction => ({ kind: "watermark", watermark });
const idle: ValveAction = { kind: "status", status: "idle" };
const active: ValveAction = { kind: "status", status: "active" };

Deno.test("the valve emits the minimum over its channels, only when it grows", () => {
  const valve = new StatusWatermarkValve(3);
  assert.deepEqual(valve.inputWatermark(0, 10), []);
  assert.deepEqual(valve.inputWatermark(1, 5), []);
  assert.deepEqual(valve.inputWatermark(2, 7), [wm(5)]);
  assert.deepEqual(valve.inputWatermark(1, 20), [wm(7)]);
  assert.deepEqual(valve.inputWatermark(1, 15), [], "a channel's watermark never goes back");
  assert.deepEqual(valve.inputWatermark(2, 9), [wm(9)]);
  assert.equal(valve.lastOutputWatermark, 9);
});

Deno.test("an idle channel leaves the minimum and its watermarks are ignored", () => {
  const valve = new StatusWatermarkValve(2);
  valve.inputWatermark(0, 100);
  assert.deepEqual(valve.inputWatermarkStatus(1, "idle"), [wm(100)]);
  assert.deepEqual(valve.inputWatermark(1, 50), [], "ignored while idle");
  assert.deepEqual(valve.inputWatermark(0, 200), [wm(200)]);
  assert.equal(valve.lastOutputStatus, "active");
});

Deno.test("when the last active channel turns idle, the valve flushes the largest watermark, then turns idle", () => {
  const valve = new StatusWatermarkValve(2);
  valve.inputWatermark(0, 1_000);
  assert.deepEqual(valve.inputWatermark(1, 500), [wm(500)]);
  // Channel 0 turns idle first: its watermark is not the output one, nothing moves.
  assert.deepEqual(valve.inputWatermarkStatus(0, "idle"), []);
  // Channel 1 held the output watermark: everything is idle now, so the largest
  // watermark of any channel goes out before "idle" (Flink's rule).
  assert.deepEqual(valve.inputWatermarkStatus(1, "idle"), [wm(1_000), idle]);
  assert.equal(valve.lastOutputStatus, "idle");
  assert.deepEqual(valve.inputWatermarkStatus(1, "idle"), [], "no repeated status");
});

Deno.test("the last channel turning idle below the output watermark flushes nothing", () => {
  const valve = new StatusWatermarkValve(2);
  valve.inputWatermark(0, 100);
  valve.inputWatermark(1, 300);
  assert.deepEqual(valve.inputWatermarkStatus(0, "idle"), [wm(300)]);
  valve.inputWatermarkStatus(0, "active"); // rejoins unaligned: 100 < 300
  assert.deepEqual(valve.inputWatermarkStatus(1, "idle"), []);
  // Channel 0, at 100, is the last active one; 100 is not the output watermark (300).
  assert.deepEqual(valve.inputWatermarkStatus(0, "idle"), [idle]);
});

Deno.test("a channel active again rejoins the minimum only once its watermark reaches the output watermark", () => {
  const valve = new StatusWatermarkValve(2);
  valve.inputWatermark(0, 100);
  valve.inputWatermark(1, 100);
  valve.inputWatermarkStatus(1, "idle");
  assert.deepEqual(valve.inputWatermark(0, 500), [wm(500)]);
  assert.deepEqual(valve.inputWatermarkStatus(1, "active"), [], "the valve was active all along");
  // Channel 1 is behind (100 < 500): it does not pull the output back, nor hold it.
  assert.deepEqual(valve.inputWatermark(0, 600), [wm(600)]);
  assert.deepEqual(valve.inputWatermark(1, 550), [], "still behind the output watermark");
  // Once it catches up it is aligned again, and holds the minimum.
  assert.deepEqual(valve.inputWatermark(1, 700), []);
  assert.deepEqual(valve.inputWatermark(0, 900), [wm(700)]);
});

Deno.test("an idle valve turns active, once, when any channel does", () => {
  const valve = new StatusWatermarkValve(2);
  valve.inputWatermarkStatus(0, "idle");
  assert.deepEqual(valve.inputWatermarkStatus(1, "idle"), [idle]);
  assert.deepEqual(valve.inputWatermark(0, 50), [], "watermarks of idle channels are ignored");
  assert.deepEqual(valve.inputWatermarkStatus(0, "active"), [active]);
  assert.deepEqual(valve.inputWatermarkStatus(1, "active"), []);
  assert.deepEqual(valve.inputWatermark(0, 50), []);
  assert.deepEqual(valve.inputWatermark(1, 60), [wm(50)]);
});

Deno.test("a finished channel holds nothing back, but never carries idle channels to MAX_WATERMARK", () => {
  const valve = new StatusWatermarkValve(2);
  valve.inputWatermark(0, 100);
  assert.deepEqual(valve.inputWatermark(1, 200), [wm(100)]);
  assert.deepEqual(valve.inputWatermarkStatus(1, "idle"), []);
  // Channel 0 ends: the only other one is idle, so the valve turns idle at the
  // largest unfinished watermark (200) and does not jump to the end of time.
  assert.deepEqual(valve.inputWatermark(0, MAX_WATERMARK), [wm(200), idle]);
  assert.deepEqual(valve.endOfData(0), []);
  // Channel 1 comes back and ends too: now event time ends.
  assert.deepEqual(valve.inputWatermarkStatus(1, "active"), [active]);
  assert.deepEqual(valve.inputWatermark(1, 300), [wm(300)]);
  assert.deepEqual(valve.endOfData(1), [wm(MAX_WATERMARK)]);
});

Deno.test("end of data on every channel emits MAX_WATERMARK, even after idleness", () => {
  const valve = new StatusWatermarkValve(2);
  valve.inputWatermarkStatus(0, "idle");
  assert.deepEqual(valve.endOfData(1), [idle], "the only unfinished channel is idle");
  assert.deepEqual(valve.endOfData(0), [active, wm(MAX_WATERMARK)]);
  assert.equal(valve.lastOutputStatus, "active");
});

Deno.test("the valve rejects channels it does not have, naming them", () => {
  assert.throws(() => new StatusWatermarkValve(0), /'channels' must be a positive integer/);
  const valve = new StatusWatermarkValve(2);
  assert.throws(() => valve.inputWatermark(2, 1), /No input channel 2 .* of 2 channels/);
  assert.throws(() => valve.inputWatermarkStatus(-1, "idle"), /No input channel -1/);
});
