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
  /**
   * Adds one element with its timestamp (ms, or `undefined`) to state window `namespace`.
   * @returns whether the window held contents before: `true` only when the
   *   state says so (the heap backend's list, reducing and aggregating
   *   states do), `false` when it did not or cannot tell.
   */
  add(namespace: string, value: unknown, timestamp: number | undefined): boolean;
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

/**
 * The state a {@linkcode StateContents} keeps its windows in. Its `add` may
 * return whether the entry held a value before (the heap backend's states
 * do; see {@linkcode WindowContents.add}).
 */
type ContentsState<T> = { add(value: T): unknown; clear(): void } & InternalMergingState;

/** What every contents kind does the same way: one state, addressed by namespace. */
abstract class StateContents<T, S extends ContentsState<T>> implements WindowContents {
  readonly #state: S;

  constructor(state: S) {
    this.#state = state;
  }

  /** The state, set to `namespace`. */
  protected at(namespace: string): S {
    this.#state.setCurrentNamespace(namespace);
    return this.#state;
  }

  add(namespace: string, value: unknown, _timestamp: number | undefined): boolean {
    return this.at(namespace).add(value as T) === true;
  }

  abstract fire(
    namespace: string,
    window: Window,
    emit: (elements: readonly unknown[]) => void,
  ): void;

  clear(namespace: string): void {
    this.at(namespace).clear();
  }

  mergeNamespaces(target: string, sources: readonly string[]): void {
    this.#state.mergeNamespaces(target, sources);
  }
}

/** Every element, in list state; for `process` without an evictor. */
export class ListContents
  extends StateContents<unknown, ListState<unknown> & InternalMergingState> {
  fire(namespace: string, _window: Window, emit: (elements: readonly unknown[]) => void): void {
    const elements = this.at(namespace).get();
    if (elements.length > 0) emit(elements);
  }
}

/**
 * One incrementally folded value, in reducing or aggregating state; for
 * `reduce` and `aggregate` without an evictor.
 */
export class ValueContents extends StateContents<
  unknown,
  (ReducingState<unknown> | AggregatingState<unknown, unknown>) & InternalMergingState
> {
  fire(namespace: string, _window: Window, emit: (elements: readonly unknown[]) => void): void {
    const value = this.at(namespace).get();
    if (value !== undefined) emit([value]);
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
export class EvictingContents
  extends StateContents<StoredElement, ListState<StoredElement> & InternalMergingState> {
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
    super(options.state);
    this.#evictor = options.evictor;
    this.#fold = options.fold;
    this.#context = options.context;
  }

  override add(namespace: string, value: unknown, timestamp: number | undefined): boolean {
    const stored: StoredElement = [value, timestamp ?? null];
    return super.add(namespace, stored, timestamp);
  }

  fire(namespace: string, window: Window, emit: (elements: readonly unknown[]) => void): void {
    const stored = this.at(namespace).get();
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
    this.at(namespace).update(records.map((r): StoredElement => [r.value, r.timestamp ?? null]));
  }
}
