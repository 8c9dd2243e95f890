/**
 * The built-in triggers, each with Flink's behaviour exactly:
 *
 * | trigger                          | fires                                                            | default of                   |
 * | -------------------------------- | ---------------------------------------------------------------- | ---------------------------- |
 * | {@linkcode EventTimeTrigger}     | when the watermark passes the window's end (`maxTimestamp()`)    | event-time assigners         |
 * | {@linkcode ProcessingTimeTrigger}| when processing time reaches the window's `maxTimestamp()`       | processing-time assigners    |
 * | {@linkcode CountTrigger}         | every `maxCount` elements                                         | `countWindow`                |
 * | {@linkcode ContinuousEventTimeTrigger} | every `interval` ms of event time, and at the window's end  |                              |
 * | {@linkcode PurgingTrigger}       | when its nested trigger fires, and purges then                   | `countWindow` (around count) |
 * | {@linkcode NeverTrigger}         | never                                                            | `GlobalWindows`              |
 *
 * ## Invariants
 *
 * - Triggers hold no mutable fields, and no ECMAScript `#private` ones: the
 *   window operator copies a trigger per subtask as it copies functions.
 * - Per-window data lives in partitioned state (`count`, `fire-time`), so
 *   it is checkpointed and merges with session windows.
 * - `clear` removes every timer and state entry the trigger created.
 *
 * @module
 */

import { ReducingStateDescriptor } from "../../api/state.ts";
import { checkDuration } from "./window_assigner.ts";
import {
  isFire,
  type OnMergeContext,
  type Trigger,
  type TriggerContext,
  type TriggerResult,
} from "./trigger.ts";
import type { Window } from "./window.ts";

/**
 * Fires once the watermark passes the window's `maxTimestamp()` (Flink's
 * `EventTimeTrigger`). An element added to a window the watermark has
 * already passed (allowed lateness) fires it again at once.
 *
 * @example
 * ```ts
 * import { EventTimeTrigger } from "./triggers.ts";
 * const trigger = EventTimeTrigger.create();
 * ```
 */
export class EventTimeTrigger implements Trigger<unknown, Window> {
  private constructor() {}

  /** A new event-time trigger. */
  static create(): EventTimeTrigger {
    return new EventTimeTrigger();
  }

  /** `FIRE` when the watermark passed the window already, else registers a timer at its end. */
  onElement(
    _element: unknown,
    _timestamp: number | undefined,
    window: Window,
    ctx: TriggerContext,
  ): TriggerResult {
    if (window.maxTimestamp() <= ctx.currentWatermark()) return "FIRE";
    ctx.registerEventTimeTimer(window.maxTimestamp());
    return "CONTINUE";
  }

  /** `FIRE` for the timer at the window's end. */
  onEventTime(time: number, window: Window, _ctx: TriggerContext): TriggerResult {
    return time === window.maxTimestamp() ? "FIRE" : "CONTINUE";
  }

  /** `CONTINUE`. */
  onProcessingTime(_time: number, _window: Window, _ctx: TriggerContext): TriggerResult {
    return "CONTINUE";
  }

  /** Deletes the timer at the window's end. */
  clear(window: Window, ctx: TriggerContext): void {
    ctx.deleteEventTimeTimer(window.maxTimestamp());
  }

  /** True. */
  canMerge(): boolean {
    return true;
  }

  /** Registers the merged window's end timer, unless the watermark is past it. */
  onMerge(window: Window, ctx: OnMergeContext): void {
    const end = window.maxTimestamp();
    if (end > ctx.currentWatermark()) ctx.registerEventTimeTimer(end);
  }

  /** `EventTimeTrigger()`. */
  toString(): string {
    return "EventTimeTrigger()";
  }
}

/**
 * Fires once processing time reaches the window's `maxTimestamp()`
 * (Flink's `ProcessingTimeTrigger`).
 */
export class ProcessingTimeTrigger implements Trigger<unknown, Window> {
  private constructor() {}

