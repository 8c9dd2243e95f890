/**
 * The heap keyed state backend: keyed Value/List/Map state held in JS `Map`s,
 * one `Map` per key group per state (Flink's `HeapKeyedStateBackend` with its
 * per-key-group `StateMap`s).
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
 * const checkpoint = backend.snapshot(); // plain object, MessagePack-encodable
 * ```
 *
 * ## Design
 *
 * - Per record the task calls {@linkcode HeapKeyedStateBackend.setCurrentKey}
 *   once; it hashes the key, checks its key group and computes the key's
 *   {@linkcode stateKeyOf}. State objects, obtained once when the operator
 *   opens, then read and write the current key with one array index and one
 *   `Map` operation, allocating nothing (ValueState without TTL).
 * - A snapshot is a synchronous pass that copies every live entry into a
 *   plain object grouped by key group, column-wise (a `keys` and a `values`
 *   array per key group; original keys). Values are shared, not cloned:
 *   state values are immutable by contract (see `runtime/api/state.ts`), and
 *   list/map containers, which the backend mutates in place, are copied.
 *   About 0.3 ms for 10k ValueState keys and 50–70 ms for 1M on the
 *   project's 2-core machine.
 * - TTL (Flink's `StateTtlConfig`) wraps each value, list element or map
 *   entry with its last-access time; expired ones are never returned, and are
 *   removed when touched and when snapshotted.
 *
 * ## Invariants
 *
 * - Every stored entry's key belongs to a key group of this backend's range.
 * - No empty list or empty map is stored: clearing removes the key.
 * - `snapshot()` never shares a mutable container with the live state.
 *
 * @module
 */

import type {
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  StateKind,
  StateTtlConfig,
  ValueState,
  ValueStateDescriptor,
} from "../api/state.ts";
import {
  assignToKeyGroup,
  checkMaxParallelism,
  type Key,
  type KeyGroupRange,
  keyOfStateKey,
  stateKeyOf,
} from "./key_group.ts";
import {
  defineEntry,
  describeTtl,
  HeapListState,
  HeapMapState,
  HeapValueState,
  KeyContext,
  type StateTable,
  TtlHeapListState,
  TtlHeapMapState,
  TtlHeapValueState,
  type TtlSettings,
  ttlSettings,
} from "./_heap_states.ts";
import { convertTable, hasLiveCell, loadGroup, snapshotGroup } from "./_heap_snapshot.ts";

// ---------------------------------------------------------------------------
// Snapshot shapes

/**
 * The entries of one state in one key group, column-wise: entry `i` is
 * `keys[i]` with `values[i]` (and `timestamps[i]` for a TTL state). Columns
 * rather than `[key, value]` pairs make the synchronous capture allocate per
 * key group instead of per key (about 6× faster for a ValueState).
 *
 * | kind    | `values[i]`                      | `timestamps[i]` (TTL states only)   |
 * | ------- | -------------------------------- | ----------------------------------- |
 * | `value` | the value                        | last access, ms                     |
 * | `list`  | the elements, `unknown[]`        | per element, `number[]` ms          |
 * | `map`   | `[userKeys[], userValues[]]`     | per user-map entry, `number[]` ms   |
 *
 * `keys[i]` is the original key (a primitive or a tuple), never its state key.
 * Timestamps are of the backend's clock (`Date.now` by default).
 */
export interface KeyGroupEntries {
  /** The key group every key of `keys` belongs to. */
  readonly keyGroup: number;
  /** The keys, original form. */
  readonly keys: readonly Key[];
  /** The state of each key, as in the table above. */
  readonly values: readonly unknown[];
  /** Last-access times, present exactly when the state has a TTL. */
  readonly timestamps?: readonly unknown[];
}

/** One state in a {@linkcode KeyedStateSnapshot}. */
export interface KeyedStateSnapshotState {
  /** The state's kind; a restore registers the name with the same kind only. */
  readonly kind: StateKind;
  /** Whether the state had a TTL, so entries carry `timestamps`. */
  readonly ttl: boolean;
  /**
   * One {@linkcode KeyGroupEntries} per key group holding at least one
   * entry, in ascending key-group order.
   */
  readonly keyGroups: readonly KeyGroupEntries[];
}

