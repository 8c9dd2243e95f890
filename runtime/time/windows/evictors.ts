/**
 * The built-in evictors, each with Flink's behaviour exactly:
 *
 * | evictor                  | keeps                                                                 |
 * | ------------------------ | --------------------------------------------------------------------- |
 * | {@linkcode CountEvictor} | the last `maxCount` elements                                          |
 * | {@linkcode TimeEvictor}  | elements newer than `max timestamp - windowSize` (when they have timestamps) |
 * | {@linkcode DeltaEvictor} | elements whose delta to the last element is below `threshold`        |
 *
 * Each evicts before the window function by default, or after it with
 * `doEvictAfter = true`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CountEvictor } from "./evictors.ts";
 * import { GlobalWindow } from "./window.ts";
 *
 * const elements = [1, 2, 3, 4].map((value) => ({ value, timestamp: undefined }));
 * const ctx = { currentProcessingTime: () => 0, currentWatermark: () => 0 };
 * CountEvictor.of(2).evictBefore(elements, GlobalWindow.get(), ctx);
 * assert.deepEqual(elements.map((e) => e.value), [3, 4]);
 * ```
 *
 * ## Invariants
 *
 * - Evictors remove in place and keep the order of what remains.
 * - They hold only their configuration: one object serves every window, and
 *   no ECMAScript `#private` member, since the operator copies them per subtask.
 *
 * @module
 */

import type { Evictor, EvictorContext, TimestampedValue } from "./evictor.ts";
import type { Window } from "./window.ts";
import { checkDuration } from "./window_assigner.ts";

/** Removes, in place, the elements for which `drop` is true. */
function removeWhere<T>(
  elements: TimestampedValue<T>[],
  drop: (e: TimestampedValue<T>) => boolean,
): void {
  let kept = 0;
  for (const e of elements) if (!drop(e)) elements[kept++] = e;
  elements.length = kept;
}

/** Keeps the last `maxCount` elements (Flink's `CountEvictor`). */
export class CountEvictor implements Evictor<unknown, Window> {
  /** How many elements to keep. */
  readonly maxCount: number;
  /** Whether to evict after the window function instead of before. */
  readonly doEvictAfter: boolean;

  private constructor(maxCount: number, doEvictAfter: boolean) {
    this.maxCount = maxCount;
    this.doEvictAfter = doEvictAfter;
  }

  /**
   * An evictor keeping the last `maxCount` elements.
   * @param maxCount elements to keep, a positive integer.
   * @param doEvictAfter evict after the window function (default: before).
   * @throws {RangeError} unless `maxCount` is a positive integer.
   */
  static of(maxCount: number, doEvictAfter = false): CountEvictor {
    if (!Number.isSafeInteger(maxCount) || maxCount < 1) {
      throw new RangeError(
        `CountEvictor needs 'maxCount' to be a positive integer: current value is ${maxCount}`,
      );
    }
    return new CountEvictor(maxCount, doEvictAfter);
  }

  /** Evicts unless `doEvictAfter`. */
  evictBefore(elements: TimestampedValue<unknown>[], _window: Window, _ctx: EvictorContext): void {
    if (!this.doEvictAfter) this.evict(elements);
  }

  /** Evicts when `doEvictAfter`. */
  evictAfter(elements: TimestampedValue<unknown>[], _window: Window, _ctx: EvictorContext): void {
    if (this.doEvictAfter) this.evict(elements);
  }

  /** Removes all but the last `maxCount` elements. */
  private evict(elements: TimestampedValue<unknown>[]): void {
    if (elements.length > this.maxCount) elements.splice(0, elements.length - this.maxCount);
  }
}

/**
 * Keeps the elements within `windowSize` ms of the newest element's
 * timestamp (Flink's `TimeEvictor`): evicts those with
 * `timestamp <= max timestamp - windowSize`. Does nothing when the first
 * element has no timestamp, as Flink.
 */
export class TimeEvictor implements Evictor<unknown, Window> {
  /** The span kept, ms. */
  readonly windowSize: number;
  /** Whether to evict after the window function instead of before. */
  readonly doEvictAfter: boolean;

  private constructor(windowSize: number, doEvictAfter: boolean) {
    this.windowSize = windowSize;
    this.doEvictAfter = doEvictAfter;
  }

