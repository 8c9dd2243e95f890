/**
 * Internal: the per-checkpoint dirty set of one state of a
 * {@linkcode ChangelogKeyedStateBackend} (FLIP-158's `StateChangeLogger`,
 * kept as net changes instead of an append-only log).
 *
 * Each write records the net change of its (key, namespace) in a `Map` keyed
 * by the key's state identity (`stateKeyOf`), one `Map` per namespace: a
 * value overwrites the previous record, a list append pushes onto it, a map
 * put sets one user key of it. Memory and the capture are O(entries changed
 * since the last capture), however often each was written. Records hold
 * references to the values stored in the inner backend (immutable by
 * contract; accumulators, which user functions may change in place, are
 * copied by the synchronous capture, before the next record is processed).
 *
 * @module
 */

import type { StateKind } from "../../api/state.ts";
import { type Key, type StateKey, stateKeyOf } from "../key_group.ts";
import type { TtlTime } from "../keyed_state_snapshot.ts";
import type { SegmentState, StateChange } from "./changelog_segment.ts";

/**
 * A `Map`-usable identity of a key: equal (`SameValueZero`) for equal keys
 * and different for different keys, among the keys of one recorder's
 * capture interval. Either `stateKeyOf(key)`, or the inner backend's own
 * identity of its current key (`KeyedStateBackend.currentKeyIdentity`).
 */
export type KeyIdentity = StateKey | object;

/** The backend's current key as the state wrappers see it; the identity is computed on first write. */
export class ChangeContext {
  /** The current key. */
  key: Key | undefined = undefined;
  /** Its key group, -1 before any. */
  keyGroup = -1;
  #id: KeyIdentity | undefined = undefined;

  /**
   * Sets the current key (from `setCurrentKey`), with the inner backend's
   * identity of it when it has one (else `stateKeyOf` builds one on the
   * first write: a string per tuple key, which costs a write about as much
   * as the heap backend's whole write).
   */
  set(key: Key, keyGroup: number, identity: KeyIdentity | undefined): void {
    this.key = key;
    this.keyGroup = keyGroup;
    this.#id = identity;
  }

  /** The current key's identity ({@linkcode KeyIdentity}), computed once per key. */
  id(): KeyIdentity {
    return this.#id ??= stateKeyOf(this.key!);
  }
}

/** The removed marker of a map record's puts. */
const REMOVED: unique symbol = Symbol("removed");

interface Rec {
  readonly kg: number;
  readonly key: Key;
}
interface ValueRec extends Rec {
  set: boolean;
  value: unknown;
  /** Last access, ms of the TTL clock (TTL states only). */
  t: number;
}
interface ListRec extends Rec {
  reset: boolean;
  items: unknown[];
  /** Per item, its last access (TTL states only). */
  times: number[] | undefined;
}
interface MapRec extends Rec {
  cleared: boolean;
  puts: Map<unknown, unknown>;
  /** Per put user key, its last access (TTL states only). */
  times: Map<unknown, number> | undefined;
}

/** Records the net changes of one state since the last capture. */
export class ChangeRecorder {
  /** The state's name. */
  readonly name: string;
  /** The state's kind. */
  readonly kind: StateKind;
  readonly #ttl: boolean;
  readonly #ttlTime: TtlTime | undefined;
  readonly #ttlMs: number | undefined;
  readonly #ctx: ChangeContext;
  readonly #now: (() => number) | undefined;
  #void = new Map<KeyIdentity, Rec>();
  #byNamespace = new Map<string, Map<KeyIdentity, Rec>>();

  /**
   * A recorder for state `name` of `kind`, reading the current key from
   * `ctx`; for a TTL state, `ttl` names its clock and `now` reads it (ms),
   * so each change carries its access time.
   */
  constructor(
    name: string,
    kind: StateKind,
    ttl: { time: TtlTime; ttlMs: number; now: () => number } | undefined,
    ctx: ChangeContext,
  ) {
    this.name = name;
    this.kind = kind;
    this.#ttl = ttl !== undefined;
    this.#ttlTime = ttl?.time;
    this.#ttlMs = ttl?.ttlMs;
    this.#now = ttl?.now;
    this.#ctx = ctx;
  }

