/**
 * A token bucket over processing time, for sources that emit at most a given
 * rate (after Flink's source `RateLimiter`, FLIP-238). The bucket refills at
 * `recordsPerSecond` and holds at most `burstMs` worth of records (at least
 * one), so a source that was paused does not then burst beyond that.
 *
 * The caller passes the time (`Clock.now()` of the job), so tests can drive it
 * with a `ManualClock`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RateLimiter } from "./rate_limiter.ts";
 *
 * const limiter = new RateLimiter(1000); // 1 record per ms, bursts of up to 100
 * assert.equal(limiter.available(0), 1);
 * limiter.take(1);
 * assert.equal(limiter.available(0), 0);
 * assert.equal(limiter.nextAt(0), 1);
 * assert.equal(limiter.available(50), 50);
 * assert.equal(limiter.available(1000), 100);
 * ```
 *
 * @module
 */

/** A token bucket over processing time (see the module docs). */
export class RateLimiter {
  readonly #perMs: number;
  readonly #capacity: number;
  #tokens = 1;
  #lastMs: number | undefined;

  /**
   * @param recordsPerSecond the rate, in records per second (> 0).
   * @param burstMs how much time's worth of records the bucket holds, in ms. Default 100.
   * @throws {RangeError} unless `recordsPerSecond` and `burstMs` are positive.
   */
  constructor(recordsPerSecond: number, burstMs = 100) {
    if (!(recordsPerSecond > 0) || !(burstMs > 0)) {
      throw new RangeError(
        `a rate limit needs recordsPerSecond > 0 and burstMs > 0, got ${recordsPerSecond} and ${burstMs}`,
      );
    }
    this.#perMs = recordsPerSecond / 1000;
    this.#capacity = Math.max(1, recordsPerSecond * burstMs / 1000);
  }

  /** How many whole records may go at processing time `nowMs`. */
  available(nowMs: number): number {
    if (this.#lastMs !== undefined && nowMs > this.#lastMs) {
      this.#tokens = Math.min(this.#capacity, this.#tokens + (nowMs - this.#lastMs) * this.#perMs);
    }
    if (this.#lastMs === undefined || nowMs > this.#lastMs) this.#lastMs = nowMs;
    return Math.floor(this.#tokens);
  }

  /** Spends `count` records (at most what {@linkcode RateLimiter.available} said). */
  take(count: number): void {
    this.#tokens -= count;
  }

  /** The processing time, in ms, at which one record may go, after `available(nowMs)` was 0. */
  nextAt(nowMs: number): number {
    return nowMs + Math.max(1, Math.ceil((1 - this.#tokens) / this.#perMs));
  }
}
