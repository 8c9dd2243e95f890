/**
 * Internal: the Value, List and Map state objects of
 * {@linkcode HeapKeyedStateBackend}, with and without TTL. Each reads and
 * writes the entry of the backend's current key in its own current
 * namespace (see `_heap_state_base.ts`). List state merges namespaces
 * (Flink's `InternalMergingState`); value and map state cannot. Not part of
 * the public API.
 *
 * @module
 */

import type { ListState, MapState, ValueState } from "../api/state.ts";
import type { InternalMergingState } from "./internal_state.ts";
import {
  EMPTY_LIST,
  HeapState,
  isExpired,
  type KeyContext,
  type StateTable,
  type TtlCell,
  TtlHeapState,
  type TtlSettings,
} from "./_heap_state_base.ts";

/** ValueState without TTL: stores the value itself; no allocation per access. */
export class HeapValueState<T> extends HeapState<T> implements ValueState<T> {
  readonly #defaultValue: T | undefined;

  /** Binds the state; `defaultValue` is returned for keys without a value. */
  constructor(table: StateTable, ctx: KeyContext, defaultValue: T | undefined) {
    super(table, ctx);
    this.#defaultValue = defaultValue;
  }

  value(): T | undefined {
    const m = this.current();
    if (m !== undefined) {
      const v = m.get(this.ctx.stateKey);
      if (v !== undefined) return v;
    }
    return this.#defaultValue;
  }

  update(value: T | undefined): void {
    if (value === undefined) this.clear();
    else this.writable().set(this.ctx.stateKey, value);
  }
}

/** ValueState with TTL: one cell per key, updated in place. */
export class TtlHeapValueState<T> extends TtlHeapState<TtlCell<T>> implements ValueState<T> {
  readonly #defaultValue: T | undefined;

  /** Binds the state with its TTL, clock and default value. */
  constructor(
    table: StateTable,
    ctx: KeyContext,
    ttl: TtlSettings,
    clock: () => number,
    defaultValue: T | undefined,
  ) {
    super(table, ctx, ttl, clock);
    this.#defaultValue = defaultValue;
  }

  value(): T | undefined {
    const now = this.clock(); // first: every access reads the clock (event time may start)
    const m = this.current();
    const cell = m?.get(this.ctx.stateKey);
    if (cell === undefined) return this.#defaultValue;
    if (isExpired(cell.t, now, this.ttlMs)) {
      this.deleteIn(m!);
      return this.#defaultValue;
    }
    if (this.onRead) {
      this.touch(); // the cell changes in place
      cell.t = now;
    }
    return cell.v;
  }

  update(value: T | undefined): void {
    if (value === undefined) return this.clear();
    const m = this.writable();
    const cell = m.get(this.ctx.stateKey);
    // Cells are never shared with a snapshot, so they may change in place.
    if (cell !== undefined) {
      cell.v = value;
      cell.t = this.clock();
    } else {
      m.set(this.ctx.stateKey, { v: value, t: this.clock() });
    }
  }
}

function checkElement(name: string, value: unknown): void {
  if (value === undefined) {
    throw new TypeError(`ListState '${name}' cannot hold undefined: current value is undefined`);
  }
}

/** Appends `b`'s elements to `a` in place (no spread: lists may be long) and returns `a`. */
function concat<E>(a: E[], b: readonly E[]): E[] {
  for (let i = 0; i < b.length; i++) a.push(b[i]!);
  return a;
}

/**
 * ListState without TTL: one array per key, appended in place. Merging
 * namespaces concatenates: the target's elements, then each source's in the
 * order given (Flink's `HeapListState`).
 */
export class HeapListState<T> extends HeapState<T[]> implements ListState<T>, InternalMergingState {
  get(): readonly T[] {
    return this.current()?.get(this.ctx.stateKey) ?? EMPTY_LIST;
  }

  /** Appends `value`; returns whether the list held elements before (for the window operator). */
  add(value: T): boolean {
    checkElement(this.name, value);
    const m = this.writable();
    const list = m.get(this.ctx.stateKey);
    if (list !== undefined) list.push(value);
    else m.set(this.ctx.stateKey, [value]);
    return list !== undefined;
  }

