/**
 * Session windows: a window per burst of activity of a key, closed by a gap
 * of inactivity (Flink's `EventTimeSessionWindows`,
 * `ProcessingTimeSessionWindows` and their dynamic-gap variants).
 *
 * Each element starts its own window `[t, t + gap)`; the window operator
 * then merges it with every window of its key that it overlaps or touches
 * ({@linkcode TimeWindow.mergeWindows}), so a session ends `gap` ms after
 * its last element. Merging takes the windows' contents, trigger state and
 * timers along (see `merging_window_set.ts`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EventTimeSessionWindows } from "./session_windows.ts";
 * import { TimeWindow } from "./window.ts";
 *
 * const sessions = EventTimeSessionWindows.withGap(5_000);
 * const merges: string[] = [];
 * sessions.mergeWindows(
 *   [new TimeWindow(0, 5_000), new TimeWindow(4_000, 9_000), new TimeWindow(20_000, 25_000)],
 *   (merged, result) => merges.push(`${merged.length} -> ${result.namespace}`),
 * );
 * assert.deepEqual(merges, ["2 -> 0:9000"]);
 * ```
 *
 * ## Invariants
 *
 * - A gap is an integer > 0 ms; a dynamic gap is checked per element.
 * - Windows that overlap or touch always merge; windows apart never do.
 *
 * @module
 */

import {
  checkDuration,
  type MergeCallback,
  MergingWindowAssigner,
  requireEventTimestamp,
  requireProcessingTime,
  type WindowAssignerContext,
} from "./window_assigner.ts";
import { TimeWindow } from "./window.ts";
import type { Trigger } from "./trigger.ts";
import { EventTimeTrigger, ProcessingTimeTrigger } from "./triggers.ts";

/**
 * The gap of the session an element belongs to, in ms (Flink's
 * `SessionWindowTimeGapExtractor`): a function, or an object with
 * `extract`. It must return an integer > 0.
 */
export type SessionWindowTimeGapExtractor<T> =
  | ((element: T) => number)
  | { extract(element: T): number };

function session(owner: string, time: number, gap: number): TimeWindow[] {
  return [new TimeWindow(time, time + checkDuration(owner, "gap", gap, 1))];
}

function extractGap<T>(extractor: SessionWindowTimeGapExtractor<T>, element: T): number {
  return typeof extractor === "function" ? extractor(element) : extractor.extract(element);
}

function checkExtractor(owner: string, extractor: unknown): void {
  const ok = typeof extractor === "function" ||
    (typeof extractor === "object" && extractor !== null &&
      typeof (extractor as { extract?: unknown }).extract === "function");
  if (!ok) {
    throw new TypeError(
      `${owner}.withDynamicGap needs a function or an object with extract(): current value is ${
        String(extractor)
      }`,
    );
  }
}

/** Event-time sessions with a fixed gap (Flink's `EventTimeSessionWindows`). */
export class EventTimeSessionWindows extends MergingWindowAssigner<unknown, TimeWindow> {
  /** The inactivity gap that ends a session, ms. */
  readonly gap: number;

  private constructor(gap: number) {
    super();
    this.gap = gap;
  }

  /**
   * Sessions that end after `gap` ms of event time without elements.
   * @throws {RangeError} unless `gap` is an integer > 0.
   */
  static withGap(gap: number): EventTimeSessionWindows {
    return new EventTimeSessionWindows(checkDuration("EventTimeSessionWindows", "gap", gap, 1));
  }

  /**
   * Sessions whose gap `extractor` computes per element.
   * @throws {TypeError} when `extractor` is neither a function nor has `extract`.
   */
  static withDynamicGap<T>(
    extractor: SessionWindowTimeGapExtractor<T>,
  ): DynamicEventTimeSessionWindows<T> {
    return DynamicEventTimeSessionWindows.withDynamicGap(extractor);
  }

  /**
   * `[timestamp, timestamp + gap)`.
   * @throws {TypeError} when the record has no (integer) timestamp.
   */
  assignWindows(
    _element: unknown,
    timestamp: number | undefined,
    _context: WindowAssignerContext,
  ): TimeWindow[] {
    const owner = "EventTimeSessionWindows";
    return session(owner, requireEventTimestamp(owner, timestamp), this.gap);
  }

  /** Merges overlapping or touching windows. */
  mergeWindows(windows: TimeWindow[], callback: MergeCallback<TimeWindow>): void {
    TimeWindow.mergeWindows(windows, callback);
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

  /** `EventTimeSessionWindows(<gap>)`. */
  override toString(): string {
    return `EventTimeSessionWindows(${this.gap})`;
  }
}

/** Event-time sessions with a per-element gap (Flink's `DynamicEventTimeSessionWindows`). */
export class DynamicEventTimeSessionWindows<T> extends MergingWindowAssigner<T, TimeWindow> {
  /** Computes each element's gap, ms. */
  readonly gapExtractor: SessionWindowTimeGapExtractor<T>;

  private constructor(extractor: SessionWindowTimeGapExtractor<T>) {
    super();
    this.gapExtractor = extractor;
  }

