/**
 * Internal: the per-state objects of {@linkcode HeapKeyedStateBackend} and
 * the structures they share with it. Not part of the public API.
 *
 * @module
 */

import type { ListState, MapState, StateKind, StateTtlConfig, ValueState } from "../api/state.ts";
import type { Key, StateKey } from "./key_group.ts";

/** The key the next state access applies to; shared by the backend and its states. */
export class KeyContext {
  /** `stateKeyOf(key)`. */
  stateKey: StateKey = "";
  /** `keyGroup - startKeyGroup`, or -1 before the first `setCurrentKey`. */
  index = -1;
  /** The current key group, or -1 before the first `setCurrentKey`. */
  keyGroup = -1;
  /** The current key as given. */
  key: Key | undefined = undefined;
}

/** A value, list element or map entry of a TTL state, with its last-access time (Flink's `TtlValue`). */
export interface TtlCell<V> {
  /** The value. */
  v: V;
  /** Last access (write, or read with OnReadAndWrite), in ms of the backend clock. */
  t: number;
}

/** A validated {@linkcode StateTtlConfig}. */
export interface TtlSettings {
  /** Lifetime, ms. */
  readonly ttlMs: number;
  /** Whether reads restart the lifetime (`OnReadAndWrite`). */
  readonly onRead: boolean;
}

/** One map per key group of the backend's range (index = key group − start), created on first write. */
export type Maps<S> = (Map<StateKey, S> | undefined)[];

/** One state's storage, registered or only restored so far. */
export interface StateTable {
  /** The state's name. */
  readonly name: string;
  /** The state's kind. */
  readonly kind: StateKind;
  /** Whether stored values are {@linkcode TtlCell}s. */
  cells: boolean;
  /** The TTL, once a descriptor registered the state. */
  ttl: TtlSettings | undefined;
  /** One map per key group of the range, created on first write. */
  readonly maps: Maps<unknown>;
  /** The state object, once registered. */
  state: object | undefined;
}

/** What `ListState.get()` returns for a key without elements. */
export const EMPTY_LIST: readonly never[] = Object.freeze([]);

/**
 * Validates a descriptor's TTL.
 * @throws {RangeError} for a non-positive or non-finite `ttlMs` or an unknown `updateType`.
 */
export function ttlSettings(
  name: string,
  ttl: StateTtlConfig | undefined,
): TtlSettings | undefined {
  if (ttl === undefined) return undefined;
  if (typeof ttl.ttlMs !== "number" || !(ttl.ttlMs > 0) || !Number.isFinite(ttl.ttlMs)) {
    throw new RangeError(
      `State '${name}' needs a TTL 'ttlMs' that is a finite number > 0: current value is ${ttl.ttlMs}`,
    );
  }
  const type = ttl.updateType ?? "OnCreateAndWrite";
  if (type !== "OnCreateAndWrite" && type !== "OnReadAndWrite") {
    throw new RangeError(
      `State '${name}' has an unknown TTL 'updateType': current value is ${JSON.stringify(type)}`,
    );
  }
  return { ttlMs: ttl.ttlMs, onRead: type === "OnReadAndWrite" };
}

/** A TTL for error messages: `"TTL 100 ms OnCreateAndWrite"` or `"no TTL"`. */
export function describeTtl(ttl: TtlSettings | undefined): string {
  if (ttl === undefined) return "no TTL";
  return `TTL ${ttl.ttlMs} ms ${ttl.onRead ? "OnReadAndWrite" : "OnCreateAndWrite"}`;
}

