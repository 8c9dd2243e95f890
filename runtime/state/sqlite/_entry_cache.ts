/**
 * Internal: the bounded cache in front of the SQLite keyed state backend's
 * database. It holds decoded entries, one per (state, key, namespace), and
 * writes changed ones back in batches. It performs no I/O itself: the
 * backend gives it a `writeBack` function that writes a batch of entries in
 * one transaction. Not part of the public API.
 *
 * ## Design
 *
 * - **Second-chance FIFO (CLOCK).** Entries sit in one FIFO, a doubly
 *   linked list through the entries (a JS `Set` would do, but taking its
 *   first element after many deletions scans the deleted slots). A hit only sets the entry's `ref` bit, so reading or writing a
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
 * - An entry is in its state's maps exactly while it is in the FIFO.
 * - Every dirty entry is in the queue of changes (`queued`), at most once;
 *   the queue may also hold entries cleaned since, which are skipped. A
 *   clean entry's value equals the database's row(s).
 * - `#weight` is the sum of the weights of the entries in the FIFO.
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
  /** The next entry in the cache's FIFO (towards the newest); set by the cache. */
  next?: CachedEntry | undefined;
  /** The previous entry in the cache's FIFO (towards the oldest); set by the cache. */
  prev?: CachedEntry | undefined;
  /** Whether the entry is in the cache's queue of changes; set by the cache. */
  queued?: boolean;
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
  /** Oldest entry of the FIFO (the eviction hand), or `undefined` when empty. */
  #head: CachedEntry | undefined;
  /** Newest entry of the FIFO. */
  #tail: CachedEntry | undefined;
  #size = 0;
  /** Changed entries, oldest change first, from index `#queueStart`. */
  #queue: CachedEntry[] = [];
  #queueStart = 0;
  #dirtyCount = 0;
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
    return this.#size;
  }

  /** The total weight of the cached entries. */
  get weight(): number {
    return this.#weight;
  }

  /** The number of dirty entries. */
  get dirtyCount(): number {
    return this.#dirtyCount;
  }

  /**
   * Caches a new entry (not yet cached) and evicts older ones while the
   * weight is above the capacity; may write dirty entries back.
   * @returns the entry.
   */
  add(entry: CachedEntry): CachedEntry {
    this.stats.misses++;
    entry.owner.insert(entry);
    this.#append(entry);
    this.#size++;
    this.#weight += entry.weight;
    if (entry.dirty) {
      entry.dirty = false;
      this.markDirty(entry);
    }
    if (this.#weight > this.#capacity) this.#evict(entry);
    return entry;
  }

  /** Marks a cached entry changed. */
  markDirty(entry: CachedEntry): void {
    if (entry.dirty) return;
    entry.dirty = true;
    this.#dirtyCount++;
    if (!entry.queued) {
      entry.queued = true;
      this.#queue.push(entry);
    }
  }

  /** Changes a cached entry's weight (a map state's entry grew or shrank), evicting others if needed. */
  reweigh(entry: CachedEntry, weight: number): void {
    this.#weight += weight - entry.weight;
    entry.weight = weight;
    if (this.#weight > this.#capacity) this.#evict(entry);
  }

  /** Writes every dirty entry back in one transaction (nothing when none is dirty). */
  flush(): void {
    if (this.#dirtyCount === 0) {
      this.#resetQueue();
      return;
    }
    const batch: CachedEntry[] = [];
    for (let i = this.#queueStart; i < this.#queue.length; i++) {
      const entry = this.#queue[i]!;
      entry.queued = false;
      if (entry.dirty) batch.push(entry);
    }
    this.#resetQueue();
    this.#write(batch);
  }

  /** Flushes, then forgets every entry of `owner` (its rows are about to change underneath). */
  forget(owner: StateCache): void {
    this.flush();
    for (let e = this.#head; e !== undefined;) {
      const next = e.next;
      if (e.owner === owner) this.#drop(e);
      e = next;
    }
  }

  /** Forgets every entry without writing (the backend is disposed). */
  clear(): void {
    for (let e = this.#head; e !== undefined; e = e.next) e.owner.remove(e);
    this.#head = this.#tail = undefined;
    this.#size = 0;
    this.#resetQueue();
    this.#dirtyCount = 0;
    this.#weight = 0;
  }

  #resetQueue(): void {
    this.#queue = [];
    this.#queueStart = 0;
  }

  #append(entry: CachedEntry): void {
    entry.prev = this.#tail;
    entry.next = undefined;
    if (this.#tail === undefined) this.#head = entry;
    else this.#tail.next = entry;
    this.#tail = entry;
  }

  #unlink(entry: CachedEntry): void {
    const { prev, next } = entry;
    if (prev === undefined) this.#head = next;
    else prev.next = next;
    if (next === undefined) this.#tail = prev;
    else next.prev = prev;
    entry.prev = entry.next = undefined;
  }

  #evict(keep: CachedEntry): void {
    let spins = 0;
    while (this.#weight > this.#capacity && this.#size > 1) {
      const victim = this.#head!;
      if (victim === keep || (victim.ref && spins < 2 * this.#size)) {
        victim.ref = false;
        if (victim !== this.#tail) {
          this.#unlink(victim);
          this.#append(victim);
        }
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
    const queue = this.#queue;
    let i = this.#queueStart;
    for (; i < queue.length && batch.length < this.#batchSize; i++) {
      const entry = queue[i]!;
      entry.queued = false;
      if (entry.dirty && entry !== victim) batch.push(entry);
    }
    this.#queueStart = i;
    if (i > 1024 && i * 2 > queue.length) {
      this.#queue = queue.slice(i);
      this.#queueStart = 0;
    }
    this.#write(batch);
  }

  #write(batch: CachedEntry[]): void {
    this.#writeBack(batch);
    for (const entry of batch) {
      if (entry.dirty) this.#dirtyCount--;
      entry.dirty = false;
      entry.changed = undefined;
      entry.cleared = false;
    }
    this.stats.writeBacks++;
    this.stats.entriesWritten += batch.length;
  }

  #drop(entry: CachedEntry): void {
    entry.owner.remove(entry);
    this.#unlink(entry);
    this.#size--;
    this.#weight -= entry.weight;
    // A dropped entry is clean (evictions write it first; forget flushes), so not in the queue's dirty part.
  }
}
