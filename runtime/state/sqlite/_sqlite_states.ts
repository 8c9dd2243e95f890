/**
 * Internal: the Value, List, Reducing and Aggregating state objects of
 * {@linkcode SqliteKeyedStateBackend}, each with and without TTL in one
 * class (a TTL is a branch, not a subclass). The semantics are the heap
 * backend's (`_heap_states.ts`, `_heap_aggregating_states.ts`): TTL cells
 * `{ v, t }`, expired values never returned and removed when touched, lists
 * concatenated and accumulators merged across namespaces, accumulators a
 * caller holds copied before they change. Not part of the public API.
 *
 * @module
 */

import type { AggregatingState, ListState, ValueState } from "../../api/state.ts";
import type { InternalMergingState } from "../internal_state.ts";
import { EMPTY_LIST, isExpired, type TtlCell, type TtlSettings } from "../_heap_state_base.ts";
import type { Folding } from "../_heap_aggregating_states.ts";
import { SqliteState, type SqliteTable, type StateHost } from "./_sqlite_state_base.ts";

/** A TTL state's lifetime settings and clock. */
export interface TtlBinding {
  /** The TTL. */
  readonly ttl: TtlSettings;
  /** Its clock, ms. */
  readonly clock: () => number;
}

/** Base of states that may have a TTL. */
abstract class MaybeTtlState extends SqliteState {
  /** The TTL, or `undefined`. */
  protected readonly ttl: TtlSettings | undefined;
  /** The TTL's clock (processing time when there is no TTL). */
  protected readonly clock: () => number;

  constructor(host: StateHost, table: SqliteTable, ttl: TtlBinding | undefined) {
    super(host, table);
    this.ttl = ttl?.ttl;
    this.clock = ttl?.clock ?? Date.now;
  }

  /** Whether `cell` has expired at `now`. */
  protected expired(cell: TtlCell<unknown>, now: number): boolean {
    return isExpired(this.host.liveTime(cell.t), now, this.ttl!.ttlMs);
  }
}

/** ValueState: the value, or a TTL cell. */
export class SqliteValueState<T> extends MaybeTtlState implements ValueState<T> {
  readonly #defaultValue: T | undefined;

  constructor(
    host: StateHost,
    table: SqliteTable,
    ttl: TtlBinding | undefined,
    defaultValue: T | undefined,
  ) {
    super(host, table, ttl);
    this.#defaultValue = defaultValue;
  }

  value(): T | undefined {
    if (this.ttl === undefined) {
      const v = this.entry()?.value as T | undefined;
      return v === undefined ? this.#defaultValue : v;
    }
    const now = this.clock(); // first: every access reads the clock (event time may start)
    const e = this.entry();
    const cell = e?.value as TtlCell<T> | undefined;
    if (cell === undefined) return this.#defaultValue;
    if (this.expired(cell, now)) {
      this.set(e!, undefined);
      return this.#defaultValue;
    }
    if (this.ttl.onRead) {
      cell.t = now;
      this.cache.markDirty(e!);
    }
    return cell.v;
  }

  update(value: T | undefined): void {
    if (value === undefined) return this.clear();
    const e = this.blindEntry();
    if (this.ttl === undefined) return this.set(e, value);
    const now = this.clock();
    const cell = e.value as TtlCell<T> | undefined;
    if (cell !== undefined) {
      cell.v = value;
      cell.t = now;
      this.cache.markDirty(e);
    } else {
      this.set(e, { v: value, t: now });
    }
  }
}

function checkElement(name: string, value: unknown): void {
  if (value === undefined) {
    throw new TypeError(`ListState '${name}' cannot hold undefined: current value is undefined`);
  }
}

/** Appends `b`'s elements to `a` in place and returns `a`. */
function concat<E>(a: E[], b: readonly E[]): E[] {
  for (let i = 0; i < b.length; i++) a.push(b[i]!);
  return a;
}

/**
 * ListState: one array per entry (of TTL cells with a TTL, each element
 * expiring on its own), stored as one row (Flink's RocksDB list state keeps
 * one value per key too). Merging concatenates, target first.
 */