  /**
   * Sessions whose gap `extractor` computes per element.
   * @throws {TypeError} when `extractor` is neither a function nor has `extract`.
   */
  static withDynamicGap<T>(
    extractor: SessionWindowTimeGapExtractor<T>,
  ): DynamicEventTimeSessionWindows<T> {
    checkExtractor("EventTimeSessionWindows", extractor);
    return new DynamicEventTimeSessionWindows(extractor);
  }

  /**
   * `[timestamp, timestamp + gap(element))`.
   * @throws {TypeError} when the record has no (integer) timestamp.
   * @throws {RangeError} when the extracted gap is not an integer > 0.
   */
  assignWindows(
    element: T,
    timestamp: number | undefined,
    _context: WindowAssignerContext,
  ): TimeWindow[] {
    const owner = "DynamicEventTimeSessionWindows";
    const time = requireEventTimestamp(owner, timestamp);
    return session(owner, time, extractGap(this.gapExtractor, element));
  }

  /** Merges overlapping or touching windows. */
  mergeWindows(windows: TimeWindow[], callback: MergeCallback<TimeWindow>): void {
    TimeWindow.mergeWindows(windows, callback);
  }

  /** {@linkcode EventTimeTrigger}. */
  getDefaultTrigger(): Trigger<T, TimeWindow> {
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

  /** `DynamicEventTimeSessionWindows()`. */
  override toString(): string {
    return "DynamicEventTimeSessionWindows()";
  }
}

/** Processing-time sessions with a fixed gap (Flink's `ProcessingTimeSessionWindows`). */
export class ProcessingTimeSessionWindows extends MergingWindowAssigner<unknown, TimeWindow> {
  /** The inactivity gap that ends a session, ms. */
  readonly gap: number;

  private constructor(gap: number) {
    super();
    this.gap = gap;
  }

  /**
   * Sessions that end after `gap` ms of processing time without elements.
   * @throws {RangeError} unless `gap` is an integer > 0.
   */
  static withGap(gap: number): ProcessingTimeSessionWindows {
    return new ProcessingTimeSessionWindows(
      checkDuration("ProcessingTimeSessionWindows", "gap", gap, 1),
    );
  }

  /**
   * Sessions whose gap `extractor` computes per element.
   * @throws {TypeError} when `extractor` is neither a function nor has `extract`.
   */
  static withDynamicGap<T>(
    extractor: SessionWindowTimeGapExtractor<T>,
  ): DynamicProcessingTimeSessionWindows<T> {
    return DynamicProcessingTimeSessionWindows.withDynamicGap(extractor);
  }

  /**
   * `[now, now + gap)`.
   * @throws {TypeError} when the clock does not read integer ms.
   */
  assignWindows(
    _element: unknown,
    _timestamp: number | undefined,
    context: WindowAssignerContext,
  ): TimeWindow[] {
    const owner = "ProcessingTimeSessionWindows";
    return session(owner, requireProcessingTime(owner, context), this.gap);
  }

  /** Merges overlapping or touching windows. */
  mergeWindows(windows: TimeWindow[], callback: MergeCallback<TimeWindow>): void {
    TimeWindow.mergeWindows(windows, callback);
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

  /** `ProcessingTimeSessionWindows(<gap>)`. */
  override toString(): string {
    return `ProcessingTimeSessionWindows(${this.gap})`;
  }
}

/** Processing-time sessions with a per-element gap (Flink's `DynamicProcessingTimeSessionWindows`). */
export class DynamicProcessingTimeSessionWindows<T> extends MergingWindowAssigner<T, TimeWindow> {
  /** Computes each element's gap, ms. */
  readonly gapExtractor: SessionWindowTimeGapExtractor<T>;

  private constructor(extractor: SessionWindowTimeGapExtractor<T>) {
    super();
    this.gapExtractor = extractor;
  }

  /**
   * Sessions whose gap `extractor` computes per element.
   * @throws {TypeError} when `extractor` is neither a function nor has `extract`.
   */
  static withDynamicGap<T>(
    extractor: SessionWindowTimeGapExtractor<T>,
  ): DynamicProcessingTimeSessionWindows<T> {
    checkExtractor("ProcessingTimeSessionWindows", extractor);
    return new DynamicProcessingTimeSessionWindows(extractor);
  }

  /**
   * `[now, now + gap(element))`.
   * @throws {TypeError} when the clock does not read integer ms.
   * @throws {RangeError} when the extracted gap is not an integer > 0.
   */
  assignWindows(
    element: T,
    _timestamp: number | undefined,
    context: WindowAssignerContext,
  ): TimeWindow[] {
    const owner = "DynamicProcessingTimeSessionWindows";
    const now = requireProcessingTime(owner, context);
    return session(owner, now, extractGap(this.gapExtractor, element));
  }

  /** Merges overlapping or touching windows. */
  mergeWindows(windows: TimeWindow[], callback: MergeCallback<TimeWindow>): void {
    TimeWindow.mergeWindows(windows, callback);
  }

  /** {@linkcode ProcessingTimeTrigger}. */
  getDefaultTrigger(): Trigger<T, TimeWindow> {
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

  /** `DynamicProcessingTimeSessionWindows()`. */
  override toString(): string {
    return "DynamicProcessingTimeSessionWindows()";
  }
}
