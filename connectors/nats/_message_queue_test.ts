import assert from "node:assert/strict";
import { MessageQueue } from "./_message_queue.ts";

Deno.test("MessageQueue hands items out in arrival order, in batches of at most the asked size", () => {
  const q = new MessageQueue<number>(10, "fail");
  for (let i = 0; i < 7; i++) assert.equal(q.offer(i), "queued");
  assert.deepEqual(q.take(3), [0, 1, 2]);
  assert.equal(q.size, 4);
  assert.deepEqual(q.take(100), [3, 4, 5, 6]);
  assert.deepEqual(q.take(5), []);
  assert.equal(q.size, 0);
});

Deno.test("MessageQueue with policy fail refuses an item when full and holds nothing more", () => {
  const q = new MessageQueue<string>(2, "fail");
  assert.equal(q.offer("a"), "queued");
  assert.equal(q.offer("b"), "queued");
  assert.equal(q.offer("c"), "overflow");
  assert.equal(q.dropped, 0);
  assert.deepEqual(q.take(10), ["a", "b"]);
  assert.equal(q.offer("d"), "queued");
});

Deno.test("MessageQueue with policy drop counts every item it could not hold", () => {
  const q = new MessageQueue<number>(3, "drop");
  const outcomes = [1, 2, 3, 4, 5].map((n) => q.offer(n));
  assert.deepEqual(outcomes, ["queued", "queued", "queued", "dropped", "dropped"]);
  assert.equal(q.dropped, 2);
  assert.deepEqual(q.take(10), [1, 2, 3]);
});

Deno.test("MessageQueue keeps order across many offers and takes while compacting", () => {
  const q = new MessageQueue<number>(100_000, "fail");
  let next = 0;
  let expected = 0;
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < 1000; i++) assert.equal(q.offer(next++), "queued");
    for (const n of q.take(900)) assert.equal(n, expected++);
  }
  for (const n of q.take(100_000)) assert.equal(n, expected++);
  assert.equal(expected, next);
});

Deno.test("MessageQueue refuses a capacity that is not a positive integer", () => {
  assert.throws(
    () => new MessageQueue(0, "drop"),
    /'capacity' must be a positive integer: current value is 0/,
  );
});