  /** A new processing-time trigger. */
  static create(): ProcessingTimeTrigger {
    return new ProcessingTimeTrigger();
  }

  /** Registers a processing-time timer at the window's end; `CONTINUE`. */
  onElement(
    _element: unknown,
    _timestamp: number | undefined,
    window: Window,
    ctx: TriggerContext,
  ): TriggerResult {
    ctx.registerProcessingTimeTimer(window.maxTimestamp());
    return "CONTINUE";
  }

  /** `CONTINUE`. */
  onEventTime(_time: number, _window: Window, _ctx: TriggerContext): TriggerResult {
    return "CONTINUE";
  }

  /** `FIRE`. */
  onProcessingTime(_time: number, _window: Window, _ctx: TriggerContext): TriggerResult {
    return "FIRE";
  }

  /** Deletes the timer at the window's end. */
  clear(window: Window, ctx: TriggerContext): void {
    ctx.deleteProcessingTimeTimer(window.maxTimestamp());
  }

  /** True. */
  canMerge(): boolean {
    return true;
  }

  /** Registers the merged window's end timer, unless processing time is past it. */
  onMerge(window: Window, ctx: OnMergeContext): void {
    const end = window.maxTimestamp();
    if (end > ctx.currentProcessingTime()) ctx.registerProcessingTimeTimer(end);
  }

  /** `ProcessingTimeTrigger()`. */
  toString(): string {
    return "ProcessingTimeTrigger()";
  }
}

const sum = (a: number, b: number): number => a + b;

/**
 * Fires every `maxCount` elements of a window (Flink's `CountTrigger`).
 * The count is kept in the window's reducing state `"count"`, and restarts
 * at 0 after each firing.
 *
 * @example
 * ```ts
 * import { CountTrigger } from "./triggers.ts";
 * const everyHundred = CountTrigger.of(100);
 * ```
 */
export class CountTrigger implements Trigger<unknown, Window> {
  /** Elements per firing. */
  readonly maxCount: number;
  private readonly countState = new ReducingStateDescriptor<number>("count", sum);

  private constructor(maxCount: number) {
    this.maxCount = maxCount;
  }

  /**
   * A trigger firing every `maxCount` elements.
   * @throws {RangeError} unless `maxCount` is a positive integer.
   */
  static of(maxCount: number): CountTrigger {
    if (!Number.isSafeInteger(maxCount) || maxCount < 1) {
      throw new RangeError(
        `CountTrigger needs 'maxCount' to be a positive integer: current value is ${maxCount}`,
      );
    }
    return new CountTrigger(maxCount);
  }

  /** Counts the element; `FIRE` (and resets the count) at `maxCount`. */
  onElement(
    _element: unknown,
    _timestamp: number | undefined,
    _window: Window,
    ctx: TriggerContext,
  ): TriggerResult {
    const count = ctx.getPartitionedState(this.countState);
    count.add(1);
    if (count.get()! >= this.maxCount) {
      count.clear();
      return "FIRE";
    }
    return "CONTINUE";
  }

  /** `CONTINUE`. */
  onEventTime(_time: number, _window: Window, _ctx: TriggerContext): TriggerResult {
    return "CONTINUE";
  }

  /** `CONTINUE`. */
  onProcessingTime(_time: number, _window: Window, _ctx: TriggerContext): TriggerResult {
    return "CONTINUE";
  }

  /** Clears the count. */
  clear(_window: Window, ctx: TriggerContext): void {
    ctx.getPartitionedState(this.countState).clear();
  }

  /** True. */
  canMerge(): boolean {
    return true;
  }

  /** Adds up the merged windows' counts. */
  onMerge(_window: Window, ctx: OnMergeContext): void {
    ctx.mergePartitionedState(this.countState as ReducingStateDescriptor<unknown>);
  }

  /** `CountTrigger(<maxCount>)`. */
  toString(): string {
    return `CountTrigger(${this.maxCount})`;
  }
}

