import assert from "node:assert/strict";
import { EpochFence } from "./epoch_fence.ts";

Deno.test("EpochFence treats a missing epoch as 0 (a coordinator without high availability)", () => {
  const fence = new EpochFence();
  assert.deepEqual(fence.observe(undefined), { kind: "current" });
  assert.equal(fence.highest, 0);
});

Deno.test("EpochFence reports a higher epoch once, with the one before", () => {
  const fence = new EpochFence();
  assert.deepEqual(fence.observe(2), { kind: "newer", previous: 0 });
  assert.deepEqual(fence.observe(2), { kind: "current" });
  assert.deepEqual(fence.observe(5), { kind: "newer", previous: 2 });
  assert.equal(fence.highest, 5);
});

Deno.test("EpochFence refuses a lower epoch, and messages without one once an epoch was seen", () => {
  const fence = new EpochFence();
  fence.observe(3);
  assert.deepEqual(fence.observe(2), { kind: "stale", highest: 3 });
  assert.deepEqual(fence.observe(undefined), { kind: "stale", highest: 3 });
  assert.equal(fence.highest, 3);
});

Deno.test("EpochFence throws on an epoch that is not a non-negative integer", () => {
  const fence = new EpochFence();
  assert.throws(() => fence.observe(-1), /non-negative integer, got -1/);
  assert.throws(() => fence.observe(1.5), /got 1.5/);
});