  addAll(values: Iterable<T>): void {
    const added = Array.from(values);
    if (added.length === 0) return;
    for (const v of added) checkElement(this.name, v);
    const m = this.writable();
    const list = m.get(this.ctx.stateKey);
    if (list !== undefined) { for (const v of added) list.push(v); }
    else m.set(this.ctx.stateKey, added);
  }

  update(values: Iterable<T>): void {
    const list = Array.from(values);
    for (const v of list) checkElement(this.name, v);
    if (list.length === 0) this.clear();
    else this.writable().set(this.ctx.stateKey, list);
  }

  mergeNamespaces(target: string, sources: readonly string[]): void {
    this.mergeEntries(target, sources, concat);
  }
}

/**
 * ListState with TTL: one cell per element, each expiring on its own.
 * Merging keeps each element's last-access time and drops expired ones.
 */
export class TtlHeapListState<T> extends TtlHeapState<TtlCell<T>[]>
  implements ListState<T>, InternalMergingState {
  get(): readonly T[] {
    const now = this.clock();
    const m = this.current();
    const cells = m?.get(this.ctx.stateKey);
    if (cells === undefined) return EMPTY_LIST;
    this.touch(); // expired cells are dropped and read ones refreshed in place
    const out: T[] = [];
    let live = 0;
    for (const cell of cells) {
      if (isExpired(cell.t, now, this.ttlMs)) continue;
      if (this.onRead) cell.t = now;
      cells[live++] = cell;
      out.push(cell.v);
    }
    if (live === 0) this.deleteIn(m!);
    else cells.length = live;
    return out;
  }

  /** Appends `value`; returns whether the list held cells before (expired ones count). */
  add(value: T): boolean {
    checkElement(this.name, value);
    const m = this.writable();
    const cells = m.get(this.ctx.stateKey);
    const cell = { v: value, t: this.clock() };
    if (cells !== undefined) cells.push(cell);
    else m.set(this.ctx.stateKey, [cell]);
    return cells !== undefined;
  }

  addAll(values: Iterable<T>): void {
    const now = this.clock();
    const added = Array.from(values, (v) => {
      checkElement(this.name, v);
      return { v, t: now };
    });
    if (added.length === 0) return;
    const m = this.writable();
    const cells = m.get(this.ctx.stateKey);
    if (cells !== undefined) { for (const c of added) cells.push(c); }
    else m.set(this.ctx.stateKey, added);
  }

  update(values: Iterable<T>): void {
    const now = this.clock();
    const cells = Array.from(values, (v) => {
      checkElement(this.name, v);
      return { v, t: now };
    });
    if (cells.length === 0) this.clear();
    else this.writable().set(this.ctx.stateKey, cells);
  }

  mergeNamespaces(target: string, sources: readonly string[]): void {
    const now = this.clock();
    this.mergeEntries(target, sources, concat, (cells) => {
      const live = cells.filter((c) => !isExpired(c.t, now, this.ttlMs));
      return live.length === 0 ? undefined : live;
    });
  }
}

function checkMapValue(name: string, value: unknown): void {
  if (value === undefined) {
    throw new TypeError(
      `MapState '${name}' cannot hold undefined (use remove()): current value is undefined`,
    );
  }
}

