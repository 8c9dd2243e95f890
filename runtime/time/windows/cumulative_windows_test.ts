import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { CumulativeEventTimeWindows } from "./cumulative_windows.ts";

const ctx = { currentProcessingTime: () => 0 };

Deno.test("CumulativeEventTimeWindows gives every window of the period that ends after the element", () => {
  fc.assert(fc.property(
    fc.integer({ min: 1, max: 50 }),
    fc.integer({ min: 1, max: 10 }),
    fc.integer({ min: -10_000, max: 10_000 }),
    (step, steps, t) => {
      const max = step * steps;
      const got = CumulativeEventTimeWindows.of(max, step).assignWindows("x", t, ctx)
        .map((w) => `${w.start}:${w.end}`);
      const want: string[] = [];
      const start = Math.floor(t / max) * max;
      for (let k = 1; k <= steps; k++) {
        if (start + k * step > t) want.push(`${start}:${start + k * step}`);
      }
      assert.deepEqual(got, want);
      assert.ok(got.length >= 1);
    },
  ));
});

Deno.test("CumulativeEventTimeWindows refuses a max size that is no multiple of the step", () => {
  assert.throws(
    () => CumulativeEventTimeWindows.of(50, 20),
    /multiple of 'step': current values are 50 and 20/,
  );
  assert.throws(() => CumulativeEventTimeWindows.of(0, 20), RangeError);
});
