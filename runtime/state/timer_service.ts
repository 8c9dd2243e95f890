/**
 * The timer service of one keyed operator subtask (Flink's
 * `InternalTimerServiceImpl` with its `HeapPriorityQueueSet`s): event-time
 * and processing-time timers per (key, timestamp, namespace).
 *
 * @example
 * ```ts
 * import { InternalTimerService } from "./timer_service.ts";
 * import { assignToKeyGroup } from "./key_group.ts";
 *
 * const timers = new InternalTimerService<string>({
 *   keyGroupOf: (key) => assignToKeyGroup(key, 128),
 * });
 * timers.registerEventTimeTimer("sensor_1", 1_000);
 * timers.registerEventTimeTimer("sensor_1", 1_000); // deduplicated
 * timers.registerEventTimeTimer("sensor_2", 500);
 * const fired = timers.advanceWatermark(1_000);
 * // [{ key: "sensor_2", timestamp: 500, ... }, { key: "sensor_1", timestamp: 1000, ... }]
 * if (fired.length !== 2) throw new Error("unreachable");
 * ```
 *
 * ## Invariants
 *
 * - At most one timer exists per (domain, key, timestamp, namespace).
 * - Timers fire in ascending timestamp order; equal timestamps fire in
 *   registration order (after a restore: snapshot order).
 * - A timer, once popped or deleted, is gone: it is in no snapshot taken
 *   afterwards.
 * - A snapshot holds every pending timer, grouped by the key group of its
 *   key, so a restore at another parallelism keeps exactly its own.
 *
 * Timers are part of the checkpoint, as in Flink. The watermark is not: the
 * task restores or re-derives it.
 *
 * @module
 */

import type { Key, KeyGroupRange } from "./key_group.ts";
import { TimerQueue } from "./_timer_queue.ts";

/** A timer as handed back when it fires. */
export interface InternalTimer<K> {
  /** The key the timer was registered for. */
  readonly key: K;
  /** When it fires: event time or processing time, in ms. */
  readonly timestamp: number;
  /** The namespace (for example a window); `""` by default. */
  readonly namespace: string;
}

/**
 * The pending timers of one key group in one time domain, column-wise:
 * timer `i` is (`keys[i]`, `timestamps[i]`, `namespaces[i]`), in firing order.
 */
export interface TimerKeyGroup<K> {
  /** The key group every key of `keys` belongs to. */
  readonly keyGroup: number;
  /** The timers' keys. */
  readonly keys: readonly K[];
  /** The timers' timestamps, in ms. */
  readonly timestamps: readonly number[];
  /** The timers' namespaces (`""` by default). */
  readonly namespaces: readonly string[];
}

/**
 * A checkpoint of an {@linkcode InternalTimerService}, a plain
 * MessagePack-encodable object. Each domain lists one
 * {@linkcode TimerKeyGroup} per key group with a pending timer, in
 * ascending key-group order.
 *
 * ```
 * { version: 1,
 *   eventTime: [{ keyGroup: 58, keys: ["sensor_1"], timestamps: [1000], namespaces: [""] }],
 *   processingTime: [] }
 * ```
 */
export interface TimerServiceSnapshot<K = Key> {
  /** Format version, `1`. */
  readonly version: 1;
  /** Pending event-time timers by key group. */
  readonly eventTime: readonly TimerKeyGroup<K>[];
  /** Pending processing-time timers by key group. */
  readonly processingTime: readonly TimerKeyGroup<K>[];
}

/** Options of {@linkcode InternalTimerService}. */
export interface InternalTimerServiceOptions<K> {
  /**
   * The key group of a key, for snapshots (usually
   * `(key) => assignToKeyGroup(key, maxParallelism)`).
   */
  readonly keyGroupOf: (key: K) => number;
}

function checkTimestamp(what: string, timestamp: number): void {
  if (typeof timestamp !== "number" || Number.isNaN(timestamp)) {
    throw new TypeError(
      `A ${what} timer's timestamp must be a number of ms: current value is ${String(timestamp)}`,
    );
  }
}

function checkNamespace(namespace: string): void {
  if (typeof namespace !== "string") {
    throw new TypeError(
      `A timer's namespace must be a string: current value is ${String(namespace)}`,
    );
  }
}

/**
 * Event-time and processing-time timers of one keyed operator subtask
 * (Flink's `InternalTimerService`). Each domain is a queue of buckets by
 * timestamp, each in registration order, plus an index for deduplication and
 * deletion (see `_timer_queue.ts`). The service does not read a clock: the task passes the
 * watermark and processing time in, and asks
 * {@linkcode InternalTimerService.nextProcessingTime} when to wake up.
 *
 * @typeParam K the key type, a {@linkcode Key}.
 */
export class InternalTimerService<K extends Key = Key> {
  readonly #keyGroupOf: (key: K) => number;
  readonly #eventTime = new TimerQueue<K>();
  readonly #processingTime = new TimerQueue<K>();
  #watermark = -Infinity;

