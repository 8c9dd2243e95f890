/**
 * The heap keyed state backend: keyed Value, List, Map, Reducing and
 * Aggregating state held in JS `Map`s, one `Map` per key group per state,
 * with state namespaces for windows (Flink's `HeapKeyedStateBackend` with
 * its per-key-group `StateMap`s).
 *
 * @example
 * ```ts
 * import { HeapKeyedStateBackend } from "./heap_keyed_backend.ts";
 * import { KeyGroupRange } from "./key_group.ts";
 * import { ValueStateDescriptor } from "../api/state.ts";
 *
 * const backend = new HeapKeyedStateBackend({
 *   keyGroupRange: new KeyGroupRange(0, 127),
 *   maxParallelism: 128,
 * });
 * const sum = backend.getValueState(new ValueStateDescriptor<number>("sum", { defaultValue: 0 }));
 * for (const [key, x] of [["a", 1], ["b", 2], ["a", 3]] as const) {
 *   backend.setCurrentKey(key);
 *   sum.update(sum.value()! + x);
 * }
 * backend.setCurrentKey("a");
 * if (sum.value() !== 4) throw new Error("unreachable");
 * const checkpoint = backend.snapshotCanonical(); // plain object, MessagePack-encodable
 * const inFlight = backend.snapshot(1, "checkpoint", "sums"); // O(1); write(writer) encodes
 * inFlight.discard?.();
 * ```
 *
 * Windows keep each window's state in a namespace of the same state object;
 * see `internal_state.ts` for an example.
 *
 * ## Design
 *
 * - Per record the task calls {@linkcode HeapKeyedStateBackend.setCurrentKey}
 *   once; it hashes the key (unless the caller passes the key group the
 *   producer computed), checks its key group and finds the key's identity
 *   in the tables: a primitive key is its own identity, a composite key is
 *   interned to one canonical tuple (`_key_interner.ts`; no string
 *   is built per record). State objects, obtained once when the operator
 *   opens, then read and write the current key with one array index and one
 *   `Map` operation, allocating nothing (ValueState without TTL).
 * - **Namespaces** (Flink's): every entry lives under (key, namespace). The
 *   namespace is per state object ({@linkcode InternalKvState.setCurrentNamespace}),
 *   {@linkcode VOID_NAMESPACE} until set, which is what user functions use.
 *   The default namespace costs one string comparison more per access;
 *   other namespaces one `Map` lookup more (layout and measured costs in
 *   `_heap_state_base.ts`).
 *   Every state object the backend returns implements `InternalKvState`; list,
 *   reducing and aggregating states implement `InternalMergingState`.
 * - **Snapshots are copy-on-write** (Flink's `CopyOnWriteStateMap` idea,
 *   per key group; `_heap_cow.ts` has the design and invariants).
 *   {@linkcode HeapKeyedStateBackend.snapshot}, the synchronous part of a
 *   checkpoint, only registers a capture per state (O(states × key groups),
 *   no entry copied: about 0.03 ms at 1M ValueState keys where the full
 *   copy took 50–80 ms; see `bench/state_snapshot.ts`). Until a key group is
 *   copied, the first change of an entry after the snapshot saves its old
 *   value (a copy of a list, map or TTL cell; an accumulator itself, which
 *   the next fold then copies). The result's `write()` copies and
 *   MessagePack-encodes key group by key group, in slices of about 1 ms
 *   between which it yields to the event loop, into the canonical
 *   {@linkcode KeyedStateSnapshot} blob (one private `keyed` handle; the
 *   bytes equal `encode(snapshotCanonical())`). Without a snapshot in
 *   flight a write costs one array-length check more.
 *   {@linkcode HeapKeyedStateBackend.snapshotCanonical} is the synchronous
 *   full copy as a plain object (column-wise, values shared not cloned:
 *   state values are immutable by contract, see `runtime/api/state.ts`;
 *   containers copied; accumulators copied on their next write).
 * - TTL (Flink's `StateTtlConfig`) wraps each value, list element or map
 *   entry with its last-access time; expired ones are never returned, and are
 *   removed when touched and when snapshotted.
 * - **Event-time TTL** (beyond Flink, which only has processing-time TTL):
 *   a TTL with `timeCharacteristic: "EventTime"` reads time from the
 *   `eventTimeClock` option (the operator's current watermark); until event
 *   time starts nothing expires (when it starts, and the simplification
 *   there: `_ttl_clocks.ts`).
 *
 * ## Invariants
 *
 * - Every stored entry's key belongs to a key group of this backend's range.
 * - No empty list or empty map is stored: clearing removes the key; no empty
 *   namespace map is stored: removing its last key removes it.
 * - `snapshotCanonical()` never shares a mutable container with the live state, and
 *   an accumulator it shares is never changed in place afterwards.
 * - Every state object calls `touch()` before it changes an entry in any
 *   way (see `_heap_state_base.ts`), and every change of a whole table
 *   first drains the table's snapshots in flight: what a `snapshot()`'s
 *   `write()` writes is the state at the moment `snapshot()` returned.
 * - A TTL cell's time is `-Infinity` only while event time has not started.
 *
 * @module
 */

