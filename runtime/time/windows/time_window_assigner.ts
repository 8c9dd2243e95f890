/**
 * The base of the assigners of {@linkcode TimeWindow}s (tumbling, sliding
 * and session windows), in event time or in processing time: what differs
 * between the two domains is only which time places an element, which
 * trigger fires by default, and whether late data and cleanup follow the
 * watermark.
 *
 * | domain              | time of an element                  | default trigger              |
 * | ------------------- | ----------------------------------- | ---------------------------- |
 * | `"event-time"`      | its timestamp (required)            | {@linkcode EventTimeTrigger} |
 * | `"processing-time"` | the clock's time when it arrives    | {@linkcode ProcessingTimeTrigger} |
 *
 * ## Invariants
 *
 * - The time handed to `windowsAt` is a safe integer (ms): an event-time
 *   element without an integer timestamp, or a clock reading fractions,
 *   fails with the value and the assigner's class name.
 *
 * @module
 */

import {
  requireEventTimestamp,
  requireProcessingTime,
  WindowAssigner,
  type WindowAssignerContext,
} from "./window_assigner.ts";
import { TimeWindow } from "./window.ts";
import type { Trigger } from "./trigger.ts";
import { EventTimeTrigger, ProcessingTimeTrigger } from "./triggers.ts";

/** Which time places elements in windows. */
export type TimeDomain = "event-time" | "processing-time";

/**
 * An assigner of time windows in one {@linkcode TimeDomain}; subclasses
 * say which windows hold a time (`windowsAt`). Extend it for a custom
 * time-window assigner; add `mergeWindows` to make it merging.
 *
 * @typeParam T the element type.
 */
export abstract class TimeWindowAssigner<T> extends WindowAssigner<T, TimeWindow> {
  /** Event or processing time. */
  readonly domain: TimeDomain;

  /**
   * Sets the time domain.
   * @param domain which time places elements.
   */
  protected constructor(domain: TimeDomain) {
    super();
    this.domain = domain;
  }

  /**
   * The windows of the element's time (see the module docs).
   * @throws {TypeError} when that time is missing or not an integer.
   */
  assignWindows(
    element: T,
    timestamp: number | undefined,
    context: WindowAssignerContext,
  ): TimeWindow[] {
    const owner = this.constructor.name;
    const time = this.domain === "event-time"
      ? requireEventTimestamp(owner, timestamp)
      : requireProcessingTime(owner, context);
    return this.windowsAt(time, element);
  }

  /**
   * The windows that hold time `time` (ms) for `element`.
   * @throws {RangeError} when an element-derived parameter is invalid (a session gap).
   */
  protected abstract windowsAt(time: number, element: T): TimeWindow[];

  /** {@linkcode EventTimeTrigger} in event time, {@linkcode ProcessingTimeTrigger} in processing time. */
  getDefaultTrigger(): Trigger<T, TimeWindow> {
    return this.domain === "event-time"
      ? EventTimeTrigger.create()
      : ProcessingTimeTrigger.create();
  }

  /** Whether the domain is event time. */
  isEventTime(): boolean {
    return this.domain === "event-time";
  }

  /** Parses `"<start>:<end>"`. @throws {RangeError} otherwise. */
  windowFromNamespace(namespace: string): TimeWindow {
    return TimeWindow.fromNamespace(namespace);
  }
}
