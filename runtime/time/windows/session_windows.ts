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
 * - Session assigners merge: they have `mergeWindows`, which is what makes
 *   an assigner merging (see `isMergingWindowAssigner`).
 * - Windows that overlap or touch always merge; windows apart never do.
 *
 * @module
 */

import { checkDuration, type MergeCallback } from "./window_assigner.ts";
import { type TimeDomain, TimeWindowAssigner } from "./time_window_assigner.ts";
import { TimeWindow } from "./window.ts";

/**
 * The gap of the session an element belongs to, in ms (Flink's
 * `SessionWindowTimeGapExtractor`): a function, or an object with
 * `extract`. It must return an integer > 0.
 */
export type SessionWindowTimeGapExtractor<T> =
  | ((element: T) => number)
  | { extract(element: T): number };

/**
 * The base of session assigners: each element gets `[t, t + gap)`, and
 * overlapping or touching windows merge. Subclasses give the gap.
 *
 * @typeParam T the element type.
 */
export abstract class SessionWindowAssigner<T> extends TimeWindowAssigner<T> {
  /**
   * Sets the time domain.
   * @param domain which time places elements.
   */
  protected constructor(domain: TimeDomain) {
    super(domain);
  }

  /** The session gap for `element`, ms. */
  protected abstract gapOf(element: T): number;

  /**
   * `[time, time + gap)`.
   * @throws {RangeError} when the gap is not an integer > 0.
   */
  protected windowsAt(time: number, element: T): TimeWindow[] {
    const gap = checkDuration(this.constructor.name, "gap", this.gapOf(element), 1);
    return [new TimeWindow(time, time + gap)];
  }

  /** Merges overlapping or touching windows ({@linkcode TimeWindow.mergeWindows}). */
  mergeWindows(windows: TimeWindow[], callback: MergeCallback<TimeWindow>): void {
    TimeWindow.mergeWindows(windows, callback);
  }
}

function checkExtractor<T>(
  owner: string,
  extractor: SessionWindowTimeGapExtractor<T>,
): (e: T) => number {
  if (typeof extractor === "function") return extractor;
  if (
    typeof extractor === "object" && extractor !== null &&
    typeof (extractor as { extract?: unknown }).extract === "function"
  ) {
    return (e) => extractor.extract(e);
  }
  throw new TypeError(
    `${owner}.withDynamicGap needs a function or an object with extract(): current value is ${
      String(extractor)
    }`,
  );
}

/** Event-time sessions with a fixed gap (Flink's `EventTimeSessionWindows`). */
export class EventTimeSessionWindows extends SessionWindowAssigner<unknown> {
  /** The inactivity gap that ends a session, ms. */
  readonly gap: number;

  private constructor(gap: number) {
    super("event-time");
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

  /** The fixed gap. */
  protected gapOf(): number {
    return this.gap;
  }

  /** `EventTimeSessionWindows(<gap>)`. */
  override toString(): string {
    return `EventTimeSessionWindows(${this.gap})`;
  }
}

/** Event-time sessions with a per-element gap (Flink's `DynamicEventTimeSessionWindows`). */
export class DynamicEventTimeSessionWindows<T> extends SessionWindowAssigner<T> {
  /** Computes each element's gap, ms. */
  readonly gapExtractor: SessionWindowTimeGapExtractor<T>;
  readonly #gapOf: (element: T) => number;

  private constructor(extractor: SessionWindowTimeGapExtractor<T>) {
    super("event-time");
    this.gapExtractor = extractor;
    this.#gapOf = checkExtractor("EventTimeSessionWindows", extractor);
  }

  /**
   * Sessions whose gap `extractor` computes per element.
   * @throws {TypeError} when `extractor` is neither a function nor has `extract`.
   */
  static withDynamicGap<T>(
    extractor: SessionWindowTimeGapExtractor<T>,
  ): DynamicEventTimeSessionWindows<T> {
    return new DynamicEventTimeSessionWindows(extractor);
  }

  /** The extracted gap. */
  protected gapOf(element: T): number {
    return this.#gapOf(element);
  }

  /** `DynamicEventTimeSessionWindows()`. */
  override toString(): string {
    return "DynamicEventTimeSessionWindows()";
  }
}

/** Processing-time sessions with a fixed gap (Flink's `ProcessingTimeSessionWindows`). */
export class ProcessingTimeSessionWindows extends SessionWindowAssigner<unknown> {
  /** The inactivity gap that ends a session, ms. */
  readonly gap: number;

  private constructor(gap: number) {
    super("processing-time");
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

  /** The fixed gap. */
  protected gapOf(): number {
    return this.gap;
  }

  /** `ProcessingTimeSessionWindows(<gap>)`. */
  override toString(): string {
    return `ProcessingTimeSessionWindows(${this.gap})`;
  }
}

/** Processing-time sessions with a per-element gap (Flink's `DynamicProcessingTimeSessionWindows`). */
export class DynamicProcessingTimeSessionWindows<T> extends SessionWindowAssigner<T> {
  /** Computes each element's gap, ms. */
  readonly gapExtractor: SessionWindowTimeGapExtractor<T>;
  readonly #gapOf: (element: T) => number;

  private constructor(extractor: SessionWindowTimeGapExtractor<T>) {
    super("processing-time");
    this.gapExtractor = extractor;
    this.#gapOf = checkExtractor("ProcessingTimeSessionWindows", extractor);
  }

  /**
   * Sessions whose gap `extractor` computes per element.
   * @throws {TypeError} when `extractor` is neither a function nor has `extract`.
   */
  static withDynamicGap<T>(
    extractor: SessionWindowTimeGapExtractor<T>,
  ): DynamicProcessingTimeSessionWindows<T> {
    return new DynamicProcessingTimeSessionWindows(extractor);
  }

  /** The extracted gap. */
  protected gapOf(element: T): number {
    return this.#gapOf(element);
  }

  /** `DynamicProcessingTimeSessionWindows()`. */
  override toString(): string {
    return "DynamicProcessingTimeSessionWindows()";
  }
}
