/**
 * Internal test kit: drives one trigger through the window operator's real
 * trigger context, over a real keyed state backend and timer service, with
 * processing time from a `ManualClock` (Flink's `TriggerTestHarness`). Used
 * by the trigger tests; not part of the public API.
 *
 * @module
 */

import { HeapKeyedStateBackend } from "../../state/heap_keyed_backend.ts";
import { InternalTimerService } from "../../state/timer_service.ts";
import { assignToKeyGroup, type Key, KeyGroupRange } from "../../state/key_group.ts";
import { ManualClock } from "../../time/manual_clock.ts";
import type { Trigger, TriggerResult } from "../../time/windows/trigger.ts";
import type { Window } from "../../time/windows/window.ts";
import { WindowStates, WindowTriggerContext } from "./window_contexts.ts";

const MAX_PARALLELISM = 128;

/** A timer of the harness, flattened from the timer service's snapshot. */
export interface HarnessTimer {
  /** The key it was registered for. */
  readonly key: Key;
  /** When it fires, ms. */
  readonly timestamp: number;
  /** The window's namespace. */
  readonly namespace: string;
}

/** A timer that fired, and what the trigger answered. */
export interface FiredTimer extends HarnessTimer {
  /** The trigger's answer. */
  readonly result: TriggerResult;
}

/** Drives `trigger` for windows of type `W` (see the module docs). */
export class TriggerTestHarness<T, W extends Window> {
  /** Processing time. */
  readonly clock: ManualClock;
  /** The keyed state the trigger writes. */
  readonly backend: HeapKeyedStateBackend;
  /** The timers the trigger registers. */
  readonly timers: InternalTimerService<Key>;
  readonly #context: WindowTriggerContext;
  readonly #windowOf: (namespace: string) => W;
  #watermark = Number.NEGATIVE_INFINITY;

  /**
   * @param trigger the trigger under test.
   * @param windowOf rebuilds a window from its namespace (the assigner's `windowFromNamespace`).
   * @param startMs the clock's start, ms.
   */
  constructor(trigger: Trigger<T, W>, windowOf: (namespace: string) => W, startMs = 0) {
    this.clock = new ManualClock(startMs);
    this.backend = new HeapKeyedStateBackend({
      keyGroupRange: new KeyGroupRange(0, MAX_PARALLELISM - 1),
      maxParallelism: MAX_PARALLELISM,
      clock: () => this.clock.now(),
    });
    this.timers = new InternalTimerService<Key>({
      keyGroupOf: (key) => assignToKeyGroup(key, MAX_PARALLELISM),
    });
    this.#windowOf = windowOf;
    this.#context = new WindowTriggerContext({
      states: new WindowStates(this.backend),
      timers: this.timers,
      output: {
        collect: () => {
          throw new Error("A trigger cannot emit records");
        },
        collectSide: () => {
          throw new Error("A trigger cannot emit records");
        },
        emitWatermark: () => {},
        emitWatermarkStatus: () => {},
      },
      currentWatermark: () => this.#watermark,
      currentProcessingTime: () => this.clock.now(),
      requestWakeup: () => {},
      where: () => "the trigger test harness",
    }, trigger as Trigger<unknown, Window>);
  }

  #at(key: Key, window: W): WindowTriggerContext {
    this.backend.setCurrentKey(key);
    this.#context.key = key;
    this.#context.window = window;
    return this.#context;
  }

  /** Calls `onElement` for `element` in `window` of `key`. */
  processElement(
    element: T,
    timestamp: number | undefined,
    window: W,
    key: Key = "k",
  ): TriggerResult {
    return this.#at(key, window).onElement(element, timestamp);
  }

  /**
   * Moves the watermark to `watermark` and calls `onEventTime` for every
   * due event-time timer, in time order (timers registered meanwhile at or
   * below the watermark fire too, as in the operator).
   */
  advanceWatermark(watermark: number): FiredTimer[] {
    this.#watermark = Math.max(this.#watermark, watermark);
    const fired: FiredTimer[] = [];
    for (
      let t = this.timers.pollEventTimeTimer(watermark);
      t;
      t = this.timers.pollEventTimeTimer(watermark)
    ) {
      const result = this.#at(t.key, this.#windowOf(t.namespace)).onEventTime(t.timestamp);
      fired.push({ key: t.key, timestamp: t.timestamp, namespace: t.namespace, result });
    }
    return fired;
  }

  /**
   * Moves the clock to `timeMs` and calls `onProcessingTime` for every due
   * processing-time timer, in time order.
   */
  advanceProcessingTime(timeMs: number): FiredTimer[] {
    this.clock.setTime(timeMs);
    const fired: FiredTimer[] = [];
    for (
      let t = this.timers.pollProcessingTimeTimer(timeMs);
      t;
      t = this.timers.pollProcessingTimeTimer(timeMs)
    ) {
      const result = this.#at(t.key, this.#windowOf(t.namespace)).onProcessingTime(t.timestamp);
      fired.push({ key: t.key, timestamp: t.timestamp, namespace: t.namespace, result });
    }
    return fired;
  }

  /**
   * Merges `merged` into `target` as the window operator does: `onMerge`
   * for the target, then `clear` for each merged window.
   */
  mergeWindows(target: W, merged: readonly W[], key: Key = "k"): void {
    this.#at(key, target).onMerge(merged);
    for (const w of merged) this.#at(key, w).clear();
  }

  /** Calls `clear` for `window` of `key`. */
  clearTriggerState(window: W, key: Key = "k"): void {
    this.#at(key, window).clear();
  }

  /** The pending event-time timers. */
  eventTimeTimers(): HarnessTimer[] {
    return this.timers.snapshot().eventTime.flatMap((g) =>
      g.keys.map((key, i) => ({ key, timestamp: g.timestamps[i]!, namespace: g.namespaces[i]! }))
    );
  }

  /** The pending processing-time timers. */
  processingTimeTimers(): HarnessTimer[] {
    return this.timers.snapshot().processingTime.flatMap((g) =>
      g.keys.map((key, i) => ({ key, timestamp: g.timestamps[i]!, namespace: g.namespaces[i]! }))
    );
  }

  /** The number of keyed state entries the trigger holds, over all keys and windows. */
  numStateEntries(): number {
    return this.backend.numEntries();
  }
}