/** Sets `target[name] = value` as an own property, even for `"__proto__"`. */
export function defineEntry<T>(target: Record<string, T>, name: string, value: T): void {
  // defineProperty, not assignment: a state named "__proto__" stays an own property.
  Object.defineProperty(target, name, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

// ---------------------------------------------------------------------------
// State objects

/** Base of every state object: the shared key context and the state's maps. */
export abstract class HeapState<S> {
  /** The backend's current key. */
  protected readonly ctx: KeyContext;
  /** The table's maps, typed for this state's stored values. */
  protected readonly maps: Maps<S>;
  /** The state's name, for messages. */
  protected readonly name: string;

  /** Binds the state to `table` and the backend's key context. */
  constructor(table: StateTable, ctx: KeyContext) {
    this.ctx = ctx;
    this.maps = table.maps as Maps<S>;
    this.name = table.name;
  }

  /** The current key group's map, created if missing. */
  protected writable(): Map<StateKey, S> {
    const i = this.ctx.index;
    const m = this.maps[i];
    if (m !== undefined) return m;
    if (i < 0) {
      throw new Error(
        `Cannot write keyed state '${this.name}' before setCurrentKey() set a current key`,
      );
    }
    const created = new Map<StateKey, S>();
    this.maps[i] = created;
    return created;
  }

  /** Removes the current key's entry. */
  clear(): void {
    this.maps[this.ctx.index]?.delete(this.ctx.stateKey);
  }
}

/** ValueState without TTL: stores the value itself; no allocation per access. */
export class HeapValueState<T> extends HeapState<T> implements ValueState<T> {
  readonly #defaultValue: T | undefined;

  /** Binds the state; `defaultValue` is returned for keys without a value. */
  constructor(table: StateTable, ctx: KeyContext, defaultValue: T | undefined) {
    super(table, ctx);
    this.#defaultValue = defaultValue;
  }

  value(): T | undefined {
    const m = this.maps[this.ctx.index];
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

/** Base of the TTL state objects, whose stored values are {@linkcode TtlCell}s. */
export abstract class TtlHeapState<S> extends HeapState<S> {
  /** Lifetime, ms. */
  protected readonly ttlMs: number;
  /** Whether reads restart the lifetime. */
  protected readonly onRead: boolean;
  /** The backend's clock, ms. */
  protected readonly clock: () => number;

  /** Binds the state with its TTL and clock. */
  constructor(table: StateTable, ctx: KeyContext, ttl: TtlSettings, clock: () => number) {
    super(table, ctx);
    this.ttlMs = ttl.ttlMs;
    this.onRead = ttl.onRead;
    this.clock = clock;
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
    const m = this.maps[this.ctx.index];
    const cell = m?.get(this.ctx.stateKey);
    if (cell === undefined) return this.#defaultValue;
    const now = this.clock();
    if (cell.t + this.ttlMs <= now) {
      m!.delete(this.ctx.stateKey);
      return this.#defaultValue;
    }
    if (this.onRead) cell.t = now;
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

/** ListState without TTL: one array per key, appended in place. */
export class HeapListState<T> extends HeapState<T[]> implements ListState<T> {
  get(): readonly T[] {
    return this.maps[this.ctx.index]?.get(this.ctx.stateKey) ?? EMPTY_LIST;
  }

  add(value: T): void {
    checkElement(this.name, value);
    const m = this.writable();
    const list = m.get(this.ctx.stateKey);
    if (list !== undefined) list.push(value);
    else m.set(this.ctx.stateKey, [value]);
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
}

/** ListState with TTL: one cell per element, each expiring on its own. */
export class TtlHeapListState<T> extends TtlHeapState<TtlCell<T>[]> implements ListState<T> {
  get(): readonly T[] {
    const m = this.maps[this.ctx.index];
    const cells = m?.get(this.ctx.stateKey);
    if (cells === undefined) return EMPTY_LIST;
    const now = this.clock();
    const out: T[] = [];
    let live = 0;
    for (const cell of cells) {
      if (cell.t + this.ttlMs <= now) continue;
      if (this.onRead) cell.t = now;
      cells[live++] = cell;
      out.push(cell.v);
    }
    if (live === 0) m!.delete(this.ctx.stateKey);
    else cells.length = live;
    return out;
  }

  add(value: T): void {
    checkElement(this.name, value);
    const m = this.writable();
    const cells = m.get(this.ctx.stateKey);
    const cell = { v: value, t: this.clock() };
    if (cells !== undefined) cells.push(cell);
    else m.set(this.ctx.stateKey, [cell]);
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
}

function checkMapValue(name: string, value: unknown): void {
  if (value === undefined) {
    throw new TypeError(
      `MapState '${name}' cannot hold undefined (use remove()): current value is undefined`,
    );
  }
}

/** MapState without TTL: one inner `Map` per key, changed in place. */
export class HeapMapState<UK, UV> extends HeapState<Map<UK, UV>> implements MapState<UK, UV> {
  #inner(): Map<UK, UV> | undefined {
    return this.maps[this.ctx.index]?.get(this.ctx.stateKey);
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
    if (inner !== undefined && inner.delete(key) && inner.size === 0) this.clear();
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
    const m = this.maps[this.ctx.index];
    const inner = m?.get(this.ctx.stateKey);
    if (inner === undefined) return undefined;
    const now = this.clock();
    const touch = refresh && this.onRead;
    for (const [k, cell] of inner) {
      if (cell.t + this.ttlMs <= now) inner.delete(k);
      else if (touch) cell.t = now;
    }
    if (inner.size > 0) return inner;
    m!.delete(this.ctx.stateKey);
    return undefined;
  }

  /** The live cell under `key`, removing it when expired. */
  #cell(key: UK, refresh: boolean): TtlCell<UV> | undefined {
    const m = this.maps[this.ctx.index];
    const inner = m?.get(this.ctx.stateKey);
    const cell = inner?.get(key);
    if (cell === undefined) return undefined;
    const now = this.clock();
    if (cell.t + this.ttlMs <= now) {
      inner!.delete(key);
      if (inner!.size === 0) m!.delete(this.ctx.stateKey);
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
    const inner = this.maps[this.ctx.index]?.get(this.ctx.stateKey);
    if (inner !== undefined && inner.delete(key) && inner.size === 0) this.clear();
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
