/**
 * Key groups: how keyed state is partitioned over parallel subtasks.
 *
 * The model is Apache Flink's (`KeyGroupRangeAssignment`, `KeyGroupRange`,
 * `MathUtils.murmurHash`). Every key maps, by a stable hash, to one of
 * `maxParallelism` key groups; each subtask of a keyed operator owns one
 * contiguous range of key groups. Key groups are the unit of state
 * redistribution: a snapshot is grouped by key group, and a restore at another
 * parallelism keeps exactly the key groups of the new subtask's range.
 *
 * @example
 * ```ts
 * import {
 *   assignToKeyGroup,
 *   computeKeyGroupRangeForOperatorIndex,
 *   computeOperatorIndexForKeyGroup,
 * } from "./key_group.ts";
 *
 * const keyGroup = assignToKeyGroup("sensor_1", 128);
 * const subtask = computeOperatorIndexForKeyGroup(128, 4, keyGroup);
 * const range = computeKeyGroupRangeForOperatorIndex(128, 4, subtask);
 * if (!range.contains(keyGroup)) throw new Error("unreachable");
 * ```
 *
 * ## Invariants
 *
 * - {@linkcode keyHash} never changes for a given key: it is part of the
 *   checkpoint format. Golden values in `key_group_test.ts` pin it.
 * - Keys equal under `SameValueZero` (so `0` and `-0`, and `NaN` and `NaN`)
 *   hash alike and have the same `stateKeyOf` (`state_key.ts`).
 * - For a fixed `maxParallelism`, the ranges of subtasks `0..parallelism-1`
 *   are contiguous, disjoint and cover `[0, maxParallelism - 1]`.
 *
 * @module
 */

import { type Key, type KeyPart, unsupportedKey } from "./state_key.ts";

export {
  type Key,
  keyOfStateKey,
  type KeyPart,
  type StateKey,
  stateKeyOf,
  unsupportedKey,
  unsupportedKeyPart,
} from "./state_key.ts";

/** Flink's default max parallelism for a keyed operator: the number of key groups. */
export const DEFAULT_MAX_PARALLELISM = 128;

/**
 * Largest accepted (max) parallelism: `2^15`, as Flink's
 * `KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM`.
 */
export const UPPER_BOUND_MAX_PARALLELISM = 32768;

// ---------------------------------------------------------------------------
// keyHash: murmur3_x86_32 over the canonical word encoding.

const TAG_STRING = 1;
const TAG_NUMBER = 2;
const TAG_BOOLEAN = 3;
const TAG_BIGINT = 4;
const TAG_TUPLE = 5;

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const LO = LITTLE_ENDIAN ? 0 : 1;
const HI = LITTLE_ENDIAN ? 1 : 0;
const CANONICAL_NAN_HI = 0x7ff80000;

/** Mixes one 32-bit block `k` into running hash `h` (murmur3_x86_32 body). */
function mix(h: number, k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, C2);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** murmur3's `fmix32` finalizer (Flink's `MathUtils.bitMix`). Returns a signed int32. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * Mixes `E(s)` of a string into `h`. A string with lone surrogates is hashed
 * as its well-formed form (each lone surrogate as U+FFFD, same length):
 * that is the string a consumer decodes from the data plane's UTF-8, so
 * producer and consumer agree on its key group.
 */
function mixString(h: number, s: string): number {
  if (!s.isWellFormed()) s = s.toWellFormed();
  const n = s.length;
  h = mix(mix(h, TAG_STRING), n);
  let i = 0;
  for (; i + 1 < n; i += 2) h = mix(h, s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16));
  if (i < n) h = mix(h, s.charCodeAt(i));
  return h;
}

/** Mixes `E(x)` of a number into `h`. */
function mixNumber(h: number, x: number): number {
  if (x !== x) return mix(mix(mix(h, TAG_NUMBER), 0), CANONICAL_NAN_HI);
  F64[0] = x === 0 ? 0 : x; // -0 -> +0
  return mix(mix(mix(h, TAG_NUMBER), U32[LO]!), U32[HI]!);
}

/** The number of 32-bit words of a bigint's magnitude. */
function bigintWords(x: bigint): number {
  let n = 0;
  for (let m = x < 0n ? -x : x; m > 0n; m >>= 32n) n++;
  return n;
}

/** Mixes `E(x)` of a bigint into `h`. */
function mixBigint(h: number, x: bigint): number {
  const negative = x < 0n;
  const n = bigintWords(x);
  h = mix(mix(mix(h, TAG_BIGINT), negative ? 1 : 0), n);
  let m = negative ? -x : x;
  for (let i = 0; i < n; i++) {
    h = mix(h, Number(m & 0xffffffffn));
    m >>= 32n;
  }
  return h;
}

