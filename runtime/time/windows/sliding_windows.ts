/**
 * Sliding (hopping) windows: windows of `size` ms starting every `slide`
 * ms, so an element belongs to `ceil(size / slide)` windows when `slide`
 * divides `size` (Flink's `SlidingEventTimeWindows` and
 * `SlidingProcessingTimeWindows`).
 *
 * For time `t` the windows are `[s, s + size)` for
 * `s = lastStart, lastStart - slide, …` while `s > t - size`, with
 * `lastStart = TimeWindow.getWindowStartWithOffset(t, offset, slide)`:
 * latest window first, as Flink lists them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SlidingEventTimeWindows } from "./sliding_windows.ts";
 *
 * const hop = SlidingEventTimeWindows.of(10_000, 2_000);
 * const windows = hop.assignWindows("bid", 9_500, { currentProcessingTime: () => 0 });
 * assert.deepEqual(windows.map((w) => w.start), [8_000, 6_000, 4_000, 2_000, 0]);
 * ```
 *
 * ## Invariants
 *
 * - Every window returned holds the element's time; none is missing.
 * - `size > 0`, `slide > 0` and `|offset| < slide`, all integers (ms).
 *
 * @module
 */

import { checkDuration, checkOffset } from "./window_assigner.ts";
import { TimeWindowAssigner } from "./time_window_assigner.ts";
import { TimeWindow } from "./window.ts";
import { AlignedWindows } from "./_aligned_windows.ts";

/** Validated sliding-window parameters, ms. */
interface SlidingParams {
  readonly size: number;
  readonly slide: number;
  readonly offset: number;
}

function checked(owner: string, size: number, slide: number, offset: number): SlidingParams {
  checkDuration(owner, "size", size, 1);
  checkDuration(owner, "slide", slide, 1);
  return { size, slide, offset: checkOffset(owner, offset, "slide", slide) };
}

/** The windows holding `time`, latest first, from the assigner's cache. */
function slide(windows: AlignedWindows, time: number, p: SlidingParams): TimeWindow[] {
  return windows.holding(time, TimeWindow.getWindowStartWithOffset(time, p.offset, p.slide));
}

/** Sliding windows in event time (Flink's `SlidingEventTimeWindows`). */
export class SlidingEventTimeWindows extends TimeWindowAssigner<unknown> {
  /** Window size, ms. */
  readonly size: number;
  /** Distance between window starts, ms. */
  readonly slide: number;
  /** Alignment offset, ms. */
  readonly offset: number;

  readonly #windows: AlignedWindows;

  private constructor(p: SlidingParams) {
    super("event-time");
    ({ size: this.size, slide: this.slide, offset: this.offset } = p);
    this.#windows = new AlignedWindows(p.size, p.slide);
  }

  /**
   * Sliding event-time windows.
   * @param size window length, ms (> 0).
   * @param slide distance between window starts, ms (> 0).
   * @param offset shifts window starts, ms, `|offset| < slide` (default 0).
   * @throws {RangeError} for a non-positive size or slide, or an offset out of range.
   */
  static of(size: number, slide: number, offset = 0): SlidingEventTimeWindows {
    return new SlidingEventTimeWindows(checked("SlidingEventTimeWindows", size, slide, offset));
  }

  /** The windows holding `time`, latest first. */
  protected windowsAt(time: number): TimeWindow[] {
    return slide(this.#windows, time, this);
  }

  /** `SlidingEventTimeWindows(<size>, <slide>)`. */
  override toString(): string {
    return `SlidingEventTimeWindows(${this.size}, ${this.slide})`;
  }
}

/** Sliding windows in processing time (Flink's `SlidingProcessingTimeWindows`). */
export class SlidingProcessingTimeWindows extends TimeWindowAssigner<unknown> {
  /** Window size, ms. */
  readonly size: number;
  /** Distance between window starts, ms. */
  readonly slide: number;
  /** Alignment offset, ms. */
  readonly offset: number;

  readonly #windows: AlignedWindows;

  private constructor(p: SlidingParams) {
    super("processing-time");
    ({ size: this.size, slide: this.slide, offset: this.offset } = p);
    this.#windows = new AlignedWindows(p.size, p.slide);
  }

  /**
   * Sliding processing-time windows.
   * @param size window length, ms (> 0).
   * @param slide distance between window starts, ms (> 0).
   * @param offset shifts window starts, ms, `|offset| < slide` (default 0).
   * @throws {RangeError} for a non-positive size or slide, or an offset out of range.
   */
  static of(size: number, slide: number, offset = 0): SlidingProcessingTimeWindows {
    return new SlidingProcessingTimeWindows(
      checked("SlidingProcessingTimeWindows", size, slide, offset),
    );
  }

  /** The windows holding `time`, latest first. */
  protected windowsAt(time: number): TimeWindow[] {
    return slide(this.#windows, time, this);
  }

  /** `SlidingProcessingTimeWindows(<size>, <slide>)`. */
  override toString(): string {
    return `SlidingProcessingTimeWindows(${this.size}, ${this.slide})`;
  }
}