/**
 * Fires repeatedly, every `interval` ms of event time, and at the window's
 * end (Flink's `ContinuousEventTimeTrigger`). The next firing time is kept
 * in the window's reducing state `"fire-time"` (the minimum wins on merge);
 * the first one is aligned to `interval`:
 * `min(t - t % interval + interval, maxTimestamp())` for the first
 * element's timestamp `t`.
 */
export class ContinuousEventTimeTrigger implements Trigger<unknown, Window> {
  /** The firing period, ms. */
  readonly interval: number;
  private readonly fireTimeState = new ReducingStateDescriptor<number>("fire-time", Math.min);

  private constructor(interval: number) {
    this.interval = interval;
  }

  /**
   * A trigger firing every `interval` ms of event time.
   * @param interval ms, > 0.
   * @throws {RangeError} unless `interval` is a positive integer.
   */
  static of(interval: number): ContinuousEventTimeTrigger {
    return new ContinuousEventTimeTrigger(
      checkDuration("ContinuousEventTimeTrigger", "interval", interval, 1),
    );
  }

  /**
   * `FIRE` when the watermark passed the window; otherwise registers the
   * end timer and, for the window's first element, the first periodic one.
   */
  onElement(
    _element: unknown,
    timestamp: number | undefined,
    window: Window,
    ctx: TriggerContext,
  ): TriggerResult {
    if (window.maxTimestamp() <= ctx.currentWatermark()) return "FIRE";
    ctx.registerEventTimeTimer(window.maxTimestamp());
    const fireTime = ctx.getPartitionedState(this.fireTimeState);
    if (fireTime.get() === undefined) {
      if (timestamp === undefined) {
        throw new TypeError(
          `ContinuousEventTimeTrigger needs each record's event timestamp, but a record in window ${window} has none (current value is undefined)`,
        );
      }
      this.registerNext(timestamp - (timestamp % this.interval), window, ctx);
    }
    return "CONTINUE";
  }

  /** `FIRE` at the window's end and at each periodic time, registering the next. */
  onEventTime(time: number, window: Window, ctx: TriggerContext): TriggerResult {
    if (time === window.maxTimestamp()) return "FIRE";
    const fireTime = ctx.getPartitionedState(this.fireTimeState);
    if (fireTime.get() === time) {
      fireTime.clear();
      this.registerNext(time, window, ctx);
      return "FIRE";
    }
    return "CONTINUE";
  }

  /** `CONTINUE`. */
  onProcessingTime(_time: number, _window: Window, _ctx: TriggerContext): TriggerResult {
    return "CONTINUE";
  }

  /** Deletes the pending periodic timer and its state. */
  clear(_window: Window, ctx: TriggerContext): void {
    const fireTime = ctx.getPartitionedState(this.fireTimeState);
    const time = fireTime.get();
    if (time !== undefined) {
      ctx.deleteEventTimeTimer(time);
      fireTime.clear();
    }
  }

  /** True. */
  canMerge(): boolean {
    return true;
  }

  /** Keeps the earliest pending firing time of the merged windows. */
  onMerge(_window: Window, ctx: OnMergeContext): void {
    ctx.mergePartitionedState(this.fireTimeState as ReducingStateDescriptor<unknown>);
    const next = ctx.getPartitionedState(this.fireTimeState).get();
    if (next !== undefined) ctx.registerEventTimeTimer(next);
  }

  /** Registers the next periodic firing after `time` (capped at the window's end) in state and as a timer. */
  private registerNext(time: number, window: Window, ctx: TriggerContext): void {
    const next = Math.min(time + this.interval, window.maxTimestamp());
    ctx.getPartitionedState(this.fireTimeState).add(next);
    ctx.registerEventTimeTimer(next);
  }

  /** `ContinuousEventTimeTrigger(<interval>)`. */
  toString(): string {
    return `ContinuousEventTimeTrigger(${this.interval})`;
  }
}

