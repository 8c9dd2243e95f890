import assert from "node:assert/strict";
import { ManualClock } from "./manual_clock.ts";

Deno.test("ManualClock starts at the given time and does not move by itself", () => {
  assert.equal(new ManualClock().now(), 0);
  const clock = new ManualClock(1_700_000_000_000);
  clock.schedule(1_700_000_000_001, () => {});
  assert.equal(clock.now(), 1_700_000_000_000);
  assert.equal(clock.pending(), 1);
});

Deno.test("ManualClock fires due callbacks in time order, ties in scheduling order", () => {
  const clock = new ManualClock(100);
  const fired: string[] = [];
  clock.schedule(130, () => fired.push(`c@${clock.now()}`));
  clock.schedule(110, () => fired.push(`a@${clock.now()}`));
  clock.schedule(120, () => fired.push(`b1@${clock.now()}`));
  clock.schedule(120, () => fired.push(`b2@${clock.now()}`));
  clock.schedule(200, () => fired.push(`late@${clock.now()}`));
  clock.advance(30);
  assert.deepEqual(fired, ["a@110", "b1@120", "b2@120", "c@130"]);
  assert.equal(clock.now(), 130);
  assert.equal(clock.pending(), 1);
  clock.setTime(500);
  assert.deepEqual(fired.at(-1), "late@200");
  assert.equal(clock.now(), 500);
  assert.equal(clock.pending(), 0);
});

Deno.test("ManualClock fires a callback scheduled by a callback in the same advance", () => {
  const clock = new ManualClock();
  const fired: string[] = [];
  clock.schedule(10, () => {
    fired.push(`first@${clock.now()}`);
    clock.schedule(5, () => fired.push(`past@${clock.now()}`));
    clock.schedule(15, () => fired.push(`chained@${clock.now()}`));
    clock.schedule(100, () => fired.push("too-late"));
  });
  clock.advance(20);
  assert.deepEqual(fired, ["first@10", "past@10", "chained@15"]);
  assert.equal(clock.pending(), 1);
});

Deno.test("ManualClock fires an already-due callback only on the next advance", () => {
  const clock = new ManualClock(50);
  let fired = 0;
  clock.schedule(40, () => fired++);
  assert.equal(fired, 0);
  clock.advance(0);
  assert.equal(fired, 1);
  assert.equal(clock.now(), 50);
});

Deno.test("ManualClock never fires a cancelled callback", () => {
  const clock = new ManualClock();
  let fired = 0;
  const cancel = clock.schedule(10, () => fired++);
  clock.schedule(10, () => fired += 10);
  cancel();
  cancel();
  assert.equal(clock.pending(), 1);
  clock.advance(10);
  assert.equal(fired, 10);
  assert.equal(clock.pending(), 0);
});

Deno.test("ManualClock refuses to go back in time", () => {
  const clock = new ManualClock(10);
  assert.throws(() => clock.advance(-1), RangeError);
  assert.throws(() => clock.setTime(9), /current time is 10, requested 9/);
  assert.throws(() => clock.advance(Number.NaN), RangeError);
  assert.throws(() => new ManualClock(Number.POSITIVE_INFINITY), RangeError);
  assert.equal(clock.now(), 10);
});

Deno.test("ManualClock stops at a throwing callback and keeps later ones pending", () => {
  const clock = new ManualClock();
  let later = 0;
  clock.schedule(5, () => {
    throw new Error("boom");
  });
  clock.schedule(8, () => later++);
  assert.throws(() => clock.advance(10), /boom/);
  assert.equal(clock.now(), 5);
  assert.equal(later, 0);
  clock.advance(5);
  assert.equal(later, 1);
});

Deno.test("ManualClock keeps order across many interleaved wake-ups", () => {
  const clock = new ManualClock();
  const fired: number[] = [];
  const times = Array.from({ length: 200 }, (_, i) => (i * 7919) % 211);
  for (const t of times) clock.schedule(t, () => fired.push(t));
  clock.advance(1_000);
  assert.deepEqual(fired, [...times].sort((a, b) => a - b));
});
