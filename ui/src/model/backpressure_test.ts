import assert from "node:assert/strict";
import { BACKPRESSURE_COLOURS, backPressureLevel, levelOfJson, maxRatio } from "./backpressure.ts";

Deno.test("backPressureLevel follows Flink's thresholds 10% and 50%", () => {
  assert.equal(backPressureLevel(0), "OK");
  assert.equal(backPressureLevel(0.1), "OK");
  assert.equal(backPressureLevel(0.1001), "LOW");
  assert.equal(backPressureLevel(0.5), "LOW");
  assert.equal(backPressureLevel(0.51), "HIGH");
  assert.equal(backPressureLevel(1), "HIGH");
});

Deno.test("backPressureLevel treats a missing ratio as OK", () => {
  assert.equal(backPressureLevel(undefined), "OK");
  assert.equal(backPressureLevel(NaN), "OK");
});

Deno.test("levelOfJson upper-cases the REST API's level", () => {
  assert.equal(levelOfJson("high"), "HIGH");
  assert.equal(levelOfJson("low"), "LOW");
  assert.equal(levelOfJson("ok"), "OK");
  assert.equal(levelOfJson(undefined), "OK");
});

Deno.test("maxRatio takes the busiest subtask", () => {
  assert.equal(maxRatio([]), 0);
  assert.equal(maxRatio([{ ratio: 0.2 }, { ratio: 0.7 }, { ratio: NaN }]), 0.7);
});

Deno.test("each level has a distinct colour", () => {
  assert.equal(new Set(Object.values(BACKPRESSURE_COLOURS)).size, 3);
});
