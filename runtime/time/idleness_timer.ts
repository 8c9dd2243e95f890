/**
 * Detects that an input went quiet (Flink's `WatermarksWithIdleness.IdlenessTimer`):
 * the input reports activity on every record, which costs one field write,
 * and the periodic watermark check asks whether it has been inactive for
 * the idle timeout. Time is processing time in ms, read from the caller (the
 * job's `Clock`), so tests drive it with `ManualClock`.
 *
 * ## Invariants
 *
 * - `checkIfIdle(now)` is true only when no activity was reported since a
 *   check at least `idleTimeoutMs` before `now` (or since the timer was made,
 *   at `startMs`).
 * - A check that sees activity restarts the count at its own time, so an
 *   input turns idle between `idleTimeoutMs` and `idleTimeoutMs` plus one
 *   check interval after its last record.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { IdlenessTimer } from "./idleness_timer.ts";
 *
 * const timer = new IdlenessTimer(1_000, 0);
 * timer.activity();
 * assert.equal(timer.checkIfIdle(200), false); // saw a record: counting from 200
 * assert.equal(timer.checkIfIdle(1_100), false);
 * assert.equal(timer.checkIfIdle(1_200), true);
 * ```
 *
 * @module
 */

/** Tells whether an input has been inactive for its idle timeout. */
export class IdlenessTimer {
  readonly #timeoutMs: number;
  #active = false;
  #inactiveSince: number;

  /**
   * @param idleTimeoutMs inactivity after which the input is idle, in ms (> 0).
   * @param startMs the processing time the input appeared, in ms: inactivity counts from it.
   * @throws {RangeError} unless `idleTimeoutMs` is a positive finite number.
   */
  constructor(idleTimeoutMs: number, startMs: number) {
    if (!(Number.isFinite(idleTimeoutMs) && idleTimeoutMs > 0)) {
      throw new RangeError(
        `Cannot create an IdlenessTimer as 'idleTimeoutMs' must be a positive finite number: current value is ${idleTimeoutMs}`,
      );
    }
    this.#timeoutMs = idleTimeoutMs;
    this.#inactiveSince = startMs;
  }

  /** Reports activity (a record). */
  activity(): void {
    this.#active = true;
  }

  /**
   * Whether the input is idle at processing time `nowMs`; activity since the
   * last check restarts the count at `nowMs`.
   */
  checkIfIdle(nowMs: number): boolean {
    if (this.#active) {
      this.#active = false;
      this.#inactiveSince = nowMs;
      return false;
    }
    return nowMs - this.#inactiveSince >= this.#timeoutMs;
  }
}
