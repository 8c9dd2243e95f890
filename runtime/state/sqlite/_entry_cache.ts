/**
 * Internal: the bounded cache in front of the SQLite keyed state backend's
 * database. It holds decoded entries, one per (state, key, namespace), and
 * writes changed ones back in batches. It performs no I/O itself: the
 * backend gives it a `writeBack` function that writes a batch of entries in
 * one transaction. Not part of the public API.
 *
 * ## Design
 *
 * - **Second-chance FIFO (CLOCK).** Entries sit in one insertion-ordered
 *   `Set`. A hit only sets the entry's `ref` bit, so reading or writing a
 *   hot key costs one `Map` lookup and never touches SQLite. To make room,
 *   the oldest entry is taken: with its bit set, the bit is cleared and the
 *   entry goes to the back; without it, the entry is evicted.
 * - **Bound by weight.** Every entry weighs 1, a map state's entry 1 plus
 *   its number of user entries; the cache evicts while the total weight is
 *   above `capacity`. The one entry being used is never evicted.
 * - **Write-back in batches.** A write marks the entry dirty. Evicting a
 *   dirty entry writes it together with up to `batchSize - 1` other dirty
 *   entries (the oldest changes first) in one transaction, so a cache
 *   thrashing over cold keys commits once per batch, not once per record.
 *   {@linkcode EntryCache.flush} writes every dirty entry (snapshots and
 *   scans call it, so the database then holds the whole state).
 * - **Negative entries.** A key read and found absent is cached as an entry
 *   whose value is `undefined`, so that repeated reads of an absent key do
 *   not query SQLite either.
 *
 * ## Invariants
 *
 * - An entry is in its state's maps exactly while it is in `#fifo`.
 * - An entry is in `#dirty` exactly while `dirty` is `true`; a clean
 *   entry's value equals the database's row(s).
 * - `#weight` is the sum of the weights of the entries in `#fifo`.
 *
 * @module
 */

import type { StateKey } from "../key_group.ts";

/** One cached (state, key, namespace) entry, in the backend's stored form. */
export interface CachedEntry {
  /** The state's cache this entry belongs to. */
  readonly owner: StateCache;
  /** The key group of the key. */
  readonly keyGroup: number;
  /** The key's identity (`stateKeyOf(key)`). */
  readonly keyId: StateKey;
  /** The namespace. */
  readonly namespace: string;
  /**
   * The stored value: a value, accumulator or list (TTL states: cells), or
   * for map state a `Map` of user key to value (or cell); `undefined` when
   * the entry does not exist.
   */
  value: unknown;
  /** Whether `value` differs from the database. */
  dirty: boolean;
  /** The CLOCK reference bit: used since the eviction hand last passed. */
  ref: boolean;
  /** 1, or for a map state's entry 1 + the number of user entries. */
  weight: number;
  /** Map state: user keys changed since the last write-back. */
  changed: Set<unknown> | undefined;
  /** Map state: every row of the entry must be deleted before `changed` is written. */
  cleared: boolean;
}

/** The cached entries of one state: the default namespace, and the others by namespace. */
export class StateCache {
  /** Entries of the default namespace, by key identity. */
  readonly plain: Map<StateKey, CachedEntry> = new Map();
  /** Entries of the other namespaces: namespace, then key identity. */
  readonly scoped: Map<string, Map<StateKey, CachedEntry>> = new Map();
  /** The backend's table id of the state, for write-back. */
  readonly tableId: number;

  /** A cache of the state with table id `tableId`. */
  constructor(tableId: number) {
    this.tableId = tableId;
  }

  /** The entry of (key, namespace), without touching its reference bit. */
  find(keyId: StateKey, namespace: string): CachedEntry | undefined {
    return namespace === "" ? this.plain.get(keyId) : this.scoped.get(namespace)?.get(keyId);
  }

  /** @internal */
  insert(entry: CachedEntry): void {
    if (entry.namespace === "") {
      this.plain.set(entry.keyId, entry);
      return;
    }
    let m = this.scoped.get(entry.namespace);
    if (m === undefined) this.scoped.set(entry.namespace, m = new Map());
    m.set(entry.keyId, entry);
  }

  /** @internal */
  remove(entry: CachedEntry): void {
    if (entry.namespace === "") {
      this.plain.delete(entry.keyId);
      return;
    }
    const m = this.scoped.get(entry.namespace);
    if (m === undefined) return;
    m.delete(entry.keyId);
    if (m.size === 0) this.scoped.delete(entry.namespace);
  }
}

/** Options of {@linkcode EntryCache}. */
export interface EntryCacheOptions {
  /** The bound on the total weight (entries, plus user entries of cached maps); ≥ 1. */
  readonly capacity: number;
  /** How many dirty entries one eviction writes back at most; ≥ 1. */
  readonly batchSize: number;
  /** Writes `entries` to the database in one transaction (their `dirty` flags are cleared after). */
  readonly writeBack: (entries: readonly CachedEntry[]) => void;
}