/** Mixes `E(part)` of a tuple element into `h`. */
function mixPart(h: number, part: unknown): number {
  switch (typeof part) {
    case "string":
      return mixString(h, part);
    case "number":
      return mixNumber(h, part);
    case "boolean":
      return mix(mix(h, TAG_BOOLEAN), part ? 1 : 0);
    case "bigint":
      return mixBigint(h, part);
    default:
      throw unsupportedKey(part);
  }
}

/** The number of 32-bit words of `E(part)` (`part` already validated by {@linkcode mixPart}). */
function partWords(part: KeyPart): number {
  switch (typeof part) {
    case "string":
      return 2 + ((part.length + 1) >>> 1);
    case "number":
      return 3;
    case "boolean":
      return 2;
    case "bigint":
      return 3 + bigintWords(part);
  }
}

/** murmur3's finalization: xor in the length in bytes, then `fmix32`; a signed int32. */
function finish(h: number, words: number): number {
  return fmix32(h ^ (words << 2));
}

/**
 * The stable 32-bit hash of a key: murmur3_x86_32 with seed 0 over the
 * little-endian bytes of the key's canonical encoding `E(key)`, a sequence of
 * unsigned 32-bit words:
 *
 * - string `s`: `1, s.length, w0, w1, ...` where `wi` packs the UTF-16 code
 *   units `2i` (low 16 bits) and `2i+1` (high 16 bits); an odd last unit is
 *   padded with a zero high half. (So it is murmur3 over the UTF-16LE bytes.)
 * - number `x`: `2, lo, hi`, the low and high words of `x`'s IEEE-754 float64
 *   bits, with `-0` encoded as `+0` and every NaN as `0x7FF8000000000000`.
 * - boolean `b`: `3, b ? 1 : 0`.
 * - bigint `x`: `4, x < 0 ? 1 : 0, n, m0, ..., m(n-1)`, the magnitude `|x|`
 *   in `n` 32-bit words, least significant first (`n = 0` for `0n`).
 * - tuple `t`: `5, t.length, E(t[0]), E(t[1]), ...`.
 *
 * The finalizer xors in the total length in bytes (4 × words) and applies
 * `fmix32`. This plays the role of Java's `Object.hashCode()` in Flink's
 * `KeyGroupRangeAssignment.assignToKeyGroup`; {@linkcode
 * computeKeyGroupForKeyHash} then mixes it again with Flink's
 * `MathUtils.murmurHash`, exactly as Flink does.
 *
 * Allocates nothing for string, number and boolean keys.
 *
 * @param key the key.
 * @returns an unsigned 32-bit integer (0 to 2^32 − 1).
 * @throws {TypeError} when `key` (or a tuple element) is not a string,
 * number, boolean or bigint.
 */
export function keyHash(key: Key): number {
  return keyHashInt32(key) >>> 0;
}

/**
 * {@linkcode keyHash} as a signed int32 (same bits). The per-record path uses
 * this form: an unsigned result above 2^31 − 1 would be a heap double in V8
 * and cost a conversion (measured: about 34 → 22 ns per key group).
 */
function keyHashInt32(key: Key): number {
  switch (typeof key) {
    case "string":
      return finish(mixString(0, key), 2 + ((key.length + 1) >>> 1));
    case "number":
      return finish(mixNumber(0, key), 3);
    case "boolean":
      return finish(mix(mix(0, TAG_BOOLEAN), key ? 1 : 0), 2);
    case "bigint":
      return finish(mixBigint(0, key), 3 + bigintWords(key));
  }
  if (!Array.isArray(key)) throw unsupportedKey(key);
  const n = key.length;
  let h = mix(mix(0, TAG_TUPLE), n);
  let words = 2;
  for (let i = 0; i < n; i++) {
    const part = key[i]!;
    h = mixPart(h, part);
    words += partWords(part);
  }
  return finish(h, words);
}

/**
 * Flink's `MathUtils.murmurHash(int)`: one murmur3 round over `code`, the
 * `fmix32` finalizer, then the absolute value (with `Integer.MIN_VALUE`
 * mapped to 0).
 *
 * @param code any number; only its low 32 bits are used.
 * @returns a non-negative int32.
 */
export function flinkMurmurHash(code: number): number {
  let h = mix(0, code);
  h = fmix32(h ^ 4);
  if (h >= 0) return h;
  if (h !== -2147483648) return -h;
  return 0;
}

