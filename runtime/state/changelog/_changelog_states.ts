/**
 * Internal: the state objects of a {@linkcode ChangelogKeyedStateBackend}
 * (FLIP-158's `ChangelogValueState`, `ChangelogListState`, ...). Each wraps
 * the inner backend's state object: reads pass through, and every write is
 * applied to the inner state first (so its checks throw before anything is
 * recorded) and then recorded in the state's {@linkcode ChangeRecorder}.
 *
 * A reducing state records its reduced value after each write (read back
 * with `get()`); an aggregating state records its accumulator, which the
 * wrapper sees through the {@linkcode RecordingAggregateFunction} it gives
 * the inner backend instead of the user's function. A namespace merge
 * records the merged target entry and a clear of every other source.
 *
 * @module
 */

import type {
  AggregatingState,
  ListState,
  MapState,
  ReducingState,
  ValueState,
} from "../../api/state.ts";
import type { AggregateFunction } from "../../api/functions.ts";
import type { InternalKvState, InternalMergingState } from "../internal_state.ts";
import type { ChangeRecorder } from "./_change_recorder.ts";

/** What every wrapper keeps: the inner state, the recorder and the current namespace. */
abstract class ChangelogState<S extends InternalKvState> implements InternalKvState {
  protected readonly inner: S;
  protected readonly log: ChangeRecorder;
  protected ns = "";

  constructor(inner: S, log: ChangeRecorder) {
    this.inner = inner;
    this.log = log;
  }

  setCurrentNamespace(namespace: string): void {
    this.inner.setCurrentNamespace(namespace);
    this.ns = namespace;
  }

  /** Runs `read` with the inner state in `namespace`, then back in the current one. */
  protected readIn<T>(namespace: string, read: () => T): T {
    if (namespace === this.ns) return read();
    this.inner.setCurrentNamespace(namespace);
    try {
      return read();
    } finally {
      this.inner.setCurrentNamespace(this.ns);
    }
  }

  /** Records a clear of every source other than `target`. */
  protected clearSources(target: string, sources: readonly string[]): void {
    for (const source of sources) if (source !== target) this.log.setValue(source, undefined);
  }
}

/** A value state that records its updates. */
export class ChangelogValueState<T> extends ChangelogState<ValueState<T> & InternalKvState>
  implements ValueState<T> {
  value(): T | undefined {
    return this.inner.value();
  }
  update(value: T | undefined): void {
    this.inner.update(value);
    this.log.setValue(this.ns, value);
  }
  clear(): void {
    this.inner.clear();
    this.log.setValue(this.ns, undefined);
  }
}

/** A list state that records resets and appended elements. */
export class ChangelogListState<T> extends ChangelogState<ListState<T> & InternalMergingState>
  implements ListState<T>, InternalMergingState {
  get(): readonly T[] {
    return this.inner.get();
  }
  add(value: T): void {
    this.inner.add(value);
    this.log.append(this.ns, value);
  }
  addAll(values: Iterable<T>): void {
    const items = [...values];
    this.inner.addAll(items);
    this.log.appendAll(this.ns, items);
  }
  update(values: Iterable<T>): void {
    const items: unknown[] = [...values];
    this.inner.update(items as T[]);
    this.log.resetList(this.ns, items);
  }
  clear(): void {
    this.inner.clear();
    this.log.resetList(this.ns, []);
  }
  mergeNamespaces(target: string, sources: readonly string[]): void {
    this.inner.mergeNamespaces(target, sources);
    for (const source of sources) if (source !== target) this.log.resetList(source, []);
    this.log.resetList(target, [...this.readIn(target, () => this.inner.get())]);
  }
}