/**
 * A checkpoint of one {@linkcode HeapKeyedStateBackend}: a plain object of
 * arrays, numbers, strings and the user's state values, so it is
 * MessagePack-encodable whenever the keys and values are.
 *
 * ```
 * { version: 1, maxParallelism: 128, keyGroupRange: [0, 63],
 *   states: { sum: { kind: "value", ttl: false, keyGroups: [
 *     { keyGroup: 3, keys: ["a", "c"], values: [4, 1] },
 *     { keyGroup: 17, keys: [["b", 1]], values: [2] } ] } } }
 * ```
 */
export interface KeyedStateSnapshot {
  /** Format version, `1`. */
  readonly version: 1;
  /** The max parallelism (number of key groups) the key groups refer to. */
  readonly maxParallelism: number;
  /** The snapshotting backend's key-group range, `[start, end]` inclusive. */
  readonly keyGroupRange: readonly [number, number];
  /** Every registered or restored state, by name. */
  readonly states: { readonly [name: string]: KeyedStateSnapshotState };
}

/** Options of {@linkcode HeapKeyedStateBackend}. */
export interface HeapKeyedStateBackendOptions {
  /** The key groups this backend (subtask) owns. */
  readonly keyGroupRange: KeyGroupRange;
  /** The number of key groups, in `[1, 32768]`; equal across restores. */
  readonly maxParallelism: number;
  /** Processing-time clock for TTL, in ms. Default `Date.now`. */
  readonly clock?: () => number;
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
export class HeapKeyedStateBackend {
  readonly #range: KeyGroupRange;
  readonly #start: number;
  readonly #end: number;
  readonly #maxParallelism: number;
  readonly #clock: () => number;
  readonly #ctx = new KeyContext();
  readonly #tables = new Map<string, StateTable>();

  /**
   * Creates an empty backend for one subtask's key groups.
   *
   * @param options the key-group range owned, the max parallelism and an
   * optional clock (ms) for TTL.
   * @throws {RangeError} when `maxParallelism` is not an integer in
   * `[1, 32768]`, or the range is empty or reaches past `maxParallelism - 1`.
   */
  constructor(options: HeapKeyedStateBackendOptions) {
    const { keyGroupRange, maxParallelism } = options;
    checkMaxParallelism(maxParallelism);
    if (keyGroupRange.isEmpty || keyGroupRange.endKeyGroup >= maxParallelism) {
      throw new RangeError(
        `A keyed state backend's key-group range must be non-empty and within [0, ${
          maxParallelism - 1
        }]: current value is ${keyGroupRange}`,
      );
    }
    this.#range = keyGroupRange;
    this.#start = keyGroupRange.startKeyGroup;
    this.#end = keyGroupRange.endKeyGroup;
    this.#maxParallelism = maxParallelism;
    this.#clock = options.clock ?? Date.now;
  }

  /** The key groups this backend owns. */
  get keyGroupRange(): KeyGroupRange {
    return this.#range;
  }

  /** The number of key groups in the job (the operator's max parallelism). */
  get maxParallelism(): number {
    return this.#maxParallelism;
  }

  /** The key set by the last {@linkcode setCurrentKey}, or `undefined` before any. */
  get currentKey(): Key | undefined {
    return this.#ctx.key;
  }

  /** The key group of {@linkcode currentKey}, or -1 before any. */
  get currentKeyGroup(): number {
    return this.#ctx.keyGroup;
  }

