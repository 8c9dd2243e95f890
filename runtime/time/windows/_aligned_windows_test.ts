import assert from "node:assert/strict";
import { AlignedWindows } from "./_aligned_windows.ts";
import { TimeWindow } from "./window.ts";
import { mulberry32 } from "../../../tests/_job_kit.ts";

/** The windows holding `time`, latest first, built afresh (the loop the cache replaces). */
function uncached(time: number, size: number, slide: number, offset: number): TimeWindow[] {
  const windows: TimeWindow[] = [];
  const lastStart = TimeWindow.getWindowStartWithOffset(time, offset, slide);
  for (let start = lastStart; start > time - size; start -= slide) {
    windows.push(new TimeWindow(start, start + size));
  }
  return windows;
}

Deno.test("AlignedWindows gives the uncached windows for any sequence of times, reusing each start's objects", () => {
  for (
    const [size, slide, offset] of [[1_000, 1_000, 0], [1_000, 200, 0], [1_000, 300, 50]] as const
  ) {
    const cache = new AlignedWindows(size, slide);
    const random = mulberry32(size + slide + offset);
    let time = -3_000;
    let previous: TimeWindow[] = [];
    for (let i = 0; i < 2_000; i++) {
      // Mostly forward in small steps, sometimes back or far ahead.
      time += random() < 0.05 ? Math.floor(random() * 6_000) - 3_000 : Math.floor(random() * 40);
      const lastStart = TimeWindow.getWindowStartWithOffset(time, offset, slide);
      const windows = cache.holding(time, lastStart);
      assert.deepEqual(windows, uncached(time, size, slide, offset), `time ${time}`);
      for (const w of windows) {
        const same = previous.find((p) => p.start === w.start);
        if (same !== undefined && previous[0]!.start === lastStart) {
          assert.equal(w, same, `the window at ${w.start} is reused`);
        }
      }
      assert.notEqual(windows, previous, "each call returns a fresh array");
      previous = windows;
    }
  }
});
