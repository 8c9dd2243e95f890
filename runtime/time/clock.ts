/**
 * Processing time. Every reading of the wall clock in the runtime goes
 * through a {@linkcode Clock}, so tests can drive time by hand with
 * `ManualClock` from the testing module.
 *
 * @module
 */

/** A source of processing time and of wake-ups at a processing time. */
export interface Clock {
  /** The current processing time, in ms since the Unix epoch. */
  now(): number;
  /**
   * Calls `callback` once, at or after processing time `atMs`.
   * @returns a function that cancels the wake-up (idempotent).
   */
  schedule(atMs: number, callback: () => void): () => void;
}

/** The wall clock (`Date.now()` and `setTimeout`). */
export class SystemClock implements Clock {
  /** `Date.now()`. */
  now(): number {
    return Date.now();
  }
  /** Schedules with `setTimeout`; the timer does not keep the process alive once cancelled. */
  schedule(atMs: number, callback: () => void): () => void {
    const id = setTimeout(callback, Math.max(0, atMs - Date.now()));
    return () => clearTimeout(id);
  }
}

/** The shared wall clock. */
export const systemClock: Clock = new SystemClock();

/** A pending wake-up; see {@linkcode sleepUntil}. */
export interface Sleep {
  /** Resolves at the due time, or when cancelled. Never rejects. */
  readonly promise: Promise<void>;
  /** Resolves `promise` now and drops the scheduled wake-up. Idempotent. */
  readonly cancel: () => void;
}

/**
 * A promise that resolves when `clock` reaches `dueAtMs` (processing time,
 * in ms), or earlier through `cancel`. Sources use it to wait for a rate
 * limit or a pause without blocking their mailbox loop.
 */
export function sleepUntil(clock: Clock, dueAtMs: number): Sleep {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => resolve = r);
  let done = false;
  let cancelTimer: (() => void) | undefined = undefined;
  const finish = () => {
    if (done) return;
    done = true;
    cancelTimer?.();
    resolve();
  };
  const cancel = clock.schedule(dueAtMs, finish);
  if (done) cancel(); // a clock may fire at once when the time has passed
  else cancelTimer = cancel;
  return { promise, cancel: finish };
}
