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
 * ## Merging
 *
 * Session windows merge: the state of several windows (namespaces) of one
 * key is combined into one target namespace. List state concatenates,
 * reducing state reduces, aggregating state merges accumulators with the
 * `AggregateFunction`'s `merge`. Value and map state cannot merge.
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
