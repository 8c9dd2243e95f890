/**
 * Internal: the fixtures of `backend_conformance.ts`: an in-memory blob
 * store with a {@linkcode StateWriter} per subtask (what the subtask
 * checkpointer gives a participant), the backend factory's options and
 * helpers that snapshot, write and restore backends. Test support only; not
 * part of the public API.
 *
 * @module
 */

import type {
  SnapshotResult,
  SnapshotType,
  StateHandle,
  StateHandleKind,
  StateWriter,
} from "../checkpoint/snapshot_contract.ts";
import type { KeyedStateBackend, StateReader } from "./keyed_state_backend.ts";
import { computeKeyGroupRangeForOperatorIndex, type Key, KeyGroupRange } from "./key_group.ts";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "../api/state.ts";
import {
  type InternalKvState,
  type InternalMergingState,
  VOID_NAMESPACE,
} from "./internal_state.ts";
import type {
  AggregatingState,
  ListState,
  MapState,
  ReducingState,
  ValueState,
} from "../api/state.ts";

/** What the suite passes to a backend factory. */
export interface KeyedStateBackendFactoryOptions {
  /** The key groups the backend owns. */
  readonly keyGroupRange: KeyGroupRange;
  /** The number of key groups. */
  readonly maxParallelism: number;
  /** Processing-time clock for TTL, ms (a fake clock the test moves). */
  readonly clock: () => number;
  /** Event-time clock for event-time TTL, ms: the test's watermark, `-Infinity` before the first. */
  readonly eventTimeClock: () => number;
}

/**
 * Makes a fresh, empty backend for one test; the suite disposes every
 * backend it made when the test ends.
 */
export type KeyedStateBackendFactory = (
  options: KeyedStateBackendFactoryOptions,
) => KeyedStateBackend | Promise<KeyedStateBackend>;

/** Blobs of every writer of one test, by path (the checkpoint storage's role). */
export class MemoryBlobStore {
  readonly #blobs = new Map<string, Uint8Array>();
  #subtasks = 0;

  /** Paths stored, sorted. */
  paths(): string[] {
    return [...this.#blobs.keys()].sort();
  }

  /** Reads a handle's blob. @throws {Error} naming the path when absent. */
  readonly read: StateReader = (handle) => {
    const bytes = this.#blobs.get(handle.path);
    if (bytes === undefined) {
      return Promise.reject(new Error(`No blob stored at '${handle.path}'`));
    }
    return Promise.resolve(bytes.slice());
  };

  /** A writer for one subtask's snapshot (each writer's names get a unique subtask prefix). */
  writer(checkpointId: number, type: SnapshotType): MemoryStateWriter {
    return new MemoryStateWriter(this.#blobs, checkpointId, type, `sub-${this.#subtasks++}-`);
  }

  /** Replaces a blob's bytes (a bad disk). */
  corrupt(path: string, bytes: Uint8Array): void {
    this.#blobs.set(path, bytes);
  }
}

/** A {@linkcode StateWriter} into a {@linkcode MemoryBlobStore}; refuses a name written twice. */
export class MemoryStateWriter implements StateWriter {
  /** Set by a test to abort the checkpoint. */
  cancelled = false;
  readonly #blobs: Map<string, Uint8Array>;
  readonly #prefix: string;

  /** A writer for checkpoint `checkpointId`; `prefix` stands for the subtask and attempt. */
  constructor(
    blobs: Map<string, Uint8Array>,
    readonly checkpointId: number,
    readonly type: SnapshotType,
    prefix: string,
  ) {
    this.#blobs = blobs;
    this.#prefix = prefix;
  }

  writePrivate(
    name: string,
    bytes: Uint8Array,
    kind: StateHandleKind,
    uid: string,
    keyGroupRange?: readonly [number, number],
  ): Promise<StateHandle> {
    return this.#write(`chk-${this.checkpointId}/${this.#prefix}${name}`, bytes, {
      kind,
      uid,
      shared: false,
      keyGroupRange,
    });
  }