/** MapState without TTL: one inner `Map` per key, changed in place. Cannot merge namespaces. */
export class HeapMapState<UK, UV> extends HeapState<Map<UK, UV>> implements MapState<UK, UV> {
  #inner(): Map<UK, UV> | undefined {
    return this.current()?.get(this.ctx.stateKey);
  }

  #innerForWrite(): Map<UK, UV> {
    const m = this.writable();
    let inner = m.get(this.ctx.stateKey);
    if (inner === undefined) {
      inner = new Map();
      m.set(this.ctx.stateKey, inner);
    }
    return inner;
  }

  get(key: UK): UV | undefined {
    return this.#inner()?.get(key);
  }

  put(key: UK, value: UV): void {
    checkMapValue(this.name, value);
    this.#innerForWrite().set(key, value);
  }

  putAll(entries: Iterable<[UK, UV]>): void {
    const list = Array.from(entries);
    if (list.length === 0) return;
    for (const [, v] of list) checkMapValue(this.name, v);
    const inner = this.#innerForWrite();
    for (const [k, v] of list) inner.set(k, v);
  }

  remove(key: UK): void {
    const inner = this.#inner();
    if (inner === undefined) return;
    this.touch();
    if (inner.delete(key) && inner.size === 0) this.clear();
  }

  contains(key: UK): boolean {
    return this.#inner()?.has(key) ?? false;
  }

  entries(): [UK, UV][] {
    const inner = this.#inner();
    return inner === undefined ? [] : Array.from(inner);
  }

  keys(): UK[] {
    const inner = this.#inner();
    return inner === undefined ? [] : Array.from(inner.keys());
  }

  values(): UV[] {
    const inner = this.#inner();
    return inner === undefined ? [] : Array.from(inner.values());
  }

  isEmpty(): boolean {
    return this.#inner() === undefined;
  }
}

/** MapState with TTL: one cell per user-map entry, each expiring on its own. */
export class TtlHeapMapState<UK, UV> extends TtlHeapState<Map<UK, TtlCell<UV>>>
  implements MapState<UK, UV> {
  /** The current key's inner map with every expired entry removed (refreshed on read if configured). */
  #live(refresh: boolean): Map<UK, TtlCell<UV>> | undefined {
    const now = this.clock();
    const m = this.current();
    const inner = m?.get(this.ctx.stateKey);
    if (inner === undefined) return undefined;
    this.touch(); // expired entries are dropped and read ones refreshed in place
    const touch = refresh && this.onRead;
    for (const [k, cell] of inner) {
      if (isExpired(cell.t, now, this.ttlMs)) inner.delete(k);
      else if (touch) cell.t = now;
    }
    if (inner.size > 0) return inner;
    this.deleteIn(m!);
    return undefined;
  }

  /** The live cell under `key`, removing it when expired. */
  #cell(key: UK, refresh: boolean): TtlCell<UV> | undefined {
    const now = this.clock();
    const m = this.current();
    const inner = m?.get(this.ctx.stateKey);
    const cell = inner?.get(key);
    if (cell === undefined) return undefined;
    if (isExpired(cell.t, now, this.ttlMs) || (refresh && this.onRead)) this.touch();
    if (isExpired(cell.t, now, this.ttlMs)) {
      inner!.delete(key);
      if (inner!.size === 0) this.deleteIn(m!);
      return undefined;
    }
    if (refresh && this.onRead) cell.t = now;
    return cell;
  }

  get(key: UK): UV | undefined {
    return this.#cell(key, true)?.v;
  }

  put(key: UK, value: UV): void {
    checkMapValue(this.name, value);
    const m = this.writable();
    let inner = m.get(this.ctx.stateKey);
    if (inner === undefined) {
      inner = new Map();
      m.set(this.ctx.stateKey, inner);
    }
    const now = this.clock();
    const cell = inner.get(key);
    if (cell !== undefined) {
      cell.v = value;
      cell.t = now;
    } else {
      inner.set(key, { v: value, t: now });
    }
  }

  putAll(entries: Iterable<[UK, UV]>): void {
    for (const [k, v] of Array.from(entries)) this.put(k, v);
  }

  remove(key: UK): void {
    const inner = this.current()?.get(this.ctx.stateKey);
    if (inner === undefined) return;
    this.touch();
    if (inner.delete(key) && inner.size === 0) this.clear();
  }

  contains(key: UK): boolean {
    return this.#cell(key, false) !== undefined;
  }

  entries(): [UK, UV][] {
    const inner = this.#live(true);
    return inner === undefined ? [] : Array.from(inner, ([k, c]) => [k, c.v]);
  }

  keys(): UK[] {
    const inner = this.#live(false);
    return inner === undefined ? [] : Array.from(inner.keys());
  }

  values(): UV[] {
    const inner = this.#live(true);
    return inner === undefined ? [] : Array.from(inner.values(), (c) => c.v);
  }

  isEmpty(): boolean {
    return this.#live(false) === undefined;
  }
}
