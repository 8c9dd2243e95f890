/**
 * Changelog replay (FLIP-158's restore: the materialized state, then the
 * changelog applied in order), as a pure function over the canonical format:
 * {@linkcode replayChangelog} folds changelog segments into canonical keyed
 * state snapshots, so that any backend's `restore` can load the result.
 * Performs no I/O.
 *
 * @example
 * ```ts
 * import { replayChangelog } from "./replay.ts";
 * import type { ChangelogSegment } from "./changelog_segment.ts";
 *
 * const segment: ChangelogSegment = {
 *   format: "weir-changelog", version: 1, maxParallelism: 128, keyGroupRange: [0, 127],
 *   checkpointId: 2, seq: 0, capturedAt: 0,
 *   states: { sum: { kind: "value", ttl: false, changes: [[5, "a", "", 1, 42]] } },
 * };
 * const [added] = replayChangelog({ bases: [], segments: [segment], keyGroupRange: [0, 127], maxParallelism: 128 });
 * if (added?.states.sum?.keyGroups[0]?.values[0] !== 42) throw new Error("unreachable");
 * ```
 *
 * ## Design
 *
 * 1. The segments, in order, are folded into one net change per (state,
 *    key group, key, namespace) in the key-group range: a later set or
 *    clear replaces an earlier change, list appends concatenate (a reset
 *    starts over), map puts and removes are applied per user key (a clear
 *    starts over).
 * 2. Each base snapshot is copied with its changed entries replaced or
 *    removed, key group by key group; key groups without changes are shared,
 *    not copied.
 * 3. Changed entries no base holds form one more snapshot, appended last.
 *
 * Time is O(base key groups touched + changes); a base key group with a
 * change is copied whole.
 *
 * ## TTL
 *
 * Changes of a TTL state carry their write's access time, which replay
 * keeps; a processing-time entry already expired when its segment was
 * captured is dropped. Reads are not changes: with `updateType:
 * "OnReadAndWrite"` a restored entry's lifetime counts from its last write,
 * not its last read, so it can expire earlier than without the restore.
 * A change without a time (a state whose TTL was added later) gets its
 * segment's `capturedAt` (`-Infinity`, "before event time started", for an
 * event-time TTL).
 *
 * @module
 */

import type { StateKind } from "../../api/state.ts";
import { type Key, type StateKey, stateKeyOf } from "../key_group.ts";
import type {
  KeyedStateSnapshot,
  KeyedStateSnapshotState,
  KeyGroupEntries,
  NamespaceEntries,
  TtlTime,
} from "../keyed_state_snapshot.ts";
import type {
  ChangelogSegment,
  ListChange,
  MapChange,
  StateChange,
  ValueChange,
} from "./changelog_segment.ts";

/** Input of {@linkcode replayChangelog}. */
export interface ReplayInput {
  /** The materialized canonical snapshots (one per old subtask lineage); not modified. */
  readonly bases: readonly KeyedStateSnapshot[];
  /** The segments, already in replay order (`compareSegments`); not modified. */
  readonly segments: readonly ChangelogSegment[];
  /** The restoring backend's key groups, inclusive: changes outside are ignored. */
  readonly keyGroupRange: readonly [number, number];
  /** The number of key groups. */
  readonly maxParallelism: number;
}

const REMOVED: unique symbol = Symbol("removed");

/** The net change of one (state, key group, key, namespace); `t`/`times` are last-access times, ms. */
type Folded =
  | { readonly key: Key; op: "set"; value: unknown; t: number }
  | { readonly key: Key; op: "clear" }
  | { readonly key: Key; op: "list"; reset: boolean; items: unknown[]; times: number[] }
  | {
    readonly key: Key;
    op: "map";
    cleared: boolean;
    puts: Map<unknown, [unknown, number] | typeof REMOVED>;
  };

interface FoldedState {
  readonly kind: StateKind;
  readonly ttl: boolean;
  readonly ttlTime: TtlTime | undefined;
  /** key group -> namespace -> key identity -> change */
  readonly groups: Map<number, Map<string, Map<StateKey, Folded>>>;
}

