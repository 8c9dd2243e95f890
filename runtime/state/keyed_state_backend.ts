/**
 * The keyed state backend interface (Flink's `KeyedStateBackend` with its
 * `SnapshotStrategy`): what a keyed operator uses to read and write the
 * state of the current key, and what the subtask checkpointer uses to
 * snapshot and restore it. Implementations:
 *
 * - `HeapKeyedStateBackend` (`heap_keyed_backend.ts`): JS `Map`s per key
 *   group, copy-on-write snapshots;
 * - the embedded on-disk backend on `node:sqlite` (`sqlite/`), in RocksDB's
 *   role, for state larger than memory.
 *
 * Every implementation passes `backend_conformance.ts`.
 *
 * ## Snapshots
 *
 * {@linkcode KeyedStateBackend.snapshot} is the synchronous part of a
 * checkpoint (see `runtime/checkpoint/snapshot_contract.ts`). For a
 * savepoint, and for a full checkpoint, the asynchronous part writes the
 * canonical {@linkcode KeyedStateSnapshot} (kind `keyed`), which every
 * backend restores. An incremental checkpoint writes backend-specific shared
 * blobs (kind `keyed-incremental`) that only a backend of the same kind
 * restores.
 *
 * @module
 */

import type {
  AggregatingState,
  AggregatingStateDescriptor,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  ReducingState,
  ReducingStateDescriptor,
  ValueState,
  ValueStateDescriptor,
} from "../api/state.ts";
import type { Key, KeyGroupRange } from "./key_group.ts";
import type { InternalKvState, InternalMergingState } from "./internal_state.ts";
import type { SnapshotResult, SnapshotType, StateHandle } from "../checkpoint/snapshot_contract.ts";

/** Reads a blob a handle names (given by the checkpointer on restore). */
export type StateReader = (handle: StateHandle) => Promise<Uint8Array>;

/** Keyed state of one subtask of a keyed operator. Not thread-safe: one subtask owns it. */
export interface KeyedStateBackend {
  /** The key groups this backend owns. */
  readonly keyGroupRange: KeyGroupRange;
  /** The number of key groups in the job (the operator's max parallelism). */
  readonly maxParallelism: number;
  /** The key set by the last {@linkcode setCurrentKey}, or `undefined` before any. */
  readonly currentKey: Key | undefined;
  /** The key group of {@linkcode currentKey}, or -1 before any. */
  readonly currentKeyGroup: number;
  /**
   * Optional: the backend's own `Map`-usable identity of
   * {@linkcode currentKey} (a primitive, or a canonical object), equal for
   * equal keys and different for different keys as long as an entry of the
   * key is stored; `undefined` before any key or when the backend has none.
   * A wrapper keying its own maps by key (the changelog backend's dirty
   * sets) uses it instead of building an identity per write.
   */
  readonly currentKeyIdentity?: unknown;
  /**
   * Makes `key` the key every state object reads and writes until the next call.
   * @param knownKeyGroup the key's group when the caller already computed it.
   * @throws {RangeError} when the key's group is outside this backend's range.
   * @throws {TypeError} when `key` is not a {@linkcode Key}.
   */
  setCurrentKey(key: Key, knownKeyGroup?: number): void;
  /** Registers (or returns) a value state. @throws {Error} on a conflicting registration. */
  getValueState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T> & InternalKvState;
  /** Registers (or returns) a list state. @throws {Error} on a conflicting registration. */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T> & InternalMergingState;
  /** Registers (or returns) a map state. @throws {Error} on a conflicting registration. */
  getMapState<K, V>(descriptor: MapStateDescriptor<K, V>): MapState<K, V> & InternalKvState;
  /** Registers (or returns) a reducing state. @throws {Error} on a conflicting registration. */
  getReducingState<T>(
    descriptor: ReducingStateDescriptor<T>,
  ): ReducingState<T> & InternalMergingState;
  /** Registers (or returns) an aggregating state. @throws {Error} on a conflicting registration. */
  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): AggregatingState<IN, OUT> & InternalMergingState;
  /** Names of all registered or restored states. */
  stateNames(): string[];
  /** Keys with a live entry in `stateName` under `namespace`. @throws {Error} for an unknown state. */
  keys(stateName: string, namespace?: string): IterableIterator<Key>;
  /** Every (key, namespace) with a live entry in `stateName`. @throws {Error} for an unknown state. */
  keysAndNamespaces(stateName: string): IterableIterator<[Key, string]>;
  /** Keys with an entry in `stateName`'s default namespace (an upper bound with TTL). */
  numKeys(stateName: string): number;
  /** (state, key, namespace) entries over all states. */
  numEntries(): number;
  /**
   * The synchronous part of a snapshot: O(1) or O(changed entries), never a
   * copy of every entry where the backend can avoid it. The result's
   * `write` encodes and writes off the record path.
   * @param uid the operator uid, for the handles.
   */
  snapshot(checkpointId: number, type: SnapshotType, uid: string): SnapshotResult;
  /**
   * Loads this backend's key groups from the handles of one or more old
   * subtasks (any old parallelism): canonical `keyed` handles from any
   * backend, `keyed-incremental` ones from a backend of the same kind.
   * Call on a fresh backend, before processing.
   * @throws {Error} naming the handle when one is malformed, of another max
   *   parallelism, or of a kind this backend cannot read.
   */
  restore(handles: readonly StateHandle[], read: StateReader): Promise<void>;
  /** Releases resources (files, caches); the backend is unusable afterwards. */
  dispose(): Promise<void>;
}
