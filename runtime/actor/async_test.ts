import assert from "node:assert/strict";
import { deadline, DeadlineError, delay, Signal, yieldToEventLoop } from "./async.ts";

Deno.test("delay() resolves after the given time", async () => {
  const start = performance.now();
  await delay(20);
  assert.ok(performance.now() - start >= 19, "resolved too early");
});

Deno.test("delay() rejects with the signal's reason on abort", async (t) => {
  await t.step("during the delay", async () => {
    const controller = new AbortController();
    const waiting = delay(60_000, { signal: controller.signal });
    const reason = new Error("job cancelled");
    controller.abort(reason);
    await assert.rejects(waiting, (error) => error === reason);
  });
  await t.step("before the delay starts", async () => {
    const controller = new AbortController();
    controller.abort("already gone");
    await assert.rejects(delay(60_000, { signal: controller.signal }), (e) => e === "already gone");
  });
  await t.step("not after it resolved", async () => {
    const controller = new AbortController();
    await delay(1, { signal: controller.signal });
    controller.abort(); // no listener left behind, nothing to reject
  });
});

Deno.test("delay() rejects a negative or non-finite time", async () => {
  await assert.rejects(delay(-1), RangeError);
  await assert.rejects(delay(Number.NaN), /current value is NaN/);
  await assert.rejects(delay(Infinity), RangeError);
});

Deno.test("deadline() settles like the promise when it is in time", async (t) => {
  await t.step("with its value", async () => {
    assert.equal(await deadline(Promise.resolve("ok"), 1_000, "the answer"), "ok");
  });
  await t.step("with its rejection", async () => {
    const failure = new TypeError("bad");
    await assert.rejects(deadline(Promise.reject(failure), 1_000, "x"), (e) => e === failure);
  });
});

Deno.test("deadline() rejects with DeadlineError naming the message and ms", async () => {
  let late!: (value: string) => void;
  const slow = new Promise<string>((resolve) => late = resolve);
  const error = await deadline(slow, 10, "the ack of checkpoint 7").then(
    () => assert.fail("resolved"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof DeadlineError);
  assert.equal(error.name, "DeadlineError");
  assert.equal(error.message, "the ack of checkpoint 7 did not finish within 10 ms");
  assert.equal(error.what, "the ack of checkpoint 7");
  assert.equal(error.ms, 10);
  late("too late"); // settling afterwards is harmless
});

Deno.test("deadline() rejects a negative time", async () => {
  await assert.rejects(deadline(Promise.resolve(1), -5, "x"), /current value is -5/);
});

Deno.test("yieldToEventLoop() takes 10k turns well under a second", async () => {
  const start = performance.now();
  for (let i = 0; i < 10_000; i++) await yieldToEventLoop();
  const ms = performance.now() - start;
  assert.ok(ms < 500, `10k yields took ${ms.toFixed(1)} ms`);
});

Deno.test("yieldToEventLoop() lets due timers run, unlike a microtask", async () => {
  let fired = false;
  const timer = setTimeout(() => fired = true, 1);
  let turns = 0;
  while (!fired && turns < 200_000) {
    await yieldToEventLoop();
    turns++;
  }
  clearTimeout(timer);
  assert.ok(fired, `the timer did not fire in ${turns} turns`);
});

Deno.test("Signal.wait() resolves at once after notify()", async () => {
  const signal = new Signal();
  signal.notify();
  assert.equal(signal.notified, true);
  let woke = false;
  const waiting = signal.wait().then(() => woke = true);
  await Promise.resolve();
  await waiting;
  assert.equal(woke, true);
  assert.equal(signal.notified, false);
});

Deno.test("Signal.wait() waits for the next notify()", async () => {
  const signal = new Signal();
  let woke = false;
  const waiting = signal.wait().then(() => woke = true);
  await yieldToEventLoop();
  assert.equal(woke, false);
  signal.notify();
  await waiting;
  assert.equal(woke, true);
  assert.equal(signal.notified, false, "the wake-up consumed the notification");
});

Deno.test("Signal.notify() coalesces until consumed", async () => {
  const signal = new Signal();
  signal.notify();
  signal.notify();
  signal.notify();
  await signal.wait();
  let woke = false;
  const second = signal.wait().then(() => woke = true);
  await yieldToEventLoop();
  assert.equal(woke, false, "three notifies woke more than one wait");
  signal.notify();
  await second;
});

Deno.test("Signal.wait() rejects a second concurrent waiter", async () => {
  const signal = new Signal();
  const first = signal.wait();
  await assert.rejects(signal.wait(), /another wait\(\) is pending/);
  signal.notify();
  await first;
});

Deno.test("Signal drives a consumer loop without losing work", async () => {
  const signal = new Signal();
  const queue: number[] = [];
  let consumed = 0;
  const consumer = (async () => {
    while (consumed < 1_000) {
      while (queue.length > 0) consumed += queue.shift()!;
      if (consumed < 1_000) await signal.wait();
    }
  })();
  for (let i = 0; i < 1_000; i++) {
    queue.push(1);
    signal.notify();
    if (i % 7 === 0) await yieldToEventLoop();
  }
  await deadline(consumer, 1_000, "the consumer loop");
  assert.equal(consumed, 1_000);
});
