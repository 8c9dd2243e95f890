/**
 * What a window operator keeps per (key, window), and how it hands it to
 * the window function when the window fires: the three shapes of Flink's
 * `WindowOperator` window state (`windowStateDescriptor`) and the list of
 * its `EvictingWindowOperator`.
 *
 * | contents                  | state (`"window-contents"`)       | the function gets                   |
 * | ------------------------- | --------------------------------- | ----------------------------------- |
 * | {@linkcode ListContents}  | `ListState` of the elements       | every element                       |
 * | {@linkcode ValueContents} | `ReducingState`/`AggregatingState`| `[reduction]` or `[getResult(acc)]` |
 * | {@linkcode EvictingContents} | `ListState` of `[element, timestamp]` | what the evictor keeps, folded by the reduce/aggregate function if any |
 *
 * ## Invariants
 *
 * - Every method applies to the namespace it is given (the window's *state
 *   window*) and the backend's current key; it sets that namespace on the
 *   state object itself, so user code running in between cannot redirect it.
 * - `fire` calls `emit` only for a window with contents (Flink skips empty
 *   windows: `contents == null`).
 * - After an evicting `fire`, the state holds exactly what the evictor kept
 *   (Flink's FLINK-4369 rewrite).
 *
 * @module
 */

import type { AggregateFunction, ReduceFunction } from "../../api/functions.ts";
import type { AggregatingState, ListState, ReducingState } from "../../api/state.ts";
import type { InternalMergingState } from "../../state/internal_state.ts";
import type { Evictor, EvictorContext, TimestampedValue } from "../../time/windows/evictor.ts";
import type { Window } from "../../time/windows/window.ts";

/** The contents of the current key's window (see the module docs). */
export interface WindowContents {
  /** Adds one element with its timestamp (ms, or `undefined`) to state window `namespace`. */
  add(namespace: string, value: unknown, timestamp: number | undefined): void;
  /**
   * Hands the contents of state window `namespace` to `emit` (nothing when empty).
   * @param namespace the state window's namespace.
   * @param window the window firing, for the evictor.
   * @param emit runs the window function over the elements.
   */
  fire(namespace: string, window: Window, emit: (elements: readonly unknown[]) => void): void;
  /** Drops the contents of state window `namespace` (purge, or cleanup). */
  clear(namespace: string): void;
  /** Folds the contents of `sources` into `target` (session merges). */
  mergeNamespaces(target: string, sources: readonly string[]): void;
}

/** Every element, in list state; for `process` without an evictor. */
export class ListContents implements WindowContents {
  readonly #state: ListState<unknown> & InternalMergingState;

  /** Wraps the operator's `"window-contents"` list state. */
  constructor(state: ListState<unknown> & InternalMergingState) {
    this.#state = state;
  }

  add(namespace: string, value: unknown, _timestamp: number | undefined): void {
    this.#state.setCurrentNamespace(namespace);
    this.#state.add(value);
  }

  fire(namespace: string, _window: Window, emit: (elements: readonly unknown[]) => void): void {
    this.#state.setCurrentNamespace(namespace);
    const elements = this.#state.get();
    if (elements.length > 0) emit(elements);
  }

  clear(namespace: string): void {
    this.#state.setCurrentNamespace(namespace);
    this.#state.clear();
  }

  mergeNamespaces(target: string, sources: readonly string[]): void {
    this.#state.mergeNamespaces(target, sources);
  }
}

/**
 * One incrementally folded value, in reducing or aggregating state; for
 * `reduce` and `aggregate` without an evictor.
 */
export class ValueContents implements WindowContents {
  readonly #state:
    & (ReducingState<unknown> | AggregatingState<unknown, unknown>)
    & InternalMergingState;

  /** Wraps the operator's `"window-contents"` reducing or aggregating state. */
  constructor(
    state: (ReducingState<unknown> | AggregatingState<unknown, unknown>) & InternalMergingState,
  ) {
    this.#state = state;
  }

