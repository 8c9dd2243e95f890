/**
 * Internal: the pending timers of one time domain of an
 * {@linkcode InternalTimerService} (Flink keeps a `HeapPriorityQueueSet`
 * per domain; this is Weir's own layout). Not part of the public API.
 *
 * ## Layout
 *
 * - **Buckets by timestamp.** Each distinct timestamp has one bucket, its
 *   timers in registration order, column-wise (a key and a slot per
 *   timer); a binary min-heap orders the buckets by timestamp. A
 *   keyed window operator's timers are many keys at few timestamps (each
 *   window's end, and its cleanup time), so adding, polling and deleting a
 *   timer cost O(1) amortized, plus O(log b) in the number of distinct
 *   timestamps `b` when a bucket comes or goes, instead of O(log n)
 *   comparisons in a heap of all `n` timers. No object is allocated per
 *   pending timer: a window operator keeps one timer per (key, window), and
 *   long-lived small objects cost the garbage collector more than the
 *   columns do. A deleted or polled timer leaves a hole (its slot column is
 *   `undefined`); a deletion compacts the bucket once holes outnumber its
 *   live timers (and there are more than 32), while the holes of polled
 *   timers go with the bucket, which is polled until it is empty.
 * - **The index**, for dedup and deletion: namespace → timestamp → a *slot*,
 *   which maps the state key of each of its timers to the timer's position
 *   in the bucket. The two outer levels are small maps made once per
 *   (window, time), and the slot looked up last is cached, so registering
 *   one window's timer for key after key costs one `Map` lookup by key.
 *   Registering the timer that the last registration added or found costs
 *   none, until a timer is dropped (a window operator registers a window's
 *   end for the trigger, then the same time as its cleanup time). A polled
 *   timer stays in its slot's map until the slot leaves the index with its
 *   last live timer, so a watermark that fires a window for every key
 *   removes no key from a large map one by one; a position read from a slot
 *   is therefore checked against the bucket unless the slot holds only live
 *   timers. Deleting the timer polled last, until another is added, costs
 *   no lookup either (a trigger's `clear` deletes the timer that fired).
 * - **Indexed on demand.** A bucket's slots get their maps on the bucket's
 *   first lookup (from its columns). Until then, timers added with
 *   {@linkcode TimerQueue.addAbsent} (a caller's promise that the timer is
 *   not pending) cost no map entry at all: the window operator's default
 *   trigger registers every timer so and never looks one up.
 *
 * Measured with `runtime/task/operators/window_operator_bench.ts`; see the
 * figures in the window operator's module docs.
 *
 * ## Invariants
 *
 * - Timers fire in ascending timestamp order, equal timestamps in the order
 *   they were added; {@linkcode TimerQueue.forEachInFiringOrder} lists them so.
 * - At most one live timer per (key, timestamp, namespace).
 * - No empty bucket is in the heap or the bucket map, no slot without a
 *   live timer is in the index, and no empty map; a bucket's or slot's
 *   `live` counts its timers neither deleted nor polled.
 * - In an indexed bucket, a live timer's position in its slot's map is its
 *   index in the bucket's columns (compaction rewrites both); a bucket not
 *   indexed has no slot with a map.
 *
 * @module
 */

import { type Key, type StateKey, stateKeyOf } from "./key_group.ts";

/** A timer as the queue hands it out (an `InternalTimer`). */
export interface PolledTimer<K> {
  /** The key the timer was registered for. */
  readonly key: K;
  /** When it fires, ms. */
  readonly timestamp: number;
  /** The namespace (for example a window); `""` by default. */
  readonly namespace: string;
}

/** The timers of one timestamp, column-wise: timer `i` is (`keys[i]`, `slots[i]`). */
interface Bucket<K> {
  readonly timestamp: number;
  keys: K[];
  /** Each timer's slot (hence namespace); `undefined` once it is gone (deleted or polled). */
  slots: (Slot<K> | undefined)[];
  /** The first index that may hold a live timer. */
  head: number;
  /** Live timers in the columns. */
  live: number;
  /** The bucket's position in the heap. */
  index: number;
  /** Whether its slots have their `positions` (built on the first lookup). */
  indexed: boolean;
}

