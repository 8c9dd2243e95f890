/**
 * Broadcast state on the heap, and how it is kept in operator state (Flink's
 * `HeapBroadcastState` and the `BROADCAST` redistribution mode).
 *
 * ## Checkpoint format
 *
 * Each broadcast state named `n` is an operator union list state named
 * `_broadcast/n` holding one item per subtask, that subtask's whole copy:
 *
 * ```
 * { "_broadcast/thresholds": { mode: "union", items: [{ entries: [["s1", 30], ["s2", 25]] }] } }
 * ```
 *
 * A union list goes whole to every subtask on restore (see
 * `operator_state.ts`), so after a restore at parallelism `p'` subtask `i`
 * sees the copies of all `p` old subtasks and takes copy `i mod p` (Flink
 * also hands copies out round-robin). The copies are equal when
 * `processBroadcastElement` is deterministic, as the pattern requires; each
 * new subtask thus reads `p` copies, a cost Flink pays as well.
 *
 * ## Invariants
 *
 * - Keys are compared as JavaScript `Map` keys: use strings, numbers or
 *   booleans (as `MapStateDescriptor` says).
 * - The read-only view throws on every write, naming the state and the
 *   operator, whatever the caller cast it to.
 *
 * @module
 */

import type { BroadcastState, ReadOnlyBroadcastState } from "../api/broadcast_functions.ts";
import { ListStateDescriptor, type MapStateDescriptor } from "../api/state.ts";
import type { DefaultOperatorStateStore } from "./operator_state.ts";

/** The operator state name under which broadcast state `name` is checkpointed. */
export function broadcastStateName(name: string): string {
  return `_broadcast/${name}`;
}

/** One subtask's copy of a broadcast state in a checkpoint. */
interface BroadcastCopy {
  readonly entries: readonly (readonly [unknown, unknown])[];
}

/** A broadcast state on the heap (writable; {@linkcode readOnly} gives the element side's view). */
export class HeapBroadcastState<K, V> implements BroadcastState<K, V> {
  /** The state's name (its descriptor's). */
  readonly name: string;
  readonly #map = new Map<K, V>();
  readonly #readOnly: ReadOnlyBroadcastState<K, V>;

  /**
   * @param name the descriptor's name.
   * @param where the operator, for the read-only view's error message.
   */
  constructor(name: string, where: string) {
    this.name = name;
    const refuse = (method: string) => () => {
      throw new Error(
        `Broadcast state '${name}' is read-only in processElement (and onTimer) of ${where}: ` +
          `${method}() is allowed only in processBroadcastElement, so every subtask's copy stays the same`,
      );
    };
    const map = this.#map;
    this.#readOnly = Object.freeze({
      get: (key: K) => map.get(key),
      contains: (key: K) => map.has(key),
      entries: () => [...map.entries()],
      keys: () => [...map.keys()],
      get size() {
        return map.size;
      },
      put: refuse("put"),
      putAll: refuse("putAll"),
      remove: refuse("remove"),
      clear: refuse("clear"),
    });
  }

  /** The element side's view: reads go to this state, writes throw. */
  get readOnly(): ReadOnlyBroadcastState<K, V> {
    return this.#readOnly;
  }

  /** The value under `key`, or `undefined`. */
  get(key: K): V | undefined {
    return this.#map.get(key);
  }

  /** Whether `key` has a value. */
  contains(key: K): boolean {
    return this.#map.has(key);
  }

  /** The entries, in insertion order (a copy). */
  entries(): [K, V][] {
    return [...this.#map.entries()];
  }

  /** The keys, in insertion order (a copy). */
  keys(): K[] {
    return [...this.#map.keys()];
  }

  /** The number of entries. */
  get size(): number {
    return this.#map.size;
  }

  /** Sets `key` to `value`. @throws {TypeError} when `value` is `undefined`. */
  put(key: K, value: V): void {
    if (value === undefined) {
      throw new TypeError(
        `Broadcast state '${this.name}': put(${
          JSON.stringify(key)
        }, undefined) — use remove() to delete a key`,
      );
    }
    this.#map.set(key, value);
  }

  /** Sets every entry of `entries`. @throws {TypeError} as {@linkcode put}. */
  putAll(entries: Iterable<[K, V]>): void {
    for (const [k, v] of entries) this.put(k, v);
  }

  /** Removes `key`. */
  remove(key: K): void {
    this.#map.delete(key);
  }

  /** Removes every entry. */
  clear(): void {
    this.#map.clear();
  }

  /** This copy as a checkpoint item. */
  toCopy(): BroadcastCopy {
    return { entries: [...this.#map.entries()] };
  }

  /**
   * Replaces the contents with `copy` (a checkpoint item).
   * @throws {Error} when `copy` has no entries array.
   */
  restoreFrom(copy: unknown): void {
    const entries = (copy as Partial<BroadcastCopy> | undefined)?.entries;
    if (!Array.isArray(entries)) {
      throw new Error(
        `Broadcast state '${this.name}': the checkpointed copy has no entries array: current value is ${
          JSON.stringify(copy)
        }`,
      );
    }
    this.#map.clear();
    for (const [k, v] of entries as [K, V][]) this.#map.set(k, v);
  }
}

/**
 * The broadcast states of one operator subtask, kept in its operator state
 * store under {@linkcode broadcastStateName}.
 */
export class BroadcastStates {
  readonly #states = new Map<string, HeapBroadcastState<unknown, unknown>>();
  readonly #store: DefaultOperatorStateStore;
  readonly #where: string;

  /**
   * Registers `descriptors` in `store` and restores each from the copy of
   * old subtask `subtaskIndex mod p` when `store` holds `p` copies.
   * @throws {Error} for two descriptors with one name, or a damaged copy.
   */
  constructor(options: {
    readonly descriptors: readonly MapStateDescriptor<unknown, unknown>[];
    readonly store: DefaultOperatorStateStore;
    readonly subtaskIndex: number;
    readonly where: string;
  }) {
    this.#store = options.store;
    this.#where = options.where;
    for (const d of options.descriptors) {
      if (this.#states.has(d.name)) {
        throw new Error(`Broadcast state '${d.name}' is declared twice on ${options.where}`);
      }
      const state = new HeapBroadcastState<unknown, unknown>(d.name, options.where);
      const copies = this.#list(d.name).get();
      if (copies.length > 0) {
        state.restoreFrom(copies[options.subtaskIndex % copies.length]);
      }
      this.#states.set(d.name, state);
    }
  }

  #list(name: string) {
    return this.#store.getUnionListState(
      new ListStateDescriptor<BroadcastCopy>(broadcastStateName(name)),
    );
  }

  /**
   * The state of `descriptor`.
   * @throws {Error} when it was not declared with `broadcast(...)`.
   */
  get<K, V>(descriptor: MapStateDescriptor<K, V>): HeapBroadcastState<K, V> {
    const state = this.#states.get(descriptor.name);
    if (!state) {
      throw new Error(
        `No broadcast state '${descriptor.name}' on ${this.#where}: declared are [${
          [...this.#states.keys()].map((n) => `'${n}'`).join(", ")
        }]; pass its descriptor to broadcast(...)`,
      );
    }
    return state as HeapBroadcastState<K, V>;
  }

  /** Writes every state's copy into the operator state store (before its snapshot). */
  writeToStore(): void {
    for (const [name, state] of this.#states) this.#list(name).update([state.toCopy()]);
  }
}