/**
 * Folds `segments` into `bases` (see the module docs).
 *
 * @returns the bases with their changed entries replaced or removed, then
 *   (when some change adds an entry no base has) one snapshot of the added
 *   entries; each restorable with `restoreCanonical` or as a `keyed` blob.
 * @throws {Error} when a state has one kind in a base and another in a
 *   segment, or changes kind between segments (the message names the state
 *   and the segment's checkpoint id).
 */
export function replayChangelog(input: ReplayInput): KeyedStateSnapshot[] {
  const folded = foldSegments(input);
  for (const base of input.bases) {
    for (const [name, state] of Object.entries(base.states)) {
      const f = folded.get(name);
      if (f !== undefined && f.kind !== state.kind) {
        throw new Error(
          `Cannot replay the changelog of keyed state '${name}': it is ${state.kind} state in the materialized snapshot but ${f.kind} state in the changelog`,
        );
      }
    }
  }
  const out = input.bases.map((base) => applyToBase(base, folded));
  const added = additions(folded, input);
  if (added !== undefined) out.push(added);
  return out;
}

/** How one segment state's access times are read: the default, and which times had expired at the capture. */
interface Stamping {
  readonly fallback: number;
  readonly expired: (t: number) => boolean;
}

function foldSegments(input: ReplayInput): Map<string, FoldedState> {
  const [first, last] = input.keyGroupRange;
  const folded = new Map<string, FoldedState>();
  for (const seg of input.segments) {
    for (const [name, state] of Object.entries(seg.states)) {
      let f = folded.get(name);
      if (f === undefined) {
        f = {
          kind: state.kind,
          ttl: state.ttl,
          ttlTime: state.ttlTimeCharacteristic,
          groups: new Map(),
        };
        folded.set(name, f);
      } else if (f.kind !== state.kind) {
        throw new Error(
          `Cannot replay the changelog of keyed state '${name}': it is ${state.kind} state in the segment of checkpoint ${seg.checkpointId} but ${f.kind} state before`,
        );
      }
      const eventTime = state.ttlTimeCharacteristic === "EventTime";
      const ttlMs = state.ttlMs;
      const stamping: Stamping = {
        fallback: eventTime ? -Infinity : seg.capturedAt,
        // Processing-time entries that had expired when the segment was captured stay gone.
        expired: eventTime || ttlMs === undefined
          ? () => false
          : (t) => seg.capturedAt - t >= ttlMs,
      };
      for (const change of state.changes) {
        const kg = change[0];
        if (kg < first || kg > last) continue;
        foldChange(f, change, stamping);
      }
    }
  }
  return folded;
}

function foldChange(f: FoldedState, change: StateChange, stamping: Stamping): void {
  const [kg, key, ns] = change;
  let byNs = f.groups.get(kg);
  if (byNs === undefined) f.groups.set(kg, byNs = new Map());
  let byKey = byNs.get(ns);
  if (byKey === undefined) byNs.set(ns, byKey = new Map());
  const id = stateKeyOf(key);
  const prev = byKey.get(id);
  const { fallback, expired } = stamping;
  if (f.kind === "list") {
    const [, , , reset, elements, times] = change as ListChange;
    let rec = prev?.op === "list" && reset === 0 ? prev : undefined;
    if (rec === undefined) {
      rec = { key, op: "list", reset: reset === 1, items: [], times: [] };
      byKey.set(id, rec);
    }
    for (let i = 0; i < elements.length; i++) {
      const t = times?.[i] ?? fallback;
      if (expired(t)) continue;
      rec.items.push(elements[i]);
      rec.times.push(t);
    }
  } else if (f.kind === "map") {
    const [, , , cleared, putKeys, putValues, removed, times] = change as MapChange;
    let rec = prev?.op === "map" && cleared === 0 ? prev : undefined;
    if (rec === undefined) {
      rec = { key, op: "map", cleared: cleared === 1, puts: new Map() };
      byKey.set(id, rec);
    }
    for (let i = 0; i < putKeys.length; i++) {
      const t = times?.[i] ?? fallback;
      rec.puts.set(putKeys[i], expired(t) ? REMOVED : [putValues[i], t]);
    }
    for (const k of removed) rec.puts.set(k, REMOVED);
  } else {
    const c = change as ValueChange;
    const t = c[5] ?? fallback;
    byKey.set(
      id,
      c[3] === 1 && !expired(t) ? { key, op: "set", value: c[4], t } : { key, op: "clear" },
    );
  }
}

