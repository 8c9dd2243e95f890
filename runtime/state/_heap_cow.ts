/**
 * Internal: copy-on-write snapshots of {@linkcode HeapKeyedStateBackend}'s
 * tables, in the manner of Flink's `CopyOnWriteStateMap` (which versions
 * entries and copies an entry on its first write after a snapshot). Not
 * part of the public API.
 *
 * ## Design
 *
 * `snapshot()` makes one {@linkcode TableCapture} per state table and
 * registers it in `table.captures`: O(states × key groups) small arrays,
 * no entry is touched. From then on the capture stands for the table as it
 * was at that moment:
 *
 * - **Undo on first write.** Every state object calls its `touch()` before
 *   it changes the entry of (current key, namespace) in any way (write,
 *   delete, in-place list or map change, accumulator change, TTL refresh or
 *   expiry). While a capture has not yet copied that key group, the first
 *   touch of an entry saves its old value in the capture's undo map for the
 *   key group (a copy for containers and TTL cells, which change in place;
 *   the accumulator itself for reducing and aggregating states, marked in
 *   `table.shared` so the next fold works on a copy). Later touches find
 *   the entry saved and do nothing. Cost: O(changed entries).
 * - **Keys created after the snapshot** cost no undo entry in the default
 *   namespace: a `Map` iterates in insertion order, so they follow the
 *   capture's keys, and the copy takes each key group's first `base` keys
 *   (its map's size at the capture). That holds until a key is removed
 *   (a removal shifts the keys after it), so `deleteIn()` calls
 *   {@linkcode TableCapture.beforeRemove} first, which takes the key group's
 *   key list at once if its copy has not started (O(entries of the key
 *   group), once per key group and capture). A created key touched again
 *   finds a value and is saved like an old one; the copy never reads it.
 *   Other namespaces (windows, which come and go) save {@linkcode ABSENT}
 *   for a created entry instead. Measured (one process, CPU time, 100k new
 *   composite keys into 300k, a snapshot in flight against none): saving
 *   `ABSENT` per created key made those writes about 2× slower; with
 *   `base` they cost the same as with no snapshot in flight.
 * - **Copying in slices.** `step(budget)` copies key group by key group.
 *   When it starts a key group it takes the list of its keys (one bulk
 *   `Array.from(map.keys())` per namespace) and the undo entries of keys no
 *   longer present (deleted since); then, up to `budget` entries per call,
 *   it reads each key's value from the undo map if saved there (skipping
 *   `ABSENT`), else from the live map (untouched since the snapshot, so
 *   equal to it), and MessagePack-encodes the columns chunk by chunk
 *   (`_msgpack_splice.ts`). Undo recording for a key group stops when its
 *   copy ends; its undo map is dropped then.
 * - **Several captures** (snapshots in flight) each keep their own undo
 *   maps; a touch saves into every capture that still needs the key group.
 * - **Whole-table changes** (a TTL enabled or moved to the other clock at
 *   registration, event time starting, a restore, `snapshotCanonical()`)
 *   first {@linkcode TableCapture.drain}: they finish every capture of the
 *   table synchronously (rare: once per registration or per job).
 * - A finished or released capture removes itself from `table.captures`,
 *   so the record path's only cost without a snapshot in flight is the
 *   check `captures.length !== 0` in `touch()`.
 *
 * ## Invariants
 *
 * - For a key group not yet copied by a capture, every entry of the
 *   capture changed since the capture began has its pre-change value in
 *   the capture's undo map (an entry created since: `ABSENT` outside the
 *   default namespace); an untouched entry holds its captured value.
 * - Until a key group's key list is taken, no key of the capture was
 *   removed from its default-namespace map, so the map's first `base` keys
 *   are the capture's keys, in order.
 * - The key list of a key group is taken once, when its copy starts; a key
 *   in it is emitted once, from the undo map or the live map; a key in the
 *   undo map but not in the live map at that moment is emitted once, from
 *   the undo map. Iteration never runs over a live `Map` across a yield.
 * - Expired TTL entries (at the capture's time) are left out; the live
 *   state is never changed by a capture.
 *
 * @module
 */

