/**
 * The key group of a record's key on a hash-partitioned edge, memoized per
 * {@linkcode RecordWriter} (`record_writer.ts`): Flink's
 * `KeyGroupRangeAssignment.assignToKeyGroup` for the consumer's max
 * parallelism, remembered for the keys that repeat.
 *
 * The key group of an integer key in `[0, 16384)` is remembered in a typed
 * array indexed by the key, that of a string key in a `Map` of at most
 * {@linkcode KEY_GROUP_MEMO_SIZE} keys, cleared when full. Other numbers are
 * hashed each time: with many distinct keys (Nexmark's auction ids, 180k in
 * 3M events) the memo missed and was refilled, and its lookups cost more than
 * the hash. The result is always `assignToKeyGroup`'s, so state placement and
 * rescaling are unchanged (measurements: `record_writer.ts`' module docs).
 *
 * @module
 */

import { assignToKeyGroup, type Key } from "../state/key_group.ts";

/**
 * Most string keys whose key group a hash-partitioning writer remembers; past it the memo is cleared and refilled (a bounded memo,
 * never an unbounded one, for streams with many distinct keys).
 */
export const KEY_GROUP_MEMO_SIZE = 1 << 16;

/**
 * Integer keys in `[0, DENSE_KEYS)` have their key group remembered in a
 * typed array indexed by the key (32 KiB per hash-partitioning writer,
 * allocated at the first such key): dense ids are the common key, and an
 * array read costs less than a `Map` lookup (measured: 2.4 against 6.7 ns
 * per key, 10k keys).
 */
const DENSE_KEYS = 1 << 14;

/**
 * `assignToKeyGroup(key, maxParallelism)` memoized for small integer and
 * string keys (one per hash-partitioning record writer).
 */
export class KeyGroupMemo {
  readonly #maxParallelism: number;
  /**
   * The key group of string keys seen lately (a `Map` lookup costs less
   * than murmur3 over a string's canonical encoding). Equal keys under
   * `SameValueZero` have one key group, so the `Map`'s key equality is the
   * right one.
   */
  readonly #strings = new Map<string, number>();
  /** The key group of each integer key in `[0, DENSE_KEYS)` seen, -1 for none yet. */
  #dense: Int16Array | undefined;

  /**
   * @param maxParallelism the consumer's max parallelism (number of key
   *   groups), as `assignToKeyGroup` takes it.
   */
  constructor(maxParallelism: number) {
    this.#maxParallelism = maxParallelism;
  }

  /**
   * The key group of `key`: `assignToKeyGroup(key, maxParallelism)`.
   * @throws {TypeError} for a key of a type `assignToKeyGroup` cannot hash.
   */
  keyGroupOf(key: Key): number {
    if (typeof key === "number") {
      // -0 reads index 0: it has the key group of 0.
      if (key >= 0 && key < DENSE_KEYS && (key | 0) === key) {
        const dense = this.#dense ??= new Int16Array(DENSE_KEYS).fill(-1);
        let keyGroup = dense[key]!;
        if (keyGroup < 0) {
          keyGroup = assignToKeyGroup(key, this.#maxParallelism);
          dense[key] = keyGroup;
        }
        return keyGroup;
      }
      // Other numbers are hashed: murmur over two words costs less than a
      // lookup in a memo of many keys (ids that grow, as Nexmark's auctions).
      return assignToKeyGroup(key, this.#maxParallelism);
    } else if (typeof key !== "string") {
      return assignToKeyGroup(key, this.#maxParallelism);
    }
    const memo = this.#strings;
    const known = memo.get(key);
    if (known !== undefined) return known;
    const keyGroup = assignToKeyGroup(key, this.#maxParallelism);
    if (memo.size >= KEY_GROUP_MEMO_SIZE) memo.clear();
    memo.set(key, keyGroup);
    return keyGroup;
  }
}
