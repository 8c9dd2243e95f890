/**
 * Internal: the storage of one keyed state in {@linkcode HeapKeyedStateBackend}
 * (its {@linkcode StateTable}) and the base class of every state object,
 * which addresses the table by (current key, current namespace). Not part
 * of the public API.
 *
 * ## Layout
 *
 * - The default namespace ({@linkcode VOID_NAMESPACE}) is stored exactly as
 *   before namespaces existed: one `Map<InternedKey, S>` per key group
 *   (`table.maps`), so a user function's state costs one array index and one
 *   `Map` operation per access.
 * - Every other namespace is stored per key group as `Map<namespace,
 *   Map<InternedKey, S>>` (`table.nsMaps`): namespace first, because a window
 *   operator's namespaces (windows) are few and shared by many keys, so a
 *   snapshot copies each (key group, namespace) map column-wise in bulk.
 *
 * Measured (the keyed running sums of `heap_keyed_backend_bench.ts`,
 * interleaved in one process, median CPU time): against the backend before
 * namespaces existed, the default namespace showed no difference above the
 * shared machine's noise of about ±5–10%; another namespace takes about
 * 1.2× the default namespace's time for the same running sum (group
 * "namespaces").
 *
 * ## Invariants
 *
 * - A namespace map in `nsMaps` is never empty: removing its last entry
 *   removes it (windows come and go; their maps must not pile up).
 * - A stored value is never `undefined`.
 *
 * @module
 */

import type { StateKind, StateTtlConfig } from "../api/state.ts";
import type { Key } from "./key_group.ts";
import type { InternedKey } from "./_key_interner.ts";
import { type InternalKvState, VOID_NAMESPACE } from "./internal_state.ts";
import type { TtlTime } from "./keyed_state_snapshot.ts";
import type { TableCapture } from "./_heap_cow.ts";

/** The key the next state access applies to; shared by the backend and its states. */
export class KeyContext {
  /** The current key's identity in the tables (`KeyInterner.identity(key)`). */
  stateKey: InternedKey = "";
  /** `keyGroup - startKeyGroup`, or -1 before the first `setCurrentKey`. */
  index = -1;
  /** The current key group, or -1 before the first `setCurrentKey`. */
  keyGroup = -1;
  /** The current key as given. */
  key: Key | undefined = undefined;
}

/** A value, list element or map entry of a TTL state, with its last-access time (Flink's `TtlValue`). */
export interface TtlCell<V> {
  /** The value. */
  v: V;
  /**
   * Last access (write, or read with OnReadAndWrite), in ms of the state's
   * TTL clock; `-Infinity` for an event-time access before event time
   * started (see `HeapKeyedStateBackend`).
   */
  t: number;
}

/**
 * Whether a cell last accessed at `t` has expired at `now`, for lifetime
 * `ttlMs`. Written as a difference so that `-Infinity - -Infinity` (NaN)
 * is never expired: before event time starts nothing expires.
 */
export function isExpired(t: number, now: number, ttlMs: number): boolean {
  return now - t >= ttlMs;
}

/** A validated {@linkcode StateTtlConfig}. */
export interface TtlSettings {
  /** Lifetime, ms. */
  readonly ttlMs: number;
  /** Whether reads restart the lifetime (`OnReadAndWrite`). */
  readonly onRead: boolean;
  /** The clock the lifetime is measured on. */
  readonly time: TtlTime;
}

/** One map per key group of the backend's range (index = key group − start), created on first write. */
export type Maps<S> = (Map<InternedKey, S> | undefined)[];

/** Per key group of the range: the non-default namespaces, each a map from state key to value. */
export type NamespaceMaps<S> = (Map<string, Map<InternedKey, S>> | undefined)[];

/** One state's storage, registered or only restored so far. */
export interface StateTable {
  /** The state's name. */
  readonly name: string;
  /** The state's kind. */
  readonly kind: StateKind;
  /** Whether stored values are {@linkcode TtlCell}s. */
  cells: boolean;
  /** The clock the cells' times are of (meaningful when `cells`). */
  cellTime: TtlTime;
  /** The TTL, once a descriptor registered the state. */
  ttl: TtlSettings | undefined;
  /** The default namespace: one map per key group of the range, created on first write. */
  readonly maps: Maps<unknown>;
  /** The other namespaces, per key group of the range, created on first write. */
  readonly nsMaps: NamespaceMaps<unknown>;
  /** The state object, once registered. */
  state: object | undefined;
  /**
   * Reducing and aggregating states: accumulated values that a snapshot (or
   * the snapshot restored from) still holds, so must be copied before a
   * user function may change them in place (copy-on-write).
   */
  readonly shared: WeakSet<object>;
  /**
   * The copy-on-write snapshots of this table in flight (`_heap_cow.ts`);
   * changed in place, never replaced. Empty when no snapshot is in flight.
   */
  readonly captures: TableCapture[];
}

