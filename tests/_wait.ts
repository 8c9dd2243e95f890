/**
 * Waiting in tests: {@linkcode waitUntil} polls a condition and, when its
 * time is up, fails with what was still missing, so a test that loses a
 * message fails and says so instead of hanging.
 *
 * For a promise that settles by itself, use `deadline` of
 * `runtime/actor/async.ts`; use `waitUntil` when the thing awaited is a
 * state (a count of messages, a line in a log) and the error should say how
 * far it got.
 *
 * ## Invariants
 *
 * - A wait never outlives its `timeoutMs` by more than one poll (plus the
 *   time one call of `condition` takes): a test never hangs on it.
 * - No timer is left behind once the returned promise has settled.
 * - The deadline is a bound for failing, not a measurement: nothing asserts
 *   how long a wait took.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { waitUntil, WaitTimeoutError } from "./_wait.ts";
 *
 * const inbox: number[] = [1, 2];
 * await assert.rejects(
 *   waitUntil(() => inbox.length >= 3, {
 *     timeoutMs: 20,
 *     missing: () => `${inbox.length} of 3 messages arrived`,
 *   }),
 *   (e: unknown) =>
 *     e instanceof WaitTimeoutError &&
 *     e.message === "Gave up after 20 ms: 2 of 3 messages arrived",
 * );
 * ```
 *
 * @module
 */

import { delay } from "../runtime/actor/async.ts";

/** Options of {@linkcode waitUntil}. */
export interface WaitUntilOptions {
  /** How long to wait before failing, in ms; a finite number ≥ 0. */
  readonly timeoutMs: number;
  /**
   * Says what is still missing, e.g. `"732 of 1000 messages arrived"`;
   * called once, when the time is up, for the error's message.
   */
  readonly missing: () => string;
  /** How long to sleep between two checks, in ms. Default 10. */
  readonly pollMs?: number;
}

/** A {@linkcode waitUntil} whose condition did not hold in time. */
export class WaitTimeoutError extends Error {
  /** Always `"WaitTimeoutError"`. */
  override name = "WaitTimeoutError";
  /** The deadline that passed, in ms. */
  readonly timeoutMs: number;

  /**
   * Makes the error "Gave up after <timeoutMs> ms: <missing>".
   *
   * @param timeoutMs The deadline that passed, in ms.
   * @param missing What was still missing.
   */
  constructor(timeoutMs: number, missing: string) {
    super(`Gave up after ${timeoutMs} ms: ${missing}`);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Resolves as soon as `condition()` holds, checking it at once and then every
 * `pollMs`; rejects with a {@linkcode WaitTimeoutError} naming what was
 * missing when it still does not hold after `timeoutMs`.
 *
 * @param condition Checked until it returns (or resolves to) true.
 * @param options The deadline, what is missing, and the poll interval.
 * @returns A promise that resolves when `condition` holds.
 * @throws {WaitTimeoutError} (as a rejection) when `timeoutMs` passed first.
 * @throws {RangeError} (as a rejection) when `timeoutMs` or `pollMs` is
 * negative, NaN or infinite.
 * @throws {unknown} (as a rejection) whatever `condition` throws.
 */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  options: WaitUntilOptions,
): Promise<void> {
  const { timeoutMs, pollMs = 10 } = options;
  for (const [name, value] of [["timeoutMs", timeoutMs], ["pollMs", pollMs]] as const) {
    if (!(value >= 0) || !Number.isFinite(value)) {
      throw new RangeError(
        `Cannot wait as '${name}' must be a finite number >= 0: current value is ${value}`,
      );
    }
  }
  const until = performance.now() + timeoutMs;
  while (!(await condition())) {
    const left = until - performance.now();
    if (left <= 0) throw new WaitTimeoutError(timeoutMs, options.missing());
    await delay(Math.min(pollMs, left));
  }
}
