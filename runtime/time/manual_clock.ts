/**
 * A {@linkcode Clock} that only moves when a test moves it, so code that
 * reads processing time or schedules wake-ups (timers, rate limits, pauses)
 * can be tested without real sleeps.
 *
 * ## Invariants
 *
 * - Time never goes backwards: {@linkcode ManualClock.advance} and
 *   {@linkcode ManualClock.setTime} refuse to move it back.
 * - Callbacks never fire inside {@linkcode ManualClock.schedule}; they fire
 *   only inside `advance`/`setTime`, in order of their due time (ties in
 *   scheduling order), and while one fires {@linkcode ManualClock.now}
 *   reads its due time (or the current time, if it was due earlier).
 * - A callback that schedules another callback due at or before the target
 *   time of the running `advance`/`setTime` sees it fire in that same call.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ManualClock } from "./manual_clock.ts";
 *
 * const clock = new ManualClock(1_000);
 * const fired: number[] = [];
 * clock.schedule(1_500, () => fired.push(clock.now()));
 * clock.advance(400);
 * assert.deepEqual(fired, []);
 * clock.advance(100);
 * assert.deepEqual(fired, [1_500]);
 * ```
 *
 * @module
 */

import type { Clock } from "./clock.ts";

interface Wakeup {
  readonly atMs: number;
  readonly seq: number;
  readonly callback: () => void;
  cancelled: boolean;
}

function before(a: Wakeup, b: Wakeup): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
}

/**
 * A hand-driven {@linkcode Clock} for tests (times in ms).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ManualClock } from "./manual_clock.ts";
 *
 * const clock = new ManualClock();
 * const cancel = clock.schedule(10, () => {
 *   throw new Error("cancelled wake-ups never fire");
 * });
 * cancel();
 * clock.setTime(20);
 * assert.deepEqual(clock.now(), 20);
 * assert.deepEqual(clock.pending(), 0);
 * ```
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #live = 0;
  /** A binary min-heap on (atMs, seq); cancelled entries are dropped lazily. */
  #heap: Wakeup[] = [];

  /**
   * Creates a clock that reads `startMs` until moved.
   * @param startMs the initial processing time, in ms since the epoch (default 0).
   * @throws {RangeError} when `startMs` is not a finite number.
   */
  constructor(startMs = 0) {
    if (!Number.isFinite(startMs)) {
      throw new RangeError(
        `Cannot create a ManualClock as 'startMs' must be a finite number: current value is ${startMs}`,
      );
    }
    this.#now = startMs;
  }

  /** The current processing time, in ms. */
  now(): number {
    return this.#now;
  }

  /**
   * Schedules `callback` for processing time `atMs`. It fires during the
   * first `advance`/`setTime` that reaches `atMs`, even when `atMs` is
   * already past (never synchronously inside this call).
   * @param atMs the due time, in ms.
   * @param callback called once, with no arguments.
   * @returns a function that cancels the wake-up (idempotent; harmless after it fired).
   * @throws {RangeError} when `atMs` is NaN.
   */
  schedule(atMs: number, callback: () => void): () => void {
    if (Number.isNaN(atMs)) {
      throw new RangeError(
        "Cannot schedule a wake-up as 'atMs' must be a number: current value is NaN",
      );
    }
    const wakeup: Wakeup = { atMs, seq: this.#seq++, callback, cancelled: false };
    this.#push(wakeup);
    this.#live++;
    return () => {
      if (wakeup.cancelled) return;
      wakeup.cancelled = true;
      this.#live--;
    };
  }

  /**
   * Moves time forward by `ms` and fires every wake-up that becomes due, in
   * time order. An error thrown by a callback propagates at once; the clock
   * then stays at that callback's due time and later wake-ups stay pending.
   * @param ms how far to move, in ms (>= 0).
   * @throws {RangeError} when `ms` is negative or not a number.
   */
  advance(ms: number): void {
    if (!(ms >= 0)) {
      throw new RangeError(
        `Cannot advance a ManualClock as 'ms' must be a non-negative number: current value is ${ms}`,
      );
    }
    this.setTime(this.#now + ms);
  }

  /**
   * Moves time to `ms` and fires every wake-up due by then, in time order
   * (see {@linkcode ManualClock.advance} for errors thrown by callbacks).
   * @param ms the new processing time, in ms; not before {@linkcode ManualClock.now}.
   * @throws {RangeError} when `ms` is before the current time or not a number.
   */
  setTime(ms: number): void {
    if (!(ms >= this.#now)) {
      throw new RangeError(
        `Cannot move a ManualClock back in time: current time is ${this.#now}, requested ${ms}`,
      );
    }
    for (;;) {
      const next = this.#peekLive();
      if (next === undefined || next.atMs > ms) break;
      this.#pop();
      next.cancelled = true;
      this.#live--;
      if (next.atMs > this.#now) this.#now = next.atMs;
      next.callback();
    }
    this.#now = ms;
  }

  /** How many wake-ups are scheduled and neither fired nor cancelled. */
  pending(): number {
    return this.#live;
  }

  #peekLive(): Wakeup | undefined {
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined || !top.cancelled) return top;
      this.#pop();
    }
  }

  #push(wakeup: Wakeup): void {
    const heap = this.#heap;
    heap.push(wakeup);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (!before(wakeup, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = wakeup;
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      let child = left;
      if (right < heap.length && before(heap[right]!, heap[left]!)) child = right;
      if (!before(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}