/** Creates the empty table of a state, for a range of `size` key groups. */
export function newTable(
  name: string,
  kind: StateKind,
  size: number,
  cells: boolean,
  cellTime: TtlTime,
): StateTable {
  return {
    name,
    kind,
    cells,
    cellTime,
    ttl: undefined,
    maps: new Array(size).fill(undefined),
    nsMaps: new Array(size).fill(undefined),
    state: undefined,
    shared: new WeakSet(),
    captures: [],
  };
}

/** Whether `kind` stores one value (or accumulator) per entry: value, reducing and aggregating state. */
export function isSingle(kind: StateKind): boolean {
  return kind === "value" || kind === "reducing" || kind === "aggregating";
}

/** What `ListState.get()` returns for a key without elements. */
export const EMPTY_LIST: readonly never[] = Object.freeze([]);

/**
 * Validates a descriptor's TTL.
 * @throws {RangeError} for a non-positive or non-finite `ttlMs`, an unknown
 * `updateType` or an unknown `timeCharacteristic`.
 */
export function ttlSettings(
  name: string,
  ttl: StateTtlConfig | undefined,
): TtlSettings | undefined {
  if (ttl === undefined) return undefined;
  if (typeof ttl.ttlMs !== "number" || !(ttl.ttlMs > 0) || !Number.isFinite(ttl.ttlMs)) {
    throw new RangeError(
      `State '${name}' needs a TTL 'ttlMs' that is a finite number > 0: current value is ${ttl.ttlMs}`,
    );
  }
  const type = ttl.updateType ?? "OnCreateAndWrite";
  if (type !== "OnCreateAndWrite" && type !== "OnReadAndWrite") {
    throw new RangeError(
      `State '${name}' has an unknown TTL 'updateType': current value is ${JSON.stringify(type)}`,
    );
  }
  const time = ttl.timeCharacteristic ?? "ProcessingTime";
  if (time !== "ProcessingTime" && time !== "EventTime") {
    throw new RangeError(
      `State '${name}' has an unknown TTL 'timeCharacteristic' (expected "ProcessingTime" or "EventTime"): current value is ${
        JSON.stringify(time)
      }`,
    );
  }
  return { ttlMs: ttl.ttlMs, onRead: type === "OnReadAndWrite", time };
}

/** Whether two TTLs are the same (both absent, or equal in every setting). */
export function sameTtl(a: TtlSettings | undefined, b: TtlSettings | undefined): boolean {
  return a?.ttlMs === b?.ttlMs && a?.onRead === b?.onRead && a?.time === b?.time;
}

/** A TTL for error messages: `"TTL 100 ms OnCreateAndWrite in ProcessingTime"` or `"no TTL"`. */
export function describeTtl(ttl: TtlSettings | undefined): string {
  if (ttl === undefined) return "no TTL";
  return `TTL ${ttl.ttlMs} ms ${ttl.onRead ? "OnReadAndWrite" : "OnCreateAndWrite"} in ${ttl.time}`;
}

/**
 * Checks the arguments of a state's `mergeNamespaces(target, sources)`.
 * @throws {TypeError} unless `target` is a string and `sources` an array,
 *   naming the state `name`.
 */
export function checkMergeArguments(name: string, target: unknown, sources: unknown): void {
  if (typeof target !== "string" || !Array.isArray(sources)) {
    throw new TypeError(
      `Keyed state '${name}' merges into a string namespace from an array of namespaces: current values are ${
        String(target)
      } and ${String(sources)}`,
    );
  }
}

/**
 * Flink's `mergeNamespaces` for the current key, whatever holds the
 * entries: takes (and removes) the entry of every namespace of `sources`
 * in order, folds them with `combine`, then folds the result into the
 * target's entry (`combine(target, merged)`) or stores it there. `live`
 * filters a stored value (TTL states drop expired ones) and returns
 * `undefined` for nothing. Nothing is written when no source holds a live
 * value.
 *
 * @param sources the namespaces merged, in order.
 * @param take removes namespace `ns`'s entry, returning what it stored (`undefined`: none).
 * @param updateTarget replaces the target's stored value (`undefined`: none) with `next` of it.
 */