  /**
   * Makes `key` the key every state object reads and writes until the next
   * call. Computes the key group and state key once. Allocates nothing for
   * string, number, boolean and bigint keys.
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
    const keyGroup = knownKeyGroup ?? assignToKeyGroup(key, this.#maxParallelism);
    if (keyGroup < this.#start || keyGroup > this.#end) this.#outOfRange(key, keyGroup);
    const ctx = this.#ctx;
    ctx.key = key;
    ctx.keyGroup = keyGroup;
    ctx.index = keyGroup - this.#start;
    ctx.stateKey = stateKeyOf(key);
  }

  // Kept out of setCurrentKey so that the hot method stays small enough to inline.
  #outOfRange(key: Key, keyGroup: number): never {
    const shown = JSON.stringify(key, (_k, v) => typeof v === "bigint" ? `${v}n` : v);
    throw new RangeError(
      `Key ${shown} belongs to key group ${keyGroup}, outside this backend's key-group range ${this.#range} (max parallelism ${this.#maxParallelism})`,
    );
  }

  /**
   * The {@linkcode ValueState} named by `descriptor`, bound to the current
   * key. Call once (at open) and keep the object.
   *
   * @returns the same object for every call with the same name.
   * @throws {Error} when the name is registered (or restored) as another
   * kind, or registered with another TTL.
   * @throws {RangeError} for an invalid TTL.
   */
  getValueState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T> {
    return this.#register(
      descriptor.name,
      "value",
      descriptor.ttl,
      (table, ttl) =>
        ttl === undefined
          ? new HeapValueState<T>(table, this.#ctx, descriptor.defaultValue)
          : new TtlHeapValueState<T>(table, this.#ctx, ttl, this.#clock, descriptor.defaultValue),
    );
  }

  /**
   * The {@linkcode ListState} named by `descriptor`, bound to the current
   * key. `get()` returns the live list (do not mutate it; a later `add` may
   * append to it); with a TTL it returns a fresh array of live elements.
   * Elements must not be `undefined`.
   *
   * @returns the same object for every call with the same name.
   * @throws {Error} when the name is registered (or restored) as another
   * kind, or registered with another TTL.
   * @throws {RangeError} for an invalid TTL.
   */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T> {
    return this.#register(
      descriptor.name,
      "list",
      descriptor.ttl,
      (table, ttl) =>
        ttl === undefined
          ? new HeapListState<T>(table, this.#ctx)
          : new TtlHeapListState<T>(table, this.#ctx, ttl, this.#clock),
    );
  }

  /**
   * The {@linkcode MapState} named by `descriptor`, bound to the current key.
   * With a TTL, each user-map entry expires on its own (as in Flink). Values
   * must not be `undefined`.
   *
   * @returns the same object for every call with the same name.
   * @throws {Error} when the name is registered (or restored) as another
   * kind, or registered with another TTL.
   * @throws {RangeError} for an invalid TTL.
   */
  getMapState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV> {
    return this.#register(
      descriptor.name,
      "map",
      descriptor.ttl,
      (table, ttl) =>
        ttl === undefined
          ? new HeapMapState<UK, UV>(table, this.#ctx)
          : new TtlHeapMapState<UK, UV>(table, this.#ctx, ttl, this.#clock),
    );
  }

  #register<S extends object>(
    name: string,
    kind: StateKind,
    ttlConfig: StateTtlConfig | undefined,
    create: (table: StateTable, ttl: TtlSettings | undefined) => S,
  ): S {
    const ttl = ttlSettings(name, ttlConfig);
    let table = this.#tables.get(name);
    if (table !== undefined && table.kind !== kind) {
      throw new Error(
        `Keyed state '${name}' is already ${
          table.state ? "registered" : "restored"
        } as ${table.kind} state: cannot register it as ${kind} state`,
      );
    }
    if (table?.state !== undefined) {
      if (table.ttl?.ttlMs !== ttl?.ttlMs || table.ttl?.onRead !== ttl?.onRead) {
        throw new Error(
          `Keyed state '${name}' is already registered with ${
            describeTtl(table.ttl)
          }: cannot register it with ${describeTtl(ttl)}`,
        );
      }
      return table.state as S;
    }
    if (table === undefined) {
      table = {
        name,
        kind,
        cells: ttl !== undefined,
        ttl,
        maps: new Array(this.#range.size).fill(undefined),
        state: undefined,
      };
      this.#tables.set(name, table);
    } else if (table.cells !== (ttl !== undefined)) {
      convertTable(table, ttl !== undefined, this.#clock());
    }
    table.ttl = ttl;
    const state = create(table, ttl);
    table.state = state;
    return state;
  }

  /** Names of all registered or restored states, in registration/restore order. */
  stateNames(): string[] {
    return [...this.#tables.keys()];
  }

  /**
   * The keys (original form) that have a live entry in state `stateName`,
   * in key-group order (Flink's `KeyedStateBackend.getKeys`). Expired
   * entries are skipped, not removed. Changing that state while iterating
   * may or may not show the change, as with `Map` iteration.
   *
   * @throws {Error} when no state of that name is registered or restored.
   */
  *keys(stateName: string): IterableIterator<Key> {
    const table = this.#table(stateName);
    const now = this.#clock();
    const ttlMs = table.ttl?.ttlMs ?? Infinity;
    for (const m of table.maps) {
      if (m === undefined) continue;
      for (const [sk, v] of m) {
        if (table.cells && !hasLiveCell(table.kind, v, ttlMs, now)) continue;
        yield keyOfStateKey(sk);
      }
    }
  }

  /**
   * The number of keys with an entry in state `stateName`, counting expired
   * entries not yet cleaned up (so an upper bound with TTL). O(key groups).
   *
   * @throws {Error} when no state of that name is registered or restored.
   */
  numKeys(stateName: string): number {
    let n = 0;
    for (const m of this.#table(stateName).maps) n += m?.size ?? 0;
    return n;
  }

  /**
   * The number of (state, key) entries over all states, as Flink's
   * `numKeyValueStateEntries`; expired but uncleaned entries count.
   */
  numEntries(): number {
    let n = 0;
    for (const table of this.#tables.values()) for (const m of table.maps) n += m?.size ?? 0;
    return n;
  }

  #table(stateName: string): StateTable {
    const table = this.#tables.get(stateName);
    if (table === undefined) {
      throw new Error(
        `No keyed state named '${stateName}' is registered or restored: known states are ${
          JSON.stringify(this.stateNames())
        }`,
      );
    }
    return table;
  }

  /**
   * Captures every state synchronously as a plain object grouped by key
   * group (the synchronous part of a checkpoint; encoding and upload are the
   * caller's asynchronous part). Expired TTL entries are left out and
   * removed. Time and allocation are linear in the number of entries; the
   * result shares only (immutable) state values with the live backend.
   *
   * @returns a {@linkcode KeyedStateSnapshot}.
   */
  snapshot(): KeyedStateSnapshot {
    const now = this.#clock();
    const states: Record<string, KeyedStateSnapshotState> = {};
    for (const table of this.#tables.values()) {
      const keyGroups: KeyGroupEntries[] = [];
      const maps = table.maps;
      for (let i = 0; i < maps.length; i++) {
        const m = maps[i];
        if (m === undefined || m.size === 0) continue;
        const group = snapshotGroup(table, this.#start + i, m, now);
        if (group !== undefined) keyGroups.push(group);
      }
      defineEntry(states, table.name, { kind: table.kind, ttl: table.cells, keyGroups });
    }
    return {
      version: 1,
      maxParallelism: this.#maxParallelism,
      keyGroupRange: [this.#start, this.#end],
      states,
    };
  }

  /**
   * Loads the key groups of this backend's range from `snapshots` (one per
   * old subtask, any old parallelism; key groups outside the range are
   * ignored), merging them. Call on a fresh backend, before processing;
   * on a key present twice, the later snapshot wins. States restored but
   * not yet registered keep their entries and are included in later
   * snapshots. A state whose TTL was enabled since the snapshot gets the
   * restore time as last-access time; one whose TTL was disabled drops the
   * timestamps.
   *
   * @param snapshots snapshots from {@linkcode HeapKeyedStateBackend.snapshot}
   * (possibly after a MessagePack round trip).
   * @throws {Error} when a snapshot has another version or max parallelism,
   * when a state's kind differs from its registration or between snapshots,
   * or an entry is malformed.
   */
  restore(snapshots: readonly KeyedStateSnapshot[]): void {
    const now = this.#clock();
    for (const snap of snapshots) {
      if (snap.version !== 1) {
        throw new Error(
          `Cannot restore keyed state snapshot: unsupported version, current value is ${snap.version}`,
        );
      }
      if (snap.maxParallelism !== this.#maxParallelism) {
        throw new Error(
          `Cannot restore keyed state snapshot taken with max parallelism ${snap.maxParallelism} into a backend with max parallelism ${this.#maxParallelism}: max parallelism must not change across restores`,
        );
      }
      for (const [name, state] of Object.entries(snap.states)) {
        let table = this.#tables.get(name);
        if (table !== undefined && table.kind !== state.kind) {
          throw new Error(
            `Cannot restore keyed state '${name}' as ${state.kind} state: it is already ${
              table.state ? "registered" : "restored"
            } as ${table.kind} state`,
          );
        }
        if (table === undefined) {
          if (state.kind !== "value" && state.kind !== "list" && state.kind !== "map") {
            throw new Error(
              `Cannot restore keyed state '${name}': unknown kind, current value is ${
                JSON.stringify(state.kind)
              }`,
            );
          }
          table = {
            name,
            kind: state.kind,
            cells: state.ttl,
            ttl: undefined,
            maps: new Array(this.#range.size).fill(undefined),
            state: undefined,
          };
          this.#tables.set(name, table);
        }
        for (const group of state.keyGroups) {
          const keyGroup = group.keyGroup;
          if (!(keyGroup >= this.#start && keyGroup <= this.#end)) continue;
          const i = keyGroup - this.#start;
          let m = table.maps[i];
          if (m === undefined) table.maps[i] = m = new Map();
          loadGroup(table, m, group, now);
        }
      }
    }
  }
}