/**
 * The index entry of one (namespace, timestamp): the position of each of
 * its timers in the bucket of `timestamp`, by state key, once the bucket is
 * indexed. A polled timer's entry stays until the slot leaves the index
 * (see the module docs); a deleted one's leaves at once.
 */
interface Slot<K> {
  readonly namespace: string;
  readonly timestamp: number;
  /** Set for every slot of an indexed bucket, `undefined` before. */
  positions: Map<StateKey, number> | undefined;
  /** Live timers of the slot (all in `positions` once it is set). */
  live: number;
  /** The bucket of `timestamp`, which holds every live timer of the slot. */
  readonly bucket: Bucket<K>;
}

/** Holes a bucket tolerates before compaction, whatever its size. */
const MIN_HOLES_TO_COMPACT = 32;

/** The pending timers of one time domain (see the module docs). */
export class TimerQueue<K> {
  #size = 0;
  readonly #buckets = new Map<number, Bucket<K>>();
  /** Buckets, a binary min-heap on their (distinct) timestamps. */
  readonly #heap: Bucket<K>[] = [];
  /** namespace -> timestamp -> slot; every slot has a live timer. */
  readonly #index = new Map<string, Map<number, Slot<K>>>();
  /** The slot looked up last, while it is in the index. */
  #lastSlot: Slot<K> | undefined;
  /**
   * The (state key, timestamp, namespace) of the timer the last `add` added
   * or found, while no timer was dropped since: a repeated `add` of it costs
   * no lookup. `NaN` matches no timestamp.
   */
  #lastStateKey: StateKey = "";
  #lastTimestamp = NaN;
  #lastNamespace = "";
  /**
   * The (key, timestamp, namespace) of the timer polled last, until a timer
   * is added: deleting it (as a trigger's `clear` does when its window
   * fires) costs no lookup. Keys compare with `===`, so a tuple key takes
   * the lookup. `NaN` matches no timestamp.
   */
  #polledKey: K | undefined;
  #polledTimestamp = NaN;
  #polledNamespace = "";

  /** The number of pending timers. */
  get size(): number {
    return this.#size;
  }

  /** The earliest pending timestamp (ms), or `undefined` when no timer is pending. */
  peekTimestamp(): number | undefined {
    return this.#heap[0]?.timestamp;
  }

  /** The latest pending timestamp (ms), or `undefined` when no timer is pending; O(distinct timestamps). */
  lastTimestamp(): number | undefined {
    let last: number | undefined;
    for (const bucket of this.#heap) {
      if (last === undefined || bucket.timestamp > last) last = bucket.timestamp;
    }
    return last;
  }