export function mergeNamespaceEntries<S>(
  sources: readonly string[],
  combine: (a: S, b: S) => S,
  live: (stored: S) => S | undefined,
  take: (ns: string) => S | undefined,
  updateTarget: (next: (stored: S | undefined) => S) => void,
): void {
  let merged: S | undefined;
  for (const ns of sources) {
    const stored = take(ns);
    if (stored === undefined) continue;
    const value = live(stored);
    if (value === undefined) continue;
    merged = merged === undefined ? value : combine(merged, value);
  }
  if (merged === undefined) return;
  const result = merged;
  updateTarget((stored) => {
    const existing = stored === undefined ? undefined : live(stored);
    return existing === undefined ? result : combine(existing, result);
  });
}

/** What {@linkcode checkRegistration} reads of a state's table, registered or restored. */
export interface RegisteredTable {
  /** The state's kind. */
  readonly kind: StateKind;
  /** The TTL it was registered with. */
  readonly ttl: TtlSettings | undefined;
  /** Its state object once registered; `undefined` while only restored. */
  readonly state: object | undefined;
}

/**
 * The checks of registering keyed state `name` as `kind` with `ttlConfig`,
 * the same in every backend: the TTL is valid, an event-time TTL has an
 * event-time clock, and a table of that name (registered or restored) is
 * of the same kind and, once registered, has the same TTL.
 *
 * @param table the state's table, when registered or restored already.
 * @param hasEventTimeClock whether the backend has an event-time clock.
 * @returns the TTL settings (`undefined` for none); when `table.state` is
 *   set, the caller returns it.
 * @throws {Error} when the name is registered (or restored) as another
 *   kind, or registered with another TTL.
 * @throws {RangeError} for an invalid TTL, or an event-time TTL without an
 *   event-time clock.
 */
export function checkRegistration(
  name: string,
  kind: StateKind,
  ttlConfig: StateTtlConfig | undefined,
  table: RegisteredTable | undefined,
  hasEventTimeClock: boolean,
): TtlSettings | undefined {
  const ttl = ttlSettings(name, ttlConfig);
  if (ttl?.time === "EventTime" && !hasEventTimeClock) {
    throw new RangeError(
      `Keyed state '${name}' has an event-time TTL, but this state backend has no event-time clock (option 'eventTimeClock'): current value is undefined`,
    );
  }
  if (table !== undefined && table.kind !== kind) {
    throw new Error(
      `Keyed state '${name}' is already ${
        table.state ? "registered" : "restored"
      } as ${table.kind} state: cannot register it as ${kind} state`,
    );
  }
  if (table?.state !== undefined && !sameTtl(table.ttl, ttl)) {
    throw new Error(
      `Keyed state '${name}' is already registered with ${
        describeTtl(table.ttl)
      }: cannot register it with ${describeTtl(ttl)}`,
    );
  }
  return ttl;
}