import type { StateKind } from "../api/state.ts";
import { encode } from "../actor/codec.ts";
import type { InternedKey } from "./_key_interner.ts";
import { VOID_NAMESPACE } from "./internal_state.ts";
import { isExpired, type StateTable, type TtlCell } from "./_heap_state_base.ts";
import type { Expiry } from "./_heap_snapshot.ts";
import type { TtlTime } from "./keyed_state_snapshot.ts";
import { arrayElements, arrayHeader, recordHeader } from "./_msgpack_splice.ts";

/** Saved in an undo map for an entry created after the snapshot. */
export const ABSENT: unique symbol = Symbol("absent at the snapshot");

/** Entries encoded per `encode` call. */
const CHUNK = 512;

const PENDING = 0;
const ACTIVE = 1;
const DONE = 2;

type Undo = Map<InternedKey, unknown>;

/** Encoded columns of one (key group, namespace). */
interface ColumnsOut {
  n: number;
  readonly keys: Uint8Array[];
  readonly values: Uint8Array[];
  readonly timestamps: Uint8Array[];
}

/** The copy of one (key group, namespace) in progress. */
interface Job {
  readonly namespace: string;
  readonly undo: Undo | undefined;
  /** Keys of the live map when the key group's copy started. */
  readonly keys: InternedKey[];
  /**
   * Their values then: a key's captured value unless the undo map holds one
   * (a key untouched since the snapshot has not changed, in place or not;
   * the first touch after the copy started saves this very value).
   */
  readonly values: unknown[];
  /** Saved values of keys deleted before the copy started. */
  readonly deleted: [InternedKey, unknown][];
  /** Next position in `keys`, then in `deleted`. */
  pos: number;
  readonly out: ColumnsOut;
}

/** A copy of a stored value that later in-place changes of the live one cannot reach. */
function frozenCopy(table: StateTable, stored: unknown): unknown {
  const kind = table.kind;
  if (!table.cells) {
    switch (kind) {
      case "value":
        return stored; // immutable by contract
      case "reducing":
      case "aggregating":
        if (typeof stored === "object" && stored !== null) table.shared.add(stored);
        return stored;
      case "list":
        return (stored as unknown[]).slice();
      case "map":
        return new Map(stored as Map<unknown, unknown>);
    }
  }
  const copyCell = (c: TtlCell<unknown>): TtlCell<unknown> => ({ v: c.v, t: c.t });
  switch (kind) {
    case "value":
      return copyCell(stored as TtlCell<unknown>);
    case "reducing":
    case "aggregating": {
      const cell = stored as TtlCell<unknown>;
      if (typeof cell.v === "object" && cell.v !== null) table.shared.add(cell.v);
      return copyCell(cell);
    }
    case "list":
      return (stored as TtlCell<unknown>[]).map(copyCell);
    case "map": {
      const copy = new Map<unknown, TtlCell<unknown>>();
      for (const [k, c] of stored as Map<unknown, TtlCell<unknown>>) copy.set(k, copyCell(c));
      return copy;
    }
  }
}

/** One state table as it was when a snapshot began (see the module docs). */
export class TableCapture {
  /** The table captured. */
  readonly table: StateTable;
  readonly #start: number;
  readonly #kind: StateKind;
  readonly #cells: boolean;
  readonly #cellTime: TtlTime;
  readonly #ttlMs: number;
  readonly #now: number;
  readonly #phase: Uint8Array;
  readonly #undo: (Undo | undefined)[];
  readonly #nsUndo: (Map<string, Undo> | undefined)[];
  /** Per key group index, the default namespace's map size at the capture. */
  readonly #base: Int32Array;
  /** Key groups whose copy was started early (by a removal, {@linkcode beforeRemove}), by index. */
  readonly #frozen = new Map<number, Job[]>();
  /** Encoded key-group records, each as its parts. */
  readonly #groups: Uint8Array[][] = [];
  #group = 0;
  #jobs: Job[] = [];
  #job = 0;
  #parts: Uint8Array[] | undefined;
  #released = false;

