import assert from "node:assert/strict";
import { decideCancellationWait } from "./cancellation_wait.ts";

const base = { startedAtMs: 1_000, nowMs: 1_000, timeoutMs: 10_000 };

Deno.test("cancellation wait ends when no worker is pending", () => {
  const d = decideCancellationWait({ ...base, pending: new Set(), live: new Set(["w1"]) });
  assert.deepEqual(d, { kind: "ended" });
});

Deno.test("cancellation wait waits for pending live workers until the deadline", () => {
  const d = decideCancellationWait({
    ...base,
    nowMs: 5_000,
    pending: new Set(["w2", "w1"]),
    live: new Set(["w1", "w2", "w3"]),
  });
  assert.deepEqual(d, { kind: "wait", workers: ["w1", "w2"], deadlineMs: 11_000 });
});

Deno.test("a lost worker does not hold the cancellation wait", () => {
  const d = decideCancellationWait({
    ...base,
    pending: new Set(["gone"]),
    live: new Set(["w1"]),
  });
  assert.deepEqual(d, { kind: "ended" });
  const partly = decideCancellationWait({
    ...base,
    pending: new Set(["gone", "w1"]),
    live: new Set(["w1"]),
  });
  assert.deepEqual(partly, { kind: "wait", workers: ["w1"], deadlineMs: 11_000 });
});

Deno.test("cancellation wait times out naming the workers still pending", () => {
  const d = decideCancellationWait({
    ...base,
    nowMs: 11_000,
    pending: new Set(["w1"]),
    live: new Set(["w1"]),
  });
  assert.deepEqual(d, { kind: "timed-out", workers: ["w1"] });
});

Deno.test("a zero cancellation timeout gives up at once on pending workers", () => {
  const d = decideCancellationWait({
    ...base,
    timeoutMs: 0,
    pending: new Set(["w1"]),
    live: new Set(["w1"]),
  });
  assert.deepEqual(d, { kind: "timed-out", workers: ["w1"] });
});

Deno.test("a negative cancellation timeout is rejected with its value", () => {
  assert.throws(
    () => decideCancellationWait({ ...base, timeoutMs: -1, pending: new Set(), live: new Set() }),
    (e: unknown) => e instanceof RangeError && /current value is -1/.test(e.message),
  );
});
