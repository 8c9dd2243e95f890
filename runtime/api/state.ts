/**
 * State primitives a user function reaches through its runtime context:
 * keyed state (Value, List, Map), scoped to the current key, and operator
 * state (List, UnionList), scoped to one parallel subtask.
 *
 * The model is Apache Flink's ("Working with State", Flink docs): a state is
 * declared by a descriptor whose `name` is unique within its operator and is
 * the state's identity across checkpoints and restores.
 *
 * Values are stored as given and snapshotted with MessagePack, so a state
 * value must be MessagePack-encodable (primitives, arrays, plain objects,
 * `Map`, `Set`, `Date`, `Uint8Array`, `bigint`). Treat a value read from state
 * as immutable: a checkpoint's asynchronous phase may still be writing it, so
 * change state only through `update`/`put`/`add` with a new value.
 *
 * @module
 */

/** Which kind of state a descriptor declares. */
export type StateKind = "value" | "list" | "map";

/**
 * Time-to-live for keyed state entries (Flink's `StateTtlConfig`).
 * An entry expires `ttlMs` after it was last written (or read, with
 * `updateType: "OnReadAndWrite"`); expired entries are never returned.
 */
export interface StateTtlConfig {
  /** Lifetime of an entry, in ms of processing time. Must be > 0. */
  readonly ttlMs: number;
  /** When the lifetime restarts. Default `"OnCreateAndWrite"`. */
  readonly updateType?: "OnCreateAndWrite" | "OnReadAndWrite";
}

/** Common shape of every state descriptor. */
export interface StateDescriptor<_T = unknown> {
  /** Which kind of state this declares. */
  readonly kind: StateKind;
  /** Name, unique within the operator; the state's identity across restores. */
  readonly name: string;
  /** Optional TTL (keyed state only). */
  readonly ttl?: StateTtlConfig;
}

function checkName(kind: string, name: string): void {
  if (typeof name !== "string" || name.length === 0) {
    throw new TypeError(
      `A ${kind} state descriptor needs a non-empty name: current value is ${JSON.stringify(name)}`,
    );
  }
}

/**
 * Declares a {@linkcode ValueState}: one value per key.
 *
 * @example
 * ```ts
 * import { ValueStateDescriptor } from "./state.ts";
 * const last = new ValueStateDescriptor<number>("last-temperature");
 * ```
 * @throws {TypeError} when `name` is empty.
 */
export class ValueStateDescriptor<T> implements StateDescriptor<T> {
  /** Always `"value"`. */
  readonly kind = "value" as const;
  /** The state's name. */
  readonly name: string;
  /** Returned by {@linkcode ValueState.value} when the key has no value. */
  readonly defaultValue: T | undefined;
  /** Optional TTL. */
  readonly ttl?: StateTtlConfig;
  /**
   * Declares the state.
   * @param name unique name within the operator.
   * @param options `defaultValue` and `ttl`.
   */
  constructor(name: string, options: { defaultValue?: T; ttl?: StateTtlConfig } = {}) {
    checkName("value", name);
    this.name = name;
    this.defaultValue = options.defaultValue;
    if (options.ttl) this.ttl = options.ttl;
  }
}

/** Declares a {@linkcode ListState}: a list per key, or a list per subtask as operator state. */
export class ListStateDescriptor<T> implements StateDescriptor<T> {
  /** Always `"list"`. */
  readonly kind = "list" as const;
  /** The state's name. */
  readonly name: string;
  /** Optional TTL (keyed state only). */
  readonly ttl?: StateTtlConfig;
  /**
   * Declares the state.
   * @param name unique name within the operator.
   * @param options `ttl`.
   * @throws {TypeError} when `name` is empty.
   */
  constructor(name: string, options: { ttl?: StateTtlConfig } = {}) {
    checkName("list", name);
    this.name = name;
    if (options.ttl) this.ttl = options.ttl;
  }
}

/** Declares a {@linkcode MapState}: a map per key. User-map keys must be strings, numbers or booleans. */
export class MapStateDescriptor<UK, UV> implements StateDescriptor<[UK, UV]> {
  /** Always `"map"`. */
  readonly kind = "map" as const;
  /** The state's name. */
  readonly name: string;
  /** Optional TTL. */
  readonly ttl?: StateTtlConfig;
  /**
   * Declares the state.
   * @param name unique name within the operator.
   * @param options `ttl`.
   * @throws {TypeError} when `name` is empty.
   */
  constructor(name: string, options: { ttl?: StateTtlConfig } = {}) {
    checkName("map", name);
    this.name = name;
    if (options.ttl) this.ttl = options.ttl;
  }
}

/** One value per key (Flink's `ValueState`). */
export interface ValueState<T> {
  /** The current key's value, or the descriptor's default when it has none. */
  value(): T | undefined;
  /** Replaces the current key's value. `undefined` clears it. */
  update(value: T | undefined): void;
  /** Removes the current key's value. */
  clear(): void;
}

/** A list per key, or per subtask as operator state (Flink's `ListState`). */
export interface ListState<T> {
  /** The elements, in insertion order; an empty array when there are none. Do not mutate it. */
  get(): readonly T[];
  /** Appends one element. */
  add(value: T): void;
  /** Appends several elements. */
  addAll(values: Iterable<T>): void;
  /** Replaces all elements. */
  update(values: Iterable<T>): void;
  /** Removes all elements. */
  clear(): void;
}

/** A map per key (Flink's `MapState`). */
export interface MapState<UK, UV> {
  /** The value under `key`, or `undefined`. */
  get(key: UK): UV | undefined;
  /** Sets the value under `key`. */
  put(key: UK, value: UV): void;
  /** Sets every entry of `entries`. */
  putAll(entries: Iterable<[UK, UV]>): void;
  /** Removes `key`. */
  remove(key: UK): void;
  /** Whether `key` has a value. */
  contains(key: UK): boolean;
  /** The entries (a snapshot copy; safe to iterate while changing the map). */
  entries(): [UK, UV][];
  /** The keys (a snapshot copy). */
  keys(): UK[];
  /** The values (a snapshot copy). */
  values(): UV[];
  /** Whether the map has no entries. */
  isEmpty(): boolean;
  /** Removes all entries. */
  clear(): void;
}

/**
 * Operator (non-keyed) state of one subtask (Flink's `OperatorStateStore`).
 *
 * On restore at another parallelism, a `getListState` list is split evenly
 * over the new subtasks, and a `getUnionListState` list is given whole to
 * every subtask.
 */
export interface OperatorStateStore {
  /**
   * The subtask's list state named by `descriptor`, redistributed evenly on rescale.
   * @throws {Error} when the same name was registered with the other mode.
   */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
  /**
   * The subtask's list state named by `descriptor`, given whole to every subtask on restore.
   * @throws {Error} when the same name was registered with the other mode.
   */
  getUnionListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
}
