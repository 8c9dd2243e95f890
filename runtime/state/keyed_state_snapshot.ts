/**
 * The snapshot format of keyed state (format version 2): what
 * `HeapKeyedStateBackend.snapshotCanonical()` writes and `restoreCanonical()` reads, grouped
 * by key group so that a restore at another parallelism takes exactly the
 * key groups it owns. The shapes are plain data (MessagePack-encodable), so
 * another backend can read and write the same format; this module also holds
 * the pure checks of a snapshot's header.
 *
 * ## Versions
 *
 * - **1**: value, list and map state of the default namespace.
 * - **2**: adds state namespaces (`KeyGroupEntries.namespaces`), the
 *   `reducing` and `aggregating` kinds and `ttlTimeCharacteristic`. A
 *   version 1 snapshot is a valid version 2 one without those fields, so
 *   restores read both.
 *
 * ## Invariants
 *
 * - A key group appears at most once per state, in ascending order, and
 *   only when it holds at least one entry in some namespace.
 * - The default namespace's entries are the group's own columns; every
 *   other namespace is non-empty and named by a non-empty string.
 *
 * @module
 */

import type { StateKind } from "../api/state.ts";
import type { Key } from "./key_group.ts";

/** Which clock a TTL is measured on (`StateTtlConfig.timeCharacteristic`). */
export type TtlTime = "ProcessingTime" | "EventTime";

/**
 * The entries of one state in one non-default namespace of one key group,
 * column-wise, as in {@linkcode KeyGroupEntries}.
 */
export interface NamespaceEntries {
  /** The namespace (for a window, the window's id); never `""`. */
  readonly namespace: string;
  /** The keys, original form. */
  readonly keys: readonly Key[];
  /** The state of each key in this namespace, as in the table of {@linkcode KeyGroupEntries}. */
  readonly values: readonly unknown[];
  /** Last-access times, present exactly when the state has a TTL. */
  readonly timestamps?: readonly unknown[];
}

/**
 * The entries of one state in one key group, column-wise: entry `i` of the
 * default namespace is `keys[i]` with `values[i]` (and `timestamps[i]` for a
 * TTL state); the entries of other namespaces are in `namespaces`, each with
 * the same columns. Columns rather than `[key, value]` pairs make the
 * synchronous capture allocate per key group instead of per key (about 6×
 * faster for a ValueState).
 *
 * | kind          | `values[i]`                      | `timestamps[i]` (TTL states only)   |
 * | ------------- | -------------------------------- | ----------------------------------- |
 * | `value`       | the value                        | last access, ms                     |
 * | `reducing`    | the reduced value                | last access, ms                     |
 * | `aggregating` | the accumulator                  | last access, ms                     |
 * | `list`        | the elements, `unknown[]`        | per element, `number[]` ms          |
 * | `map`         | `[userKeys[], userValues[]]`     | per user-map entry, `number[]` ms   |
 *
 * `keys[i]` is the original key (a primitive or a tuple), never its state
 * key. Timestamps are of the state's TTL clock (`ttlTimeCharacteristic`):
 * the backend's clock (`Date.now` by default) or, for event time, the
 * watermark; `-Infinity` for an event-time entry written before event time
 * started.
 *
 * | field        | version 1 | version 2                                              |
 * | ------------ | --------- | ------------------------------------------------------ |
 * | `keys`…      | all keys  | the default namespace's keys (may be empty)            |
 * | `namespaces` | absent    | the other namespaces with entries here, if any         |
 */
export interface KeyGroupEntries {
  /** The key group every key of `keys` belongs to. */
  readonly keyGroup: number;
  /** The keys of the default namespace, original form. */
  readonly keys: readonly Key[];
  /** The state of each key, as in the table above. */
  readonly values: readonly unknown[];
  /** Last-access times, present exactly when the state has a TTL. */
  readonly timestamps?: readonly unknown[];
  /** The non-default namespaces holding entries in this key group (version 2; absent when none). */
  readonly namespaces?: readonly NamespaceEntries[];
}

