/**
 * The evictor contract (Flink's `Evictor`, `TimestampedValue` and
 * `Evictor.EvictorContext`): an evictor removes elements from a window's
 * contents right before (`evictBefore`) and right after (`evictAfter`) the
 * window function runs.
 *
 * A window with an evictor keeps every element in list state (Flink's
 * `EvictingWindowOperator`), even for `reduce` and `aggregate`, which then
 * run over the kept elements at each firing instead of incrementally.
 *
 * ## Invariants
 *
 * - An evictor only removes elements, in place, from the array it is
 *   given; it never adds or reorders them. The order is arrival order.
 * - What remains after `evictAfter` is the window's new contents.
 *
 * @module
 */

import type { Window } from "./window.ts";

/** An element with its event timestamp (Flink's `TimestampedValue`). */
export interface TimestampedValue<T> {
  /** The element. */
  readonly value: T;
  /** Its event timestamp, ms, or `undefined` when it has none. */
  readonly timestamp: number | undefined;
}

/** Time as an evictor sees it (Flink's `Evictor.EvictorContext`). Times in ms. */
export interface EvictorContext {
  /** The current processing time. */
  currentProcessingTime(): number;
  /** The operator's current watermark (`-Infinity` before the first). */
  currentWatermark(): number;
}

/**
 * Removes elements from a window's contents (Flink's `Evictor`). Both
 * methods remove in place, e.g. with `splice`; Flink's `size` argument is
 * `elements.length` here.
 *
 * @typeParam T the element type.
 * @typeParam W the window type.
 */
export interface Evictor<T, W extends Window> {
  /** Removes elements before the window function runs. */
  evictBefore(elements: TimestampedValue<T>[], window: W, ctx: EvictorContext): void;
  /** Removes elements after the window function ran. */
  evictAfter(elements: TimestampedValue<T>[], window: W, ctx: EvictorContext): void;
}