export type {
  KeyedStateSnapshot,
  KeyedStateSnapshotState,
  KeyGroupEntries,
  NamespaceEntries,
  TtlTime,
} from "./keyed_state_snapshot.ts";

import type {
  AggregatingState,
  AggregatingStateDescriptor,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  ReducingState,
  ReducingStateDescriptor,
  StateKind,
  StateTtlConfig,
  ValueState,
  ValueStateDescriptor,
} from "../api/state.ts";
import type { Key, KeyGroupRange } from "./key_group.ts";
import { AbstractKeyedStateBackend } from "./abstract_keyed_state_backend.ts";
import { type InternedKey, KeyInterner } from "./_key_interner.ts";
import {
  type InternalKvState,
  type InternalMergingState,
  VOID_NAMESPACE,
} from "./internal_state.ts";
import { KeyContext, type StateTable, type TtlSettings } from "./_heap_state_base.ts";
import {
  HeapListState,
  HeapMapState,
  HeapValueState,
  TtlHeapListState,
  TtlHeapMapState,
  TtlHeapValueState,
} from "./_heap_states.ts";
import {
  aggregateFolding,
  HeapAggregatingState,
  reduceFolding,
  TtlHeapAggregatingState,
} from "./_heap_aggregating_states.ts";
import { checkSnapshotHeader, type KeyedStateSnapshot } from "./keyed_state_snapshot.ts";
import { stampUnstarted, TtlClocks } from "./_ttl_clocks.ts";
import { countEntries, liveKeys, liveKeysAndNamespaces } from "./_heap_table_scan.ts";
import type { KeyedStateBackend, StateReader } from "./keyed_state_backend.ts";
import type { SnapshotResult, SnapshotType, StateHandle } from "../checkpoint/snapshot_contract.ts";
import { cowSnapshotResult, restoreKeyedHandles } from "./_heap_handles.ts";
import {
  canonicalSnapshot,
  captureTables,
  drainCaptures,
  registerState,
  restoreState,
  sweepInterner,
  tableNamed,
  type TableSet,
} from "./_heap_tables.ts";

/** Options of {@linkcode HeapKeyedStateBackend}. */
export interface HeapKeyedStateBackendOptions {
  /** The key groups this backend (subtask) owns. */
  readonly keyGroupRange: KeyGroupRange;
  /** The number of key groups, in `[1, 32768]`; equal across restores. */
  readonly maxParallelism: number;
  /** Processing-time clock for TTL, in ms. Default `Date.now`. */
  readonly clock?: () => number;
  /**
   * Event-time clock for TTLs with `timeCharacteristic: "EventTime"`, in
   * ms: the operator's current watermark, `-Infinity` before the first.
   * Without it, registering such a state throws.
   */
  readonly eventTimeClock?: () => number;
}

