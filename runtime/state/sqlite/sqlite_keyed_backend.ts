/**
 * The embedded on-disk keyed state backend: keyed Value, List, Map,
 * Reducing and Aggregating state in a local SQLite database per subtask
 * (`node:sqlite`), behind a bounded in-memory cache, for state larger than
 * the JS heap (Flink's `EmbeddedRocksDBStateBackend`, with SQLite in
 * RocksDB's role). It implements {@linkcode KeyedStateBackend} and passes
 * the same conformance suite as the heap backend.
 *
 * @example
 * ```ts
 * import { SqliteKeyedStateBackend } from "./sqlite_keyed_backend.ts";
 * import { KeyGroupRange } from "../key_group.ts";
 * import { ValueStateDescriptor } from "../../api/state.ts";
 *
 * const backend = await SqliteKeyedStateBackend.create({
 *   keyGroupRange: new KeyGroupRange(0, 127),
 *   maxParallelism: 128,
 *   cacheEntries: 10_000,
 * });
 * const sum = backend.getValueState(new ValueStateDescriptor<number>("sum", { defaultValue: 0 }));
 * for (const [key, x] of [["a", 1], ["b", 2], ["a", 3]] as const) {
 *   backend.setCurrentKey(key);
 *   sum.update(sum.value()! + x);
 * }
 * backend.setCurrentKey("a");
 * if (sum.value() !== 4) throw new Error("unreachable");
 * await backend.dispose(); // deletes the database
 * ```
 *
 * ## Design
 *
 * - **One database per subtask** in a fresh directory under `localDirectory`
 *   (or the system's temporary directory), WAL mode, `synchronous=OFF`,
 *   deleted on {@linkcode SqliteKeyedStateBackend.dispose}. Durability comes
 *   from checkpoints, as Flink runs RocksDB without its WAL.
 * - **One table per state** (RocksDB's column family per state), rows keyed
 *   by (key group, key, namespace, user key) in a `WITHOUT ROWID` B-tree, so
 *   a key-group range is one range scan (see `_sqlite_store.ts`). Values are
 *   MessagePack (`runtime/actor/codec.ts`).
 * - **A bounded cache** of decoded entries in front (`_entry_cache.ts`):
 *   second-chance FIFO over entries, bounded by `cacheEntries` (a map
 *   state's entry weighs 1 + its user entries), dirty entries written back in
 *   batches of `writeBatchSize` inside one transaction. A hit never touches
 *   SQLite; a blind write (`ValueState.update`, `clear`) does not read it
 *   either.
 * - **Snapshots** (`_sqlite_snapshot.ts`): the synchronous part writes the
 *   dirty entries back (one transaction, O(changed entries)) and pins a read
 *   transaction on a second connection (a consistent view under WAL); the
 *   asynchronous part reads that view and writes the canonical
 *   {@linkcode KeyedStateSnapshot} (kind `keyed`) in chunks of key groups,
 *   for checkpoints and savepoints alike, so any backend restores them.
 * - **Restore** reads canonical `keyed` handles of any backend and loads
 *   only the key groups of this backend's range (rescaling).
 * - **TTL** has the heap backend's semantics (cells `{ v, t }`, expired
 *   values never returned, removed when touched, left out of snapshots). The
 *   heap backend stamps entries written before event time started with the
 *   start once it is known; here such an entry keeps `-Infinity` in SQLite
 *   and is read as the start (same results, no rewrite of the database).
 * - **Scans** (`keys`, `keysAndNamespaces`, `numKeys`, `numEntries`) write
 *   the dirty entries back, then query SQLite: O(entries of the state), not
 *   O(key groups) as in the heap backend.
 *
 * ## Costs
 *
 * Keyed running sum on a ValueState, `deno run -A --v8-flags=--expose-gc
 * bench/sqlite_state.ts --records 300000 --cache 10000 --rounds 3`, records
 * per CPU-second, medians (the 2-core machine shared with other work, load
 * average above 10: the per-round ratios spread widely):
 *
 * | state                              | heap   | SQLite | SQLite / heap            |
 * | ---------------------------------- | ------ | ------ | ------------------------ |
 * | 1 000 keys, inside the cache       | 3.77M  | 3.85M  | 0.96 (rounds 0.96 1.23 0.60) |
 * | 100 000 keys, 10× the cache        | 1.58M  | 38.3k  | 0.027 (rounds 0.027 0.027 0.023) |
 *
 * A hit costs what the heap backend's access costs. A miss costs a SQLite
 * point read (about 15 µs of CPU through `node:sqlite`, see
 * `_layout_measure.ts`), a MessagePack decode, and its share of a batched
 * write-back; uniform keys at ten times the cache miss 90% of the time.
 * Size the cache (`cacheEntries`) to the hot set.
 *
 * State larger than the heap (`_large_state_main.ts`, run by
 * `sqlite_large_state_test.ts`): 20M keys of ValueState under a 64 MiB heap
 * cap (`--v8-flags=--max-old-space-size=64 … --keys 20000000 --cache
 * 20000`): peak JS heap used 56.3 MiB, database 498 MiB, 3.0 minutes of CPU
 * (2 m 44 s user, 16 s system) to write, count, scan and check them, 26
 * minutes of wall time on the loaded machine. The heap backend holds this
 * state in about 29 bytes per key (measured at 1M keys), 560 MiB for 20M,
 * and runs out of memory under the cap.
 *
 * ## Simplifications
 *
 * - No incremental checkpoints yet: every checkpoint writes the canonical
 *   full snapshot (`keyed` handles), as Flink's full snapshots do.
 * - A map state's entry is cached whole (see `_sqlite_map_state.ts`).
 * - A snapshot's read view keeps the WAL from being checkpointed until its
 *   `write()` ends; the WAL grows by what is written meanwhile.
 *
 * ## Invariants
 *
 * - After the cache is flushed, the database holds the whole state.
 * - Every row's key group is within this backend's range.
 * - No empty list or map is stored: clearing removes the rows.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
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
} from "../../api/state.ts";
import type {
  SnapshotResult,
  SnapshotType,
  StateHandle,
} from "../../checkpoint/snapshot_contract.ts";
import { decode, encode } from "../../actor/codec.ts";
import {
  assignToKeyGroup,
  checkMaxParallelism,
  type Key,
  type KeyGroupRange,
  stateKeyOf,
} from "../key_group.ts";
import {
  type InternalKvState,
  type InternalMergingState,
  VOID_NAMESPACE,
} from "../internal_state.ts";
import type { KeyedStateBackend, StateReader } from "../keyed_state_backend.ts";
import {
  checkStateKind,
  type KeyedStateSnapshotState,
  type SnapshotVersion,
  type TtlTime,
} from "../keyed_state_snapshot.ts";
import { describeTtl, isExpired, sameTtl, type TtlCell, ttlSettings } from "../_heap_state_base.ts";
import { aggregateFolding, reduceFolding } from "../_heap_aggregating_states.ts";
import { TtlClocks } from "../_ttl_clocks.ts";
import { decodeKeyedHandle } from "../_heap_handles.ts";
import { type CachedEntry, EntryCache, type EntryCacheStats, StateCache } from "./_entry_cache.ts";

export type { EntryCacheStats } from "./_entry_cache.ts";
import { SqliteStore } from "./_sqlite_store.ts";
import {
  escapeText,
  keyOfText,
  primitiveOfText,
  primitiveText,
  unescapeText,
} from "./_row_keys.ts";
import { SqliteKeyContext, type SqliteTable, type StateHost } from "./_sqlite_state_base.ts";
import {
  SqliteAggregatingState,
  SqliteListState,
  SqliteValueState,
  type TtlBinding,
} from "./_sqlite_states.ts";
import { SqliteMapState } from "./_sqlite_map_state.ts";
import { type CapturedState, sqliteSnapshotResult } from "./_sqlite_snapshot.ts";
import { loadState } from "./_sqlite_restore.ts";

/** Default bound of the cache: entries (a map state's entry weighs 1 + its user entries). */
export const DEFAULT_CACHE_ENTRIES = 100_000;
/** Default number of dirty entries one eviction writes back in one transaction. */
export const DEFAULT_WRITE_BATCH_SIZE = 1_000;
/** Default number of rows per blob a snapshot writes (about; blobs end at key-group boundaries). */
export const DEFAULT_SNAPSHOT_CHUNK_ROWS = 200_000;