/** The new value and timestamps of one entry, or `undefined` when it ends up absent. */
function applyEntry(
  change: Folded,
  ttl: boolean,
  value: unknown,
  ts: unknown,
): { value: unknown; ts: unknown } | undefined {
  switch (change.op) {
    case "clear":
      return undefined;
    case "set":
      return { value: change.value, ts: change.t };
    case "list": {
      const base = !change.reset && Array.isArray(value) ? value : [];
      const items = base.length === 0 ? change.items : [...base, ...change.items];
      if (items.length === 0) return undefined;
      if (!ttl) return { value: items, ts: undefined };
      const baseTs = !change.reset && Array.isArray(ts) ? ts : [];
      return { value: items, ts: [...baseTs, ...change.times] };
    }
    case "map": {
      const entries = new Map<unknown, [unknown, unknown]>();
      if (!change.cleared && Array.isArray(value)) {
        const [ks, vs] = value as [unknown[], unknown[]];
        for (let i = 0; i < ks.length; i++) entries.set(ks[i], [vs[i], (ts as unknown[])?.[i]]);
      }
      for (const [k, put] of change.puts) {
        if (put === REMOVED) entries.delete(k);
        else entries.set(k, put);
      }
      if (entries.size === 0) return undefined;
      const ks: unknown[] = [];
      const vs: unknown[] = [];
      const times: unknown[] = [];
      for (const [k, [v, t]] of entries) {
        ks.push(k);
        vs.push(v);
        times.push(t);
      }
      return { value: [ks, vs], ts: ttl ? times : undefined };
    }
  }
}

interface MutableColumns {
  keys: Key[];
  values: unknown[];
  timestamps?: unknown[];
}

/** Copies `cols` with the changes of `byKey` applied; consumed changes are deleted from it. */
function applyColumns(
  cols: {
    readonly keys: readonly Key[];
    readonly values: readonly unknown[];
    readonly timestamps?: readonly unknown[];
  },
  byKey: Map<StateKey, Folded> | undefined,
  ttl: boolean,
): MutableColumns {
  const out: MutableColumns = { keys: [], values: [] };
  if (ttl) out.timestamps = [];
  for (let i = 0; i < cols.keys.length; i++) {
    const key = cols.keys[i]!;
    const id = byKey === undefined ? undefined : stateKeyOf(key);
    const change = id === undefined ? undefined : byKey!.get(id);
    let value = cols.values[i];
    let ts = cols.timestamps?.[i];
    if (change !== undefined) {
      byKey!.delete(id!);
      const applied = applyEntry(change, ttl, value, ts);
      if (applied === undefined) continue;
      value = applied.value;
      ts = applied.ts;
    }
    out.keys.push(key);
    out.values.push(value);
    if (ttl) out.timestamps!.push(ts);
  }
  return out;
}

/** Appends every change of `byKey` (entries no base had) to `out`. */
function appendAdded(
  out: MutableColumns,
  byKey: Map<StateKey, Folded> | undefined,
  ttl: boolean,
): void {
  if (byKey === undefined) return;
  for (const change of byKey.values()) {
    const applied = applyEntry(change, ttl, undefined, undefined);
    if (applied === undefined) continue;
    out.keys.push(change.key);
    out.values.push(applied.value);
    if (ttl) out.timestamps!.push(applied.ts);
  }
  byKey.clear();
}

function groupOf(
  keyGroup: number,
  main: MutableColumns,
  namespaces: NamespaceEntries[],
): KeyGroupEntries | undefined {
  if (main.keys.length === 0 && namespaces.length === 0) return undefined;
  const group: { -readonly [k in keyof KeyGroupEntries]: KeyGroupEntries[k] } = {
    keyGroup,
    keys: main.keys,
    values: main.values,
  };
  if (main.timestamps !== undefined) group.timestamps = main.timestamps;
  if (namespaces.length > 0) group.namespaces = namespaces;
  return group;
}