/** One state in a {@linkcode KeyedStateSnapshot}. */
export interface KeyedStateSnapshotState {
  /** The state's kind; a restore registers the name with the same kind only. */
  readonly kind: StateKind;
  /** Whether the state had a TTL, so entries carry `timestamps`. */
  readonly ttl: boolean;
  /**
   * The clock of the timestamps, when `ttl` (version 2); absent means
   * `"ProcessingTime"`. A restore into a state whose TTL uses the other
   * clock restarts every entry's lifetime at the restore.
   */
  readonly ttlTimeCharacteristic?: TtlTime;
  /**
   * One {@linkcode KeyGroupEntries} per key group holding at least one
   * entry (in any namespace), in ascending key-group order.
   */
  readonly keyGroups: readonly KeyGroupEntries[];
}

/**
 * A checkpoint of one `HeapKeyedStateBackend`: a plain object of
 * arrays, numbers, strings and the user's state values, so it is
 * MessagePack-encodable whenever the keys and values are.
 *
 * ```
 * { version: 2, maxParallelism: 128, keyGroupRange: [0, 63],
 *   states: {
 *     sum: { kind: "value", ttl: false, keyGroups: [
 *       { keyGroup: 3, keys: ["a", "c"], values: [4, 1] },
 *       { keyGroup: 17, keys: [["b", 1]], values: [2] } ] },
 *     "window-contents": { kind: "reducing", ttl: false, keyGroups: [
 *       { keyGroup: 3, keys: [], values: [], namespaces: [
 *         { namespace: "0:1000", keys: ["a", "c"], values: [7, 1] } ] } ] } } }
 * ```
 *
 * Version 2 added namespaces, the `reducing` and `aggregating` kinds and
 * `ttlTimeCharacteristic`; `snapshotCanonical()` writes version 2 and `restoreCanonical()`
 * reads versions 1 and 2.
 */
export interface KeyedStateSnapshot {
  /** Format version: `2` is written, `1` (no namespaces) is still restorable. */
  readonly version: 1 | 2;
  /** The max parallelism (number of key groups) the key groups refer to. */
  readonly maxParallelism: number;
  /** The snapshotting backend's key-group range, `[start, end]` inclusive. */
  readonly keyGroupRange: readonly [number, number];
  /** Every registered or restored state, by name. */
  readonly states: { readonly [name: string]: KeyedStateSnapshotState };
}

/** The format versions this module reads. */
export type SnapshotVersion = KeyedStateSnapshot["version"];

/** The state kinds each snapshot format version knows. */
const KINDS_OF_VERSION: { readonly [version in 1 | 2]: readonly StateKind[] } = {
  1: ["value", "list", "map"],
  2: ["value", "list", "map", "reducing", "aggregating"],
};

/**
 * Checks a snapshot's header before its states are read.
 *
 * @returns the snapshot's version.
 * @throws {Error} when the version is not 1 or 2, or the max parallelism
 * differs from `maxParallelism` (it must not change across restores).
 */
export function checkSnapshotHeader(
  snap: KeyedStateSnapshot,
  maxParallelism: number,
): SnapshotVersion {
  const version: unknown = snap.version;
  if (version !== 1 && version !== 2) {
    throw new Error(
      `Cannot restore keyed state snapshot: unsupported version (this backend reads 1 and 2), current value is ${
        JSON.stringify(version)
      }`,
    );
  }
  if (snap.maxParallelism !== maxParallelism) {
    throw new Error(
      `Cannot restore keyed state snapshot taken with max parallelism ${snap.maxParallelism} into a backend with max parallelism ${maxParallelism}: max parallelism must not change across restores`,
    );
  }
  return version;
}

/**
 * Checks that `state.kind` is a kind of snapshot format `version`.
 * @throws {Error} naming the state and the kind otherwise.
 */
export function checkStateKind(
  name: string,
  state: KeyedStateSnapshotState,
  version: SnapshotVersion,
): void {
  if (!KINDS_OF_VERSION[version].includes(state.kind)) {
    throw new Error(
      `Cannot restore keyed state '${name}': unknown kind for a version ${version} snapshot, current value is ${
        JSON.stringify(state.kind)
      }`,
    );
  }
}