/**
 * Turns every `FIRE` of a nested trigger into `FIRE_AND_PURGE` (Flink's
 * `PurgingTrigger`): each firing sees only the elements since the last one.
 *
 * @example
 * ```ts
 * import { CountTrigger, PurgingTrigger } from "./triggers.ts";
 * const tumblingCount = PurgingTrigger.of(CountTrigger.of(100));
 * ```
 */
export class PurgingTrigger<T, W extends Window> implements Trigger<T, W> {
  /** The trigger deciding when to fire. */
  readonly nestedTrigger: Trigger<T, W>;

  private constructor(nested: Trigger<T, W>) {
    this.nestedTrigger = nested;
  }

  /** Wraps `nested`. */
  static of<T, W extends Window>(nested: Trigger<T, W>): PurgingTrigger<T, W> {
    return new PurgingTrigger(nested);
  }

  /** The nested result, with `FIRE` made `FIRE_AND_PURGE`. */
  onElement(
    element: T,
    timestamp: number | undefined,
    window: W,
    ctx: TriggerContext,
  ): TriggerResult {
    return purging(this.nestedTrigger.onElement(element, timestamp, window, ctx));
  }

  /** The nested result, with `FIRE` made `FIRE_AND_PURGE`. */
  onEventTime(time: number, window: W, ctx: TriggerContext): TriggerResult {
    return purging(this.nestedTrigger.onEventTime(time, window, ctx));
  }

  /** The nested result, with `FIRE` made `FIRE_AND_PURGE`. */
  onProcessingTime(time: number, window: W, ctx: TriggerContext): TriggerResult {
    return purging(this.nestedTrigger.onProcessingTime(time, window, ctx));
  }

  /** Clears the nested trigger. */
  clear(window: W, ctx: TriggerContext): void {
    this.nestedTrigger.clear(window, ctx);
  }

  /** Whether the nested trigger can merge. */
  canMerge(): boolean {
    return this.nestedTrigger.canMerge?.() ?? false;
  }

  /**
   * Merges the nested trigger.
   * @throws {Error} when the nested trigger cannot merge.
   */
  onMerge(window: W, ctx: OnMergeContext): void {
    if (this.nestedTrigger.onMerge === undefined) {
      throw new Error(`${this} cannot merge windows: its nested trigger has no onMerge`);
    }
    this.nestedTrigger.onMerge(window, ctx);
  }

  /** `PurgingTrigger(<nested>)`. */
  toString(): string {
    return `PurgingTrigger(${String(this.nestedTrigger)})`;
  }
}

function purging(result: TriggerResult): TriggerResult {
  return isFire(result) ? "FIRE_AND_PURGE" : result;
}

/**
 * Never fires (Flink's `GlobalWindows.NeverTrigger`), the default of
 * `GlobalWindows`: set another trigger with `WindowedStream.trigger()`.
 */
export class NeverTrigger implements Trigger<unknown, Window> {
  private constructor() {}

  /** A new never-firing trigger. */
  static create(): NeverTrigger {
    return new NeverTrigger();
  }

  /** `CONTINUE`. */
  onElement(
    _element: unknown,
    _timestamp: number | undefined,
    _window: Window,
    _ctx: TriggerContext,
  ): TriggerResult {
    return "CONTINUE";
  }

  /** `CONTINUE`. */
  onEventTime(_time: number, _window: Window, _ctx: TriggerContext): TriggerResult {
    return "CONTINUE";
  }

  /** `CONTINUE`. */
  onProcessingTime(_time: number, _window: Window, _ctx: TriggerContext): TriggerResult {
    return "CONTINUE";
  }

  /** Nothing to clear. */
  clear(_window: Window, _ctx: TriggerContext): void {}

  /** True. */
  canMerge(): boolean {
    return true;
  }

  /** Nothing to merge. */
  onMerge(_window: Window, _ctx: OnMergeContext): void {}

  /** `NeverTrigger()`. */
  toString(): string {
    return "NeverTrigger()";
  }
}
