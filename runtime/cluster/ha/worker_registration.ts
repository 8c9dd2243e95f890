/**
 * A new leader's worker registration window: for `windowMs` after it
 * starts answering, the leader runs no job, so workers (which heartbeat at
 * once when they hear the new leader's announcement) register first and a
 * recovered job neither deploys on the few workers heard first nor reports
 * that none is registered. Jobs wait on {@linkcode WorkerRegistrationWindow.passed}
 * and show as WAITING_FOR_RESOURCES meanwhile (`cluster_jobs.ts`). Ending
 * the leadership term closes the window early. Flink's JobMaster, after a
 * failover of its own, likewise waits for TaskManagers to register their
 * slots (the declarative resource manager's slot requests) before it
 * schedules.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { WorkerRegistrationWindow } from "./worker_registration.ts";
 *
 * const window = new WorkerRegistrationWindow(500);
 * assert.equal(window.open, true); // jobs recovered before `start` wait too
 * window.start(1_000);
 * assert.equal(window.until, 1_500);
 * window.close(); // the term ended, or the timer fired
 * await window.passed();
 * assert.equal(window.open, false);
 * ```
 *
 * @module
 */

/** See the module docs. */
export class WorkerRegistrationWindow {
  readonly #windowMs: number;
  readonly #passed = Promise.withResolvers<void>();
  #open: boolean;
  #until = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * A window of `windowMs` (0: none; it is open from now until it closes).
   * @throws {RangeError} when `windowMs` is not a non-negative integer.
   */
  constructor(windowMs: number) {
    if (!Number.isInteger(windowMs) || windowMs < 0) {
      throw new RangeError(
        `the worker registration window must be an integer >= 0 ms: current value is ${windowMs}`,
      );
    }
    this.#windowMs = windowMs;
    this.#open = windowMs > 0;
    if (!this.#open) this.#passed.resolve();
  }

  /** Whether jobs still wait for workers to register. */
  get open(): boolean {
    return this.#open;
  }

  /** When the window ends (epoch ms), once started; 0 before. */
  get until(): number {
    return this.#until;
  }

  /** The leader starts answering at `now` (epoch ms): the window closes `windowMs` later. */
  start(now: number = Date.now()): void {
    this.#until = now + this.#windowMs;
    if (!this.#open) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.close(), this.#windowMs);
  }

  /** Closes the window now (it passed, or the leadership term ended); idempotent. */
  close(): void {
    clearTimeout(this.#timer);
    this.#open = false;
    this.#passed.resolve();
  }

  /** Resolves once the window closed. */
  passed(): Promise<void> {
    return this.#passed.promise;
  }
}