  /**
   * Begins capturing `table` (O(key groups)); registers itself in `table.captures`.
   * @param start the backend's first key group.
   * @param expiry the TTL and time at the snapshot, or `undefined` to keep every entry.
   */
  constructor(table: StateTable, start: number, expiry: Expiry | undefined) {
    this.table = table;
    this.#start = start;
    this.#kind = table.kind;
    this.#cells = table.cells;
    this.#cellTime = table.cellTime;
    this.#ttlMs = expiry?.ttlMs ?? Infinity;
    this.#now = expiry?.now ?? NaN;
    const size = table.maps.length;
    this.#phase = new Uint8Array(size);
    this.#undo = new Array(size).fill(undefined);
    this.#nsUndo = new Array(size).fill(undefined);
    this.#base = new Int32Array(size);
    for (let i = 0; i < size; i++) this.#base[i] = table.maps[i]?.size ?? 0;
    table.captures.push(this);
  }

  /**
   * Saves the value of entry (`sk`, `namespace`) of key group index `i`
   * before its first change since the capture began, unless that key group
   * is copied already. Called by `HeapState.touch()`.
   */
  saveOld(i: number, namespace: string, sk: InternedKey): void {
    if (this.#phase[i] === DONE) return;
    let undo: Undo;
    let live: Map<InternedKey, unknown> | undefined;
    if (namespace === VOID_NAMESPACE) {
      const saved = this.#undo[i];
      if (saved?.has(sk) === true) return; // the common case of a key written often
      // Absent: created after the capture (nothing to save: the copy takes the
      // map's first `base` keys only), or removed after its value was saved.
      const stored = this.table.maps[i]?.get(sk);
      if (stored === undefined) return;
      (saved ?? (this.#undo[i] = new Map())).set(sk, frozenCopy(this.table, stored));
      return;
    } else {
      const byNamespace = this.#nsUndo[i] ??= new Map();
      let u = byNamespace.get(namespace);
      if (u === undefined) byNamespace.set(namespace, u = new Map());
      undo = u;
      live = this.table.nsMaps[i]?.get(namespace);
    }
    if (undo.has(sk)) return;
    const stored = live?.get(sk);
    undo.set(sk, stored === undefined ? ABSENT : frozenCopy(this.table, stored));
  }

  /**
   * Called before an entry of the default namespace of key group index `i`
   * is removed (after its `saveOld`): a removal shifts the keys after it in
   * the map's order, so a key group not yet started takes its key list (the
   * first `base` keys, those of the capture) now.
   */
  beforeRemove(i: number): void {
    if (this.#phase[i] !== PENDING || this.#released) return;
    this.#phase[i] = ACTIVE;
    this.#frozen.set(i, this.#startGroup(i));
  }

  /**
   * Copies and encodes up to about `budget` entries (whole key groups'
   * starts are not counted); returns `true` once the table is done (then
   * {@linkcode parts} holds the state's encoded record).
   */
  step(budget: number): boolean {
    if (this.#parts !== undefined) return true;
    if (this.#released) {
      throw new Error(`The snapshot of keyed state '${this.table.name}' was released`);
    }
    const n = this.#phase.length;
    while (this.#group < n) {
      const i = this.#group;
      const frozen = this.#frozen.get(i);
      if (this.#phase[i] === PENDING || frozen !== undefined) {
        this.#phase[i] = ACTIVE;
        this.#jobs = frozen ?? this.#startGroup(i);
        this.#frozen.delete(i);
        this.#job = 0;
      }
      while (this.#job < this.#jobs.length) {
        const job = this.#jobs[this.#job]!;
        budget -= this.#copy(job, budget);
        if (job.pos < job.keys.length + job.deleted.length) return false;
        this.#job++;
      }
      this.#finishGroup(i);
      this.#group++;
      if (budget <= 0 && this.#group < n) return false;
    }
    this.#finish();
    return true;
  }

  /** Finishes the capture synchronously (before a whole-table change). */
  drain(): void {
    if (!this.#released) this.step(Infinity);
  }

  /** The state's encoded record, once {@linkcode step} returned `true`. */
  get parts(): readonly Uint8Array[] {
    if (this.#parts === undefined) {
      throw new Error(`The snapshot of keyed state '${this.table.name}' is not finished`);
    }
    return this.#parts;
  }

  /** Stops capturing (aborted snapshot): unregisters and drops the undo maps. */
  release(): void {
    this.#released = true;
    this.#unregister();
    this.#undo.fill(undefined);
    this.#nsUndo.fill(undefined);
    this.#frozen.clear();
    this.#jobs = [];
    this.#groups.length = 0;
  }

  #unregister(): void {
    const captures = this.table.captures;
    const at = captures.indexOf(this);
    if (at >= 0) captures.splice(at, 1);
  }

  #startGroup(i: number): Job[] {
    const job = (
      namespace: string,
      map: Map<InternedKey, unknown> | undefined,
      undo: Undo | undefined,
    ): Job => {
      const deleted: [InternedKey, unknown][] = [];
      if (undo !== undefined) {
        for (const [sk, old] of undo) {
          if (old !== ABSENT && map?.has(sk) !== true) deleted.push([sk, old]);
        }
      }
      return {
        namespace,
        undo,
        keys: map === undefined ? [] : Array.from(map.keys()),
        values: map === undefined ? [] : Array.from(map.values()),
        deleted,
        pos: 0,
        out: { n: 0, keys: [], values: [], timestamps: [] },
      };
    };
    const main = job(VOID_NAMESPACE, this.table.maps[i], this.#undo[i]);
    // Keys created since the capture follow its keys in the map's order (no
    // key of the capture was removed before this: see beforeRemove).
    const base = this.#base[i]!;
    if (main.keys.length > base) {
      main.keys.length = base;
      main.values.length = base;
    }
    const jobs = [main];
    const live = this.table.nsMaps[i];
    const undone = this.#nsUndo[i];
    const namespaces = new Set<string>();
    if (live !== undefined) { for (const ns of live.keys()) namespaces.add(ns); }
    if (undone !== undefined) { for (const ns of undone.keys()) namespaces.add(ns); }
    for (const ns of namespaces) {
      // The undo map must exist from now on: touches of this namespace save into it.
      let undo = undone?.get(ns);
      if (undo === undefined) {
        const byNamespace = this.#nsUndo[i] ??= new Map();
        byNamespace.set(ns, undo = new Map());
      }
      jobs.push(job(ns, live?.get(ns), undo));
    }
    // Touches of the default namespace save into this map from now on.
    if (this.#undo[i] === undefined) jobs[0] = { ...jobs[0]!, undo: this.#undo[i] = new Map() };
    return jobs;
  }

  /** Copies up to `budget` entries of `job`; returns how many positions it consumed. */
  #copy(job: Job, budget: number): number {
    const { keys, values, undo } = job;
    const total = keys.length + job.deleted.length;
    // No mutation happens within this call: the undo map's size holds throughout.
    const untouched = undo === undefined || undo.size === 0;
    const plain = !this.#cells && this.#kind !== "map";
    let consumed = 0;
    while (job.pos < total && consumed < budget) {
      const end = Math.min(total, job.pos + Math.min(CHUNK, budget - consumed));
      let ks: InternedKey[] = [];
      let vs: unknown[] = [];
      const ts: unknown[] = [];
      if (untouched && plain && end <= keys.length) {
        ks = keys.slice(job.pos, end); // bulk: nothing changed in this key group since the snapshot
        vs = values.slice(job.pos, end);
      } else {
        for (let p = job.pos; p < end; p++) {
          let sk: InternedKey;
          let stored: unknown;
          if (p < keys.length) {
            sk = keys[p]!;
            stored = untouched ? values[p] : (undo!.get(sk) ?? values[p]);
          } else {
            [sk, stored] = job.deleted[p - keys.length]!;
          }
          if (stored !== ABSENT) this.#emit(sk, stored, ks, vs, ts);
        }
      }
      consumed += end - job.pos;
      job.pos = end;
      if (ks.length === 0) continue;
      const out = job.out;
      out.n += ks.length;
      out.keys.push(arrayElements(encode(ks)));
      out.values.push(arrayElements(encode(vs)));
      if (this.#cells) out.timestamps.push(arrayElements(encode(ts)));
    }
    return consumed;
  }

  /** Appends one entry's columns, leaving out what had expired at the capture. */
  #emit(sk: InternedKey, stored: unknown, ks: unknown[], vs: unknown[], ts: unknown[]): void {
    if (!this.#cells) {
      ks.push(sk);
      if (this.#kind === "map") {
        const inner = stored as Map<unknown, unknown>;
        vs.push([Array.from(inner.keys()), Array.from(inner.values())]);
      } else {
        vs.push(stored); // encoded right away: a list changed later is not seen
      }
      return;
    }
    const ttlMs = this.#ttlMs;
    const now = this.#now;
    switch (this.#kind) {
      case "value":
      case "reducing":
      case "aggregating": {
        const cell = stored as TtlCell<unknown>;
        if (isExpired(cell.t, now, ttlMs)) return;
        ks.push(sk);
        vs.push(cell.v);
        ts.push(cell.t);
        return;
      }
      case "list": {
        const items: unknown[] = [];
        const times: number[] = [];
        for (const cell of stored as TtlCell<unknown>[]) {
          if (isExpired(cell.t, now, ttlMs)) continue;
          items.push(cell.v);
          times.push(cell.t);
        }
        if (items.length === 0) return;
        ks.push(sk);
        vs.push(items);
        ts.push(times);
        return;
      }
      case "map": {
        const userKeys: unknown[] = [];
        const userValues: unknown[] = [];
        const times: number[] = [];
        for (const [k, cell] of stored as Map<unknown, TtlCell<unknown>>) {
          if (isExpired(cell.t, now, ttlMs)) continue;
          userKeys.push(k);
          userValues.push(cell.v);
          times.push(cell.t);
        }
        if (userKeys.length === 0) return;
        ks.push(sk);
        vs.push([userKeys, userValues]);
        ts.push(times);
        return;
      }
    }
  }

  #columns(out: ColumnsOut, parts: Uint8Array[]): void {
    // Loops, not push(...column): a key group may hold more entries than the
    // stack has room for arguments (RangeError "Maximum call stack size exceeded").
    append(parts, arrayHeader(out.n), out.keys);
    append(parts, arrayHeader(out.n), out.values);
    if (this.#cells) append(parts, arrayHeader(out.n), out.timestamps);
  }

  /** Encodes key group index `i`'s record (if it holds any entry) and stops its undo recording. */
  #finishGroup(i: number): void {
    const [main, ...others] = this.#jobs;
    const namespaces = others.filter((j) => j.out.n > 0);
    this.#phase[i] = DONE;
    this.#undo[i] = undefined;
    this.#nsUndo[i] = undefined;
    this.#jobs = [];
    if (main === undefined || (main.out.n === 0 && namespaces.length === 0)) return;
    const ttl = this.#cells ? ["timestamps"] : [];
    const fields = ["keyGroup", "keys", "values", ...ttl];
    if (namespaces.length > 0) fields.push("namespaces");
    const parts = [recordHeader(fields), encode(this.#start + i)];
    this.#columns(main.out, parts);
    if (namespaces.length > 0) {
      parts.push(arrayHeader(namespaces.length));
      for (const job of namespaces) {
        parts.push(recordHeader(["namespace", "keys", "values", ...ttl]), encode(job.namespace));
        this.#columns(job.out, parts);
      }
    }
    this.#groups.push(parts);
  }

  #finish(): void {
    this.#unregister();
    const parts = this.#cells
      ? [
        recordHeader(["kind", "ttl", "ttlTimeCharacteristic", "keyGroups"]),
        encode(this.#kind),
        encode(true),
        encode(this.#cellTime),
      ]
      : [recordHeader(["kind", "ttl", "keyGroups"]), encode(this.#kind), encode(false)];
    parts.push(arrayHeader(this.#groups.length));
    for (const group of this.#groups) append(parts, undefined, group);
    this.#groups.length = 0;
    this.#parts = parts;
  }
}

/** Appends `header` (if any) and every part of `column` to `parts`, without spreading `column` into arguments. */
function append(
  parts: Uint8Array[],
  header: Uint8Array | undefined,
  column: readonly Uint8Array[],
): void {
  if (header !== undefined) parts.push(header);
  for (let i = 0; i < column.length; i++) parts.push(column[i]!);
}
