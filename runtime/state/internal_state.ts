/**
 * The internal side of keyed state: namespaces and merging (Flink's
 * `InternalKvState`, `InternalMergingState`). Runtime operators (windows)
 * use these; user functions see only the public interfaces of
 * `runtime/api/state.ts`.
 *
 * ## Namespaces
 *
 * Every keyed state entry lives under (key, namespace, state name). The
 * namespace is a string; the default one is {@linkcode VOID_NAMESPACE}
 * (`""`), which is what user functions read and write outside windows. A
 * window operator keeps each window's contents in the window's namespace
 * (for example `"1000:2000"` for the time window [1000, 2000)), so the same
 * state object serves every window of every key: it sets the key on the
 * backend (`setCurrentKey`) and the namespace on the state object
 * (`setCurrentNamespace`), then reads or writes.
 *
 * The namespace of a state object stays set until changed; it is per state
 * object, not per backend, as in Flink.
 *
 * The state objects of `HeapKeyedStateBackend` implement these interfaces;
 * its getters are typed so (`getListState(d): ListState<T> &
 * InternalMergingState`, and so on):
 *
 * @example
 * ```ts
 * import { HeapKeyedStateBackend } from "./heap_keyed_backend.ts";
 * import { KeyGroupRange } from "./key_group.ts";
 * import { ReducingStateDescriptor } from "../api/state.ts";
 *
 * const backend = new HeapKeyedStateBackend({
 *   keyGroupRange: new KeyGroupRange(0, 127),
 *   maxParallelism: 128,
 * });
 * const sums = backend.getReducingState(new ReducingStateDescriptor<number>("sum", (a, b) => a + b));
 * backend.setCurrentKey("sensor_1");
 * sums.setCurrentNamespace("0:1000");
 * sums.add(3);
 * sums.setCurrentNamespace("1000:2000");
 * sums.add(4);
 * sums.mergeNamespaces("0:2000", ["0:1000", "1000:2000"]); // a session window merge
 * sums.setCurrentNamespace("0:2000");
 * if (sums.get() !== 7) throw new Error("unreachable");
 * ```
 *
 * ## Merging
 *
 * Session windows merge: the state of several windows (namespaces) of one
 * key is combined into one target namespace. List state concatenates,
 * reducing state reduces, aggregating state merges accumulators with the
 * `AggregateFunction`'s `merge`. Value and map state cannot merge. As in
 * Flink, the sources' entries are combined in the order given, and the
 * result is then combined into the target's entry as `combine(target,
 * merged)` (for lists: the target's elements first).
 *
 * @module
 */

/** The namespace of state that is not scoped to a window (Flink's `VoidNamespace`). */
export const VOID_NAMESPACE = "";

/** A keyed state whose entries are scoped by namespace (Flink's `InternalKvState`). */
export interface InternalKvState {
  /**
   * Makes `namespace` the one this state object reads and writes, for the
   * backend's current key, until the next call.
   * @throws {TypeError} when `namespace` is not a string.
   */
  setCurrentNamespace(namespace: string): void;
}

/** A keyed state whose namespaces can be merged (Flink's `InternalMergingState`). */
export interface InternalMergingState extends InternalKvState {
  /**
   * For the backend's current key, folds the entries of every namespace of
   * `sources` into namespace `target` (concatenating lists, reducing
   * values, merging accumulators) and removes the sources' entries. A
   * source without an entry is skipped; `target` may be among `sources`.
   */
  mergeNamespaces(target: string, sources: readonly string[]): void;
}