  writeShared(
    name: string,
    bytes: Uint8Array,
    kind: StateHandleKind,
    uid: string,
    keyGroupRange?: readonly [number, number],
  ): Promise<StateHandle> {
    if (this.type === "savepoint") {
      return Promise.reject(new Error(`A savepoint writes no shared blob: '${name}'`));
    }
    return this.#write(`shared/${this.#prefix}${name}`, bytes, {
      kind,
      uid,
      shared: true,
      keyGroupRange,
    });
  }

  #write(
    path: string,
    bytes: Uint8Array,
    meta: {
      kind: StateHandleKind;
      uid: string;
      shared: boolean;
      keyGroupRange: readonly [number, number] | undefined;
    },
  ): Promise<StateHandle> {
    if (!(bytes instanceof Uint8Array)) {
      return Promise.reject(new TypeError(`Blob '${path}' must be a Uint8Array`));
    }
    if (this.#blobs.has(path)) {
      return Promise.reject(new Error(`Blob '${path}' written twice`));
    }
    this.#blobs.set(path, bytes.slice());
    const handle: StateHandle = meta.keyGroupRange === undefined
      ? { path, bytes: bytes.length, kind: meta.kind, shared: meta.shared, uid: meta.uid }
      : {
        path,
        bytes: bytes.length,
        kind: meta.kind,
        shared: meta.shared,
        uid: meta.uid,
        keyGroupRange: [meta.keyGroupRange[0], meta.keyGroupRange[1]],
      };
    return Promise.resolve(handle);
  }
}

/** A settable clock: `now` ms. */
export class FakeClock {
  /** The time the clock returns, ms. */
  now: number;
  /** A clock at `start` ms. */
  constructor(start: number) {
    this.now = start;
  }
  /** The clock as a function. */
  readonly read = (): number => this.now;
}

/** The key-group ranges of `parallelism` subtasks over `maxParallelism` key groups. */
export function rangesOf(maxParallelism: number, parallelism: number): KeyGroupRange[] {
  return Array.from(
    { length: parallelism },
    (_, i) => computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, i),
  );
}

/** Writes a snapshot result with a fresh writer of `store`. */
export function writeSnapshot(
  store: MemoryBlobStore,
  result: SnapshotResult,
  checkpointId: number,
  type: SnapshotType,
): Promise<StateHandle[]> {
  return result.write(store.writer(checkpointId, type));
}

/** What each test of the suite gets. */
export interface ConformanceContext {
  /** The processing-time clock every backend of the test reads, ms; starts at 1000. */
  readonly clock: FakeClock;
  /** The watermark every backend of the test reads as event time, ms; starts at `-Infinity`. */
  readonly watermark: FakeClock;
  /** Where the test's snapshots are written. */
  readonly store: MemoryBlobStore;
  /** A fresh backend of the factory (default: all 128 key groups of max parallelism 128), disposed at the test's end. */
  make(range?: KeyGroupRange, maxParallelism?: number): Promise<KeyedStateBackend>;
  /** Snapshots `backend`, writes it into the store and returns the handles. */
  snapshotHandles(
    backend: KeyedStateBackend,
    checkpointId: number,
    type?: SnapshotType,
  ): Promise<StateHandle[]>;
  /** A fresh backend of `range` restored from `handles`. */
  restored(handles: readonly StateHandle[], range?: KeyGroupRange): Promise<KeyedStateBackend>;
}

/** The max parallelism of the suite's backends. */
export const MAX_PARALLELISM = 128;
const ALL = new KeyGroupRange(0, MAX_PARALLELISM - 1);
export const UID = "conformance-op";

/** A reducing function that sums. */
const sum = (a: number, b: number): number => a + b;

/** An aggregate function that changes its accumulator in place, as user functions may. */
export const MUTATING_SUM = {
  createAccumulator: (): { total: number } => ({ total: 0 }),
  add(value: number, acc: { total: number }): { total: number } {
    acc.total += value;
    return acc;
  },
  getResult: (acc: { total: number }): number => acc.total,
  merge(a: { total: number }, b: { total: number }): { total: number } {
    a.total += b.total;
    return a;
  },
};