/** Options of {@linkcode SqliteKeyedStateBackend.create}. */
export interface SqliteKeyedStateBackendOptions {
  /** The key groups this backend (subtask) owns. */
  readonly keyGroupRange: KeyGroupRange;
  /** The number of key groups, in `[1, 32768]`; equal across restores. */
  readonly maxParallelism: number;
  /**
   * A local directory for the database: a fresh subdirectory is made in it
   * (created if missing) and deleted on dispose. Default: the system's
   * temporary directory (`Deno.makeTempDir`).
   */
  readonly localDirectory?: string;
  /** A name for the database's directory (e.g. the subtask's), sanitized. Default `"keyed"`. */
  readonly name?: string;
  /** The cache's bound in entries (≥ 1). Default {@linkcode DEFAULT_CACHE_ENTRIES}. */
  readonly cacheEntries?: number;
  /** Dirty entries written back per eviction transaction (≥ 1). Default {@linkcode DEFAULT_WRITE_BATCH_SIZE}. */
  readonly writeBatchSize?: number;
  /** Rows per snapshot blob, about (≥ 1). Default {@linkcode DEFAULT_SNAPSHOT_CHUNK_ROWS}. */
  readonly snapshotChunkRows?: number;
  /** Processing-time clock for TTL, in ms. Default `Date.now`. */
  readonly clock?: () => number;
  /**
   * Event-time clock for TTLs with `timeCharacteristic: "EventTime"`, in
   * ms: the operator's current watermark, `-Infinity` before the first.
   * Without it, registering such a state throws.
   */
  readonly eventTimeClock?: () => number;
}

function checkPositiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(
      `SqliteKeyedStateBackend option '${name}' must be an integer ≥ 1: current value is ${value}`,
    );
  }
  return value;
}

/**
 * Keyed state of one subtask of a keyed operator, in a local SQLite
 * database behind a bounded cache. See the module docs for the design.
 *
 * Not thread-safe; one subtask (actor) owns it. Reading state before the
 * first {@linkcode SqliteKeyedStateBackend.setCurrentKey} returns defaults;
 * writing throws.
 */
export class SqliteKeyedStateBackend implements KeyedStateBackend {
  readonly #range: KeyGroupRange;
  readonly #start: number;
  readonly #end: number;
  readonly #maxParallelism: number;
  readonly #store: SqliteStore;
  readonly #clocks: TtlClocks;
  readonly #ctx = new SqliteKeyContext();
  readonly #tables = new Map<string, SqliteTable>();
  readonly #byId: SqliteTable[] = [];
  readonly #cache: EntryCache;
  readonly #host: StateHost;
  readonly #chunkRows: number;
  #openSnapshots = 0;
  readonly #writes = new Set<Promise<unknown>>();
  #disposed = false;

  /**
   * Creates an empty backend with a new database.
   *
   * @param options the key-group range, max parallelism, local directory,
   *   cache bounds and TTL clocks (ms).
   * @returns the backend; {@linkcode SqliteKeyedStateBackend.dispose} deletes its database.
   * @throws {RangeError} when `maxParallelism` is not an integer in
   *   `[1, 32768]`, the range is empty or reaches past `maxParallelism - 1`,
   *   or a cache option is not an integer ≥ 1.
   * @throws {Deno.errors.PermissionDenied} and other file errors when the
   *   directory cannot be made.
   */
  static async create(options: SqliteKeyedStateBackendOptions): Promise<SqliteKeyedStateBackend> {
    const { keyGroupRange, maxParallelism } = options;
    checkMaxParallelism(maxParallelism);
    if (keyGroupRange.isEmpty || keyGroupRange.endKeyGroup >= maxParallelism) {
      throw new RangeError(
        `A keyed state backend's key-group range must be non-empty and within [0, ${
          maxParallelism - 1
        }]: current value is ${keyGroupRange}`,
      );
    }
    const cacheEntries = checkPositiveInteger(
      "cacheEntries",
      options.cacheEntries,
      DEFAULT_CACHE_ENTRIES,
    );
    const batch = checkPositiveInteger(
      "writeBatchSize",
      options.writeBatchSize,
      DEFAULT_WRITE_BATCH_SIZE,
    );
    const chunkRows = checkPositiveInteger(
      "snapshotChunkRows",
      options.snapshotChunkRows,
      DEFAULT_SNAPSHOT_CHUNK_ROWS,
    );
    const store = await SqliteStore.open(options.localDirectory, options.name ?? "keyed");
    return new SqliteKeyedStateBackend(options, store, cacheEntries, batch, chunkRows);
  }

