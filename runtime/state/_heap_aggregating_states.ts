/**
 * Internal: the Reducing and Aggregating state objects of
 * {@linkcode HeapKeyedStateBackend}, with and without TTL. Both keep one
 * accumulated value per (key, namespace) and fold added values into it; a
 * {@linkcode Folding} makes a `ReduceFunction` and an `AggregateFunction`
 * look alike, so one class serves both kinds (Flink's `HeapReducingState`
 * and `HeapAggregatingState`). Not part of the public API.
 *
 * ## Copy-on-write
 *
 * User functions may change an accumulator in place and return it. A
 * snapshot shares accumulators with the live state until its asynchronous
 * part has encoded them, so the table remembers every object a snapshot (or
 * a restore) handed out (`StateTable.shared`), and the state passes a
 * `structuredClone` of such an object to the user function instead of the
 * object itself. An accumulator is thus copied at most once per snapshot,
 * and only when it is touched again. `get()` does the same when it returns
 * the accumulator itself (`getResult` is the identity, as for reducing
 * state): what a caller read, or emitted downstream, never changes later.
 *
 * @module
 */

import type { AggregateFunction, ReduceFunction } from "../api/functions.ts";
import type { AggregatingState } from "../api/state.ts";
import type { InternalMergingState } from "./internal_state.ts";
import {
  HeapState,
  isExpired,
  type KeyContext,
  type StateTable,
  type TtlCell,
  TtlHeapState,
  type TtlSettings,
} from "./_heap_state_base.ts";

/** A `ReduceFunction` or an `AggregateFunction` seen as one shape. */
export interface Folding<IN, ACC, OUT> {
  /** Folds `value` into `acc` (`undefined`: nothing accumulated yet). */
  add(value: IN, acc: ACC | undefined): ACC;
  /** What the state's `get()` returns for `acc`. */
  getResult(acc: ACC): OUT;
  /** Combines two accumulators (merging namespaces). */
  merge(a: ACC, b: ACC): ACC;
}

/** The folding of a reducing state: the first value is the accumulator. */
export function reduceFolding<T>(fn: ReduceFunction<T>): Folding<T, T, T> {
  const reduce = typeof fn === "function" ? fn : (a: T, b: T) => fn.reduce(a, b);
  return {
    add: (value, acc) => acc === undefined ? value : reduce(acc, value),
    getResult: (acc) => acc,
    merge: reduce,
  };
}

/** The folding of an aggregating state. */
export function aggregateFolding<IN, ACC, OUT>(
  fn: AggregateFunction<IN, ACC, OUT>,
): Folding<IN, ACC, OUT> {
  return {
    add: (value, acc) => fn.add(value, acc === undefined ? fn.createAccumulator() : acc),
    getResult: (acc) => fn.getResult(acc),
    merge: (a, b) => fn.merge(a, b),
  };
}

/** `value`, or its copy when a snapshot still shares it. */
function owned<V>(shared: WeakSet<object>, value: V): V {
  return typeof value === "object" && value !== null && shared.has(value)
    ? structuredClone(value)
    : value;
}

/**
 * `getResult(acc)`. When that is the accumulator itself (a reducing state's
 * value, or an identity `getResult`), the caller now holds it too, so it is
 * marked shared: the next `add` or `merge` changes a copy.
 */
