import assert from "node:assert/strict";
import { WorkerRegistrationWindow } from "./worker_registration.ts";

Deno.test("WorkerRegistrationWindow of 0 ms is never open", async () => {
  const window = new WorkerRegistrationWindow(0);
  assert.equal(window.open, false);
  await window.passed();
  window.start(10);
  assert.equal(window.until, 10);
});

Deno.test("WorkerRegistrationWindow closes when its time passed, or early when closed", async () => {
  const timed = new WorkerRegistrationWindow(5);
  timed.start();
  assert.equal(timed.open, true);
  await timed.passed(); // the timer closes it
  assert.equal(timed.open, false);
  const early = new WorkerRegistrationWindow(60_000);
  early.start();
  early.close();
  early.close(); // idempotent
  await early.passed();
  assert.equal(early.open, false);
});

Deno.test("WorkerRegistrationWindow refuses a negative or fractional window, naming its value", () => {
  assert.throws(() => new WorkerRegistrationWindow(-1), /integer >= 0 ms: current value is -1/);
  assert.throws(() => new WorkerRegistrationWindow(1.5), /current value is 1.5/);
});
