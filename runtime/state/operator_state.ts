/**
 * Operator (non-keyed) state of one subtask, and its redistribution when a
 * job is restored at another parallelism (Flink's `DefaultOperatorStateBackend`
 * and `RoundRobinOperatorStateRepartitioner`).
 *
 * @example
 * ```ts
 * import { DefaultOperatorStateStore, redistributeOperatorState } from "./operator_state.ts";
 * import { ListStateDescriptor } from "../api/state.ts";
 *
 * const store = new DefaultOperatorStateStore();
 * const offsets = store.getListState(new ListStateDescriptor<number>("offsets"));
 * offsets.update([10, 20, 30]);
 * const checkpoint = store.snapshot(); // { offsets: { mode: "split", items: [10, 20, 30] } }
 *
 * // Restore over 2 subtasks: [10, 20] and [30].
 * const first = new DefaultOperatorStateStore(redistributeOperatorState([checkpoint], 2, 0));
 * first.getListState(new ListStateDescriptor<number>("offsets")).get(); // [10, 20]
 * ```
 *
 * ## Invariants
 *
 * - Restoring at the same parallelism gives subtask i exactly the split
 *   lists it snapshotted.
 * - On a rescale, every item of a split list goes to exactly one new
 *   subtask, in old-subtask order, in contiguous even shares.
 * - A union list goes whole (all old subtasks' items, concatenated in
 *   old-subtask order) to every new subtask.
 *
 * @module
 */

import type { ListState, ListStateDescriptor, OperatorStateStore } from "../api/state.ts";

/** How an operator list state is redistributed on restore: split evenly, or the union to everyone. */
export type OperatorStateMode = "split" | "union";

/** One operator state in an {@linkcode OperatorStateSnapshot}. */
export interface OperatorStateSnapshotEntry {
  /** `"split"` for `getListState`, `"union"` for `getUnionListState`. */
  readonly mode: OperatorStateMode;
  /** The list's elements, in order. */
  readonly items: readonly unknown[];
}

/**
 * The operator state of one subtask: a plain object by state name,
 * MessagePack-encodable whenever the items are.
 *
 * ```
 * { offsets: { mode: "split", items: [10, 20] },
 *   config:  { mode: "union", items: ["a"] } }
 * ```
 */
export interface OperatorStateSnapshot {
  /** The state named `name`. */
  readonly [name: string]: OperatorStateSnapshotEntry;
}

