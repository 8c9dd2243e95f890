/**
 * Tumbling windows: fixed-size, non-overlapping windows aligned to the
 * epoch plus an offset (Flink's `TumblingEventTimeWindows` and
 * `TumblingProcessingTimeWindows`).
 *
 * An element with timestamp `t` goes to the one window
 * `[s, s + size)` with `s = TimeWindow.getWindowStartWithOffset(t, offset, size)`,
 * which works for negative timestamps too (`t = -1`, size 1000: `[-1000, 0)`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { TumblingEventTimeWindows } from "./tumbling_windows.ts";
 * import { TimeWindow } from "./window.ts";
import { AlignedWindows } from "./_aligned_windows.ts";
 *
 * const hourly = TumblingEventTimeWindows.of(3_600_000);
 * const [w] = hourly.assignWindows("x", 5_400_000, { currentProcessingTime: () => 0 });
 * assert.deepEqual(w, new TimeWindow(3_600_000, 7_200_000));
 * ```
 *
 * ## Invariants
 *
 * - Every element gets exactly one window, and it holds the element's time.
 * - `size > 0` and `|offset| < size`, both integers (ms).
 *
 * @module
 */

import { checkDuration, checkOffset } from "./window_assigner.ts";
import { TimeWindowAssigner } from "./time_window_assigner.ts";
import { TimeWindow } from "./window.ts";
import { AlignedWindows } from "./_aligned_windows.ts";

/** Checks `size` and `offset` for `owner`. @throws {RangeError} naming the bad one. */
function checked(owner: string, size: number, offset: number): [number, number] {
  checkDuration(owner, "size", size, 1);
  return [size, checkOffset(owner, offset, "size", size)];
}

/** Tumbling windows of `size` ms in event time (Flink's `TumblingEventTimeWindows`). */
export class TumblingEventTimeWindows extends TimeWindowAssigner<unknown> {
  /** Window size, ms. */
  readonly size: number;
  /** Alignment offset, ms. */
  readonly offset: number;
  readonly #windows: AlignedWindows;

  private constructor([size, offset]: [number, number]) {
    super("event-time");
    this.size = size;
    this.offset = offset;
    this.#windows = new AlignedWindows(size, size);
  }

  /**
   * Tumbling event-time windows.
   * @param size window length, ms (> 0).
   * @param offset shifts window starts, ms, `|offset| < size` (default 0);
   *   e.g. `-8 * 3_600_000` with a day size makes days start at 16:00 UTC.
   * @throws {RangeError} for a non-positive size or an offset out of range.
   */
  static of(size: number, offset = 0): TumblingEventTimeWindows {
    return new TumblingEventTimeWindows(checked("TumblingEventTimeWindows", size, offset));
  }

  /** The one window holding `time`. */
  protected windowsAt(time: number): TimeWindow[] {
    return tumble(this.#windows, time, this.size, this.offset);
  }

  /** `TumblingEventTimeWindows(<size>)`. */
  override toString(): string {
    return `TumblingEventTimeWindows(${this.size})`;
  }
}

/** Tumbling windows of `size` ms in processing time (Flink's `TumblingProcessingTimeWindows`). */
export class TumblingProcessingTimeWindows extends TimeWindowAssigner<unknown> {
  /** Window size, ms. */
  readonly size: number;
  /** Alignment offset, ms. */
  readonly offset: number;
  readonly #windows: AlignedWindows;

  private constructor([size, offset]: [number, number]) {
    super("processing-time");
    this.size = size;
    this.offset = offset;
    this.#windows = new AlignedWindows(size, size);
  }

  /**
   * Tumbling processing-time windows.
   * @param size window length, ms (> 0).
   * @param offset shifts window starts, ms, `|offset| < size` (default 0).
   * @throws {RangeError} for a non-positive size or an offset out of range.
   */
  static of(size: number, offset = 0): TumblingProcessingTimeWindows {
    return new TumblingProcessingTimeWindows(
      checked("TumblingProcessingTimeWindows", size, offset),
    );
  }

  /** The one window holding `time`. */
  protected windowsAt(time: number): TimeWindow[] {
    return tumble(this.#windows, time, this.size, this.offset);
  }

  /** `TumblingProcessingTimeWindows(<size>)`. */
  override toString(): string {
    return `TumblingProcessingTimeWindows(${this.size})`;
  }
}

/** The one window holding `time`, from the assigner's cache. */
function tumble(windows: AlignedWindows, time: number, size: number, offset: number): TimeWindow[] {
  return windows.holding(time, TimeWindow.getWindowStartWithOffset(time, offset, size));
}
