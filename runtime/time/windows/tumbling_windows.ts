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

import {
  checkDuration,
  checkOffset,
  requireEventTimestamp,
  requireProcessingTime,
  WindowAssigner,
  type WindowAssignerContext,
} from "./window_assigner.ts";
import { TimeWindow } from "./window.ts";
import type { Trigger } from "./trigger.ts";
import { EventTimeTrigger, ProcessingTimeTrigger } from "./triggers.ts";

function tumble(time: number, size: number, offset: number): TimeWindow[] {
  const start = TimeWindow.getWindowStartWithOffset(time, offset, size);
  return [new TimeWindow(start, start + size)];
}

/** Tumbling windows of `size` ms in event time (Flink's `TumblingEventTimeWindows`). */
export class TumblingEventTimeWindows extends WindowAssigner<unknown, TimeWindow> {
  /** Window size, ms. */
  readonly size: number;
  /** Alignment offset, ms. */
  readonly offset: number;

  private constructor(size: number, offset: number) {
    super();
    this.size = size;
    this.offset = offset;
  }

  /**
   * Tumbling event-time windows.
   * @param size window length, ms (> 0).
   * @param offset shifts window starts, ms, `|offset| < size` (default 0);
   *   e.g. `-8 * 3_600_000` with a day size makes days start at 16:00 UTC.
   * @throws {RangeError} for a non-positive size or an offset out of range.
   */
  static of(size: number, offset = 0): TumblingEventTimeWindows {
    const owner = "TumblingEventTimeWindows";
    checkDuration(owner, "size", size, 1);
    return new TumblingEventTimeWindows(size, checkOffset(owner, offset, "size", size));
  }

  /**
   * The window holding `timestamp`.
   * @throws {TypeError} when the record has no (integer) timestamp.
   */
  assignWindows(
    _element: unknown,
    timestamp: number | undefined,
    _context: WindowAssignerContext,
  ): TimeWindow[] {
    return tumble(
      requireEventTimestamp("TumblingEventTimeWindows", timestamp),
      this.size,
      this.offset,
    );
  }

  /** {@linkcode EventTimeTrigger}. */
  getDefaultTrigger(): Trigger<unknown, TimeWindow> {
    return EventTimeTrigger.create();
  }

  /** True. */
  isEventTime(): boolean {
    return true;
  }

  /** Parses `"<start>:<end>"`. @throws {RangeError} otherwise. */
  windowFromNamespace(namespace: string): TimeWindow {
    return TimeWindow.fromNamespace(namespace);
  }

  /** `TumblingEventTimeWindows(<size>)`. */
  override toString(): string {
    return `TumblingEventTimeWindows(${this.size})`;
  }
}

/** Tumbling windows of `size` ms in processing time (Flink's `TumblingProcessingTimeWindows`). */
export class TumblingProcessingTimeWindows extends WindowAssigner<unknown, TimeWindow> {
  /** Window size, ms. */
  readonly size: number;
  /** Alignment offset, ms. */
  readonly offset: number;

  private constructor(size: number, offset: number) {
    super();
    this.size = size;
    this.offset = offset;
  }

  /**
   * Tumbling processing-time windows.
   * @param size window length, ms (> 0).
   * @param offset shifts window starts, ms, `|offset| < size` (default 0).
   * @throws {RangeError} for a non-positive size or an offset out of range.
   */
  static of(size: number, offset = 0): TumblingProcessingTimeWindows {
    const owner = "TumblingProcessingTimeWindows";
    checkDuration(owner, "size", size, 1);
    return new TumblingProcessingTimeWindows(size, checkOffset(owner, offset, "size", size));
  }

  /**
   * The window holding the current processing time.
   * @throws {TypeError} when the clock does not read integer ms.
   */
  assignWindows(
    _element: unknown,
    _timestamp: number | undefined,
    context: WindowAssignerContext,
  ): TimeWindow[] {
    return tumble(
      requireProcessingTime("TumblingProcessingTimeWindows", context),
      this.size,
      this.offset,
    );
  }

  /** {@linkcode ProcessingTimeTrigger}. */
  getDefaultTrigger(): Trigger<unknown, TimeWindow> {
    return ProcessingTimeTrigger.create();
  }

  /** False. */
  isEventTime(): boolean {
    return false;
  }

  /** Parses `"<start>:<end>"`. @throws {RangeError} otherwise. */
  windowFromNamespace(namespace: string): TimeWindow {
    return TimeWindow.fromNamespace(namespace);
  }

  /** `TumblingProcessingTimeWindows(<size>)`. */
  override toString(): string {
    return `TumblingProcessingTimeWindows(${this.size})`;
  }
}