function defineEntry(
  target: Record<string, OperatorStateSnapshotEntry>,
  name: string,
  value: OperatorStateSnapshotEntry,
): void {
  // defineProperty, not assignment: a state named "__proto__" stays an own property.
  Object.defineProperty(target, name, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

function checkMode(name: string, mode: unknown): OperatorStateMode {
  if (mode !== "split" && mode !== "union") {
    throw new Error(
      `Operator state '${name}' has an unknown redistribution mode: current value is ${
        JSON.stringify(mode)
      }`,
    );
  }
  return mode;
}

const METHOD: Record<OperatorStateMode, string> = {
  split: "getListState",
  union: "getUnionListState",
};

/** A list held by one subtask. */
class OperatorListState<T> implements ListState<T> {
  readonly #name: string;
  items: T[];

  constructor(name: string, items: T[]) {
    this.#name = name;
    this.items = items;
  }

  get(): readonly T[] {
    return this.items;
  }

  add(value: T): void {
    this.#check(value);
    this.items.push(value);
  }

  addAll(values: Iterable<T>): void {
    const added = Array.from(values);
    for (const v of added) this.#check(v);
    for (const v of added) this.items.push(v);
  }

  update(values: Iterable<T>): void {
    const items = Array.from(values);
    for (const v of items) this.#check(v);
    this.items = items;
  }

  clear(): void {
    this.items = [];
  }

  #check(value: unknown): void {
    if (value === undefined) {
      throw new TypeError(
        `Operator ListState '${this.#name}' cannot hold undefined: current value is undefined`,
      );
    }
  }
}

interface Registered {
  readonly mode: OperatorStateMode;
  readonly state: OperatorListState<unknown>;
}

/**
 * The operator state of one subtask (Flink's `DefaultOperatorStateBackend`).
 * Lists live on the heap; {@linkcode DefaultOperatorStateStore.snapshot}
 * copies them.
 *
 * `get()` on a returned list state gives the live array: do not mutate it,
 * and expect a later `add` to append to it.
 */
export class DefaultOperatorStateStore implements OperatorStateStore {
  readonly #registered = new Map<string, Registered>();
  /** Restored states not yet registered; kept so later snapshots include them. */
  readonly #pending = new Map<string, OperatorStateSnapshotEntry>();
  readonly #restored: boolean;

  /**
   * Creates the store, empty or from a restored snapshot.
   *
   * @param restored this subtask's share of a checkpoint, as produced by
   * {@linkcode redistributeOperatorState} (or its own old snapshot at the
   * same parallelism); omit on a fresh start.
   * @throws {Error} when an entry has an unknown mode or no items array.
   */
  constructor(restored?: OperatorStateSnapshot) {
    this.#restored = restored !== undefined;
    if (restored === undefined) return;
    for (const [name, entry] of Object.entries(restored)) {
      const mode = checkMode(
        name,
        (entry as Partial<OperatorStateSnapshotEntry> | undefined)?.mode,
      );
      if (!Array.isArray(entry.items)) {
        throw new Error(`Operator state '${name}' in the restored snapshot has no items array`);
      }
      this.#pending.set(name, { mode, items: entry.items });
    }
  }

  /** Whether the store was created from a checkpoint (Flink's `isRestored()`), even an empty one. */
  get isRestored(): boolean {
    return this.#restored;
  }

  /**
   * The subtask's list state named by `descriptor`, split evenly over the
   * new subtasks on a rescale (Flink's `getListState`).
   *
   * @returns the same object for every call with the same name.
   * @throws {Error} when the name is registered or restored as a union list,
   * or the descriptor has a TTL (operator state has none).
   */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T> {
    return this.#get(descriptor, "split") as ListState<T>;
  }

  /**
   * The subtask's list state named by `descriptor`, given whole to every
   * subtask on restore (Flink's `getUnionListState`).
   *
   * @returns the same object for every call with the same name.
   * @throws {Error} when the name is registered or restored as a split list,
   * or the descriptor has a TTL (operator state has none).
   */
  getUnionListState<T>(descriptor: ListStateDescriptor<T>): ListState<T> {
    return this.#get(descriptor, "union") as ListState<T>;
  }

  #get(descriptor: ListStateDescriptor<unknown>, mode: OperatorStateMode): ListState<unknown> {
    const name = descriptor.name;
    if (descriptor.ttl !== undefined) {
      throw new Error(
        `Operator state '${name}' cannot have a TTL: TTL applies to keyed state only`,
      );
    }
    const existing = this.#registered.get(name) ?? this.#pending.get(name);
    if (existing !== undefined && existing.mode !== mode) {
      throw new Error(
        `Operator state '${name}' is ${
          this.#registered.has(name) ? "registered" : "restored"
        } with ${METHOD[existing.mode]} (${existing.mode} redistribution): cannot get it with ${
          METHOD[mode]
        }`,
      );
    }
    const registered = this.#registered.get(name);
    if (registered !== undefined) return registered.state;
    const restored = this.#pending.get(name);
    this.#pending.delete(name);
    const state = new OperatorListState<unknown>(name, restored ? restored.items.slice() : []);
    this.#registered.set(name, { mode, state });
    return state;
  }

  /** Names of all registered or restored states. */
  stateNames(): string[] {
    return [...new Set([...this.#registered.keys(), ...this.#pending.keys()])];
  }

  /**
   * Captures every registered and restored list (copied; items are shared,
   * being immutable by contract). Synchronous, linear in the number of items.
   *
   * @returns an {@linkcode OperatorStateSnapshot}.
   */
  snapshot(): OperatorStateSnapshot {
    const out: Record<string, OperatorStateSnapshotEntry> = {};
    for (const [name, { mode, state }] of this.#registered) {
      defineEntry(out, name, { mode, items: state.items.slice() });
    }
    for (const [name, entry] of this.#pending) {
      defineEntry(out, name, { mode: entry.mode, items: entry.items.slice() });
    }
    return out;
  }
}

/**
 * The operator state new subtask `newIndex` of `newParallelism` restores
 * from, given the snapshots of all old subtasks in subtask order (Flink's
 * `RoundRobinOperatorStateRepartitioner`). Pure; the inputs are not changed
 * and the result shares no arrays with them.
 *
 * - Same parallelism: each split list goes back unchanged to the subtask
 *   that snapshotted it (as Flink does).
 * - Other parallelism: a split list's items of all old subtasks, concatenated
 *   in old-subtask order, are cut into `newParallelism` contiguous shares:
 *   with `n` items, subtask `j` gets `floor(n / p)` items, plus one when
 *   `j < n % p`. (Flink also rotates which subtasks get the extra items from
 *   one state to the next; Weir does not.)
 * - A union list's items of all old subtasks, concatenated in old-subtask
 *   order, go to every new subtask, at any parallelism.
 *
 * Every state present in any old snapshot appears in the result, with an
 * empty list when the subtask's share is empty.
 *
 * @param snapshots the old subtasks' snapshots, index = old subtask index.
 * @param newParallelism the new parallelism, an integer >= 1.
 * @param newIndex the new subtask, in `[0, newParallelism - 1]`.
 * @returns the state for new subtask `newIndex`.
 * @throws {RangeError} for an invalid `newParallelism` or `newIndex`.
 * @throws {Error} when a name has different modes in different snapshots, or an unknown mode.
 */
export function redistributeOperatorState(
  snapshots: readonly OperatorStateSnapshot[],
  newParallelism: number,
  newIndex: number,
): OperatorStateSnapshot {
  if (!Number.isInteger(newParallelism) || newParallelism < 1) {
    throw new RangeError(
      `'newParallelism' must be an integer >= 1: current value is ${newParallelism}`,
    );
  }
  if (!Number.isInteger(newIndex) || newIndex < 0 || newIndex >= newParallelism) {
    throw new RangeError(
      `'newIndex' must be an integer in [0, ${newParallelism - 1}]: current value is ${newIndex}`,
    );
  }
  const modes = new Map<string, OperatorStateMode>();
  for (const snap of snapshots) {
    for (const [name, entry] of Object.entries(snap)) {
      const mode = checkMode(name, entry.mode);
      const seen = modes.get(name);
      if (seen !== undefined && seen !== mode) {
        throw new Error(
          `Operator state '${name}' is ${seen} in one old subtask's snapshot and ${mode} in another`,
        );
      }
      modes.set(name, mode);
    }
  }
  const sameParallelism = snapshots.length === newParallelism;
  const out: Record<string, OperatorStateSnapshotEntry> = {};
  for (const [name, mode] of modes) {
    if (mode === "split" && sameParallelism) {
      const own = Object.hasOwn(snapshots[newIndex]!, name)
        ? snapshots[newIndex]![name]
        : undefined;
      defineEntry(out, name, { mode, items: own ? own.items.slice() : [] });
      continue;
    }
    const all: unknown[] = [];
    for (const snap of snapshots) {
      if (!Object.hasOwn(snap, name)) continue;
      for (const item of snap[name]!.items) all.push(item);
    }
    if (mode === "union") {
      defineEntry(out, name, { mode, items: all });
      continue;
    }
    const base = Math.floor(all.length / newParallelism);
    const remainder = all.length % newParallelism;
    const start = newIndex * base + Math.min(newIndex, remainder);
    const count = base + (newIndex < remainder ? 1 : 0);
    defineEntry(out, name, { mode, items: all.slice(start, start + count) });
  }
  return out;
}