function result<ACC, OUT>(
  shared: WeakSet<object>,
  folding: Folding<unknown, ACC, OUT>,
  acc: ACC,
): OUT {
  const out = folding.getResult(acc);
  if ((out as unknown) === acc && typeof acc === "object" && acc !== null) shared.add(acc);
  return out;
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
 * AggregatingState without TTL, and ReducingState as the aggregating state
 * of a {@linkcode reduceFolding}: the accumulator itself is stored. Merging folds the sources' accumulators in order, then folds the
 * result into the target's (`merge(target, merged)`), as Flink does.
 */
export class HeapAggregatingState<IN, ACC, OUT> extends HeapState<ACC>
  implements AggregatingState<IN, OUT>, InternalMergingState {
  readonly #folding: Folding<IN, ACC, OUT>;
  readonly #shared: WeakSet<object>;

  /** Binds the state; `folding` is its reduce or aggregate function. */
  constructor(table: StateTable, ctx: KeyContext, folding: Folding<IN, ACC, OUT>) {
    super(table, ctx);
    this.#folding = folding;
    this.#shared = table.shared;
  }

  get(): OUT | undefined {
    const acc = this.current()?.get(this.ctx.stateKey);
    return acc === undefined ? undefined : result(this.#shared, this.#folding, acc);
  }

  /** Folds `value` in; returns whether the entry held an accumulator before (for the window operator). */
  add(value: IN): boolean {
    checkAdded(this.name, value);
    this.touch(); // before owned(): a snapshot in flight keeps the accumulator, the fold gets a copy
    const sk = this.ctx.stateKey;
    const m = this.current();
    const acc = m?.get(sk);
    const next = this.#folding.add(value, acc === undefined ? undefined : owned(this.#shared, acc));
    checkFolded(this.name, "add", next);
    // The map read from is still the table's unless it was emptied meanwhile
    // (maps leave the table only when empty): then write through writable().
    (m !== undefined && m.size > 0 ? m : this.writable()).set(sk, next);
    return acc !== undefined;
  }

  mergeNamespaces(target: string, sources: readonly string[]): void {
    this.mergeEntries(target, sources, (a, b) => {
      const merged = this.#folding.merge(owned(this.#shared, a), owned(this.#shared, b));
      checkFolded(this.name, "merge", merged);
      return merged;
    });
  }
}

/**
 * ReducingState and AggregatingState with TTL: one cell per (key,
 * namespace). Adding restarts the lifetime; merging drops expired
 * accumulators and stamps the merged one with the current time (Flink's
 * `TtlAggregatingState`).
 */
export class TtlHeapAggregatingState<IN, ACC, OUT> extends TtlHeapState<TtlCell<ACC>>
  implements AggregatingState<IN, OUT>, InternalMergingState {
  readonly #folding: Folding<IN, ACC, OUT>;
  readonly #shared: WeakSet<object>;

  /** Binds the state with its TTL and clock; `folding` is its reduce or aggregate function. */
  constructor(
    table: StateTable,
    ctx: KeyContext,
    ttl: TtlSettings,
    clock: () => number,
    folding: Folding<IN, ACC, OUT>,
  ) {
    super(table, ctx, ttl, clock);
    this.#folding = folding;
    this.#shared = table.shared;
  }

  /** The current entry's live cell, removing it when expired. */
  #live(now: number): TtlCell<ACC> | undefined {
    const m = this.current();
    const cell = m?.get(this.ctx.stateKey);
    if (cell === undefined) return undefined;
    if (isExpired(cell.t, now, this.ttlMs)) {
      this.deleteIn(m!);
      return undefined;
    }
    return cell;
  }

  get(): OUT | undefined {
    const now = this.clock();
    const cell = this.#live(now);
    if (cell === undefined) return undefined;
    if (this.onRead) {
      this.touch(); // the cell changes in place
      cell.t = now;
    }
    return result(this.#shared, this.#folding, cell.v);
  }

  /** Folds `value` in; returns whether the entry held a live accumulator before. */
  add(value: IN): boolean {
    checkAdded(this.name, value);
    const now = this.clock();
    this.touch(); // before owned() and the in-place change of the cell
    const cell = this.#live(now);
    const next = this.#folding.add(
      value,
      cell === undefined ? undefined : owned(this.#shared, cell.v),
    );
    checkFolded(this.name, "add", next);
    // Cells are never shared with a snapshot, so they may change in place.
    if (cell !== undefined) {
      cell.v = next;
      cell.t = now;
    } else {
      this.writable().set(this.ctx.stateKey, { v: next, t: now });
    }
    return cell !== undefined;
  }

  mergeNamespaces(target: string, sources: readonly string[]): void {
    const now = this.clock();
    this.mergeEntries(
      target,
      sources,
      (a, b) => {
        const merged = this.#folding.merge(owned(this.#shared, a.v), owned(this.#shared, b.v));
        checkFolded(this.name, "merge", merged);
        return { v: merged, t: now };
      },
      (cell) => isExpired(cell.t, now, this.ttlMs) ? undefined : cell,
    );
  }
}