/** Runs `fn` with a fresh context; disposes every backend it made. */
export async function withContext(
  factory: KeyedStateBackendFactory,
  fn: (c: ConformanceContext) => Promise<void>,
): Promise<void> {
  const made: KeyedStateBackend[] = [];
  const clock = new FakeClock(1000);
  const watermark = new FakeClock(-Infinity);
  const store = new MemoryBlobStore();
  const make = async (range = ALL, maxParallelism = MAX_PARALLELISM) => {
    const backend = await factory({
      keyGroupRange: range,
      maxParallelism,
      clock: clock.read,
      eventTimeClock: watermark.read,
    });
    made.push(backend);
    return backend;
  };
  const c: ConformanceContext = {
    clock,
    watermark,
    store,
    make,
    snapshotHandles: (backend, checkpointId, type = "checkpoint") =>
      writeSnapshot(store, backend.snapshot(checkpointId, type, UID), checkpointId, type),
    async restored(handles, range = ALL) {
      const backend = await make(range);
      await backend.restore(handles, store.read);
      return backend;
    },
  };
  try {
    await fn(c);
  } finally {
    for (const backend of made) await backend.dispose();
  }
}

/** Registers one test of the suite. */
export type RegisterTest = (what: string, fn: (c: ConformanceContext) => Promise<void>) => void;

/** The suite's five states, registered on `backend` (no TTL). */
export function allStates(backend: KeyedStateBackend): {
  value: ValueState<number> & InternalKvState;
  list: ListState<number> & InternalMergingState;
  map: MapState<string, number> & InternalKvState;
  reducing: ReducingState<number> & InternalMergingState;
  aggregating: AggregatingState<number, number> & InternalMergingState;
} {
  return {
    value: backend.getValueState(new ValueStateDescriptor<number>("value")),
    list: backend.getListState(new ListStateDescriptor<number>("list")),
    map: backend.getMapState(new MapStateDescriptor<string, number>("map")),
    reducing: backend.getReducingState(new ReducingStateDescriptor<number>("reducing", sum)),
    aggregating: backend.getAggregatingState(
      new AggregatingStateDescriptor("aggregating", MUTATING_SUM),
    ),
  };
}

/**
 * What every state of {@linkcode allStates} holds for `keys` in
 * `namespaces`, as `"<state> <key> <namespace>" → value` (lists as arrays,
 * maps as sorted entry arrays), leaving out empty entries. Reads only.
 */
export function dump(
  backend: KeyedStateBackend,
  keys: readonly Key[],
  namespaces: readonly string[] = [VOID_NAMESPACE],
): Record<string, unknown> {
  const s = allStates(backend);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    backend.setCurrentKey(key);
    for (const ns of namespaces) {
      for (const state of Object.values(s)) state.setCurrentNamespace(ns);
      const at = (state: string) => `${state} ${JSON.stringify(key)} ${JSON.stringify(ns)}`;
      const v = s.value.value();
      if (v !== undefined) out[at("value")] = v;
      const l = s.list.get();
      if (l.length > 0) out[at("list")] = [...l];
      const m = s.map.entries().sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
      if (m.length > 0) out[at("map")] = m;
      const r = s.reducing.get();
      if (r !== undefined) out[at("reducing")] = r;
      const a = s.aggregating.get();
      if (a !== undefined) out[at("aggregating")] = a;
    }
  }
  for (const state of Object.values(s)) state.setCurrentNamespace(VOID_NAMESPACE);
  return out;
}

/** Writes `i`-dependent content into every state of {@linkcode allStates} for each key, in `namespace`. */
export function populate(
  backend: KeyedStateBackend,
  keys: readonly Key[],
  namespace: string = VOID_NAMESPACE,
): void {
  const s = allStates(backend);
  for (const state of Object.values(s)) state.setCurrentNamespace(namespace);
  keys.forEach((key, i) => {
    backend.setCurrentKey(key);
    s.value.update(i);
    s.list.add(i);
    s.list.add(i + 1);
    s.map.put(`u${i % 3}`, i);
    s.map.put("x", -i - 1);
    s.reducing.add(i);
    s.reducing.add(1);
    s.aggregating.add(i);
    s.aggregating.add(2);
  });
  for (const state of Object.values(s)) state.setCurrentNamespace(VOID_NAMESPACE);
}

/** `n` keys, strings and tuples mixed. */
export function someKeys(n: number, prefix = "k"): Key[] {
  return Array.from({ length: n }, (_, i) => i % 3 === 2 ? [prefix, i] : `${prefix}${i}`);
}