/** A map state that records puts, removes and clears per user key. */
export class ChangelogMapState<UK, UV> extends ChangelogState<MapState<UK, UV> & InternalKvState>
  implements MapState<UK, UV> {
  get(key: UK): UV | undefined {
    return this.inner.get(key);
  }
  put(key: UK, value: UV): void {
    this.inner.put(key, value);
    this.log.put(this.ns, key, value);
  }
  putAll(entries: Iterable<[UK, UV]>): void {
    const all = [...entries];
    this.inner.putAll(all);
    for (const [k, v] of all) this.log.put(this.ns, k, v);
  }
  remove(key: UK): void {
    this.inner.remove(key);
    this.log.remove(this.ns, key);
  }
  contains(key: UK): boolean {
    return this.inner.contains(key);
  }
  entries(): [UK, UV][] {
    return this.inner.entries();
  }
  keys(): UK[] {
    return this.inner.keys();
  }
  values(): UV[] {
    return this.inner.values();
  }
  isEmpty(): boolean {
    return this.inner.isEmpty();
  }
  clear(): void {
    this.inner.clear();
    this.log.clearMap(this.ns);
  }
}

/** A reducing state that records its reduced value after each write. */
export class ChangelogReducingState<T>
  extends ChangelogState<ReducingState<T> & InternalMergingState>
  implements ReducingState<T>, InternalMergingState {
  get(): T | undefined {
    return this.inner.get();
  }
  add(value: T): void {
    this.inner.add(value);
    this.log.setValue(this.ns, this.inner.get());
  }
  clear(): void {
    this.inner.clear();
    this.log.setValue(this.ns, undefined);
  }
  mergeNamespaces(target: string, sources: readonly string[]): void {
    this.inner.mergeNamespaces(target, sources);
    this.clearSources(target, sources);
    this.log.setValue(target, this.readIn(target, () => this.inner.get()));
  }
}

/** Passed to `add` to read an accumulator without changing it (see {@linkcode RecordingAggregateFunction}). */
const PROBE: unique symbol = Symbol("probe");

/**
 * The aggregate function an aggregating state is registered with in the
 * inner backend: the user's, remembering the last accumulator `add`
 * returned, and answering an `add` of the probe by returning its
 * accumulator unchanged, so the wrapper can read an accumulator the state
 * API only shows through `getResult`.
 */
export class RecordingAggregateFunction<IN, ACC, OUT> implements AggregateFunction<IN, ACC, OUT> {
  readonly #user: AggregateFunction<IN, ACC, OUT>;
  /** The accumulator the last `add` returned. */
  last: ACC | undefined = undefined;
  /** Whether `createAccumulator` ran since the last reset. */
  created = false;

  /** Wraps the user's function. */
  constructor(user: AggregateFunction<IN, ACC, OUT>) {
    this.#user = user;
  }
  createAccumulator(): ACC {
    this.created = true;
    return this.#user.createAccumulator();
  }
  add(value: IN, accumulator: ACC): ACC {
    if ((value as unknown) === PROBE) return this.last = accumulator;
    return this.last = this.#user.add(value, accumulator);
  }
  getResult(accumulator: ACC): OUT {
    return this.#user.getResult(accumulator);
  }
  merge(a: ACC, b: ACC): ACC {
    return this.#user.merge(a, b);
  }
}

/** An aggregating state that records its accumulator after each write. */
export class ChangelogAggregatingState<IN, ACC, OUT>
  extends ChangelogState<AggregatingState<IN, OUT> & InternalMergingState>
  implements AggregatingState<IN, OUT>, InternalMergingState {
  readonly #fn: RecordingAggregateFunction<IN, ACC, OUT>;

  constructor(
    inner: AggregatingState<IN, OUT> & InternalMergingState,
    log: ChangeRecorder,
    fn: RecordingAggregateFunction<IN, ACC, OUT>,
  ) {
    super(inner, log);
    this.#fn = fn;
  }
  get(): OUT | undefined {
    return this.inner.get();
  }
  add(value: IN): void {
    this.inner.add(value);
    this.log.setValue(this.ns, this.#fn.last);
  }
  clear(): void {
    this.inner.clear();
    this.log.setValue(this.ns, undefined);
  }
  mergeNamespaces(target: string, sources: readonly string[]): void {
    this.inner.mergeNamespaces(target, sources);
    this.clearSources(target, sources);
    // Read the target's accumulator by probing it; a probe that had to create one found none.
    this.readIn(target, () => {
      this.#fn.created = false;
      this.inner.add(PROBE as unknown as IN);
      if (this.#fn.created) {
        this.inner.clear();
        this.log.setValue(target, undefined);
      } else {
        this.log.setValue(target, this.#fn.last);
      }
    });
  }
}
