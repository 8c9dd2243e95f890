/**
 * Internal: the MapState of {@linkcode SqliteKeyedStateBackend}. In SQLite
 * each user entry is its own row (`uk` column), as in Flink's RocksDB map
 * state; in the cache one entry holds the whole user map of (key,
 * namespace) as a `Map`, with the user keys changed since the last
 * write-back, so that a write-back touches only the changed rows. With a
 * TTL each user entry is a cell `{ v, t }` and expires on its own. Not part
 * of the public API.
 *
 * ## Simplification
 *
 * A cached map is loaded whole on its first access (one range scan of its
 * rows) and weighs 1 + its size in the cache. A single user map larger
 * than the cache therefore sits in memory while in use: the cache bounds
 * the number of maps and entries held, not the size of one map. Flink's
 * RocksDB map state reads user entries one by one instead.
 *
 * @module
 */

import type { MapState } from "../../api/state.ts";
import { isExpired, type TtlCell } from "../_heap_state_base.ts";
import type { CachedEntry } from "./_entry_cache.ts";
import { primitiveText } from "./_row_keys.ts";
import { SqliteState, type SqliteTable, type StateHost } from "./_sqlite_state_base.ts";
import type { TtlBinding } from "./_sqlite_states.ts";
import type { TtlSettings } from "../_heap_state_base.ts";

function checkMapValue(name: string, value: unknown): void {
  if (value === undefined) {
    throw new TypeError(
      `MapState '${name}' cannot hold undefined (use remove()): current value is undefined`,
    );
  }
}

/** MapState over SQLite rows, one per user entry (see the module docs). */
export class SqliteMapState<UK, UV> extends SqliteState implements MapState<UK, UV> {
  readonly #ttl: TtlSettings | undefined;
  readonly #clock: () => number;

  constructor(host: StateHost, table: SqliteTable, ttl: TtlBinding | undefined) {
    super(host, table);
    this.#ttl = ttl?.ttl;
    this.#clock = ttl?.clock ?? Date.now;
  }

  #expired(cell: TtlCell<unknown>, now: number): boolean {
    return isExpired(this.host.liveTime(cell.t), now, this.#ttl!.ttlMs);
  }

  /** Records that user key `uk` of entry `e` changed. */
  #touch(e: CachedEntry, uk: UK): void {
    (e.changed ??= new Set()).add(uk);
    this.cache.markDirty(e);
  }

  /** Removes user key `uk` from `e`'s map (an expired or removed entry). */
  #delete(e: CachedEntry, inner: Map<UK, unknown>, uk: UK): void {
    inner.delete(uk);
    this.#touch(e, uk);
    if (inner.size === 0) e.value = undefined;
    this.cache.reweigh(e, 1 + inner.size);
  }

  /**
   * The live user map of the current entry (expired user entries removed,
   * refreshed on read when `refresh` and the TTL says so), or `undefined`.
   */
  #live(refresh: boolean): [CachedEntry, Map<UK, unknown>] | undefined {
    const now = this.#ttl === undefined ? 0 : this.#clock();
    const e = this.entry();
    const inner = e?.value as Map<UK, unknown> | undefined;
    if (inner === undefined) return undefined;
    if (this.#ttl === undefined) return [e!, inner];
    const touch = refresh && this.#ttl.onRead;
    for (const [k, c] of inner) {
      const cell = c as TtlCell<unknown>;
      if (this.#expired(cell, now)) this.#delete(e!, inner, k);
      else if (touch) {
        cell.t = now;
        this.#touch(e!, k);
      }
    }
    return inner.size > 0 ? [e!, inner] : undefined;
  }

  /** The live stored value (or cell) under `key`, removing it when expired. */
  #cell(key: UK, refresh: boolean): unknown {
    if (this.#ttl === undefined) {
      return (this.entry()?.value as Map<UK, unknown> | undefined)?.get(key);
    }
    const now = this.#clock();
    const e = this.entry();
    const inner = e?.value as Map<UK, TtlCell<unknown>> | undefined;
    const cell = inner?.get(key);
    if (cell === undefined) return undefined;
    if (this.#expired(cell, now)) {
      this.#delete(e!, inner!, key);
      return undefined;
    }
    if (refresh && this.#ttl.onRead) {
      cell.t = now;
      this.#touch(e!, key);
    }
    return cell;
  }

  get(key: UK): UV | undefined {
    const stored = this.#cell(key, true);
    return this.#ttl === undefined
      ? stored as UV | undefined
      : (stored as TtlCell<UV> | undefined)?.v;
  }

  put(key: UK, value: UV): void {
    checkMapValue(this.name, value);
    primitiveText(key, `A user key of MapState '${this.name}'`);
    const e = this.writableIn(this.namespace);
    let inner = e.value as Map<UK, unknown> | undefined;
    if (inner === undefined) e.value = inner = new Map();
    if (this.#ttl === undefined) inner.set(key, value);
    else {
      const cell = inner.get(key) as TtlCell<UV> | undefined;
      const now = this.#clock();
      if (cell !== undefined) {
        cell.v = value;
        cell.t = now;
      } else {
        inner.set(key, { v: value, t: now });
      }
    }
    this.#touch(e, key);
    if (e.weight !== 1 + inner.size) this.cache.reweigh(e, 1 + inner.size);
  }

  putAll(entries: Iterable<[UK, UV]>): void {
    const list = Array.from(entries);
    for (const [k, v] of list) {
      checkMapValue(this.name, v);
      primitiveText(k, `A user key of MapState '${this.name}'`);
    }
    for (const [k, v] of list) this.put(k, v);
  }

  remove(key: UK): void {
    const e = this.entry();
    const inner = e?.value as Map<UK, unknown> | undefined;
    if (inner !== undefined && inner.has(key)) this.#delete(e!, inner, key);
  }

  contains(key: UK): boolean {
    return this.#cell(key, false) !== undefined;
  }

  entries(): [UK, UV][] {
    const live = this.#live(true);
    if (live === undefined) return [];
    const inner = live[1];
    return this.#ttl === undefined
      ? Array.from(inner) as [UK, UV][]
      : Array.from(inner, ([k, c]) => [k, (c as TtlCell<UV>).v]);
  }

  keys(): UK[] {
    const live = this.#live(false);
    return live === undefined ? [] : Array.from(live[1].keys());
  }

  values(): UV[] {
    const live = this.#live(true);
    if (live === undefined) return [];
    const inner = live[1];
    return this.#ttl === undefined
      ? Array.from(inner.values()) as UV[]
      : Array.from(inner.values(), (c) => (c as TtlCell<UV>).v);
  }

  isEmpty(): boolean {
    return this.#live(false) === undefined;
  }

  override clear(): void {
    if (this.ctx.keyGroup < 0) return;
    const e = this.blindEntry();
    e.value = undefined;
    e.cleared = true;
    e.changed = undefined;
    this.cache.markDirty(e);
    this.cache.reweigh(e, 1);
  }
}