  /**
   * Creates a service with no timers and watermark `-Infinity`.
   *
   * @param options `keyGroupOf`, the key group of a key (for snapshots).
   */
  constructor(options: InternalTimerServiceOptions<K>) {
    this.#keyGroupOf = options.keyGroupOf;
  }

  /** The highest watermark passed to {@linkcode advanceWatermark}, in ms; `-Infinity` before any. */
  get currentWatermark(): number {
    return this.#watermark;
  }

  /** The number of pending event-time timers. */
  get numEventTimeTimers(): number {
    return this.#eventTime.size;
  }

  /** The number of pending processing-time timers. */
  get numProcessingTimeTimers(): number {
    return this.#processingTime.size;
  }

  /**
   * Registers an event-time timer that fires once the watermark reaches
   * `timestamp`. Registering an existing (key, timestamp, namespace) again
   * does nothing. A timestamp at or below the current watermark fires at the
   * next {@linkcode advanceWatermark} or {@linkcode pollEventTimeTimer}.
   *
   * @param key the key (usually the current key).
   * @param timestamp event time, in ms.
   * @param namespace a namespace, e.g. a window; default `""`.
   * @returns whether a new timer was added (false: it already existed).
   * @throws {TypeError} when `timestamp` is NaN or not a number, or the key is not a {@linkcode Key}.
   */
  registerEventTimeTimer(key: K, timestamp: number, namespace = ""): boolean {
    checkTimestamp("event-time", timestamp);
    checkNamespace(namespace);
    return this.#eventTime.add(key, timestamp, namespace);
  }

  /**
   * Registers an event-time timer that the caller knows is not pending,
   * skipping the lookup that deduplicates {@linkcode registerEventTimeTimer}
   * where it can: among timers added since the start or the restore and
   * never looked up. Were it pending there, it would be there twice and
   * fire twice. Restored timers are always checked. For a caller whose own
   * invariant rules a pending timer out (the window operator's default
   * trigger, see `window_operator.ts`); everyone else registers with
   * {@linkcode registerEventTimeTimer}.
   *
   * @param key the key (usually the current key).
   * @param timestamp event time, in ms.
   * @param namespace a namespace, e.g. a window.
   * @throws {TypeError} when `timestamp` is NaN or not a number, or the key is not a {@linkcode Key}.
   */
  registerAbsentEventTimeTimer(key: K, timestamp: number, namespace: string): void {
    checkTimestamp("event-time", timestamp);
    checkNamespace(namespace);
    this.#eventTime.addAbsent(key, timestamp, namespace);
  }

  /**
   * Deletes an event-time timer.
   * @returns whether it existed.
   */
  deleteEventTimeTimer(key: K, timestamp: number, namespace = ""): boolean {
    return this.#eventTime.delete(key, timestamp, namespace);
  }

  /**
   * Registers a processing-time timer that fires once processing time
   * reaches `timestamp`; deduplicated as event-time timers.
   *
   * @param key the key (usually the current key).
   * @param timestamp processing time, in ms since the epoch.
   * @param namespace a namespace; default `""`.
   * @returns whether a new timer was added (false: it already existed).
   * @throws {TypeError} when `timestamp` is NaN or not a number, or the key is not a {@linkcode Key}.
   */
  registerProcessingTimeTimer(key: K, timestamp: number, namespace = ""): boolean {
    checkTimestamp("processing-time", timestamp);
    checkNamespace(namespace);
    return this.#processingTime.add(key, timestamp, namespace);
  }

  /**
   * Deletes a processing-time timer.
   * @returns whether it existed.
   */
  deleteProcessingTimeTimer(key: K, timestamp: number, namespace = ""): boolean {
    return this.#processingTime.delete(key, timestamp, namespace);
  }

