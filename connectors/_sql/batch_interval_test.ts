import assert from "node:assert/strict";
import {
  BatchIntervalFlusher,
  checkBatchIntervalMs,
  DEFAULT_BATCH_INTERVAL_MS,
} from "./batch_interval.ts";
import { waitUntil } from "../../tests/_wait.ts";

Deno.test("a timed send's failure is thrown by the writer's next call, once armed", async () => {
  let sends = 0;
  const failure = new Error("server gone");
  const flusher = new BatchIntervalFlusher(1, () => {
    sends++;
    return Promise.reject(failure);
  });
  flusher.throwIfFailed();
  flusher.arm();
  flusher.arm(); // armed already: one timer
  await waitUntil(() => {
    try {
      flusher.throwIfFailed();
      return false;
    } catch (e) {
      return e === failure;
    }
  }, { timeoutMs: 10_000, missing: () => `${sends} sends, no failure kept` });
  assert.equal(sends, 1);
  flusher.arm(); // a failed flusher arms no more timers
  flusher.cancel();
});

Deno.test("a cancelled or zero interval never sends", async () => {
  let sends = 0;
  const zero = new BatchIntervalFlusher(0, () => Promise.resolve(void sends++));
  zero.arm();
  const cancelled = new BatchIntervalFlusher(1, () => Promise.resolve(void sends++));
  cancelled.arm();
  cancelled.cancel();
  const control = new BatchIntervalFlusher(2, () => Promise.resolve(void sends++));
  control.arm();
  await waitUntil(() => sends > 0, { timeoutMs: 10_000, missing: () => "the control never sent" });
  assert.equal(sends, 1);
});

Deno.test("batchIntervalMs must be an integer from 0 to an hour, naming the value", () => {
  assert.equal(checkBatchIntervalMs("s", undefined), DEFAULT_BATCH_INTERVAL_MS);
  assert.equal(checkBatchIntervalMs("s", 0), 0);
  for (const bad of [-1, 1.5, Number.NaN, 3_600_001]) {
    assert.throws(
      () => checkBatchIntervalMs("sink x", bad),
      (e: unknown) =>
        e instanceof RangeError && e.message.startsWith("sink x: batchIntervalMs must be") &&
        e.message.endsWith(`current value is ${bad}`),
    );
  }
});