  /** Adds the timer unless it exists; returns whether it was added. */
  add(key: K, timestamp: number, namespace: string): boolean {
    const stateKey = stateKeyOf(key as Key);
    if (
      timestamp === this.#lastTimestamp && stateKey === this.#lastStateKey &&
      namespace === this.#lastNamespace
    ) {
      return false;
    }
    this.#lastStateKey = stateKey;
    this.#lastTimestamp = timestamp;
    this.#lastNamespace = namespace;
    let slot = this.#slotAt(namespace, timestamp);
    if (slot === undefined) slot = this.#newSlot(namespace, timestamp);
    else if (this.#position(slot, stateKey) >= 0) return false;
    this.#append(slot, key, stateKey);
    return true;
  }

  /**
   * Adds a timer the caller knows is not pending. In a bucket not indexed
   * yet it skips the lookup that `add` makes (a pending timer would be
   * duplicated there and fire twice); in an indexed bucket, such as every
   * bucket a restore fills ({@linkcode TimerQueue.indexAll}), it is `add`.
   * The window operator calls it under its default trigger's invariant (see
   * `window_operator.ts`).
   */
  addAbsent(key: K, timestamp: number, namespace: string): void {
    const slot = this.#slotAt(namespace, timestamp);
    if (slot !== undefined && slot.positions !== undefined) {
      this.add(key, timestamp, namespace);
      return;
    }
    const stateKey = stateKeyOf(key as Key);
    this.#lastStateKey = stateKey;
    this.#lastTimestamp = timestamp;
    this.#lastNamespace = namespace;
    this.#append(slot ?? this.#newSlot(namespace, timestamp), key, stateKey);
  }

  /** Indexes every bucket, so that {@linkcode TimerQueue.addAbsent} checks their timers. */
  indexAll(): void {
    for (const bucket of this.#heap) if (!bucket.indexed) this.#indexBucket(bucket);
  }

  /** Appends a new timer of `slot` to its bucket (and to the slot's positions, if indexed). */
  #append(slot: Slot<K>, key: K, stateKey: StateKey): void {
    this.#polledTimestamp = NaN;
    const bucket = slot.bucket;
    slot.positions?.set(stateKey, bucket.keys.length);
    slot.live++;
    bucket.keys.push(key);
    bucket.slots.push(slot);
    bucket.live++;
    this.#size++;
  }

  /** Removes the timer if it exists; returns whether it existed. */
  delete(key: K, timestamp: number, namespace: string): boolean {
    if (
      timestamp === this.#polledTimestamp && key === this.#polledKey &&
      namespace === this.#polledNamespace
    ) {
      return false;
    }
    const slot = this.#slotAt(namespace, timestamp);
    if (slot === undefined) return false;
    const stateKey = stateKeyOf(key as Key);
    const i = this.#position(slot, stateKey);
    if (i < 0) return false;
    const bucket = slot.bucket;
    slot.positions!.delete(stateKey);
    this.#drop(bucket, i);
    if (bucket.live > 0) this.#compactIfSparse(bucket);
    return true;
  }

  /** Removes and returns the earliest timer if its timestamp is <= `upTo`. */
  pollUpTo(upTo: number): PolledTimer<K> | undefined {
    const bucket = this.#heap[0];
    if (bucket === undefined || bucket.timestamp > upTo) return undefined;
    const slots = bucket.slots;
    let i = bucket.head;
    while (slots[i] === undefined) i++;
    bucket.head = i + 1;
    const timer = {
      key: bucket.keys[i]!,
      timestamp: bucket.timestamp,
      namespace: slots[i]!.namespace,
    };
    this.#polledKey = timer.key;
    this.#polledTimestamp = timer.timestamp;
    this.#polledNamespace = timer.namespace;
    // No compaction: the holes before `head` go with the bucket, which the
    // caller drains (timers due are polled until none is left).
    this.#drop(bucket, i);
    return timer;
  }

  /**
   * Calls `fn` with every pending timer in firing order (ascending
   * timestamp, then order added), allocating nothing per timer.
   */
  forEachInFiringOrder(fn: (key: K, timestamp: number, namespace: string) => void): void {
    const buckets = [...this.#heap].sort((a, b) => a.timestamp - b.timestamp);
    for (const { timestamp, keys, slots, head } of buckets) {
      for (let i = head; i < keys.length; i++) {
        const slot = slots[i];
        if (slot !== undefined) fn(keys[i]!, timestamp, slot.namespace);
      }
    }
  }

  /** The position of the live timer of `stateKey` in `slot`'s bucket, or -1; indexes the bucket. */
  #position(slot: Slot<K>, stateKey: StateKey): number {
    if (slot.positions === undefined) this.#indexBucket(slot.bucket);
    const positions = slot.positions!;
    const i = positions.get(stateKey);
    if (i === undefined) return -1;
    // Without polled timers in the slot, a position found is live; else check
    // the bucket (which reads columns the lookup need not, a cache miss).
    if (positions.size === slot.live) return i;
    const bucket = slot.bucket;
    return bucket.slots[i] === slot && stateKeyOf(bucket.keys[i] as Key) === stateKey ? i : -1;
  }

  /**
   * Gives every slot of `bucket` its positions, from the bucket's live
   * timers (once per bucket: later slots of it start with an empty map).
   */
  #indexBucket(bucket: Bucket<K>): void {
    bucket.indexed = true;
    const { keys, slots } = bucket;
    for (let i = bucket.head; i < keys.length; i++) {
      const slot = slots[i];
      if (slot !== undefined) (slot.positions ??= new Map()).set(stateKeyOf(keys[i] as Key), i);
    }
  }