  /**
   * Records watermark `watermark` and removes and returns every event-time
   * timer with timestamp <= `watermark`, in firing order. Timers that the
   * caller registers while handling these at or below the watermark are not
   * included; to fire those too (Flink's loop), call
   * {@linkcode pollEventTimeTimer} until it returns `undefined` instead.
   *
   * @param watermark the new watermark, in ms.
   * @returns the fired timers (possibly empty).
   */
  advanceWatermark(watermark: number): InternalTimer<K>[] {
    if (watermark > this.#watermark) this.#watermark = watermark;
    const fired: InternalTimer<K>[] = [];
    for (let t = this.#eventTime.pollUpTo(watermark); t; t = this.#eventTime.pollUpTo(watermark)) {
      fired.push(t);
    }
    return fired;
  }

  /**
   * Removes and returns the earliest event-time timer if its timestamp is
   * <= `watermark` (and records the watermark), else `undefined`.
   */
  pollEventTimeTimer(watermark: number): InternalTimer<K> | undefined {
    if (watermark > this.#watermark) this.#watermark = watermark;
    return this.#eventTime.pollUpTo(watermark);
  }

  /**
   * Removes and returns every processing-time timer with timestamp <=
   * `nowMs`, in firing order.
   *
   * @param nowMs the current processing time, in ms.
   * @returns the fired timers (possibly empty).
   */
  popProcessingTimersUpTo(nowMs: number): InternalTimer<K>[] {
    const fired: InternalTimer<K>[] = [];
    for (
      let t = this.#processingTime.pollUpTo(nowMs);
      t;
      t = this.#processingTime.pollUpTo(nowMs)
    ) {
      fired.push(t);
    }
    return fired;
  }

  /**
   * Removes and returns the earliest processing-time timer if its timestamp
   * is <= `nowMs`, else `undefined`.
   */
  pollProcessingTimeTimer(nowMs: number): InternalTimer<K> | undefined {
    return this.#processingTime.pollUpTo(nowMs);
  }

  /** The earliest pending processing-time timer's timestamp (ms), so the task can schedule one wake-up; `undefined` when none. */
  nextProcessingTime(): number | undefined {
    return this.#processingTime.peekTimestamp();
  }

  /** The latest pending event-time timer's timestamp (ms), or `undefined`; O(distinct timestamps). */
  lastEventTime(): number | undefined {
    return this.#eventTime.lastTimestamp();
  }

  /** The earliest pending event-time timer's timestamp (ms), or `undefined`. */
  nextEventTime(): number | undefined {
    return this.#eventTime.peekTimestamp();
  }

  /**
   * Captures every pending timer as a plain object grouped by key group
   * (synchronous; O(n + b log b) for `n` timers at `b` distinct timestamps).
   *
   * @returns a {@linkcode TimerServiceSnapshot}.
   * @throws whatever `keyGroupOf` throws.
   */
  snapshot(): TimerServiceSnapshot<K> {
    return {
      version: 1,
      eventTime: this.#snapshotQueue(this.#eventTime),
      processingTime: this.#snapshotQueue(this.#processingTime),
    };
  }

  #snapshotQueue(queue: TimerQueue<K>): TimerKeyGroup<K>[] {
    const byGroup = new Map<number, { keys: K[]; timestamps: number[]; namespaces: string[] }>();
    // In firing order, so each key group's timers are too.
    queue.forEachInFiringOrder((key, timestamp, namespace) => {
      const keyGroup = this.#keyGroupOf(key);
      let group = byGroup.get(keyGroup);
      if (group === undefined) {
        byGroup.set(keyGroup, group = { keys: [], timestamps: [], namespaces: [] });
      }
      group.keys.push(key);
      group.timestamps.push(timestamp);
      group.namespaces.push(namespace);
    });
    return [...byGroup.keys()].sort((a, b) => a - b).map((keyGroup) => ({
      keyGroup,
      ...byGroup.get(keyGroup)!,
    }));
  }

  /**
   * Adds the timers of `snapshots` (one per old subtask, any old
   * parallelism) whose key group lies in `keyGroupRange`, deduplicating.
   * Within each domain, restored timers with equal timestamps keep their
   * snapshot order, and earlier snapshots come first.
   *
   * @param snapshots snapshots from {@linkcode snapshot} (possibly after a MessagePack round trip).
   * @param keyGroupRange the key groups this subtask owns.
   * @throws {Error} when a snapshot has another version or a malformed timer.
   */
  restore(snapshots: readonly TimerServiceSnapshot<K>[], keyGroupRange: KeyGroupRange): void {
    for (const snap of snapshots) {
      if (snap.version !== 1) {
        throw new Error(
          `Cannot restore timer service snapshot: unsupported version, current value is ${snap.version}`,
        );
      }
    }
    const restoreDomain = (
      pick: (s: TimerServiceSnapshot<K>) => readonly TimerKeyGroup<K>[],
      queue: TimerQueue<K>,
    ) => {
      const timers: [K, number, string][] = [];
      for (const snap of snapshots) {
        for (const group of pick(snap)) {
          if (!keyGroupRange.contains(group.keyGroup)) continue;
          const { keys, timestamps, namespaces } = group;
          if (
            !Array.isArray(keys) || !Array.isArray(timestamps) || !Array.isArray(namespaces) ||
            keys.length !== timestamps.length || keys.length !== namespaces.length
          ) {
            throw new Error(
              `Malformed timer service snapshot, key group ${group.keyGroup}: 'keys', 'timestamps' and 'namespaces' must be arrays of equal length`,
            );
          }
          for (let i = 0; i < keys.length; i++) {
            const timestamp = timestamps[i];
            const namespace = namespaces[i];
            if (typeof timestamp !== "number" || typeof namespace !== "string") {
              throw new Error(
                `Malformed timer in timer service snapshot, key group ${group.keyGroup}: current value is ${
                  String(timestamp)
                } / ${JSON.stringify(namespace)}`,
              );
            }
            timers.push([keys[i]!, timestamp, namespace]);
          }
        }
      }
      // Stable sort: equal timestamps keep snapshot order.
      timers.sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
      for (const [key, timestamp, namespace] of timers) {
        queue.add(key, timestamp, namespace);
      }
    };
    restoreDomain((s) => s.eventTime, this.#eventTime);
    restoreDomain((s) => s.processingTime, this.#processingTime);
    // Restored timers may come from another trigger: registerAbsentEventTimeTimer checks them.
    this.#eventTime.indexAll();
  }
}