  /**
   * An evictor keeping `windowSize` ms of elements.
   * @param windowSize ms, an integer >= 0.
   * @param doEvictAfter evict after the window function (default: before).
   * @throws {RangeError} unless `windowSize` is an integer >= 0.
   */
  static of(windowSize: number, doEvictAfter = false): TimeEvictor {
    return new TimeEvictor(checkDuration("TimeEvictor", "windowSize", windowSize, 0), doEvictAfter);
  }

  /** Evicts unless `doEvictAfter`. */
  evictBefore(elements: TimestampedValue<unknown>[], _window: Window, _ctx: EvictorContext): void {
    if (!this.doEvictAfter) this.evict(elements);
  }

  /** Evicts when `doEvictAfter`. */
  evictAfter(elements: TimestampedValue<unknown>[], _window: Window, _ctx: EvictorContext): void {
    if (this.doEvictAfter) this.evict(elements);
  }

  /** Removes the elements at or before `max timestamp - windowSize`. */
  private evict(elements: TimestampedValue<unknown>[]): void {
    if (elements[0]?.timestamp === undefined) return;
    let max = Number.NEGATIVE_INFINITY;
    for (const e of elements) if (e.timestamp !== undefined && e.timestamp > max) max = e.timestamp;
    const cutoff = max - this.windowSize;
    removeWhere(elements, (e) => e.timestamp !== undefined && e.timestamp <= cutoff);
  }
}

/**
 * The distance between two elements (Flink's `DeltaFunction`): a function,
 * or an object with `getDelta`.
 */
export type DeltaFunction<T> =
  | ((oldDataPoint: T, newDataPoint: T) => number)
  | { getDelta(oldDataPoint: T, newDataPoint: T): number };

/**
 * Evicts the elements whose delta to the last element is at least
 * `threshold` (Flink's `DeltaEvictor`).
 *
 * @typeParam T the element type.
 */
export class DeltaEvictor<T> implements Evictor<T, Window> {
  /** Elements at this delta or more from the last one are evicted. */
  readonly threshold: number;
  /** The delta between an element and the last one. */
  readonly deltaFunction: DeltaFunction<T>;
  /** Whether to evict after the window function instead of before. */
  readonly doEvictAfter: boolean;

  private constructor(threshold: number, deltaFunction: DeltaFunction<T>, doEvictAfter: boolean) {
    this.threshold = threshold;
    this.deltaFunction = deltaFunction;
    this.doEvictAfter = doEvictAfter;
  }

  /**
   * An evictor by delta.
   * @param threshold the delta at which elements go.
   * @param deltaFunction the delta between an element and the window's last one.
   * @param doEvictAfter evict after the window function (default: before).
   * @throws {RangeError} when `threshold` is NaN.
   * @throws {TypeError} when `deltaFunction` is neither a function nor has `getDelta`.
   */
  static of<T>(
    threshold: number,
    deltaFunction: DeltaFunction<T>,
    doEvictAfter = false,
  ): DeltaEvictor<T> {
    if (typeof threshold !== "number" || Number.isNaN(threshold)) {
      throw new RangeError(
        `DeltaEvictor needs a numeric 'threshold': current value is ${threshold}`,
      );
    }
    const ok = typeof deltaFunction === "function" ||
      (typeof deltaFunction === "object" && deltaFunction !== null &&
        typeof deltaFunction.getDelta === "function");
    if (!ok) {
      throw new TypeError(
        `DeltaEvictor needs a function or an object with getDelta(): current value is ${
          String(deltaFunction)
        }`,
      );
    }
    return new DeltaEvictor(threshold, deltaFunction, doEvictAfter);
  }

  /** Evicts unless `doEvictAfter`. */
  evictBefore(elements: TimestampedValue<T>[], _window: Window, _ctx: EvictorContext): void {
    if (!this.doEvictAfter) this.evict(elements);
  }

  /** Evicts when `doEvictAfter`. */
  evictAfter(elements: TimestampedValue<T>[], _window: Window, _ctx: EvictorContext): void {
    if (this.doEvictAfter) this.evict(elements);
  }

  /** Removes the elements at `threshold` or more from the last one. */
  private evict(elements: TimestampedValue<T>[]): void {
    const last = elements.at(-1);
    if (last === undefined) return;
    const f = this.deltaFunction;
    const delta = typeof f === "function" ? f : (a: T, b: T) => f.getDelta(a, b);
    removeWhere(elements, (e) => delta(e.value, last.value) >= this.threshold);
  }
}