/**
 * The key group of a key hash (Flink's
 * `KeyGroupRangeAssignment.computeKeyGroupForKeyHash`):
 * `flinkMurmurHash(hash) % maxParallelism`.
 *
 * Does not validate `maxParallelism` (it is on the per-record path);
 * validate it once with {@linkcode checkMaxParallelism}.
 *
 * @param hash a 32-bit hash, as from {@linkcode keyHash}.
 * @param maxParallelism the number of key groups.
 * @returns the key group, in `[0, maxParallelism - 1]`.
 */
export function computeKeyGroupForKeyHash(hash: number, maxParallelism: number): number {
  return flinkMurmurHash(hash) % maxParallelism;
}

/**
 * The key group of `key` (Flink's `KeyGroupRangeAssignment.assignToKeyGroup`):
 * `computeKeyGroupForKeyHash(keyHash(key), maxParallelism)`.
 *
 * @param key the key.
 * @param maxParallelism the number of key groups (not validated here).
 * @returns the key group, in `[0, maxParallelism - 1]`.
 * @throws {TypeError} for a key of an unsupported type.
 */
export function assignToKeyGroup(key: Key, maxParallelism: number): number {
  // String and number fast paths spelled out, so they inline into the caller.
  const h = flinkMurmurHash(
    typeof key === "number"
      ? finish(mixNumber(0, key), 3)
      : typeof key === "string"
      ? finish(mixString(0, key), 2 + ((key.length + 1) >>> 1))
      : keyHashInt32(key),
  );
  // Same result as `%` for the usual power-of-two max parallelism, without a division.
  const mask = maxParallelism - 1;
  return (maxParallelism & mask) === 0 ? h & mask : h % maxParallelism;
}

// ---------------------------------------------------------------------------
// KeyGroupRange

/**
 * An inclusive range of key groups `[startKeyGroup, endKeyGroup]` (Flink's
 * `KeyGroupRange`). The empty range is {@linkcode KeyGroupRange.EMPTY}
 * (`[0, -1]`).
 *
 * @example
 * ```ts
 * import { KeyGroupRange } from "./key_group.ts";
 * const range = new KeyGroupRange(0, 63);
 * range.size; // 64
 * range.intersect(new KeyGroupRange(32, 95)).toString(); // "[32, 63]"
 * ```
 */
export class KeyGroupRange {
  /** The empty range, `[0, -1]`. */
  static readonly EMPTY: KeyGroupRange = new KeyGroupRange(0, -1);

  /** First key group in the range (inclusive). */
  readonly startKeyGroup: number;
  /** Last key group in the range (inclusive); `startKeyGroup - 1` when empty. */
  readonly endKeyGroup: number;

  /**
   * Creates the range `[startKeyGroup, endKeyGroup]`.
   *
   * @param startKeyGroup first key group, an integer >= 0.
   * @param endKeyGroup last key group, an integer >= `startKeyGroup` (or
   * `-1` with `startKeyGroup` 0 for the empty range).
   * @throws {RangeError} when the bounds are not integers, `startKeyGroup` is
   * negative or `endKeyGroup < startKeyGroup` (other than `[0, -1]`).
   */
  constructor(startKeyGroup: number, endKeyGroup: number) {
    if (!Number.isInteger(startKeyGroup) || startKeyGroup < 0) {
      throw new RangeError(
        `A key-group range's start must be an integer >= 0: current value is ${startKeyGroup}`,
      );
    }
    if (
      !Number.isInteger(endKeyGroup) ||
      (endKeyGroup < startKeyGroup && !(startKeyGroup === 0 && endKeyGroup === -1))
    ) {
      throw new RangeError(
        `A key-group range's end must be an integer >= its start ${startKeyGroup}: current value is ${endKeyGroup}`,
      );
    }
    this.startKeyGroup = startKeyGroup;
    this.endKeyGroup = endKeyGroup;
  }

  /**
   * Builds a range from its `[start, end]` tuple form, as in snapshots.
   * @throws {RangeError} as the constructor.
   */
  static fromTuple(tuple: readonly [number, number]): KeyGroupRange {
    return tuple[1] < tuple[0] ? KeyGroupRange.EMPTY : new KeyGroupRange(tuple[0], tuple[1]);
  }

  /** The number of key groups in the range (0 when empty). */
  get size(): number {
    return this.endKeyGroup - this.startKeyGroup + 1;
  }

  /** Whether the range holds no key group. */
  get isEmpty(): boolean {
    return this.endKeyGroup < this.startKeyGroup;
  }

  /** Whether `keyGroup` lies in the range. */
  contains(keyGroup: number): boolean {
    return keyGroup >= this.startKeyGroup && keyGroup <= this.endKeyGroup;
  }

