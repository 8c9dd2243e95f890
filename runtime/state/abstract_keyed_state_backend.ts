/**
 * What every keyed state backend of Weir does the same way with its key
 * groups and current key (Flink's `AbstractKeyedStateBackend`): it owns a
 * checked key-group range of a job with a given max parallelism, and
 * `setCurrentKey` computes (or takes) the key's group and rejects a key of
 * a group it does not own. The heap (`heap_keyed_backend.ts`) and SQLite
 * (`sqlite/sqlite_keyed_backend.ts`) backends extend it; how they store the
 * current key's identity and the state is their own.
 *
 * Invariants: `startKeyGroup <= endKeyGroup < maxParallelism`, checked at
 * construction; the context's `keyGroup` is always in that range once a key
 * is set (-1 before).
 *
 * @module
 */

import {
  assignToKeyGroup,
  checkMaxParallelism,
  type Key,
  type KeyGroupRange,
} from "./key_group.ts";

/** What the base reads of a backend's current-key context: the key as given and its group. */
export interface CurrentKeyContext {
  /** The current key as given, or `undefined` before the first `setCurrentKey`. */
  key: Key | undefined;
  /** The current key group, or -1 before the first `setCurrentKey`. */
  keyGroup: number;
}

/**
 * Checks the key groups a keyed state backend is created for.
 *
 * @param keyGroupRange the key groups the backend (subtask) owns.
 * @param maxParallelism the number of key groups of the job.
 * @throws {RangeError} when `maxParallelism` is not an integer in
 *   `[1, 32768]`, or the range is empty or reaches past `maxParallelism - 1`.
 */
export function checkBackendKeyGroups(keyGroupRange: KeyGroupRange, maxParallelism: number): void {
  checkMaxParallelism(maxParallelism);
  if (keyGroupRange.isEmpty || keyGroupRange.endKeyGroup >= maxParallelism) {
    throw new RangeError(
      `A keyed state backend's key-group range must be non-empty and within [0, ${
        maxParallelism - 1
      }]: current value is ${keyGroupRange}`,
    );
  }
}

/**
 * Base of the keyed state backends (Flink's `AbstractKeyedStateBackend`):
 * the key-group range, the max parallelism and the current key.
 *
 * @typeParam C the backend's current-key context, shared with its state objects.
 */
export abstract class AbstractKeyedStateBackend<C extends CurrentKeyContext> {
  readonly #range: KeyGroupRange;
  readonly #maxParallelism: number;
  /** The first key group owned. */
  protected readonly startKeyGroup: number;
  /** The last key group owned (inclusive). */
  protected readonly endKeyGroup: number;
  /** The current key, as the backend's state objects read it. */
  protected readonly ctx: C;

  /**
   * @param keyGroupRange the key groups the backend owns.
   * @param maxParallelism the number of key groups of the job.
   * @param ctx the backend's current-key context (no key set yet).
   * @throws {RangeError} as {@linkcode checkBackendKeyGroups}.
   */
  protected constructor(keyGroupRange: KeyGroupRange, maxParallelism: number, ctx: C) {
    checkBackendKeyGroups(keyGroupRange, maxParallelism);
    this.#range = keyGroupRange;
    this.#maxParallelism = maxParallelism;
    this.startKeyGroup = keyGroupRange.startKeyGroup;
    this.endKeyGroup = keyGroupRange.endKeyGroup;
    this.ctx = ctx;
  }

  /** The key groups this backend owns. */
  get keyGroupRange(): KeyGroupRange {
    return this.#range;
  }

  /** The number of key groups in the job (the operator's max parallelism). */
  get maxParallelism(): number {
    return this.#maxParallelism;
  }

  /** The key set by the last `setCurrentKey`, or `undefined` before any. */
  get currentKey(): Key | undefined {
    return this.ctx.key;
  }

  /** The key group of {@linkcode AbstractKeyedStateBackend.currentKey}, or -1 before any. */
  get currentKeyGroup(): number {
    return this.ctx.keyGroup;
  }

  /**
   * The key group of `key`, which this backend must own (the first step of
   * `setCurrentKey`).
   *
   * @param key the record's key.
   * @param knownKeyGroup the key's group when the caller already computed
   *   it; it must equal `assignToKeyGroup(key, maxParallelism)`.
   * @returns the key group.
   * @throws {RangeError} when the key's group is outside this backend's
   *   range (a partitioning bug); the message names key, group and range.
   * @throws {TypeError} when `key` is not a {@linkcode Key}.
   */
  protected ownedKeyGroup(key: Key, knownKeyGroup: number | undefined): number {
    const keyGroup = knownKeyGroup ?? assignToKeyGroup(key, this.#maxParallelism);
    if (keyGroup < this.startKeyGroup || keyGroup > this.endKeyGroup) {
      this.#outOfRange(key, keyGroup);
    }
    return keyGroup;
  }

  // Kept out of ownedKeyGroup so that the hot method stays small enough to inline.
  #outOfRange(key: Key, keyGroup: number): never {
    const shown = JSON.stringify(key, (_k, v) => typeof v === "bigint" ? `${v}n` : v);
    throw new RangeError(
      `Key ${shown} belongs to key group ${keyGroup}, outside this backend's key-group range ${this.#range} (max parallelism ${this.#maxParallelism})`,
    );
  }
}
