/**
 * The few async helpers the Weir runtime needs, in one place: a cancellable
 * {@linkcode delay}, a {@linkcode deadline} for promises, a cheap macrotask
 * turn ({@linkcode yieldToEventLoop}) and a wake-up latch for single-consumer
 * loops ({@linkcode Signal}).
 *
 * ## Invariants
 *
 * - No helper leaves a timer behind once its promise has settled, so tests
 *   pass Deno's op sanitizer.
 * - {@linkcode yieldToEventLoop} is a real macrotask turn: timers and I/O get
 *   their chance between two turns, which a microtask (`await null`) never
 *   gives them.
 * - A {@linkcode Signal} never loses a notification: a `notify()` before
 *   `wait()` makes that `wait()` resolve at once.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deadline, delay, Signal } from "./async.ts";
 *
 * const signal = new Signal();
 * signal.notify();
 * await signal.wait(); // resolves at once: notified since the last wait
 * assert.equal(await deadline(delay(1).then(() => 42), 1_000, "the answer"), 42);
 * ```
 *
 * @module
 */

import { setImmediate } from "node:timers";

/** Options of {@linkcode delay}. */
export interface DelayOptions {
  /** Aborting it clears the timer and rejects the delay with `signal.reason`. */
  readonly signal?: AbortSignal;
}

/**
 * Resolves after `ms` milliseconds (a `setTimeout` underneath).
 *
 * @param ms How long to wait, in ms; a finite number ≥ 0.
 * @param options An optional abort signal.
 * @returns A promise that resolves after `ms` ms.
 * @throws {RangeError} (as a rejection) when `ms` is negative, NaN or infinite.
 * @throws {unknown} (as a rejection) `options.signal.reason` when the signal
 * is aborted before or during the delay; the timer is cleared.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { delay } from "./async.ts";
 *
 * const controller = new AbortController();
 * const waiting = delay(60_000, { signal: controller.signal });
 * controller.abort(new Error("stop"));
 * await assert.rejects(waiting, /stop/);
 * ```
 */
export function delay(ms: number, options: DelayOptions = {}): Promise<void> {
  if (!(ms >= 0) || !Number.isFinite(ms)) {
    return Promise.reject(
      new RangeError(
        `Cannot delay as 'ms' must be a finite number >= 0: current value is ${ms}`,
      ),
    );
  }
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A promise given to {@linkcode deadline} did not settle in time. */
export class DeadlineError extends Error {
  /** Always `"DeadlineError"`. */
  override name = "DeadlineError";
  /** What was being waited for (the `message` argument of {@linkcode deadline}). */
  readonly what: string;
  /** The deadline that passed, in ms. */
  readonly ms: number;

  /**
   * Makes the error "<what> did not finish within <ms> ms".
   *
   * @param what What was being waited for, e.g. `"checkpoint 7 of job j1"`.
   * @param ms The deadline that passed, in ms.
   */
  constructor(what: string, ms: number) {
    super(`${what} did not finish within ${ms} ms`);
    this.what = what;
    this.ms = ms;
  }
}

/**
 * Settles like `promise`, or rejects with a {@linkcode DeadlineError} if
 * `promise` has not settled within `ms` milliseconds. The timer is cleared as
 * soon as `promise` settles. The work behind `promise` is not cancelled: pass
 * it an `AbortSignal` if it must stop.
 *
 * @param promise The promise to wait for.
 * @param ms The deadline, in ms; a finite number ≥ 0.
 * @param message What is being waited for; the error reads "<message> did not
 * finish within <ms> ms".
 * @returns The value of `promise`.
 * @throws {DeadlineError} (as a rejection) when `ms` passes first.
 * @throws {RangeError} (as a rejection) when `ms` is negative, NaN or infinite.
 * @throws {unknown} (as a rejection) whatever `promise` rejects with, in time.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { deadline, DeadlineError } from "./async.ts";
 *
 * const never = new Promise<never>(() => {});
 * await assert.rejects(deadline(never, 1, "the reply of vertex map[0]"), DeadlineError);
 * ```
 */
export function deadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  if (!(ms >= 0) || !Number.isFinite(ms)) {
    return Promise.reject(
      new RangeError(
        `Cannot wait for ${message} as 'ms' must be a finite number >= 0: current value is ${ms}`,
      ),
    );
  }
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new DeadlineError(message, ms)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * Resolves on a later macrotask turn of the event loop (`setImmediate` from
 * `node:timers`), so expired timers and ready I/O run first. Unlike
 * `setTimeout(fn, 0)` it is not clamped: a turn costs a few µs, where a
 * zero-delay `setTimeout` cost about 2 ms on the build machine.
 *
 * Use it in long loops that must not starve the rest of the actor system.
 *
 * @returns A promise that resolves on the next macrotask turn.
 *
 * @example
 * ```ts
 * import { yieldToEventLoop } from "./async.ts";
 *
 * for (let i = 0; i < 3; i++) await yieldToEventLoop();
 * ```
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

const resolved: Promise<void> = Promise.resolve();

/**
 * A reusable wake-up latch for a loop with a single consumer, e.g. an actor's
 * mailbox loop: producers call {@linkcode Signal.notify} after enqueuing work,
 * the loop calls {@linkcode Signal.wait} when its queue is empty.
 *
 * Notifications coalesce: any number of `notify()` calls between two waits
 * wake the consumer once. `notify()` allocates nothing when nobody waits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Signal } from "./async.ts";
 *
 * const signal = new Signal();
 * const queue: number[] = [];
 * const consumer = (async () => {
 *   let sum = 0;
 *   while (sum < 6) {
 *     while (queue.length > 0) sum += queue.shift()!;
 *     if (sum < 6) await signal.wait();
 *   }
 *   return sum;
 * })();
 * for (const n of [1, 2, 3]) {
 *   queue.push(n);
 *   signal.notify();
 * }
 * assert.equal(await consumer, 6);
 * ```
 */
export class Signal {
  #notified = false;
  #wake: (() => void) | undefined = undefined;

  /**
   * Wakes the pending {@linkcode Signal.wait}, or, if none is pending, makes
   * the next `wait()` resolve at once. Idempotent until consumed.
   */
  notify(): void {
    const wake = this.#wake;
    if (wake !== undefined) {
      this.#wake = undefined;
      wake();
    } else {
      this.#notified = true;
    }
  }

  /**
   * Resolves at once if {@linkcode Signal.notify} was called since the last
   * wait, otherwise on the next `notify()`. Consumes the notification.
   *
   * @returns A promise that resolves when notified.
   * @throws {Error} (as a rejection) when another `wait()` is still pending:
   * a `Signal` has a single consumer.
   */
  wait(): Promise<void> {
    if (this.#notified) {
      this.#notified = false;
      return resolved;
    }
    if (this.#wake !== undefined) {
      return Promise.reject(
        new Error("Cannot wait on the Signal as another wait() is pending: it has one consumer"),
      );
    }
    return new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
  }

  /** Whether a notification is waiting to be consumed by the next {@linkcode Signal.wait}. */
  get notified(): boolean {
    return this.#notified;
  }
}
