/**
 * Internal: what the state objects of {@linkcode SqliteKeyedStateBackend}
 * share: the per-state table record, the key context, the host interface
 * the backend gives them (loading entries into the cache) and the base
 * class that finds the entry of (current key, current namespace). Not part
 * of the public API.
 *
 * A state object reads and writes only cached entries (`_entry_cache.ts`):
 * a hit costs one `Map` lookup; a miss loads the entry from SQLite (or, for
 * a blind write such as `ValueState.update`, creates it without a read).
 * Every change marks the entry dirty; the cache writes it back later.
 *
 * @module
 */

import type { StateKind } from "../../api/state.ts";
import type { Key, StateKey } from "../key_group.ts";
import { type InternalKvState, VOID_NAMESPACE } from "../internal_state.ts";
import type { TtlTime } from "../keyed_state_snapshot.ts";
import {
  checkMergeArguments,
  mergeNamespaceEntries,
  type TtlSettings,
} from "../_heap_state_base.ts";
import type { CachedEntry, EntryCache, StateCache } from "./_entry_cache.ts";
import type { TableStatements } from "./_sqlite_store.ts";

/** One state of the backend, registered or only restored so far. */
export interface SqliteTable {
  /** The state's name. */
  readonly name: string;
  /** The state's kind. */
  readonly kind: StateKind;
  /** The table id (`s<id>` in SQLite). */
  readonly id: number;
  /** The table's statements. */
  readonly stmts: TableStatements;
  /** The state's cached entries. */
  readonly cache: StateCache;
  /** Whether stored values are TTL cells `{ v, t }`. */
  cells: boolean;
  /** The clock the cells' times are of. */
  cellTime: TtlTime;
  /** The TTL, once a descriptor registered the state. */
  ttl: TtlSettings | undefined;
  /** The state object, once registered. */
  state: object | undefined;
  /** Reducing/aggregating accumulators a caller of `get()` holds: copied before they change. */
  readonly shared: WeakSet<object>;
}

/** The current key, shared by the backend and its states. */
export class SqliteKeyContext {
  /** The current key's identity (`stateKeyOf(key)`). */
  keyId: StateKey = "";
  /** The current key group, or -1 before the first `setCurrentKey`. */
  keyGroup = -1;
  /** The current key as given. */
  key: Key | undefined = undefined;
}

/** What the backend provides to its state objects. */
export interface StateHost {
  /** The current key. */
  readonly ctx: SqliteKeyContext;
  /** The entry cache. */
  readonly cache: EntryCache;
  /** Loads (current key, `namespace`) of `table` from SQLite into the cache. */
  load(table: SqliteTable, namespace: string): CachedEntry;
  /**
   * Caches a new entry of (current key, `namespace`) without reading SQLite
   * (a blind write follows): absent and dirty, so that written back alone it
   * deletes whatever row the key had.
   */
  blank(table: SqliteTable, namespace: string): CachedEntry;
  /** A stored TTL time as the current clock sees it: `-Infinity` (before event time) becomes the event-time start once known. */
  liveTime(t: number): number;
}

/** Base of every state object: the entry of (current key, current namespace). */
export abstract class SqliteState implements InternalKvState {
  /** The backend. */
  protected readonly host: StateHost;
  /** The state's table record. */
  protected readonly table: SqliteTable;
  /** The backend's current key. */
  protected readonly ctx: SqliteKeyContext;
  /** The state's name, for messages. */
  protected readonly name: string;
  /** The entry cache. */
  protected readonly cache: EntryCache;
  readonly #plain: Map<StateKey, CachedEntry>;
  /** The current namespace. */
  protected namespace: string = VOID_NAMESPACE;

  /** Binds the state to its table and the backend. */
  constructor(host: StateHost, table: SqliteTable) {
    this.host = host;
    this.table = table;
    this.ctx = host.ctx;
    this.name = table.name;
    this.cache = host.cache;
    this.#plain = table.cache.plain;
  }

  setCurrentNamespace(namespace: string): void {
    if (typeof namespace !== "string") {
      throw new TypeError(
        `Keyed state '${this.name}' needs a string namespace: current value is ${
          String(namespace)
        } (${typeof namespace})`,
      );
    }
    this.namespace = namespace;
  }

  /** The cached entry of the current key in `namespace`, loaded on a miss; `undefined` before any key. */
  protected entryIn(namespace: string): CachedEntry | undefined {
    const ctx = this.ctx;
    const e = namespace === VOID_NAMESPACE
      ? this.#plain.get(ctx.keyId)
      : this.table.cache.scoped.get(namespace)?.get(ctx.keyId);
    if (e !== undefined) {
      e.ref = true;
      return e;
    }
    if (ctx.keyGroup < 0) return undefined;
    return this.host.load(this.table, namespace);
  }

  /** The entry of the current key and namespace (see {@linkcode entryIn}). */
  protected entry(): CachedEntry | undefined {
    return this.entryIn(this.namespace);
  }

  /**
   * The entry of the current key in `namespace` for a write that reads it first.
   * @throws {Error} before the first `setCurrentKey`.
   */
  protected writableIn(namespace: string): CachedEntry {
    const e = this.entryIn(namespace);
    if (e === undefined) this.noKey();
    return e;
  }

  /** The entry of the current key and namespace for a write that does not read it (no SQLite read on a miss). */
  protected blindEntry(): CachedEntry {
    const ctx = this.ctx;
    const ns = this.namespace;
    const e = ns === VOID_NAMESPACE
      ? this.#plain.get(ctx.keyId)
      : this.table.cache.scoped.get(ns)?.get(ctx.keyId);
    if (e !== undefined) {
      e.ref = true;
      return e;
    }
    if (ctx.keyGroup < 0) this.noKey();
    return this.host.blank(this.table, ns);
  }

  /** Sets an entry's stored value and marks it dirty. */
  protected set(e: CachedEntry, value: unknown): void {
    e.value = value;
    this.cache.markDirty(e);
  }

  /** Throws the error of a write before any key. */
  protected noKey(): never {
    throw new Error(
      `Cannot write keyed state '${this.name}' before setCurrentKey() set a current key`,
    );
  }

  /** Removes the current key's entry in the current namespace. */
  clear(): void {
    if (this.ctx.keyGroup < 0) return;
    const e = this.blindEntry(); // a blank entry is dirty: its row, if any, is deleted
    if (e.value !== undefined || e.dirty) this.set(e, undefined);
  }

  /**
   * Flink's `mergeNamespaces` for the current key: takes (and removes) the
   * entry of every namespace of `sources` in order, folds them with
   * `combine`, then folds the result into `target`'s entry (`combine(target,
   * merged)`) or stores it there. `live` filters a stored value (TTL states
   * drop expired ones) and returns `undefined` for nothing.
   */
  protected mergeEntries<S>(
    target: string,
    sources: readonly string[],
    combine: (a: S, b: S) => S,
    live: (stored: S) => S | undefined = (stored) => stored,
  ): void {
    checkMergeArguments(this.name, target, sources);
    if (this.ctx.keyGroup < 0) return;
    mergeNamespaceEntries(sources, combine, live, (ns) => {
      const e = this.writableIn(ns);
      const stored = e.value as S | undefined;
      if (stored !== undefined) this.set(e, undefined);
      return stored;
    }, (next) => {
      const t = this.writableIn(target);
      this.set(t, next(t.value as S | undefined));
    });
  }
}
