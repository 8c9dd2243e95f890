/**
 * The window assigner contract (Flink's `WindowAssigner` and
 * `MergingWindowAssigner`): which windows an element belongs to, which
 * trigger fires them by default, and whether they are in event time.
 *
 * An assigner is a pure decision: it reads the element, its timestamp and
 * (for processing-time assigners) the processing time handed in through
 * {@linkcode WindowAssignerContext}, and returns windows. The window
 * operator does the state and timer work.
 *
 * ## Invariants
 *
 * - `assignWindows` returns at least one window for every element it
 *   accepts, and throws (naming the value) for one it cannot place, such as
 *   an element without a timestamp in an event-time assigner.
 * - `windowFromNamespace(w.namespace)` equals `w` for every window the
 *   assigner returns: timers carry only the namespace.
 *
 * @module
 */

import type { Trigger } from "./trigger.ts";
import type { Window } from "./window.ts";

/** What an assigner may read besides the element (Flink's `WindowAssigner.WindowAssignerContext`). */
export interface WindowAssignerContext {
  /** The current processing time, in ms since the epoch (the job's clock). */
  currentProcessingTime(): number;
}

/**
 * Puts elements into windows (Flink's `WindowAssigner`). Extend it for a
 * custom assigner; extend {@linkcode MergingWindowAssigner} when windows
 * merge (sessions).
 *
 * @typeParam T the element type.
 * @typeParam W the window type.
 */
export abstract class WindowAssigner<T, W extends Window> {
  /**
   * The windows `element` belongs to.
   *
   * @param element the record.
   * @param timestamp the record's event timestamp in ms, or `undefined` when it has none.
   * @param context the processing time.
   * @returns one or more windows.
   * @throws {TypeError} when the element cannot be placed (e.g. no timestamp in event time).
   */
  abstract assignWindows(
    element: T,
    timestamp: number | undefined,
    context: WindowAssignerContext,
  ): W[];

  /** The trigger used unless `WindowedStream.trigger()` sets another. */
  abstract getDefaultTrigger(): Trigger<T, W>;

  /** Whether windows end by event time (so late data and cleanup follow the watermark). */
  abstract isEventTime(): boolean;

  /**
   * Rebuilds a window from its namespace (Flink's `getWindowSerializer`).
   * @throws {RangeError} when `namespace` is no window of this assigner.
   */
  abstract windowFromNamespace(namespace: string): W;
}

/**
 * Whether `assigner` merges windows: it has a `mergeWindows` method, as
 * every {@linkcode MergingWindowAssigner} and the session assigners do.
 * The window operator then keeps a merging window set per key.
 */
export function isMergingWindowAssigner<T, W extends Window>(
  assigner: WindowAssigner<T, W>,
): assigner is MergingWindowAssigner<T, W> {
  return typeof (assigner as { mergeWindows?: unknown }).mergeWindows === "function";
}

/** Called with each group of windows that merge and the window they merge into. */
export type MergeCallback<W> = (toBeMerged: W[], mergeResult: W) => void;

/**
 * An assigner whose windows can merge, such as sessions (Flink's
 * `MergingWindowAssigner`). The window operator keeps the set of live
 * windows per key and asks the assigner which of them merge. Merging is
 * recognized by the `mergeWindows` method ({@linkcode isMergingWindowAssigner}),
 * so the session assigners, which extend `TimeWindowAssigner`, merge too.
 */
export abstract class MergingWindowAssigner<T, W extends Window> extends WindowAssigner<T, W> {
  /**
   * Decides which of `windows` merge: calls `callback` once per group of
   * two or more, with the group and the window it becomes.
   *
   * @param windows the live windows of one key plus a new one.
   * @param callback receives each merge.
   */
  abstract mergeWindows(windows: W[], callback: MergeCallback<W>): void;
}

/**
 * Checks a duration parameter of an assigner, trigger or evictor.
 * @param owner what it configures, e.g. `"TumblingEventTimeWindows"`.
 * @param name the parameter, e.g. `"size"`.
 * @param value ms.
 * @param minimum the least allowed value (`1`: positive; `0`: non-negative).
 * @returns `value`.
 * @throws {RangeError} unless `value` is a safe integer >= `minimum`.
 */
export function checkDuration(owner: string, name: string, value: number, minimum: 0 | 1): number {
  if (!Number.isSafeInteger(value) || value < minimum) {
    throw new RangeError(
      `${owner} needs '${name}' to be an integer ${
        minimum === 1 ? "> 0" : ">= 0"
      } ms: current value is ${value}`,
    );
  }
  return value;
}

/**
 * Checks an offset against the period it aligns (Flink: `abs(offset) < size`).
 * @throws {RangeError} unless `offset` is a safe integer with `|offset| < period`.
 */
export function checkOffset(
  owner: string,
  offset: number,
  periodName: string,
  period: number,
): number {
  if (!Number.isSafeInteger(offset) || Math.abs(offset) >= period) {
    throw new RangeError(
      `${owner} needs an integer 'offset' with abs(offset) < ${periodName} (${period} ms): current value is ${offset}`,
    );
  }
  return offset;
}

/**
 * The element's event timestamp, checked.
 * @param owner the assigner, for the message.
 * @param timestamp the record's timestamp.
 * @returns `timestamp`.
 * @throws {TypeError} when it is `undefined` (no timestamp: a source without
 *   a timestamp assigner) or not a safe integer.
 */
export function requireEventTimestamp(owner: string, timestamp: number | undefined): number {
  if (timestamp === undefined) {
    throw new TypeError(
      `${owner} needs each record's event timestamp, but a record has none (current value is undefined): ` +
        `give the source a WatermarkStrategy with a timestamp assigner, or use a processing-time assigner`,
    );
  }
  if (!Number.isSafeInteger(timestamp)) {
    throw new TypeError(
      `${owner} needs integer event timestamps in ms: current value is ${timestamp}`,
    );
  }
  return timestamp;
}

/**
 * The processing time, checked.
 * @throws {TypeError} unless the clock reads a safe integer (ms).
 */
export function requireProcessingTime(owner: string, context: WindowAssignerContext): number {
  const now = context.currentProcessingTime();
  if (!Number.isSafeInteger(now)) {
    throw new TypeError(
      `${owner} needs the clock to read integer ms: current value is ${now}`,
    );
  }
  return now;
}
