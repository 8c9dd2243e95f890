/**
 * Internal: the identity of a key in {@linkcode HeapKeyedStateBackend}'s
 * maps. Not part of the public API.
 *
 * A primitive key is its own identity (`-0` as `0`): a string, number,
 * boolean or bigint is used as a `Map` key directly. A composite (tuple)
 * key is **interned**: equal tuples map to one canonical array,
 * found through a table indexed by a 30-bit hash of the tuple's elements,
 * so a lookup costs one hash over the elements, one `Map` lookup by a small
 * integer and one element-wise comparison, and allocates nothing once the
 * key was seen. Before, every record built a string encoding of its tuple
 * (`stateKeyOf` of `key_group.ts`), then `Map` hashed that fresh string.
 * This is the idea of Flink's `SerializedCompositeKeyBuilder` reusing one
 * key buffer per record, carried over to a heap of JS objects: keys equal by
 * content share one identity, computed without building anything.
 *
 * The canonical tuple is a valid {@linkcode Key}: it is what snapshots and
 * key scans hand out, so no identity needs decoding.
 *
 * ## Measured (2-core shared machine, load 5-13; medians of interleaved runs)
 *
 * - The key path alone, 1M records: with 10k `(bidder, auction)` keys the
 *   backend's ValueState sum takes about half the time of the string
 *   identities it replaced (113 vs 246 ms CPU in one process, the old
 *   backend beside the new; `deno bench -A
 *   runtime/state/heap_keyed_backend_bench.ts --filter "(bidder"` shows
 *   the same against a `Map` of `stateKeyOf` strings: 102 vs 201 ms).
 *   With 292k keys each seen about 3 times, no difference: every lookup
 *   then misses the CPU cache, whichever identity.
 * - Snapshots no longer decode a string per tuple key
 *   (`keyOfStateKey` and the copy of keys were 18% of Nexmark dedup's
 *   profile with a checkpoint every second).
 * - Nexmark dedup end to end (`deno task nexmark --query dedup --events
 *   2000000 --rounds 3`, the tree before beside the tree after, alternated,
 *   2 processes each): 0.28-0.30 of the hand-written loop per CPU-second
 *   before, 0.52-0.56 after (0.44-0.49M → 0.94-0.95M events per CPU-second).
 *
 * ## Invariants
 *
 * - Two keys have the same identity exactly when they are equal element by
 *   element under `SameValueZero` (so `0` and `-0`, and `NaN` and `NaN`, are
 *   equal), as the snapshot format and key groups define key equality.
 * - A canonical tuple holds no `-0` and is never changed: the backend does
 *   not, and whoever receives one (a snapshot's `keys`, `keys()` and
 *   `keysAndNamespaces()` of the backend) must not (the same contract as
 *   the live list `ListState.get()` returns).
 * - Every tuple identity stored in a state table is registered here (the
 *   backend interns every key it stores, and {@linkcode KeyInterner.sweep}
 *   keeps every identity the tables hold), so an equal key found later gets
 *   that same identity.
 * - Memory: the table holds the tuples of live entries plus those interned
 *   since the last sweep (keys read but never written, keys whose entries
 *   were removed). When it has grown enough ({@linkcode KeyInterner.needsSweep}),
 *   the backend counts its entries E (O(key groups)) and sweeps if the
 *   table holds more than 2E tuples, else postpones by E: the table stays
 *   within about 3E + {@linkcode MIN_SWEEP_SIZE} tuples. A sweep visits every
 *   entry and frees at least half the table, so sweeps cost O(1) per
 *   interned tuple; with no key ever removed, no sweep runs at all.
 *
 * @module
 */

import { type Key, type KeyPart, unsupportedKey, unsupportedKeyPart } from "./key_group.ts";

/**
 * A key's identity as a `Map` key in the heap backend: the primitive key
 * itself (`-0` as `0`), or the interned canonical tuple of a composite key.
 * Every identity is also a valid {@linkcode Key} equal to the key it stands for.
 */
export type InternedKey = KeyPart | readonly KeyPart[];

/** The table size below which {@linkcode KeyInterner.needsSweep} is never true. */
export const MIN_SWEEP_SIZE = 4096;

const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);

/**
 * The interner's hash of a tuple's elements: 30 bits, so a V8 small integer
 * (no heap number per lookup); equal for tuples equal under `SameValueZero`.
 * Not the key-group hash (`keyHash` of `key_group.ts`, part of the
 * checkpoint format): this one is never stored, so it is free to be
 * cheaper (one multiply per integer element).
 *
 * @throws {TypeError} for an element that is not a string, number, boolean
 * or bigint, naming its index.
 */
export function tupleHash(tuple: readonly unknown[]): number {
  const n = tuple.length;
  let h = n | 0;
  for (let i = 0; i < n; i++) {
    const part = tuple[i];
    let k: number;
    switch (typeof part) {
      case "number":
        if ((part | 0) === part) k = part; // -0 | 0 is 0: one hash for 0 and -0
        else if (part !== part) k = 0x7ff80000; // every NaN alike
        else {
          F64[0] = part;
          k = (U32[0]! ^ Math.imul(U32[1]!, 0x27d4eb2d)) | 0;
        }
        break;
      case "string": {
        k = part.length;
        for (let j = 0; j < part.length; j++) k = (Math.imul(k, 31) + part.charCodeAt(j)) | 0;
        k ^= 0x5bd1e995;
        break;
      }
      case "boolean":
        k = part ? 0x3c6ef372 : 0x1b873593;
        break;
      case "bigint":
        k = Number(BigInt.asIntN(32, part)) ^ 0x85ebca6b;
        break;
      default:
        throw unsupportedKeyPart(i, part);
    }
    h = Math.imul(h ^ k, 0x9e3779b1);
    h ^= h >>> 15;
  }
  return h & 0x3fffffff;
}