// ---------------------------------------------------------------------------
// The backend

/**
 * Keyed state of one subtask of a keyed operator, on the JS heap (Flink's
 * `HeapKeyedStateBackend`). See the module docs for the design.
 *
 * Not thread-safe; one subtask (actor) owns it. Reading state before the
 * first {@linkcode HeapKeyedStateBackend.setCurrentKey} returns defaults;
 * writing throws.
 */
export class HeapKeyedStateBackend extends AbstractKeyedStateBackend<KeyContext>
  implements KeyedStateBackend {
  readonly #clocks: TtlClocks;
  readonly #tables = new Map<string, StateTable>();
  readonly #interner = new KeyInterner();
  /** The tables with what whole-table operations need (`_heap_tables.ts`). */
  readonly #set: TableSet;

  /**
   * Creates an empty backend for one subtask's key groups.
   *
   * @param options the key-group range owned, the max parallelism and
   * optional clocks (ms) for processing-time and event-time TTL.
   * @throws {RangeError} when `maxParallelism` is not an integer in
   * `[1, 32768]`, or the range is empty or reaches past `maxParallelism - 1`.
   */
  constructor(options: HeapKeyedStateBackendOptions) {
    const { keyGroupRange, maxParallelism } = options;
    super(keyGroupRange, maxParallelism, new KeyContext());
    this.#clocks = new TtlClocks(options.clock ?? Date.now, options.eventTimeClock, (start) => {
      for (const table of this.#tables.values()) {
        if (table.ttl?.time !== "EventTime") continue;
        drainCaptures(table); // the stamps change cells in place
        stampUnstarted(table, start);
      }
    });
    this.#set = {
      tables: this.#tables,
      clocks: this.#clocks,
      range: [this.startKeyGroup, this.endKeyGroup],
      maxParallelism,
      interner: this.#interner,
    };
  }

  /**
   * The current key's identity in the state tables (a primitive key
   * itself, a composite key's interned canonical tuple; see
   * `_key_interner.ts`), or `undefined` before any key. Equal keys have the
   * same identity while an entry of the key is stored; a key none of whose
   * entries is stored may get a new one after the interner's sweep.
   */
  get currentKeyIdentity(): InternedKey | undefined {
    return this.ctx.index < 0 ? undefined : this.ctx.stateKey;
  }

  /**
   * Makes `key` the key every state object reads and writes until the next
   * call. Computes the key group (unless given) and the key's identity in
   * the state tables once: a primitive key is its own identity; a composite
   * key is interned (see `_key_interner.ts`), which allocates only the first
   * time an equal key is seen.
   *
   * @param key the current record's key.
   * @param knownKeyGroup the key's group when the caller already computed
   *   it (a hash partitioner does, to choose the channel); it must equal
   *   `assignToKeyGroup(key, maxParallelism)`.
   * @throws {RangeError} when the key's group is outside this backend's
   * range (a partitioning bug); the message names key, group and range.
   * @throws {TypeError} when `key` is not a {@linkcode Key}.
   */
  setCurrentKey(key: Key, knownKeyGroup?: number): void {
    const keyGroup = this.ownedKeyGroup(key, knownKeyGroup);
    const ctx = this.ctx;
    ctx.key = key;
    ctx.keyGroup = keyGroup;
    ctx.index = keyGroup - this.startKeyGroup;
    if (typeof key === "object" && this.#interner.needsSweep()) this.#sweepInterner();
    ctx.stateKey = this.#interner.identity(key);
  }

  /** Drops the interned composite keys no table holds any more (those of removed entries), when worth it. */
  #sweepInterner(): void {
    sweepInterner(this.#set, this.numEntries());
  }

  /**
   * The {@linkcode ValueState} named by `descriptor`, bound to the current
   * key and (see {@linkcode InternalKvState}) namespace. Call once (at open)
   * and keep the object.
   *
   * @returns the same object for every call with the same name.
   * @throws {Error} when the name is registered (or restored) as another
   * kind, or registered with another TTL.
   * @throws {RangeError} for an invalid TTL, or an event-time TTL without
   * an `eventTimeClock`.
   */
  getValueState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T> & InternalKvState {
    return this.#register(
      descriptor.name,
      "value",
      descriptor.ttl,
      (table, ttl, clock) =>
        ttl === undefined
          ? new HeapValueState<T>(table, this.ctx, descriptor.defaultValue)
          : new TtlHeapValueState<T>(table, this.ctx, ttl, clock, descriptor.defaultValue),
    );
  }

  /**
   * The {@linkcode ListState} named by `descriptor`, bound to the current
   * key and namespace. `get()` returns the live list (do not mutate it; a
   * later `add` may append to it); with a TTL it returns a fresh array of
   * live elements. Elements must not be `undefined`. Merging namespaces
   * concatenates the lists (target first).
   *
   * @returns the same object for every call with the same name.
   * @throws {Error} when the name is registered (or restored) as another
   * kind, or registered with another TTL.
   * @throws {RangeError} for an invalid TTL, or an event-time TTL without
   * an `eventTimeClock`.
   */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T> & InternalMergingState {
    return this.#register(
      descriptor.name,
      "list",
      descriptor.ttl,
      (table, ttl, clock) =>
        ttl === undefined
          ? new HeapListState<T>(table, this.ctx)
          : new TtlHeapListState<T>(table, this.ctx, ttl, clock),
    );
  }

  /**
   * The {@linkcode MapState} named by `descriptor`, bound to the current key
   * and namespace. With a TTL, each user-map entry expires on its own (as in
   * Flink). Values must not be `undefined`.
   *
   * @returns the same object for every call with the same name.
   * @throws {Error} when the name is registered (or restored) as another
   * kind, or registered with another TTL.
   * @throws {RangeError} for an invalid TTL, or an event-time TTL without
   * an `eventTimeClock`.
   */
  getMapState<UK, UV>(
    descriptor: MapStateDescriptor<UK, UV>,
  ): MapState<UK, UV> & InternalKvState {
    return this.#register(
      descriptor.name,
      "map",
      descriptor.ttl,
      (table, ttl, clock) =>
        ttl === undefined
          ? new HeapMapState<UK, UV>(table, this.ctx)
          : new TtlHeapMapState<UK, UV>(table, this.ctx, ttl, clock),
    );
  }

  /**
   * The {@linkcode ReducingState} named by `descriptor`, bound to the
   * current key and namespace. The first value added to an empty entry is
   * stored as it is; later ones are folded in with `reduce(current, added)`.
   * Merging namespaces reduces the sources in order, then
   * `reduce(target, merged)` (Flink's `HeapReducingState`).
   *
   * @returns the same object for every call with the same name (which keeps
   *   the first registration's reduce function).
   * @throws {Error} when the name is registered (or restored) as another
   * kind, or registered with another TTL.
   * @throws {RangeError} for an invalid TTL, or an event-time TTL without
   * an `eventTimeClock`.
   */
  getReducingState<T>(
    descriptor: ReducingStateDescriptor<T>,
  ): ReducingState<T> & InternalMergingState {
    const folding = reduceFolding(descriptor.reduceFunction);
    return this.#register(
      descriptor.name,
      "reducing",
      descriptor.ttl,
      (table, ttl, clock) =>
        ttl === undefined
          ? new HeapAggregatingState<T, T, T>(table, this.ctx, folding)
          : new TtlHeapAggregatingState<T, T, T>(table, this.ctx, ttl, clock, folding),
    );
  }

  /**
   * The {@linkcode AggregatingState} named by `descriptor`, bound to the
   * current key and namespace. The accumulator is created with
   * `createAccumulator()` on the first `add` of an entry; `get()` returns
   * `getResult(accumulator)`. Merging namespaces merges the sources'
   * accumulators in order, then `merge(target, merged)` (Flink's
   * `HeapAggregatingState`).
   *
   * @returns the same object for every call with the same name (which keeps
   *   the first registration's aggregate function).
   * @throws {Error} when the name is registered (or restored) as another
   * kind, or registered with another TTL.
   * @throws {RangeError} for an invalid TTL, or an event-time TTL without
   * an `eventTimeClock`.
   */
  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): AggregatingState<IN, OUT> & InternalMergingState {
    const folding = aggregateFolding(descriptor.aggregateFunction);
    return this.#register(
      descriptor.name,
      "aggregating",
      descriptor.ttl,
      (table, ttl, clock) =>
        ttl === undefined
          ? new HeapAggregatingState<IN, ACC, OUT>(table, this.ctx, folding)
          : new TtlHeapAggregatingState<IN, ACC, OUT>(table, this.ctx, ttl, clock, folding),
    );
  }

  #register<S extends object>(
    name: string,
    kind: StateKind,
    ttlConfig: StateTtlConfig | undefined,
    create: (table: StateTable, ttl: TtlSettings | undefined, clock: () => number) => S,
  ): S {
    return registerState(this.#set, name, kind, ttlConfig, create);
  }

  /** Names of all registered or restored states, in registration/restore order. */
  stateNames(): string[] {
    return [...this.#tables.keys()];
  }

  /**
   * The keys (original form) that have a live entry in state `stateName`
   * under `namespace`, in key-group order (Flink's
   * `KeyedStateBackend.getKeys(state, namespace)`). Expired entries are
   * skipped, not removed. Changing that state while iterating may or may not
   * show the change, as with `Map` iteration.
   *
   * @param namespace default {@linkcode VOID_NAMESPACE}, the namespace of
   *   state outside windows.
   * @throws {Error} when no state of that name is registered or restored.
   */
  keys(stateName: string, namespace: string = VOID_NAMESPACE): IterableIterator<Key> {
    const table = this.#table(stateName);
    return liveKeys(table, namespace, this.#clocks.expiry(table.ttl));
  }

  /**
   * Every (key, namespace) with a live entry in state `stateName`, key group
   * by key group, each key group's default namespace first (Flink's
   * `getKeysAndNamespaces`). Expired entries are skipped, not removed.
   *
   * @throws {Error} when no state of that name is registered or restored.
   */
  keysAndNamespaces(stateName: string): IterableIterator<[Key, string]> {
    const table = this.#table(stateName);
    return liveKeysAndNamespaces(table, this.#clocks.expiry(table.ttl));
  }

  /**
   * The number of keys with an entry in state `stateName` in the default
   * namespace, counting expired entries not yet cleaned up (so an upper
   * bound with TTL). O(key groups).
   *
   * @throws {Error} when no state of that name is registered or restored.
   */
  numKeys(stateName: string): number {
    let n = 0;
    for (const m of this.#table(stateName).maps) n += m?.size ?? 0;
    return n;
  }

  /**
   * The number of (state, key, namespace) entries over all states, as
   * Flink's `numKeyValueStateEntries`; expired but uncleaned entries count.
   */
  numEntries(): number {
    let n = 0;
    for (const table of this.#tables.values()) n += countEntries(table);
    return n;
  }

  #table(stateName: string): StateTable {
    return tableNamed(this.#set, stateName);
  }

  /**
   * Captures every state synchronously as a plain object grouped by key
   * group (the synchronous part of a checkpoint; encoding and upload are the
   * caller's asynchronous part). Expired TTL entries are left out and
   * removed. Time and allocation are linear in the number of entries; the
   * result shares only state values with the live backend (immutable ones,
   * and accumulators that are copied before they next change).
   *
   * @returns a version 2 {@linkcode KeyedStateSnapshot}.
   */
  snapshotCanonical(): KeyedStateSnapshot {
    return canonicalSnapshot(this.#set);
  }

  /**
   * The synchronous part of a checkpoint or savepoint (Flink's
   * `SnapshotStrategy.syncPrepareResources`): registers a copy-on-write
   * capture of every state, O(states × key groups), copying no entry (see
   * the module docs). The result's `write` copies and MessagePack-encodes
   * (`runtime/actor/codec.ts`) in slices of about 1 ms into one private blob
   * of kind `keyed` covering this backend's key-group range, in the
   * canonical {@linkcode KeyedStateSnapshot} format every backend restores
   * (so checkpoints and savepoints are the same here). Until `write`
   * finishes or `discard` is called, the first change of each entry saves
   * its old value: call one of them, or the saved values pile up.
   *
   * @param _checkpointId the checkpoint (or savepoint) id (the writer carries it).
   * @param _type what the snapshot is for (the same blob either way).
   * @param uid the operator uid, written into the handle and its name.
   * @returns a {@linkcode SnapshotResult} whose `write` returns one handle;
   *   `write` rejects with a `CodecError` for a state value MessagePack
   *   cannot hold.
   */
  snapshot(_checkpointId: number, _type: SnapshotType, uid: string): SnapshotResult {
    return cowSnapshotResult(captureTables(this.#set), {
      maxParallelism: this.maxParallelism,
      keyGroupRange: [this.startKeyGroup, this.endKeyGroup],
    }, uid);
  }

  /**
   * Loads this backend's key groups from the `keyed` handles of one or more
   * old subtasks (any old parallelism); handles whose key-group range does
   * not overlap this backend's are not read. Call on a fresh backend, before
   * processing.
   *
   * @param handles the handles of this operator's keyed state.
   * @param read reads a handle's blob from checkpoint storage.
   * @throws {Error} naming the handle's path when a handle is of another kind
   * (`keyed-incremental` is not written by this backend), cannot be decoded,
   * is not a keyed state snapshot, or is of another max parallelism; and
   * whatever {@linkcode restoreCanonical} throws for its content.
   */
  restore(handles: readonly StateHandle[], read: StateReader): Promise<void> {
    return restoreKeyedHandles(handles, read, {
      range: [this.startKeyGroup, this.endKeyGroup],
      maxParallelism: this.maxParallelism,
      load: (snapshot) => this.restoreCanonical([snapshot]),
    });
  }

  /**
   * Drops every state and entry (the operator closed). The backend must not
   * be used afterwards; snapshots already taken still write what they
   * captured.
   */
  dispose(): Promise<void> {
    this.#tables.clear();
    return Promise.resolve();
  }

  /**
   * Loads the key groups of this backend's range from `snapshots` (one per
   * old subtask, any old parallelism; key groups outside the range are
   * ignored), merging them, every namespace included. Call on a fresh
   * backend, before processing; on a (key, namespace) present twice, the
   * later snapshot wins. States restored but not yet registered keep their
   * entries and are included in later snapshots. A state whose TTL was
   * enabled since the snapshot, or moved to the other clock, gets the
   * restore (registration) time as last-access time; one whose TTL was
   * disabled drops the timestamps.
   *
   * @param snapshots snapshots from {@linkcode HeapKeyedStateBackend.snapshotCanonical}
   * of format version 1 or 2 (possibly after a MessagePack round trip).
   * @throws {Error} when a snapshot has another version or max parallelism,
   * when a state's kind is unknown or differs from its registration or
   * between snapshots, or an entry is malformed (the message names state,
   * key group and namespace).
   */
  restoreCanonical(snapshots: readonly KeyedStateSnapshot[]): void {
    for (const snap of snapshots) {
      const version = checkSnapshotHeader(snap, this.maxParallelism);
      for (const [name, state] of Object.entries(snap.states)) {
        restoreState(this.#set, name, state, version);
      }
    }
  }
}