function namespaceOf(namespace: string, cols: MutableColumns): NamespaceEntries | undefined {
  if (cols.keys.length === 0) return undefined;
  const entries: { -readonly [k in keyof NamespaceEntries]: NamespaceEntries[k] } = {
    namespace,
    keys: cols.keys,
    values: cols.values,
  };
  if (cols.timestamps !== undefined) entries.timestamps = cols.timestamps;
  return entries;
}

function applyToBase(
  base: KeyedStateSnapshot,
  folded: Map<string, FoldedState>,
): KeyedStateSnapshot {
  const states: Record<string, KeyedStateSnapshotState> = {};
  for (const [name, state] of Object.entries(base.states)) {
    const f = folded.get(name);
    if (f === undefined || f.groups.size === 0) {
      Object.defineProperty(states, name, { value: state, enumerable: true, writable: true });
      continue;
    }
    const keyGroups: KeyGroupEntries[] = [];
    for (const group of state.keyGroups) {
      const byNs = f.groups.get(group.keyGroup);
      if (byNs === undefined) {
        keyGroups.push(group);
        continue;
      }
      const main = applyColumns(group, byNs.get(""), state.ttl);
      const namespaces: NamespaceEntries[] = [];
      for (const entries of group.namespaces ?? []) {
        const ns = namespaceOf(
          entries.namespace,
          applyColumns(entries, byNs.get(entries.namespace), state.ttl),
        );
        if (ns !== undefined) namespaces.push(ns);
      }
      const g = groupOf(group.keyGroup, main, namespaces);
      if (g !== undefined) keyGroups.push(g);
    }
    Object.defineProperty(states, name, {
      value: { ...state, keyGroups },
      enumerable: true,
      writable: true,
    });
  }
  return { ...base, states };
}

function additions(
  folded: Map<string, FoldedState>,
  input: ReplayInput,
): KeyedStateSnapshot | undefined {
  const states: Record<string, KeyedStateSnapshotState> = {};
  let any = false;
  for (const [name, f] of folded) {
    const inBase = input.bases.map((b) => b.states[name]).find((s) => s !== undefined);
    const ttl = inBase?.ttl ?? f.ttl;
    const ttlTime = inBase === undefined ? f.ttlTime : inBase.ttlTimeCharacteristic;
    const keyGroups: KeyGroupEntries[] = [];
    for (const kg of [...f.groups.keys()].sort((a, b) => a - b)) {
      const byNs = f.groups.get(kg)!;
      const main: MutableColumns = ttl
        ? { keys: [], values: [], timestamps: [] }
        : { keys: [], values: [] };
      appendAdded(main, byNs.get(""), ttl);
      const namespaces: NamespaceEntries[] = [];
      for (const [ns, byKey] of byNs) {
        if (ns === "") continue;
        const cols: MutableColumns = ttl
          ? { keys: [], values: [], timestamps: [] }
          : { keys: [], values: [] };
        appendAdded(cols, byKey, ttl);
        const entries = namespaceOf(ns, cols);
        if (entries !== undefined) namespaces.push(entries);
      }
      const g = groupOf(kg, main, namespaces);
      if (g !== undefined) keyGroups.push(g);
    }
    // A state only the changelog knows is kept even when empty, so it stays registered-as-restored.
    if (keyGroups.length === 0 && inBase !== undefined) continue;
    any = true;
    const state: { -readonly [k in keyof KeyedStateSnapshotState]: KeyedStateSnapshotState[k] } = {
      kind: f.kind,
      ttl,
      keyGroups,
    };
    if (ttl && ttlTime !== undefined) state.ttlTimeCharacteristic = ttlTime;
    Object.defineProperty(states, name, { value: state, enumerable: true, writable: true });
  }
  if (!any) return undefined;
  return {
    version: 2,
    maxParallelism: input.maxParallelism,
    keyGroupRange: [input.keyGroupRange[0], input.keyGroupRange[1]],
    states,
  };
}
