/**
 * State primitives a user function reaches through its runtime context:
 * keyed state (Value, List, Map, Reducing, Aggregating), scoped to the
 * current key, and operator state (List, UnionList), scoped to one parallel
 * subtask.
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
 * The one exception is the value of a {@linkcode ReducingState} and the
 * accumulator of an {@linkcode AggregatingState}: their `ReduceFunction` and
 * `AggregateFunction` may change the accumulated value in place and return
 * it, as Flink users write them. The state copies (`structuredClone`) a
 * value that a checkpoint still shares before handing it to the function
 * again, as Flink's copy-on-write heap state does. Such values must
 * therefore be plain data: prototypes are not kept.
 *
 * @module
 */

import type { AggregateFunction, ReduceFunction } from "./functions.ts";

/** Which kind of state a descriptor declares. */
export type StateKind = "value" | "list" | "map" | "reducing" | "aggregating";

/**
 * Time-to-live for keyed state entries (Flink's `StateTtlConfig`).
 * An entry expires `ttlMs` after it was last written (or read, with
 * `updateType: "OnReadAndWrite"`); expired entries are never returned.
 *
 * ## Event time (beyond Flink)
 *
 * Flink's TTL only knows processing time. With `timeCharacteristic:
 * "EventTime"` the lifetime is measured in event time instead, on the
 * operator's current watermark: an entry's last access is the watermark at
 * that access, and it expires once the watermark reaches last access +
 * `ttlMs`. Before the first watermark event time has not started: nothing
 * expires, and an entry accessed then counts as accessed when event time
 * starts (at the first watermark the state sees). A job replaying old data
 * thus keeps state for `ttlMs` of the data's time, however fast it replays,
 * and the decision does not depend on the wall clock.
 *
 * @example
 * ```ts
 * import { ValueStateDescriptor } from "./state.ts";
 * // Forget a sensor that sent nothing for one hour of event time.
 * const last = new ValueStateDescriptor<number>("last-temperature", {
 *   ttl: { ttlMs: 3_600_000, timeCharacteristic: "EventTime" },
 * });
 * ```
 */