  private constructor(
    options: SqliteKeyedStateBackendOptions,
    store: SqliteStore,
    cacheEntries: number,
    writeBatchSize: number,
    chunkRows: number,
  ) {
    this.#range = options.keyGroupRange;
    this.#start = this.#range.startKeyGroup;
    this.#end = this.#range.endKeyGroup;
    this.#maxParallelism = options.maxParallelism;
    this.#store = store;
    this.#chunkRows = chunkRows;
    this.#clocks = new TtlClocks(options.clock ?? Date.now, options.eventTimeClock, () => {});
    this.#cache = new EntryCache({
      capacity: cacheEntries,
      batchSize: writeBatchSize,
      writeBack: (entries) => this.#writeBack(entries),
    });
    const clocks = this.#clocks;
    this.#host = {
      ctx: this.#ctx,
      cache: this.#cache,
      load: (table, namespace) => this.#load(table, namespace),
      blank: (table, namespace) => this.#blank(table, namespace),
      liveTime: (t) => t === -Infinity ? clocks.eventTimeStart ?? t : t,
    };
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

  /** The database file's path (for tests and operations). */
  get databasePath(): string {
    return this.#store.path;
  }

  /** The cache's counters: misses, evictions, write-back batches and entries written. */
  get cacheStats(): Readonly<EntryCacheStats> {
    return this.#cache.stats;
  }

  /** The number of entries in the cache. */
  get cachedEntries(): number {
    return this.#cache.size;
  }

  /**
   * Makes `key` the key every state object reads and writes until the next call.
   * @param knownKeyGroup the key's group when the caller already computed it;
   *   it must equal `assignToKeyGroup(key, maxParallelism)`.
   * @throws {RangeError} when the key's group is outside this backend's range.
   * @throws {TypeError} when `key` is not a {@linkcode Key}.
   */
  setCurrentKey(key: Key, knownKeyGroup?: number): void {
    const keyGroup = knownKeyGroup ?? assignToKeyGroup(key, this.#maxParallelism);
    if (keyGroup < this.#start || keyGroup > this.#end) this.#outOfRange(key, keyGroup);
    const ctx = this.#ctx;
    ctx.keyId = stateKeyOf(key);
    ctx.key = key;
    ctx.keyGroup = keyGroup;
  }

  #outOfRange(key: Key, keyGroup: number): never {
    const shown = JSON.stringify(key, (_k, v) => typeof v === "bigint" ? `${v}n` : v);
    throw new RangeError(
      `Key ${shown} belongs to key group ${keyGroup}, outside this backend's key-group range ${this.#range} (max parallelism ${this.#maxParallelism})`,
    );
  }

  // -------------------------------------------------------------------------
  // Cache <-> SQLite

  #load(table: SqliteTable, namespace: string): CachedEntry {
    this.#checkOpen();
    const ctx = this.#ctx;
    const kText = primitiveText(ctx.keyId, "A key");
    const nsText = escapeText(namespace);
    let value: unknown;
    let weight = 1;
    if (table.kind === "map") {
      const rows = table.stmts.getAll.all(ctx.keyGroup, kText, nsText) as unknown as {
        uk: string;
        v: Uint8Array;
      }[];
      if (rows.length > 0) {
        const inner = new Map<unknown, unknown>();
        for (const row of rows) inner.set(primitiveOfText(row.uk), decode(row.v));
        value = inner;
        weight += inner.size;
      }
    } else {
      const row = table.stmts.get.get(ctx.keyGroup, kText, nsText, "") as
        | { v: Uint8Array }
        | undefined;
      if (row !== undefined) value = decode(row.v);
    }
    return this.#cache.add({
      owner: table.cache,
      keyGroup: ctx.keyGroup,
      keyId: ctx.keyId,
      namespace,
      value,
      dirty: false,
      ref: false,
      weight,
      changed: undefined,
      cleared: false,
    });
  }

  #blank(table: SqliteTable, namespace: string): CachedEntry {
    this.#checkOpen();
    const ctx = this.#ctx;
    return this.#cache.add({
      owner: table.cache,
      keyGroup: ctx.keyGroup,
      keyId: ctx.keyId,
      namespace,
      value: undefined,
      dirty: true,
      ref: false,
      weight: 1,
      changed: undefined,
      cleared: table.kind === "map",
    });
  }

  #writeBack(entries: readonly CachedEntry[]): void {
    // In primary-key order (table, key group, key): neighbouring rows share
    // B-tree pages, so a batch touches fewer pages than in eviction order.
    const rows = entries.map((e) => ({ e, kText: primitiveText(e.keyId, "A key") }));
    rows.sort((a, b) =>
      a.e.owner.tableId - b.e.owner.tableId || a.e.keyGroup - b.e.keyGroup ||
      (a.kText < b.kText ? -1 : a.kText > b.kText ? 1 : 0)
    );
    this.#store.transaction(() => {
      for (const { e, kText } of rows) {
        const table = this.#byId[e.owner.tableId]!;
        const { put, del, delEntry } = table.stmts;
        const nsText = escapeText(e.namespace);
        if (table.kind !== "map") {
          if (e.value === undefined) del.run(e.keyGroup, kText, nsText, "");
          else put.run(e.keyGroup, kText, nsText, "", encode(e.value));
          continue;
        }
        const inner = e.value as Map<unknown, unknown> | undefined;
        if (e.cleared) delEntry.run(e.keyGroup, kText, nsText);
        const userKeys = e.cleared ? inner?.keys() ?? [] : e.changed ?? [];
        for (const uk of userKeys) {
          const ukText = primitiveText(uk, "A map state's user key");
          const v = inner?.get(uk);
          if (v === undefined) del.run(e.keyGroup, kText, nsText, ukText);
          else put.run(e.keyGroup, kText, nsText, ukText, encode(v));
        }
      }
    });
  }

  #checkOpen(): void {
    if (this.#disposed) {
      throw new Error(
        `SqliteKeyedStateBackend ${this.#range} was disposed: its database ${this.#store.path} is deleted`,
      );
    }
  }

  // -------------------------------------------------------------------------
  // Registration

  /**
   * The {@linkcode ValueState} named by `descriptor`, bound to the current
   * key and namespace. Call once (at open) and keep the object.
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
      (table, ttl) => new SqliteValueState<T>(this.#host, table, ttl, descriptor.defaultValue),
    );
  }

  /**
   * The {@linkcode ListState} named by `descriptor` (see the heap backend
   * for `get()`'s sharing). Elements must not be `undefined`.
   * @returns the same object for every call with the same name.
   * @throws {Error} on a conflicting registration; {@linkcode RangeError} for an invalid TTL.
   */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T> & InternalMergingState {
    return this.#register(
      descriptor.name,
      "list",
      descriptor.ttl,
      (table, ttl) => new SqliteListState<T>(this.#host, table, ttl),
    );
  }

  /**
   * The {@linkcode MapState} named by `descriptor`. User keys must be
   * strings, numbers, booleans or bigints; values must not be `undefined`.
   * @returns the same object for every call with the same name.
   * @throws {Error} on a conflicting registration; {@linkcode RangeError} for an invalid TTL.
   */
  getMapState<UK, UV>(
    descriptor: MapStateDescriptor<UK, UV>,
  ): MapState<UK, UV> & InternalKvState {
    return this.#register(
      descriptor.name,
      "map",
      descriptor.ttl,
      (table, ttl) => new SqliteMapState<UK, UV>(this.#host, table, ttl),
    );
  }

  /**
   * The {@linkcode ReducingState} named by `descriptor` (Flink's
   * `RocksDBReducingState`).
   * @returns the same object for every call with the same name.
   * @throws {Error} on a conflicting registration; {@linkcode RangeError} for an invalid TTL.
   */
  getReducingState<T>(
    descriptor: ReducingStateDescriptor<T>,
  ): ReducingState<T> & InternalMergingState {
    const folding = reduceFolding(descriptor.reduceFunction);
    return this.#register(
      descriptor.name,
      "reducing",
      descriptor.ttl,
      (table, ttl) => new SqliteAggregatingState<T, T, T>(this.#host, table, ttl, folding),
    );
  }

  /**
   * The {@linkcode AggregatingState} named by `descriptor` (Flink's
   * `RocksDBAggregatingState`).
   * @returns the same object for every call with the same name.
   * @throws {Error} on a conflicting registration; {@linkcode RangeError} for an invalid TTL.
   */
  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): AggregatingState<IN, OUT> & InternalMergingState {
    const folding = aggregateFolding(descriptor.aggregateFunction);
    return this.#register(
      descriptor.name,
      "aggregating",
      descriptor.ttl,
      (table, ttl) => new SqliteAggregatingState<IN, ACC, OUT>(this.#host, table, ttl, folding),
    );
  }

  #register<S extends object>(
    name: string,
    kind: StateKind,
    ttlConfig: StateTtlConfig | undefined,
    create: (table: SqliteTable, ttl: TtlBinding | undefined) => S,
  ): S {
    this.#checkOpen();
    const ttl = ttlSettings(name, ttlConfig);
    if (ttl?.time === "EventTime" && !this.#clocks.hasEventTime) {
      throw new RangeError(
        `Keyed state '${name}' has an event-time TTL, but this state backend has no event-time clock (option 'eventTimeClock'): current value is undefined`,
      );
    }
    let table = this.#tables.get(name);
    if (table !== undefined && table.kind !== kind) {
      throw new Error(
        `Keyed state '${name}' is already ${
          table.state ? "registered" : "restored"
        } as ${table.kind} state: cannot register it as ${kind} state`,
      );
    }
    if (table?.state !== undefined) {
      if (!sameTtl(table.ttl, ttl)) {
        throw new Error(
          `Keyed state '${name}' is already registered with ${
            describeTtl(table.ttl)
          }: cannot register it with ${describeTtl(ttl)}`,
        );
      }
      return table.state as S;
    }
    const time = ttl?.time ?? "ProcessingTime";
    if (time === "EventTime") this.#clocks.event(); // a registration is an access
    if (table === undefined) {
      table = this.#newTable(name, kind, ttl !== undefined, time);
    } else if (table.cells !== (ttl !== undefined)) {
      this.#convert(table, ttl !== undefined, this.#clocks.now(time));
    } else if (table.cells && table.cellTime !== time) {
      this.#convert(table, true, this.#clocks.now(time)); // other clock: lifetimes restart now
    }
    table.cellTime = time;
    table.ttl = ttl;
    const binding = ttl === undefined ? undefined : { ttl, clock: this.#clocks.clockOf(time) };
    const state = create(table, binding);
    table.state = state;
    return state;
  }

  #newTable(name: string, kind: StateKind, cells: boolean, cellTime: TtlTime): SqliteTable {
    const id = this.#byId.length;
    const table: SqliteTable = {
      name,
      kind,
      id,
      stmts: this.#store.createTable(id),
      cache: new StateCache(id),
      cells,
      cellTime,
      ttl: undefined,
      state: undefined,
      shared: new WeakSet(),
    };
    this.#byId.push(table);
    this.#tables.set(name, table);
    return table;
  }

  /**
   * Rewrites every row of `table`: plain values to TTL cells stamped `now`,
   * cells to plain values, or (cells to cells) every time to `now`.
   */
  #convert(table: SqliteTable, toCells: boolean, now: number): void {
    this.#cache.forget(table.cache);
    const wrap = (v: unknown): unknown =>
      toCells
        ? { v: table.cells ? (v as TtlCell<unknown>).v : v, t: now }
        : (v as TtlCell<unknown>).v;
    const kind = table.kind;
    const db = this.#store.db;
    const fn = `weir_convert_${table.id}`;
    db.function(fn, (bytes) => {
      const stored = decode(bytes as Uint8Array);
      return encode(kind === "list" ? (stored as unknown[]).map(wrap) : wrap(stored));
    });
    this.#store.transaction(() => db.exec(`UPDATE s${table.id} SET v = ${fn}(v)`));
    table.cells = toCells;
  }

  /** Names of all registered or restored states, in registration/restore order. */
  stateNames(): string[] {
    return [...this.#tables.keys()];
  }

  // -------------------------------------------------------------------------
  // Scans

  #table(stateName: string): SqliteTable {
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

  /** Whether a stored value (cell, list of cells, or one map row's cell) has a live cell now. */
  #isLive(table: SqliteTable, stored: unknown, now: number): boolean {
    if (!table.cells || table.ttl === undefined) return true;
    const ttlMs = table.ttl.ttlMs;
    const live = (c: TtlCell<unknown>) => !isExpired(this.#host.liveTime(c.t), now, ttlMs);
    return table.kind === "list"
      ? (stored as TtlCell<unknown>[]).some(live)
      : live(stored as TtlCell<unknown>);
  }

  /**
   * The keys (original form) that have a live entry in state `stateName`
   * under `namespace`, in key-group order (Flink's `getKeys`). Writes the
   * cache's dirty entries back first, then streams the rows (memory does
   * not grow with the state); expired entries are skipped, not removed.
   * Changing state while iterating may or may not show the change.
   * @param namespace default {@linkcode VOID_NAMESPACE}.
   * @throws {Error} when no state of that name is registered or restored.
   */
  keys(stateName: string, namespace: string = VOID_NAMESPACE): IterableIterator<Key> {
    const table = this.#table(stateName);
    this.#cache.flush();
    const now = table.ttl === undefined ? 0 : this.#clocks.now(table.ttl.time);
    const rows = this.#store.db.prepare(
      `SELECT k${table.cells ? ", v" : ""} FROM s${table.id} WHERE ns = ? ORDER BY kg, k`,
    ).iterate(escapeText(namespace)) as unknown as Iterable<{ k: string; v?: Uint8Array }>;
    return this.#liveKeys(table, rows, now);
  }

  *#liveKeys(
    table: SqliteTable,
    rows: Iterable<{ k: string; v?: Uint8Array }>,
    now: number,
  ): Generator<Key> {
    let last: string | undefined;
    for (const row of rows) {
      if (row.k === last) continue; // further user entries of a map already found live
      if (!this.#isLive(table, table.cells ? decode(row.v!) : undefined, now)) continue;
      last = row.k;
      yield keyOfText(row.k);
    }
  }

  /**
   * Every (key, namespace) with a live entry in state `stateName`, key group
   * by key group (Flink's `getKeysAndNamespaces`). Writes the dirty entries
   * back first; expired entries are skipped, not removed.
   * @throws {Error} when no state of that name is registered or restored.
   */
  keysAndNamespaces(stateName: string): IterableIterator<[Key, string]> {
    const table = this.#table(stateName);
    this.#cache.flush();
    const now = table.ttl === undefined ? 0 : this.#clocks.now(table.ttl.time);
    const rows = this.#store.db.prepare(
      `SELECT k, ns${table.cells ? ", v" : ""} FROM s${table.id} ORDER BY kg, ns, k`,
    ).iterate() as unknown as Iterable<{ k: string; ns: string; v?: Uint8Array }>;
    return this.#liveKeysAndNamespaces(table, rows, now);
  }

  *#liveKeysAndNamespaces(
    table: SqliteTable,
    rows: Iterable<{ k: string; ns: string; v?: Uint8Array }>,
    now: number,
  ): Generator<[Key, string]> {
    let lastK: string | undefined;
    let lastNs: string | undefined;
    for (const row of rows) {
      if (row.k === lastK && row.ns === lastNs) continue;
      if (!this.#isLive(table, table.cells ? decode(row.v!) : undefined, now)) continue;
      lastK = row.k;
      lastNs = row.ns;
      yield [keyOfText(row.k), unescapeText(row.ns)];
    }
  }

  /**
   * The number of keys with an entry in state `stateName`'s default
   * namespace, counting expired entries not yet removed (an upper bound with
   * TTL). Writes the dirty entries back, then counts in SQLite: O(entries).
   * @throws {Error} when no state of that name is registered or restored.
   */
  numKeys(stateName: string): number {
    const table = this.#table(stateName);
    this.#cache.flush();
    const sql = table.kind === "map"
      ? `SELECT count(*) AS n FROM (SELECT DISTINCT kg, k FROM s${table.id} WHERE ns = '')`
      : `SELECT count(*) AS n FROM s${table.id} WHERE ns = ''`;
    return Number((this.#store.db.prepare(sql).get() as { n: number }).n);
  }

  /**
   * The number of (state, key, namespace) entries over all states (Flink's
   * `numKeyValueStateEntries`); expired but not removed entries count.
   */
  numEntries(): number {
    this.#cache.flush();
    let n = 0;
    for (const table of this.#byId) {
      const sql = table.kind === "map"
        ? `SELECT count(*) AS n FROM (SELECT DISTINCT kg, k, ns FROM s${table.id})`
        : `SELECT count(*) AS n FROM s${table.id}`;
      n += Number((this.#store.db.prepare(sql).get() as { n: number }).n);
    }
    return n;
  }

  // -------------------------------------------------------------------------
  // Snapshot and restore

  /**
   * The synchronous part of a snapshot: writes the cache's dirty entries back
   * in one transaction and pins a read view of the database (see
   * `_sqlite_snapshot.ts`). The result's `write` writes canonical `keyed`
   * handles, one per chunk of key groups, for checkpoints and savepoints.
   * @param uid the operator uid, for the handles.
   * @throws {Error} when the backend was disposed.
   */
  snapshot(checkpointId: number, type: SnapshotType, uid: string): SnapshotResult {
    this.#checkOpen();
    void checkpointId;
    void type;
    this.#cache.flush();
    const states: CapturedState[] = this.#byId.map((t) => ({
      name: t.name,
      kind: t.kind,
      id: t.id,
      cells: t.cells,
      cellTime: t.cellTime,
      expiry: t.cells && t.ttl !== undefined
        ? { ttlMs: t.ttl.ttlMs, now: this.#clocks.now(t.ttl.time) }
        : undefined,
    }));
    const view: DatabaseSync = this.#store.openView();
    this.#openSnapshots++;
    const result = sqliteSnapshotResult({
      store: this.#store,
      view,
      states,
      range: [this.#start, this.#end],
      maxParallelism: this.#maxParallelism,
      uid,
      eventTimeStart: this.#clocks.eventTimeStart,
      chunkRows: this.#chunkRows,
      onRelease: () => this.#openSnapshots--,
    });
    const writes = this.#writes;
    return {
      write(writer) {
        const writing = result.write(writer);
        writes.add(writing);
        writing.then(() => writes.delete(writing), () => writes.delete(writing));
        return writing;
      },
      discard: () => result.discard?.(),
    };
  }

  /** The number of snapshots whose read view is still open (written or discarded ones are closed). */
  get openSnapshots(): number {
    return this.#openSnapshots;
  }

  /**
   * Loads this backend's key groups from canonical `keyed` handles of any
   * backend and any old parallelism (handles whose key-group range misses
   * this backend's are not read). On a (key, namespace) present twice the
   * later handle wins. States restored but not yet registered keep their
   * entries and are in later snapshots; TTL changes across the restore are
   * handled as in the heap backend. Call on a fresh backend, before processing.
   * @throws {Error} naming the handle when it is not of kind `keyed`, does
   *   not decode, has another max parallelism, or holds a malformed state.
   */
  async restore(handles: readonly StateHandle[], read: StateReader): Promise<void> {
    this.#checkOpen();
    for (const handle of handles) {
      if (handle.kind !== "keyed") {
        throw new Error(
          `Cannot restore keyed state handle '${handle.path}': the SQLite keyed state backend reads handles of kind 'keyed' only, current value is '${handle.kind}'`,
        );
      }
      const r = handle.keyGroupRange;
      if (r !== undefined && (r[1] < this.#start || r[0] > this.#end)) continue;
      const snapshot = await decodeKeyedHandle(handle, read, this.#maxParallelism);
      const version = snapshot.version;
      try {
        this.#cache.flush();
        this.#store.transaction(() => {
          for (const [name, state] of Object.entries(snapshot.states)) {
            this.#restoreState(name, state, version);
          }
        });
      } catch (e) {
        throw new Error(
          `Cannot restore keyed state handle '${handle.path}': ${(e as Error).message}`,
          { cause: e },
        );
      }
    }
  }

  #restoreState(name: string, state: KeyedStateSnapshotState, version: SnapshotVersion): void {
    checkStateKind(name, state, version);
    const snapTime: TtlTime = state.ttlTimeCharacteristic ?? "ProcessingTime";
    let table = this.#tables.get(name);
    if (table !== undefined && table.kind !== state.kind) {
      throw new Error(
        `Cannot restore keyed state '${name}' as ${state.kind} state: it is already ${
          table.state ? "registered" : "restored"
        } as ${table.kind} state`,
      );
    }
    table ??= this.#newTable(name, state.kind, state.ttl === true, snapTime);
    this.#cache.forget(table.cache);
    const stamping = {
      now: table.cells ? this.#clocks.now(table.cellTime) : NaN,
      keepTimes: state.ttl === true && snapTime === table.cellTime,
    };
    loadState(table, state, [this.#start, this.#end], stamping, version);
  }

  /**
   * Waits for the snapshot writes in progress, then closes the database and
   * deletes its directory; the views of snapshots not being written are
   * closed (a later `write` fails). Idempotent; the backend is unusable
   * afterwards.
   */
  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#cache.clear();
    await Promise.allSettled([...this.#writes]);
    await this.#store.close();
  }
}
