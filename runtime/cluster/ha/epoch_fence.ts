/**
 * Fencing by leader epoch on a worker (Flink fences JobManager messages by
 * the leader's session id): every deploy, cancel and release message a
 * coordinator sends carries its leader epoch (`epoch` of the worker
 * message; absent: 0, a coordinator without high availability). A worker
 * remembers the highest epoch it saw:
 *
 * - a message of a lower epoch comes from a deposed leader: it is refused
 *   (`stale`);
 * - a message (or leader announcement) of a higher epoch means a new
 *   leader (`newer`): every subtask an older leader deployed is cancelled,
 *   so it stops writing, and the worker sends a heartbeat at once to
 *   register with the new leader;
 * - the same epoch is `current`.
 *
 * Pure: no I/O; the worker process acts on the verdict.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { EpochFence } from "./epoch_fence.ts";
 *
 * const fence = new EpochFence();
 * assert.deepEqual(fence.observe(3), { kind: "newer", previous: 0 });
 * assert.deepEqual(fence.observe(3), { kind: "current" });
 * assert.deepEqual(fence.observe(2), { kind: "stale", highest: 3 });
 * ```
 *
 * @module
 */

/** What a message's epoch means to the worker. */
export type EpochVerdict =
  | { readonly kind: "current" }
  | { readonly kind: "newer"; readonly previous: number }
  | { readonly kind: "stale"; readonly highest: number };

/** The highest leader epoch a worker has seen; see the module docs. */
export class EpochFence {
  #highest = 0;

  /** The highest epoch seen (0 before any). */
  get highest(): number {
    return this.#highest;
  }

  /**
   * Judges a message of leader epoch `epoch` (`undefined`: 0) and
   * remembers it when it is higher.
   * @throws {RangeError} when `epoch` is not a non-negative integer.
   */
  observe(epoch: number | undefined): EpochVerdict {
    const e = epoch ?? 0;
    if (!Number.isInteger(e) || e < 0) {
      throw new RangeError(`a leader epoch must be a non-negative integer, got ${epoch}`);
    }
    if (e < this.#highest) return { kind: "stale", highest: this.#highest };
    if (e === this.#highest) return { kind: "current" };
    const previous = this.#highest;
    this.#highest = e;
    return { kind: "newer", previous };
  }
}