  #map(namespace: string): Map<KeyIdentity, Rec> {
    if (namespace === "") return this.#void;
    let m = this.#byNamespace.get(namespace);
    if (m === undefined) this.#byNamespace.set(namespace, m = new Map());
    return m;
  }

  /** Value, reducing or aggregating entry of the current key in `namespace` set to `value` (`undefined`: cleared). */
  setValue(namespace: string, value: unknown): void {
    const ctx = this.#ctx;
    const m = this.#map(namespace);
    const id = ctx.id();
    const rec = m.get(id) as ValueRec | undefined;
    const t = this.#now === undefined ? 0 : this.#now();
    if (rec === undefined) {
      m.set(
        id,
        { kg: ctx.keyGroup, key: ctx.key!, set: value !== undefined, value, t } as ValueRec,
      );
    } else {
      rec.set = value !== undefined;
      rec.value = value;
      rec.t = t;
    }
  }

  #list(namespace: string): ListRec {
    const ctx = this.#ctx;
    const m = this.#map(namespace);
    const id = ctx.id();
    let rec = m.get(id) as ListRec | undefined;
    if (rec === undefined) {
      rec = {
        kg: ctx.keyGroup,
        key: ctx.key!,
        reset: false,
        items: [],
        times: this.#ttl ? [] : undefined,
      } as ListRec;
      m.set(id, rec);
    }
    return rec;
  }

  /** List entry replaced by `items` (empty: cleared); `items` becomes the record's. */
  resetList(namespace: string, items: unknown[]): void {
    const rec = this.#list(namespace);
    rec.reset = true;
    rec.items = items;
    if (this.#now !== undefined) rec.times = items.map(this.#now);
  }

  /** `item` appended to the list entry. */
  append(namespace: string, item: unknown): void {
    const rec = this.#list(namespace);
    rec.items.push(item);
    if (this.#now !== undefined) rec.times!.push(this.#now());
  }

  /** `items` appended to the list entry. */
  appendAll(namespace: string, items: readonly unknown[]): void {
    const rec = this.#list(namespace);
    const t = this.#now?.() ?? 0;
    for (const item of items) {
      rec.items.push(item);
      rec.times?.push(t);
    }
  }

  #mapRec(namespace: string): MapRec {
    const ctx = this.#ctx;
    const m = this.#map(namespace);
    const id = ctx.id();
    let rec = m.get(id) as MapRec | undefined;
    if (rec === undefined) {
      rec = {
        kg: ctx.keyGroup,
        key: ctx.key!,
        cleared: false,
        puts: new Map(),
        times: this.#ttl ? new Map() : undefined,
      } as MapRec;
      m.set(id, rec);
    }
    return rec;
  }

  /** User key `userKey` of the map entry set to `value`. */
  put(namespace: string, userKey: unknown, value: unknown): void {
    const rec = this.#mapRec(namespace);
    rec.puts.set(userKey, value);
    if (this.#now !== undefined) rec.times!.set(userKey, this.#now());
  }

  /** User key `userKey` of the map entry removed. */
  remove(namespace: string, userKey: unknown): void {
    this.#mapRec(namespace).puts.set(userKey, REMOVED);
  }

  /** The map entry cleared. */
  clearMap(namespace: string): void {
    const rec = this.#mapRec(namespace);
    rec.cleared = true;
    rec.puts.clear();
    rec.times?.clear();
  }

  /** Whether nothing was recorded since the last capture. */
  get isEmpty(): boolean {
    return this.#void.size === 0 && this.#byNamespace.size === 0;
  }

  /** The number of (key, namespace) entries changed since the last capture. */
  get size(): number {
    let n = this.#void.size;
    for (const m of this.#byNamespace.values()) n += m.size;
    return n;
  }

  /**
   * Takes the recorded changes; the recorder starts empty again. O(1),
   * except for reducing and aggregating states, whose changed values are
   * copied (`structuredClone`, O(changed entries)) because user functions
   * may change them in place; every other recorded value is immutable by
   * contract. {@linkcode CapturedChanges.toSegmentState} builds the tuples
   * later, off the record path.
   */
  capture(): CapturedChanges {
    const captured = new CapturedChanges(
      this.kind,
      this.#ttl,
      this.#ttlTime,
      this.#ttlMs,
      this.#void,
      this.#byNamespace,
    );
    this.#void = new Map();
    this.#byNamespace = new Map();
    if (this.kind === "reducing" || this.kind === "aggregating") captured.cloneValues();
    return captured;
  }
}

/** The changes of one state taken by {@linkcode ChangeRecorder.capture}, owned by nothing else. */
export class CapturedChanges {
  readonly #kind: StateKind;
  readonly #ttl: boolean;
  readonly #ttlTime: TtlTime | undefined;
  readonly #ttlMs: number | undefined;
  readonly #void: Map<KeyIdentity, Rec>;
  readonly #byNamespace: Map<string, Map<KeyIdentity, Rec>>;

  /** Holds the recorder's maps (internal). */
  constructor(
    kind: StateKind,
    ttl: boolean,
    ttlTime: TtlTime | undefined,
    ttlMs: number | undefined,
    byVoid: Map<KeyIdentity, Rec>,
    byNamespace: Map<string, Map<KeyIdentity, Rec>>,
  ) {
    this.#kind = kind;
    this.#ttl = ttl;
    this.#ttlTime = ttlTime;
    this.#ttlMs = ttlMs;
    this.#void = byVoid;
    this.#byNamespace = byNamespace;
  }

  /** Replaces every set value by a deep copy (accumulators a user function may change in place). */
  cloneValues(): void {
    const copy = (m: Map<KeyIdentity, Rec>) => {
      for (const rec of m.values()) {
        const r = rec as ValueRec;
        if (r.set && typeof r.value === "object" && r.value !== null) {
          r.value = structuredClone(r.value);
        }
      }
    };
    copy(this.#void);
    this.#byNamespace.forEach(copy);
  }

  /** The changes as a segment state (the change tuples of `changelog_segment.ts`). O(changed entries). */
  toSegmentState(): SegmentState {
    const changes: StateChange[] = [];
    const ttl = this.#ttl;
    const emit = this.#kind === "list" ? emitList : this.#kind === "map" ? emitMap : emitValue;
    for (const rec of this.#void.values()) changes.push(emit(rec, "", ttl));
    for (const [ns, m] of this.#byNamespace) {
      for (const rec of m.values()) changes.push(emit(rec, ns, ttl));
    }
    const state: { -readonly [k in keyof SegmentState]: SegmentState[k] } = {
      kind: this.#kind,
      ttl,
      changes,
    };
    if (this.#ttlTime !== undefined) state.ttlTimeCharacteristic = this.#ttlTime;
    if (this.#ttlMs !== undefined) state.ttlMs = this.#ttlMs;
    return state;
  }
}

function emitValue(rec: Rec, ns: string, ttl: boolean): StateChange {
  const r = rec as ValueRec;
  if (!r.set) return [r.kg, r.key, ns, 0];
  return ttl ? [r.kg, r.key, ns, 1, r.value, r.t] : [r.kg, r.key, ns, 1, r.value];
}

function emitList(rec: Rec, ns: string, ttl: boolean): StateChange {
  const r = rec as ListRec;
  return ttl
    ? [r.kg, r.key, ns, r.reset ? 1 : 0, r.items, r.times!]
    : [r.kg, r.key, ns, r.reset ? 1 : 0, r.items];
}

function emitMap(rec: Rec, ns: string, ttl: boolean): StateChange {
  const r = rec as MapRec;
  const putKeys: unknown[] = [];
  const putValues: unknown[] = [];
  const removed: unknown[] = [];
  for (const [k, v] of r.puts) {
    if (v === REMOVED) removed.push(k);
    else {
      putKeys.push(k);
      putValues.push(v);
    }
  }
  if (!ttl) return [r.kg, r.key, ns, r.cleared ? 1 : 0, putKeys, putValues, removed];
  const times = putKeys.map((k) => r.times!.get(k)!);
  return [r.kg, r.key, ns, r.cleared ? 1 : 0, putKeys, putValues, removed, times];
}
