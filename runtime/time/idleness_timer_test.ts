import assert from "node:assert/strict";
import { IdlenessTimer } from "./idleness_timer.ts";

Deno.test("an input without any activity is idle once the timeout passed since it appeared", () => {
  const timer = new IdlenessTimer(1_000, 5_000);
  assert.equal(timer.checkIfIdle(5_999), false);
  assert.equal(timer.checkIfIdle(6_000), true);
  assert.equal(timer.checkIfIdle(9_000), true, "stays idle without activity");
});

Deno.test("activity since the last check restarts the count at that check", () => {
  const timer = new IdlenessTimer(1_000, 0);
  assert.equal(timer.checkIfIdle(2_000), true);
  timer.activity();
  assert.equal(timer.checkIfIdle(2_200), false, "a record came: active again");
  assert.equal(timer.checkIfIdle(3_100), false);
  assert.equal(timer.checkIfIdle(3_200), true);
});

Deno.test("IdlenessTimer rejects a timeout that is not a positive finite number", () => {
  for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(
      () => new IdlenessTimer(bad, 0),
      /'idleTimeoutMs' must be a positive finite number/,
    );
  }
});