export class SqliteListState<T> extends MaybeTtlState
  implements ListState<T>, InternalMergingState {
  get(): readonly T[] {
    if (this.ttl === undefined) return (this.entry()?.value as T[] | undefined) ?? EMPTY_LIST;
    const now = this.clock();
    const e = this.entry();
    const cells = e?.value as TtlCell<T>[] | undefined;
    if (cells === undefined) return EMPTY_LIST;
    const out: T[] = [];
    let live = 0;
    let changed = false;
    for (const cell of cells) {
      if (this.expired(cell, now)) {
        changed = true;
        continue;
      }
      if (this.ttl.onRead) {
        cell.t = now;
        changed = true;
      }
      cells[live++] = cell;
      out.push(cell.v);
    }
    if (live === 0) this.set(e!, undefined);
    else {
      cells.length = live;
      if (changed) this.cache.markDirty(e!);
    }
    return out;
  }

  #wrap(values: readonly T[]): unknown[] {
    if (this.ttl === undefined) return values as unknown[];
    const now = this.clock();
    return values.map((v) => ({ v, t: now }));
  }

  /** Appends `value`; returns whether the list held elements before (expired ones count). */
  add(value: T): boolean {
    checkElement(this.name, value);
    const e = this.writableIn(this.namespace);
    const list = e.value as unknown[] | undefined;
    const item = this.ttl === undefined ? value : { v: value, t: this.clock() };
    if (list !== undefined) {
      list.push(item);
      this.cache.markDirty(e);
    } else {
      this.set(e, [item]);
    }
    return list !== undefined;
  }

  addAll(values: Iterable<T>): void {
    const added = Array.from(values);
    for (const v of added) checkElement(this.name, v);
    if (added.length === 0) return;
    const items = this.#wrap(added);
    const e = this.writableIn(this.namespace);
    const list = e.value as unknown[] | undefined;
    if (list !== undefined) {
      concat(list, items);
      this.cache.markDirty(e);
    } else {
      this.set(e, items === (added as unknown[]) ? added.slice() : items);
    }
  }

  update(values: Iterable<T>): void {
    const list = Array.from(values);
    for (const v of list) checkElement(this.name, v);
    if (list.length === 0) return this.clear();
    this.set(this.blindEntry(), this.#wrap(list));
  }

  mergeNamespaces(target: string, sources: readonly string[]): void {
    if (this.ttl === undefined) return this.mergeEntries<T[]>(target, sources, concat);
    const now = this.clock();
    this.mergeEntries<TtlCell<T>[]>(target, sources, concat, (cells) => {
      const live = cells.filter((c) => !this.expired(c, now));
      return live.length === 0 ? undefined : live;
    });
  }
}

function checkAdded(name: string, value: unknown): void {
  if (value === undefined) {
    throw new TypeError(`Keyed state '${name}' cannot add undefined: current value is undefined`);
  }
}

function checkFolded(name: string, what: string, acc: unknown): void {
  if (acc === undefined) {
    throw new TypeError(
      `The function of keyed state '${name}' returned undefined from ${what}: it must return the accumulated value`,
    );
  }
}

/**
 * ReducingState and AggregatingState (a reducing state is the aggregating
 * state of a `reduceFolding`): one accumulator per entry, or a TTL cell
 * holding it. An accumulator that `get()` handed out (when `getResult` is
 * the identity) is copied (`structuredClone`) before a user function may
 * change it in place, as in the heap backend.
 */
export class SqliteAggregatingState<IN, ACC, OUT> extends MaybeTtlState
  implements AggregatingState<IN, OUT>, InternalMergingState {
  readonly #folding: Folding<IN, ACC, OUT>;
  readonly #shared: WeakSet<object>;

  constructor(
    host: StateHost,
    table: SqliteTable,
    ttl: TtlBinding | undefined,
    folding: Folding<IN, ACC, OUT>,
  ) {
    super(host, table, ttl);
    this.#folding = folding;
    this.#shared = table.shared;
  }

  #owned(value: ACC): ACC {
    return typeof value === "object" && value !== null && this.#shared.has(value)
      ? structuredClone(value)
      : value;
  }

  #result(acc: ACC): OUT {
    const out = this.#folding.getResult(acc);
    if ((out as unknown) === acc && typeof acc === "object" && acc !== null) this.#shared.add(acc);
    return out;
  }

  get(): OUT | undefined {
    if (this.ttl === undefined) {
      const acc = this.entry()?.value as ACC | undefined;
      return acc === undefined ? undefined : this.#result(acc);
    }
    const now = this.clock();
    const e = this.entry();
    const cell = e?.value as TtlCell<ACC> | undefined;
    if (cell === undefined) return undefined;
    if (this.expired(cell, now)) {
      this.set(e!, undefined);
      return undefined;
    }
    if (this.ttl.onRead) {
      cell.t = now;
      this.cache.markDirty(e!);
    }
    return this.#result(cell.v);
  }

  /** Folds `value` in; returns whether the entry held a (live) accumulator before. */
  add(value: IN): boolean {
    checkAdded(this.name, value);
    if (this.ttl === undefined) {
      const e = this.writableIn(this.namespace);
      const acc = e.value as ACC | undefined;
      const next = this.#folding.add(value, acc === undefined ? undefined : this.#owned(acc));
      checkFolded(this.name, "add", next);
      this.set(e, next);
      return acc !== undefined;
    }
    const now = this.clock();
    const e = this.writableIn(this.namespace);
    let cell = e.value as TtlCell<ACC> | undefined;
    if (cell !== undefined && this.expired(cell, now)) cell = undefined;
    const next = this.#folding.add(value, cell === undefined ? undefined : this.#owned(cell.v));
    checkFolded(this.name, "add", next);
    if (cell !== undefined) {
      cell.v = next;
      cell.t = now;
      this.cache.markDirty(e);
    } else {
      this.set(e, { v: next, t: now });
    }
    return cell !== undefined;
  }

  mergeNamespaces(target: string, sources: readonly string[]): void {
    const merge = (a: ACC, b: ACC): ACC => {
      const merged = this.#folding.merge(this.#owned(a), this.#owned(b));
      checkFolded(this.name, "merge", merged);
      return merged;
    };
    if (this.ttl === undefined) return this.mergeEntries<ACC>(target, sources, merge);
    const now = this.clock();
    this.mergeEntries<TtlCell<ACC>>(
      target,
      sources,
      (a, b) => ({ v: merge(a.v, b.v), t: now }),
      (cell) => this.expired(cell, now) ? undefined : cell,
    );
  }
}