/** Whether canonical tuple `c` and `t` are equal element by element (SameValueZero). */
function sameTuple(c: readonly KeyPart[], t: readonly unknown[]): boolean {
  const n = c.length;
  if (t.length !== n) return false;
  for (let i = 0; i < n; i++) {
    const a = c[i];
    const b = t[i];
    if (a !== b && (a === a || b === b)) return false; // equal, or both NaN
  }
  return true;
}

/**
 * The interning table of one backend: composite keys to their canonical
 * tuples. See the module docs.
 */
export class KeyInterner {
  /** Hash to the first canonical tuple with that hash. */
  #first = new Map<number, readonly KeyPart[]>();
  /** Hash to the further canonical tuples with that hash (collisions; rare). */
  #more = new Map<number, (readonly KeyPart[])[]>();
  #size = 0;
  #sweepAt = MIN_SWEEP_SIZE;

  /** The number of canonical tuples held. */
  get size(): number {
    return this.#size;
  }

  /**
   * The identity of `key`: a primitive itself (`-0` as `0`), a tuple its
   * canonical tuple (interned on first sight: a copy).
   *
   * @throws {TypeError} when `key` is not a string, number, boolean, bigint
   * or an array of those; the message names the value (and the element).
   */
  identity(key: Key): InternedKey {
    switch (typeof key) {
      case "string":
      case "boolean":
      case "bigint":
        return key;
      case "number":
        return key === 0 ? 0 : key; // -0 -> 0
    }
    if (Array.isArray(key)) return this.intern(key);
    throw unsupportedKey(key);
  }

  /**
   * The canonical tuple equal to `tuple`, created (a copy, `-0` as `0`)
   * when none is held.
   * @throws {TypeError} for an element that is not a string, number,
   * boolean or bigint, naming its index.
   */
  intern(tuple: readonly KeyPart[]): readonly KeyPart[] {
    const h = tupleHash(tuple);
    const first = this.#first.get(h);
    if (first === undefined) {
      const created = canonical(tuple);
      this.#first.set(h, created);
      this.#size++;
      return created;
    }
    if (sameTuple(first, tuple)) return first;
    return this.#collided(h, tuple);
  }

  #collided(h: number, tuple: readonly KeyPart[]): readonly KeyPart[] {
    let more = this.#more.get(h);
    if (more !== undefined) {
      for (const c of more) if (sameTuple(c, tuple)) return c;
    } else {
      this.#more.set(h, more = []);
    }
    const created = canonical(tuple);
    more.push(created);
    this.#size++;
    return created;
  }

  /**
   * Whether the table is due a look: it holds at least
   * {@linkcode MIN_SWEEP_SIZE} tuples and has grown as set by the last
   * {@linkcode sweep} or {@linkcode postpone}. The backend then sweeps only
   * when at least half the table must be garbage (see {@linkcode worthSweeping}).
   */
  needsSweep(): boolean {
    return this.#size >= this.#sweepAt;
  }

  /**
   * Whether a sweep would free at least half the table: it holds more than
   * twice `entries`, the number of (state, key, namespace) entries of the
   * tables, which bounds the number of live tuples.
   */
  worthSweeping(entries: number): boolean {
    return this.#size > 2 * entries;
  }

  /**
   * Skips a sweep while all tuples may be live (keys are rarely removed, as
   * in a deduplication): the next look is after `entries` (at least
   * {@linkcode MIN_SWEEP_SIZE}) more tuples.
   */
  postpone(entries: number): void {
    this.#sweepAt = this.#size + Math.max(MIN_SWEEP_SIZE, entries);
  }

  /**
   * Drops every canonical tuple except those `visit` reports: it must call
   * `keep` with every identity the state tables still hold (primitives are
   * ignored; an identity may be reported more than once). Identities kept
   * stay the same objects.
   */
  sweep(visit: (keep: (identity: InternedKey) => void) => void): void {
    const old = this.#first;
    const oldMore = this.#more;
    this.#first = new Map();
    this.#more = new Map();
    this.#size = 0;
    let visited = 0;
    visit((identity) => {
      visited++;
      if (typeof identity !== "object") return;
      const h = tupleHash(identity);
      const first = this.#first.get(h);
      if (first === undefined) {
        this.#first.set(h, identity);
        this.#size++;
      } else if (first !== identity) {
        let more = this.#more.get(h);
        if (more === undefined) this.#more.set(h, more = []);
        if (!more.includes(identity)) {
          more.push(identity);
          this.#size++;
        }
      }
    });
    old.clear();
    oldMore.clear();
    // At least the work of this sweep must be interned before the next one, so
    // sweeps cost O(1) per interned tuple however many namespaces keys have.
    this.#sweepAt = Math.max(MIN_SWEEP_SIZE, 2 * this.#size, this.#size + visited);
  }
}

/**
 * A copy of `tuple` with `-0` as `0`. Not frozen: a frozen array is a slower
 * `Map` key and a slower MessagePack input in V8 (measured: frozen keys
 * took 1.2-1.8x the time of plain ones as `Map` keys, and snapshot encoding
 * went from about 1% to 8% of Nexmark dedup's profile).
 */
function canonical(tuple: readonly KeyPart[]): readonly KeyPart[] {
  // slice(): exact length, elements stored beside the array (push would
  // leave spare capacity, and a separate backing store to miss in the cache).
  const out = tuple.slice();
  for (let i = 0; i < out.length; i++) if (out[i] === 0) out[i] = 0;
  return out;
}