export interface StateTtlConfig {
  /** Lifetime of an entry, in ms of the chosen time. Must be > 0. */
  readonly ttlMs: number;
  /** When the lifetime restarts. Default `"OnCreateAndWrite"`. */
  readonly updateType?: "OnCreateAndWrite" | "OnReadAndWrite";
  /**
   * Which time the lifetime is measured in: `"ProcessingTime"` (the
   * default, the job's clock, as Flink) or `"EventTime"` (the operator's
   * watermark; see above).
   */
  readonly timeCharacteristic?: "ProcessingTime" | "EventTime";
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

/** A value for an error message: JSON where possible. */
function describe(value: unknown): string {
  if (typeof value === "function") return `function ${value.name || "(anonymous)"}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
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

/**
 * Declares a {@linkcode ReducingState}: per key, one value that every added
 * value is folded into with `reduceFunction` (Flink's
 * `ReducingStateDescriptor`).
 *
 * @example
 * ```ts
 * import { ReducingStateDescriptor } from "./state.ts";
 * const highest = new ReducingStateDescriptor<number>("highest", (a, b) => Math.max(a, b));
 * ```
 */
export class ReducingStateDescriptor<T> implements StateDescriptor<T> {
  /** Always `"reducing"`. */
  readonly kind = "reducing" as const;
  /** The state's name. */
  readonly name: string;
  /** Folds an added value into the current one: `reduce(accumulated, added)`. */
  readonly reduceFunction: ReduceFunction<T>;
  /** Optional TTL. */
  readonly ttl?: StateTtlConfig;
  /**
   * Declares the state.
   * @param name unique name within the operator.
   * @param reduceFunction a function `(accumulated, value) => reduced`, or an
   *   object with such a `reduce` method.
   * @param options `ttl`.
   * @throws {TypeError} when `name` is empty or `reduceFunction` is neither.
   */
  constructor(
    name: string,
    reduceFunction: ReduceFunction<T>,
    options: { ttl?: StateTtlConfig } = {},
  ) {
    checkName("reducing", name);
    if (
      typeof reduceFunction !== "function" &&
      typeof (reduceFunction as { reduce?: unknown } | null)?.reduce !== "function"
    ) {
      throw new TypeError(
        `Reducing state '${name}' needs a reduce function or an object with a reduce() method: current value is ${
          describe(reduceFunction)
        }`,
      );
    }
    this.name = name;
    this.reduceFunction = reduceFunction;
    if (options.ttl) this.ttl = options.ttl;
  }
}

/** The methods every `AggregateFunction` must have. */
const AGGREGATE_METHODS = ["createAccumulator", "add", "getResult", "merge"] as const;

/**
 * Declares an {@linkcode AggregatingState}: per key, one accumulator of type
 * `ACC` that every added `IN` value is folded into, read as an `OUT` (Flink's
 * `AggregatingStateDescriptor`).
 *
 * @example
 * ```ts
 * import { AggregatingStateDescriptor } from "./state.ts";
 * const average = new AggregatingStateDescriptor("average", {
 *   createAccumulator: () => ({ sum: 0, count: 0 }),
 *   add: (x: number, acc: { sum: number; count: number }) => ({ sum: acc.sum + x, count: acc.count + 1 }),
 *   getResult: (acc) => acc.sum / acc.count,
 *   merge: (a, b) => ({ sum: a.sum + b.sum, count: a.count + b.count }),
 * });
 * ```
 */
export class AggregatingStateDescriptor<IN, ACC, OUT> implements StateDescriptor<ACC> {
  /** Always `"aggregating"`. */
  readonly kind = "aggregating" as const;
  /** The state's name. */
  readonly name: string;
  /** Creates, folds into, reads and merges the accumulators. */
  readonly aggregateFunction: AggregateFunction<IN, ACC, OUT>;
  /** Optional TTL. */
  readonly ttl?: StateTtlConfig;
  /**
   * Declares the state.
   * @param name unique name within the operator.
   * @param aggregateFunction an object with `createAccumulator`, `add`,
   *   `getResult` and `merge`.
   * @param options `ttl`.
   * @throws {TypeError} when `name` is empty or a method is missing.
   */
  constructor(
    name: string,
    aggregateFunction: AggregateFunction<IN, ACC, OUT>,
    options: { ttl?: StateTtlConfig } = {},
  ) {
    checkName("aggregating", name);
    const fn = aggregateFunction as unknown as Record<string, unknown> | null;
    const missing = AGGREGATE_METHODS.filter((m) => typeof fn?.[m] !== "function");
    if (missing.length > 0) {
      throw new TypeError(
        `Aggregating state '${name}' needs an AggregateFunction with ${
          missing.map((m) => `${m}()`).join(", ")
        }: current value is ${describe(aggregateFunction)}`,
      );
    }
    this.name = name;
    this.aggregateFunction = aggregateFunction;
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
 * One value per key that added values are folded into with a
 * `ReduceFunction` (Flink's `ReducingState`).
 */
export interface ReducingState<T> {
  /** The current key's reduced value, or `undefined` when nothing was added. */
  get(): T | undefined;
  /**
   * Folds `value` into the current key's value (`reduce(current, value)`),
   * or stores it when there is none.
   * @throws {TypeError} when `value` is `undefined`.
   */
  add(value: T): void;
  /** Removes the current key's value. */
  clear(): void;
}

/**
 * One accumulator per key that added values are folded into with an
 * `AggregateFunction`, read through its `getResult` (Flink's
 * `AggregatingState`).
 */
export interface AggregatingState<IN, OUT> {
  /** `getResult` of the current key's accumulator, or `undefined` when nothing was added. */
  get(): OUT | undefined;
  /**
   * Folds `value` into the current key's accumulator, creating it with
   * `createAccumulator()` first when there is none.
   * @throws {TypeError} when `value` is `undefined`, or `add` returns `undefined`.
   */
  add(value: IN): void;
  /** Removes the current key's accumulator. */
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