/** Counters of an {@linkcode EntryCache}, for tests and benchmarks. */
export interface EntryCacheStats {
  /** Entries loaded or created (misses). */
  misses: number;
  /** Entries evicted. */
  evictions: number;
  /** Write-back batches (transactions). */
  writeBacks: number;
  /** Entries written back. */
  entriesWritten: number;
}

/** The bounded, write-back entry cache of one backend (see the module docs). */
export class EntryCache {
  readonly #fifo = new Set<CachedEntry>();
  readonly #dirty = new Set<CachedEntry>();
  readonly #capacity: number;
  readonly #batchSize: number;
  readonly #writeBack: (entries: readonly CachedEntry[]) => void;
  #weight = 0;
  /** Counters since creation. */
  readonly stats: EntryCacheStats = { misses: 0, evictions: 0, writeBacks: 0, entriesWritten: 0 };

  /**
   * @throws {RangeError} when `capacity` or `batchSize` is not an integer ≥ 1.
   */
  constructor(options: EntryCacheOptions) {
    for (const name of ["capacity", "batchSize"] as const) {
      const v = options[name];
      if (!Number.isInteger(v) || v < 1) {
        throw new RangeError(
          `The SQLite state cache's '${name}' must be an integer ≥ 1: current value is ${v}`,
        );
      }
    }
    this.#capacity = options.capacity;
    this.#batchSize = options.batchSize;
    this.#writeBack = options.writeBack;
  }

  /** The number of cached entries. */
  get size(): number {
    return this.#fifo.size;
  }

  /** The total weight of the cached entries. */
  get weight(): number {
    return this.#weight;
  }

  /** The number of dirty entries. */
  get dirtyCount(): number {
    return this.#dirty.size;
  }

  /**
   * Caches a new entry (not yet cached) and evicts older ones while the
   * weight is above the capacity; may write dirty entries back.
   * @returns the entry.
   */
  add(entry: CachedEntry): CachedEntry {
    this.stats.misses++;
    entry.owner.insert(entry);
    this.#fifo.add(entry);
    this.#weight += entry.weight;
    if (entry.dirty) this.#dirty.add(entry);
    if (this.#weight > this.#capacity) this.#evict(entry);
    return entry;
  }

  /** Marks a cached entry changed. */
  markDirty(entry: CachedEntry): void {
    if (entry.dirty) return;
    entry.dirty = true;
    this.#dirty.add(entry);
  }

  /** Changes a cached entry's weight (a map state's entry grew or shrank), evicting others if needed. */
  reweigh(entry: CachedEntry, weight: number): void {
    this.#weight += weight - entry.weight;
    entry.weight = weight;
    if (this.#weight > this.#capacity) this.#evict(entry);
  }

  /** Writes every dirty entry back in one transaction (nothing when none is dirty). */
  flush(): void {
    if (this.#dirty.size === 0) return;
    this.#write([...this.#dirty]);
  }

  /** Flushes, then forgets every entry of `owner` (its rows are about to change underneath). */
  forget(owner: StateCache): void {
    this.flush();
    for (const entry of this.#fifo) {
      if (entry.owner === owner) this.#drop(entry);
    }
  }

  /** Forgets every entry without writing (the backend is disposed). */
  clear(): void {
    for (const entry of this.#fifo) entry.owner.remove(entry);
    this.#fifo.clear();
    this.#dirty.clear();
    this.#weight = 0;
  }

  #evict(keep: CachedEntry): void {
    const fifo = this.#fifo;
    let spins = 0;
    while (this.#weight > this.#capacity && fifo.size > 1) {
      const victim = fifo.values().next().value as CachedEntry;
      if (victim === keep || (victim.ref && spins < 2 * fifo.size)) {
        victim.ref = false;
        fifo.delete(victim);
        fifo.add(victim);
        spins++;
        continue;
      }
      if (victim.dirty) this.#writeBatch(victim);
      this.#drop(victim);
      this.stats.evictions++;
    }
  }

  /** Writes `victim` with up to `batchSize - 1` other dirty entries, oldest changes first. */
  #writeBatch(victim: CachedEntry): void {
    const batch: CachedEntry[] = [victim];
    for (const entry of this.#dirty) {
      if (batch.length >= this.#batchSize) break;
      if (entry !== victim) batch.push(entry);
    }
    this.#write(batch);
  }

  #write(batch: CachedEntry[]): void {
    this.#writeBack(batch);
    for (const entry of batch) {
      entry.dirty = false;
      entry.changed = undefined;
      entry.cleared = false;
      this.#dirty.delete(entry);
    }
    this.stats.writeBacks++;
    this.stats.entriesWritten += batch.length;
  }

  #drop(entry: CachedEntry): void {
    entry.owner.remove(entry);
    this.#fifo.delete(entry);
    this.#dirty.delete(entry);
    this.#weight -= entry.weight;
  }
}