  add(namespace: string, value: unknown, _timestamp: number | undefined): void {
    this.#state.setCurrentNamespace(namespace);
    this.#state.add(value);
  }

  fire(namespace: string, _window: Window, emit: (elements: readonly unknown[]) => void): void {
    this.#state.setCurrentNamespace(namespace);
    const value = this.#state.get();
    if (value !== undefined) emit([value]);
  }

  clear(namespace: string): void {
    this.#state.setCurrentNamespace(namespace);
    this.#state.clear();
  }

  mergeNamespaces(target: string, sources: readonly string[]): void {
    this.#state.mergeNamespaces(target, sources);
  }
}

/** How an evicting window folds the kept elements before the function. */
export type EvictingFold =
  | { readonly kind: "none" }
  | { readonly kind: "reduce"; readonly reduce: (a: unknown, b: unknown) => unknown }
  | {
    readonly kind: "aggregate";
    readonly aggregate: AggregateFunction<unknown, unknown, unknown>;
  };

/** A stored element of an evicting window: `[value, timestamp]` (`null`: none, MessagePack-safe). */
type StoredElement = readonly [unknown, number | null];

/** The reduce call of a `ReduceFunction`. */
export function reduceCall(fn: ReduceFunction<unknown>): (a: unknown, b: unknown) => unknown {
  return typeof fn === "function" ? fn : (a, b) => fn.reduce(a, b);
}

/**
 * Every element with its timestamp, in list state, evicted at each firing
 * (Flink's `EvictingWindowOperator`). A `reduce` or `aggregate` runs over
 * the kept elements at firing time.
 *
 * Differs from Flink in one edge: a `reduce` whose evictor removed every
 * element emits nothing (Flink hands `null` on).
 */
export class EvictingContents implements WindowContents {
  readonly #state: ListState<StoredElement> & InternalMergingState;
  readonly #evictor: Evictor<unknown, Window>;
  readonly #fold: EvictingFold;
  readonly #context: EvictorContext;

  /**
   * @param options the `"window-contents"` list state, the evictor, the
   *   fold of `reduce`/`aggregate` (or none for `process`) and the time
   *   the evictor sees.
   */
  constructor(options: {
    state: ListState<StoredElement> & InternalMergingState;
    evictor: Evictor<unknown, Window>;
    fold: EvictingFold;
    context: EvictorContext;
  }) {
    this.#state = options.state;
    this.#evictor = options.evictor;
    this.#fold = options.fold;
    this.#context = options.context;
  }

  add(namespace: string, value: unknown, timestamp: number | undefined): void {
    this.#state.setCurrentNamespace(namespace);
    this.#state.add([value, timestamp ?? null]);
  }

  fire(namespace: string, window: Window, emit: (elements: readonly unknown[]) => void): void {
    this.#state.setCurrentNamespace(namespace);
    const stored = this.#state.get();
    if (stored.length === 0) return;
    const records: TimestampedValue<unknown>[] = stored.map(([value, timestamp]) => ({
      value,
      timestamp: timestamp ?? undefined,
    }));
    this.#evictor.evictBefore(records, window, this.#context);
    const values = records.map((r) => r.value);
    const fold = this.#fold;
    switch (fold.kind) {
      case "none":
        emit(values);
        break;
      case "reduce":
        if (values.length > 0) emit([values.reduce((a, b) => fold.reduce(a, b))]);
        break;
      case "aggregate": {
        const agg = fold.aggregate;
        let acc = agg.createAccumulator();
        for (const v of values) acc = agg.add(v, acc);
        emit([agg.getResult(acc)]);
        break;
      }
    }
    this.#evictor.evictAfter(records, window, this.#context);
    this.#state.setCurrentNamespace(namespace);
    this.#state.update(records.map((r): StoredElement => [r.value, r.timestamp ?? null]));
  }

  clear(namespace: string): void {
    this.#state.setCurrentNamespace(namespace);
    this.#state.clear();
  }

  mergeNamespaces(target: string, sources: readonly string[]): void {
    this.#state.mergeNamespaces(target, sources);
  }
}