  /** The slot of (`namespace`, `timestamp`), or `undefined` when it has no timer. */
  #slotAt(namespace: string, timestamp: number): Slot<K> | undefined {
    const last = this.#lastSlot;
    if (last !== undefined && last.timestamp === timestamp && last.namespace === namespace) {
      return last;
    }
    const slot = this.#index.get(namespace)?.get(timestamp);
    if (slot !== undefined) this.#lastSlot = slot;
    return slot;
  }

  /** Creates the slot of (`namespace`, `timestamp`), and the bucket of `timestamp` if missing. */
  #newSlot(namespace: string, timestamp: number): Slot<K> {
    let bucket = this.#buckets.get(timestamp);
    if (bucket === undefined) {
      bucket = {
        timestamp,
        keys: [],
        slots: [],
        head: 0,
        live: 0,
        index: this.#heap.length,
        indexed: false,
      };
      this.#buckets.set(timestamp, bucket);
      this.#heap.push(bucket);
      this.#up(bucket.index);
    }
    let byTime = this.#index.get(namespace);
    if (byTime === undefined) this.#index.set(namespace, byTime = new Map());
    const slot: Slot<K> = {
      namespace,
      timestamp,
      positions: bucket.indexed ? new Map() : undefined,
      live: 0,
      bucket,
    };
    byTime.set(timestamp, slot);
    this.#lastSlot = slot;
    return slot;
  }

  /**
   * Makes timer `i` of `bucket` a hole; drops its slot from the index, and
   * the bucket from the heap, when it was their last live timer.
   */
  #drop(bucket: Bucket<K>, i: number): void {
    const slot = bucket.slots[i]!;
    bucket.slots[i] = undefined;
    this.#size--;
    this.#lastTimestamp = NaN;
    if (--slot.live === 0) {
      const byTime = this.#index.get(slot.namespace)!;
      byTime.delete(slot.timestamp);
      if (byTime.size === 0) this.#index.delete(slot.namespace);
      if (slot === this.#lastSlot) this.#lastSlot = undefined;
    }
    if (--bucket.live === 0) {
      this.#buckets.delete(bucket.timestamp);
      this.#removeAt(bucket.index);
    }
  }

  /**
   * Rewrites a bucket's columns without their holes (deleted timers, and
   * polled ones before `head`) once they outnumber the live timers, and
   * moves each live timer's position in its slot: amortized O(1) per
   * deleted timer.
   */
  #compactIfSparse(bucket: Bucket<K>): void {
    const holes = bucket.keys.length - bucket.live;
    if (holes <= bucket.live || holes <= MIN_HOLES_TO_COMPACT) return;
    const { keys, slots } = bucket;
    const newKeys: K[] = [];
    const newSlots: Slot<K>[] = [];
    for (let i = bucket.head; i < keys.length; i++) {
      const slot = slots[i];
      if (slot === undefined) continue;
      slot.positions?.set(stateKeyOf(keys[i] as Key), newKeys.length);
      newKeys.push(keys[i]!);
      newSlots.push(slot);
    }
    bucket.keys = newKeys;
    bucket.slots = newSlots;
    bucket.head = 0;
  }

  // The bucket heap: distinct timestamps, so no tie-breaking.

  #removeAt(i: number): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (i === heap.length) return;
    heap[i] = last;
    last.index = i;
    this.#down(i);
    this.#up(last.index);
  }

  #up(i: number): void {
    const heap = this.#heap;
    const bucket = heap[i]!;
    while (i > 0) {
      const parentIndex = (i - 1) >> 1;
      const parent = heap[parentIndex]!;
      if (parent.timestamp <= bucket.timestamp) break;
      heap[i] = parent;
      parent.index = i;
      i = parentIndex;
    }
    heap[i] = bucket;
    bucket.index = i;
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const bucket = heap[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && heap[r]!.timestamp < heap[l]!.timestamp ? r : l;
      const c = heap[child]!;
      if (c.timestamp >= bucket.timestamp) break;
      heap[i] = c;
      c.index = i;
      i = child;
    }
    heap[i] = bucket;
    bucket.index = i;
  }
}
