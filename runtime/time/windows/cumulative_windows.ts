/**
 * Cumulative windows (Flink's `CumulativeWindowAssigner`, the assigner of
 * SQL's `CUMULATE` window TVF): windows that all start at a multiple of
 * `maxSize` and end every `step`, growing until `maxSize`:
 * `[s, s + step)`, `[s, s + 2·step)`, ..., `[s, s + maxSize)`.
 *
 * An element at time `t` belongs to every window of its `maxSize` period
 * whose end is after `t`: with `s` the start of `t`'s period, the windows
 * `[s, s + k·step)` for `k` from `floor((t - s) / step) + 1` to
 * `maxSize / step`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CumulativeEventTimeWindows } from "./cumulative_windows.ts";
 *
 * const daily = CumulativeEventTimeWindows.of(60_000, 20_000);
 * const windows = daily.assignWindows("x", 25_000, { currentProcessingTime: () => 0 });
 * assert.deepEqual(windows.map((w) => [w.start, w.end]), [[0, 40_000], [0, 60_000]]);
 * ```
 *
 * ## Invariants
 *
 * - `step > 0`, `maxSize > 0`, and `maxSize` is a multiple of `step`
 *   (integers, ms).
 * - Every element gets at least one window (the whole period's), and every
 *   window it gets holds its time.
 *
 * @module
 */

import { TimeWindowAssigner } from "./time_window_assigner.ts";
import { checkDuration } from "./window_assigner.ts";
import { TimeWindow } from "./window.ts";

/** Cumulative windows in event time (Flink's `CumulativeWindowAssigner.of(maxSize, step)`). */
export class CumulativeEventTimeWindows extends TimeWindowAssigner<unknown> {
  /** The largest window, ms. */
  readonly maxSize: number;
  /** How much each window is longer than the one before, ms. */
  readonly step: number;

  private constructor(maxSize: number, step: number) {
    super("event-time");
    this.maxSize = maxSize;
    this.step = step;
  }

  /**
   * Cumulative event-time windows.
   * @param maxSize the whole period, ms (> 0, a multiple of `step`).
   * @param step the growth of each window, ms (> 0).
   * @throws {RangeError} for a non-positive value or a `maxSize` that is
   *   not a multiple of `step`, stating the values.
   */
  static of(maxSize: number, step: number): CumulativeEventTimeWindows {
    checkDuration("CumulativeEventTimeWindows", "maxSize", maxSize, 1);
    checkDuration("CumulativeEventTimeWindows", "step", step, 1);
    if (maxSize % step !== 0) {
      throw new RangeError(
        `CumulativeEventTimeWindows needs 'maxSize' to be a multiple of 'step': current values are ${maxSize} and ${step}`,
      );
    }
    return new CumulativeEventTimeWindows(maxSize, step);
  }

  /** The windows of `time`'s period that end after it, shortest first. */
  protected windowsAt(time: number): TimeWindow[] {
    const start = TimeWindow.getWindowStartWithOffset(time, 0, this.maxSize);
    const windows: TimeWindow[] = [];
    const first = Math.floor((time - start) / this.step) + 1;
    for (let k = first; k * this.step <= this.maxSize; k++) {
      windows.push(new TimeWindow(start, start + k * this.step));
    }
    return windows;
  }

  /** `CumulativeEventTimeWindows(<maxSize>, <step>)`. */
  override toString(): string {
    return `CumulativeEventTimeWindows(${this.maxSize}, ${this.step})`;
  }
}