/** Sets `target[name] = value` as an own property, even for `"__proto__"`. */
export function defineEntry<T>(target: Record<string, T>, name: string, value: T): void {
  // defineProperty, not assignment: a state named "__proto__" stays an own property.
  Object.defineProperty(target, name, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

// ---------------------------------------------------------------------------
// State objects

/**
 * Base of every state object: the shared key context, the table's maps and
 * the state object's current namespace (Flink's `InternalKvState`).
 */
export abstract class HeapState<S> implements InternalKvState {
  /** The backend's current key. */
  protected readonly ctx: KeyContext;
  /** The default namespace's maps, typed for this state's stored values. */
  protected readonly maps: Maps<S>;
  /** The other namespaces' maps. */
  readonly #nsMaps: NamespaceMaps<S>;
  /** The state's name, for messages. */
  protected readonly name: string;
  /** The table's snapshots in flight (the same array as `table.captures`). */
  readonly #captures: TableCapture[];
  #namespace: string = VOID_NAMESPACE;

  /** Binds the state to `table` and the backend's key context. */
  constructor(table: StateTable, ctx: KeyContext) {
    this.ctx = ctx;
    this.maps = table.maps as Maps<S>;
    this.#nsMaps = table.nsMaps as NamespaceMaps<S>;
    this.name = table.name;
    this.#captures = table.captures;
  }

  /**
   * Call before changing the current key's entry in `namespace` (default:
   * the current one) in any way, in place included: while snapshots are in
   * flight, each saves the entry's value before its first change
   * (copy-on-write, `_heap_cow.ts`). One length check otherwise.
   */
  protected touch(namespace?: string): void {
    if (this.#captures.length !== 0) this.#saveOld(namespace ?? this.#namespace);
  }

  #saveOld(namespace: string): void {
    const captures = this.#captures;
    const i = this.ctx.index;
    if (i < 0) return;
    for (let c = 0; c < captures.length; c++) {
      captures[c]!.saveOld(i, namespace, this.ctx.stateKey);
    }
  }

  setCurrentNamespace(namespace: string): void {
    if (typeof namespace !== "string") {
      throw new TypeError(
        `Keyed state '${this.name}' needs a string namespace: current value is ${
          String(namespace)
        } (${typeof namespace})`,
      );
    }
    this.#namespace = namespace;
  }

  /** The map of the current key group and namespace, or `undefined` when it has no entry. */
  protected current(): Map<InternedKey, S> | undefined {
    const ns = this.#namespace;
    return ns === VOID_NAMESPACE
      ? this.maps[this.ctx.index]
      : this.#nsMaps[this.ctx.index]?.get(ns);
  }

  /** The map of the current key group and `namespace`, or `undefined`. */
  protected mapIn(namespace: string): Map<InternedKey, S> | undefined {
    return namespace === VOID_NAMESPACE
      ? this.maps[this.ctx.index]
      : this.#nsMaps[this.ctx.index]?.get(namespace);
  }

  /** The current key group and namespace's map, created if missing. */
  protected writable(): Map<InternedKey, S> {
    const ns = this.#namespace;
    if (this.#captures.length !== 0) this.#saveOld(ns);
    if (ns === VOID_NAMESPACE) {
      const m = this.maps[this.ctx.index];
      if (m !== undefined) return m;
    }
    return this.writableIn(ns);
  }

  /** The current key group and `namespace`'s map, created if missing. */
  protected writableIn(namespace: string): Map<InternedKey, S> {
    const i = this.ctx.index;
    if (i < 0) {
      throw new Error(
        `Cannot write keyed state '${this.name}' before setCurrentKey() set a current key`,
      );
    }
    this.touch(namespace);
    if (namespace === VOID_NAMESPACE) {
      const m = this.maps[i];
      if (m !== undefined) return m;
      const created = new Map<InternedKey, S>();
      this.maps[i] = created;
      return created;
    }
    let byNamespace = this.#nsMaps[i];
    if (byNamespace === undefined) this.#nsMaps[i] = byNamespace = new Map();
    let m = byNamespace.get(namespace);
    if (m === undefined) byNamespace.set(namespace, m = new Map());
    return m;
  }

  /**
   * Removes the current key's entry from `m`, the map of `namespace` (by
   * default the current one), and drops the namespace's map once empty.
   */
  protected deleteIn(m: Map<InternedKey, S>, namespace: string = this.#namespace): void {
    this.touch(namespace);
    const captures = this.#captures;
    if (captures.length !== 0 && namespace === VOID_NAMESPACE && this.ctx.index >= 0) {
      for (let c = 0; c < captures.length; c++) captures[c]!.beforeRemove(this.ctx.index);
    }
    m.delete(this.ctx.stateKey);
    if (m.size === 0 && namespace !== VOID_NAMESPACE) {
      const byNamespace = this.#nsMaps[this.ctx.index];
      byNamespace?.delete(namespace);
      if (byNamespace?.size === 0) this.#nsMaps[this.ctx.index] = undefined;
    }
  }

  /** Removes the current key's entry in the current namespace. */
  clear(): void {
    const m = this.current();
    if (m !== undefined) this.deleteIn(m);
  }

  /**
   * Flink's `mergeNamespaces` for the current key: takes (and removes) the
   * entry of every namespace of `sources` in order, folds them with
   * `combine`, then folds the result into `target`'s entry (`combine(target,
   * merged)`) or stores it there. `live` filters what a source holds (TTL
   * states drop expired values) and returns `undefined` for nothing.
   */
  protected mergeEntries(
    target: string,
    sources: readonly string[],
    combine: (a: S, b: S) => S,
    live: (stored: S) => S | undefined = (stored) => stored,
  ): void {
    checkMergeArguments(this.name, target, sources);
    const sk = this.ctx.stateKey;
    mergeNamespaceEntries(sources, combine, live, (ns) => {
      const m = this.mapIn(ns);
      const stored = m?.get(sk);
      if (stored !== undefined) this.deleteIn(m!, ns);
      return stored;
    }, (next) => {
      const m = this.writableIn(target);
      m.set(sk, next(m.get(sk)));
    });
  }
}

/** Base of the TTL state objects, whose stored values are {@linkcode TtlCell}s. */
export abstract class TtlHeapState<S> extends HeapState<S> {
  /** Lifetime, ms. */
  protected readonly ttlMs: number;
  /** Whether reads restart the lifetime. */
  protected readonly onRead: boolean;
  /** The TTL's clock, ms (processing time, or the watermark for event time). */
  protected readonly clock: () => number;

  /** Binds the state with its TTL and clock. */
  constructor(table: StateTable, ctx: KeyContext, ttl: TtlSettings, clock: () => number) {
    super(table, ctx);
    this.ttlMs = ttl.ttlMs;
    this.onRead = ttl.onRead;
    this.clock = clock;
  }
}