  /** The key groups both ranges hold; {@linkcode KeyGroupRange.EMPTY} when none. */
  intersect(other: KeyGroupRange): KeyGroupRange {
    const start = Math.max(this.startKeyGroup, other.startKeyGroup);
    const end = Math.min(this.endKeyGroup, other.endKeyGroup);
    return start <= end ? new KeyGroupRange(start, end) : KeyGroupRange.EMPTY;
  }

  /** Whether both ranges hold the same key groups. */
  equals(other: KeyGroupRange): boolean {
    return this.isEmpty
      ? other.isEmpty
      : this.startKeyGroup === other.startKeyGroup && this.endKeyGroup === other.endKeyGroup;
  }

  /** The `[start, end]` tuple form used in snapshots. */
  toTuple(): [number, number] {
    return [this.startKeyGroup, this.endKeyGroup];
  }

  /** The key groups in ascending order. */
  *[Symbol.iterator](): IterableIterator<number> {
    for (let g = this.startKeyGroup; g <= this.endKeyGroup; g++) yield g;
  }

  /** `"[start, end]"`, as in error messages. */
  toString(): string {
    return `[${this.startKeyGroup}, ${this.endKeyGroup}]`;
  }
}

// ---------------------------------------------------------------------------
// Operator index <-> key-group range

function checkParallelism(what: string, value: number): void {
  if (!Number.isInteger(value) || value <= 0 || value > UPPER_BOUND_MAX_PARALLELISM) {
    throw new RangeError(
      `'${what}' must be an integer in [1, ${UPPER_BOUND_MAX_PARALLELISM}]: current value is ${value}`,
    );
  }
}

/**
 * Validates a max parallelism (the number of key groups).
 * @throws {RangeError} unless it is an integer in `[1, 32768]`.
 */
export function checkMaxParallelism(maxParallelism: number): void {
  checkParallelism("maxParallelism", maxParallelism);
}

function checkPair(maxParallelism: number, parallelism: number): void {
  checkParallelism("maxParallelism", maxParallelism);
  checkParallelism("parallelism", parallelism);
  if (maxParallelism < parallelism) {
    throw new RangeError(
      `'maxParallelism' must not be smaller than 'parallelism' ${parallelism}: current value is ${maxParallelism}`,
    );
  }
}

/**
 * The key groups owned by subtask `operatorIndex` (Flink's
 * `KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex`):
 * `start = ceil(operatorIndex × maxParallelism / parallelism)`,
 * `end = floor(((operatorIndex + 1) × maxParallelism − 1) / parallelism)`.
 *
 * @param maxParallelism number of key groups, in `[1, 32768]`.
 * @param parallelism number of subtasks, in `[1, maxParallelism]`.
 * @param operatorIndex the subtask, in `[0, parallelism - 1]`.
 * @returns the subtask's non-empty range.
 * @throws {RangeError} for out-of-range arguments; the message states the current value.
 */
export function computeKeyGroupRangeForOperatorIndex(
  maxParallelism: number,
  parallelism: number,
  operatorIndex: number,
): KeyGroupRange {
  checkPair(maxParallelism, parallelism);
  if (!Number.isInteger(operatorIndex) || operatorIndex < 0 || operatorIndex >= parallelism) {
    throw new RangeError(
      `'operatorIndex' must be an integer in [0, ${
        parallelism - 1
      }]: current value is ${operatorIndex}`,
    );
  }
  const start = Math.floor((operatorIndex * maxParallelism + parallelism - 1) / parallelism);
  const end = Math.floor(((operatorIndex + 1) * maxParallelism - 1) / parallelism);
  return new KeyGroupRange(start, end);
}

/**
 * The subtask that owns `keyGroup` (Flink's
 * `KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup`):
 * `floor(keyGroup × parallelism / maxParallelism)`.
 *
 * @param maxParallelism number of key groups, in `[1, 32768]`.
 * @param parallelism number of subtasks, in `[1, maxParallelism]`.
 * @param keyGroup the key group, in `[0, maxParallelism - 1]`.
 * @returns the subtask index, in `[0, parallelism - 1]`.
 * @throws {RangeError} for out-of-range arguments; the message states the current value.
 */
export function computeOperatorIndexForKeyGroup(
  maxParallelism: number,
  parallelism: number,
  keyGroup: number,
): number {
  checkPair(maxParallelism, parallelism);
  if (!Number.isInteger(keyGroup) || keyGroup < 0 || keyGroup >= maxParallelism) {
    throw new RangeError(
      `'keyGroup' must be an integer in [0, ${maxParallelism - 1}]: current value is ${keyGroup}`,
    );
  }
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}
