/**
 * Internal: conversion between the live tables of
 * `HeapKeyedStateBackend` and the column-wise key groups of a keyed state
 * snapshot (see `KeyGroupEntries` in `heap_keyed_backend.ts` for the shapes),
 * and the passes over every stored TTL cell of a table (conversion when a
 * TTL is enabled, disabled or moved to another clock; the event-time start).
 * Not part of the public API.
 *
 * @module
 */

import type { StateKind } from "../api/state.ts";
import type { Key } from "./key_group.ts";
import type { InternedKey, KeyInterner } from "./_key_interner.ts";
import { isExpired, isSingle, type StateTable, type TtlCell } from "./_heap_state_base.ts";
import type {
  KeyedStateSnapshotState,
  KeyGroupEntries,
  SnapshotVersion,
} from "./keyed_state_snapshot.ts";

/** The entries of one (key group, namespace), column-wise. */
export interface Columns {
  /** Original keys. */
  readonly keys: readonly Key[];
  /** Per key: the value (or accumulator), the list, or `[userKeys, userValues]`. */
  readonly values: readonly unknown[];
  /** Per key, TTL states only: the last-access time(s), ms. */
  readonly timestamps?: readonly unknown[];
}

/** One non-default namespace of a key group, column-wise. */
export interface NamespaceColumns extends Columns {
  /** The namespace, never `""`. */
  readonly namespace: string;
}

/** A key group's entries: the default namespace's columns and the other namespaces. */
export interface GroupColumns extends Columns {
  /** The key group. */
  readonly keyGroup: number;
  /** The non-default namespaces holding entries in this key group (format version 2). */
  readonly namespaces?: readonly NamespaceColumns[];
}

/** How entries are filtered while copied: the TTL and time, or `undefined` to keep all. */
export interface Expiry {
  /** Lifetime, ms. */
  readonly ttlMs: number;
  /** The current time of the TTL's clock, ms. */
  readonly now: number;
}

/** Whether `kind`'s values may be changed in place by user functions (copy-on-write). */
function isAccumulating(kind: StateKind): boolean {
  return kind === "reducing" || kind === "aggregating";
}

/** Remembers every object among `values` as shared with a snapshot. */
function markShared(table: StateTable, values: readonly unknown[]): void {
  const shared = table.shared;
  for (const v of values) if (typeof v === "object" && v !== null) shared.add(v);
}

/**
 * Captures one state: every key group of its table with a live entry, in
 * ascending order (`start` is the backend's first key group), dropping and
 * deleting expired entries and emptied namespace maps.
 */
export function snapshotTable(
  table: StateTable,
  start: number,
  expiry: Expiry | undefined,
): KeyedStateSnapshotState {
  const keyGroups: KeyGroupEntries[] = [];
  const { maps, nsMaps } = table;
  for (let i = 0; i < maps.length; i++) {
    const m = maps[i];
    const byNamespace = nsMaps[i];
    if ((m === undefined || m.size === 0) && byNamespace === undefined) continue;
    const group = snapshotGroup(table, start + i, m, byNamespace, expiry);
    if (byNamespace?.size === 0) nsMaps[i] = undefined;
    if (group !== undefined) keyGroups.push(group);
  }
  return table.cells
    ? { kind: table.kind, ttl: true, ttlTimeCharacteristic: table.cellTime, keyGroups }
    : { kind: table.kind, ttl: false, keyGroups };
}

/**
 * Copies one key group's entries (default namespace from `m`, the others
 * from `byNamespace`) into columns, dropping (and deleting) expired entries.
 * Returns `undefined` when nothing is left.
 */
export function snapshotGroup(
  table: StateTable,
  keyGroup: number,
  m: Map<InternedKey, unknown> | undefined,
  byNamespace: Map<string, Map<InternedKey, unknown>> | undefined,
  expiry: Expiry | undefined,
): GroupColumns | undefined {
  const main = m === undefined || m.size === 0 ? undefined : columnsOf(table, m, expiry);
  let namespaces: NamespaceColumns[] | undefined;
  if (byNamespace !== undefined) {
    for (const [namespace, nm] of byNamespace) {
      const columns = columnsOf(table, nm, expiry);
      if (nm.size === 0) byNamespace.delete(namespace);
      if (columns !== undefined) (namespaces ??= []).push({ namespace, ...columns });
    }
  }
  if (namespaces === undefined) return main === undefined ? undefined : { keyGroup, ...main };
  const empty: Columns = table.cells
    ? { keys: [], values: [], timestamps: [] }
    : { keys: [], values: [] };
  return { keyGroup, ...(main ?? empty), namespaces };
}

/**
 * Copies one map into columns, dropping (and deleting) expired entries.
 * Allocates per entry only for list and map states and for TTL states.
 */
function columnsOf(
  table: StateTable,
  m: Map<InternedKey, unknown>,
  expiry: Expiry | undefined,
): Columns | undefined {
  if (!table.cells) {
    // Bulk copies through the Map iterators: no per-entry closure or growth.
    // Identities are keys (primitives, canonical tuples): copied as they are.
    const keys: Key[] = Array.from(m.keys());
    let values: unknown[];
    switch (table.kind) {
      case "value":
        values = Array.from(m.values());
        break;
      case "reducing":
      case "aggregating":
        values = Array.from(m.values());
        markShared(table, values);
        break;
      case "list":
        values = Array.from(m.values(), (v) => (v as unknown[]).slice());
        break;
      case "map":
        values = Array.from(m.values(), (v) => {
          const inner = v as Map<unknown, unknown>;
          return [Array.from(inner.keys()), Array.from(inner.values())];
        });
        break;
    }
    return keys.length === 0 ? undefined : { keys, values };
  }
  const keys: Key[] = [];
  const values: unknown[] = [];
  const timestamps: unknown[] = [];
  // A restored state not registered yet has no known TTL: everything is kept.
  const ttlMs = expiry?.ttlMs ?? Infinity;
  const now = expiry?.now ?? NaN;
  switch (table.kind) {
    case "value":
    case "reducing":
    case "aggregating":
      m.forEach((v, sk) => {
        const cell = v as TtlCell<unknown>;
        if (isExpired(cell.t, now, ttlMs)) {
          m.delete(sk);
          return;
        }
        keys.push(sk);
        values.push(cell.v);
        timestamps.push(cell.t);
      });
      if (isAccumulating(table.kind)) markShared(table, values);
      break;
    case "list":
      m.forEach((v, sk) => {
        const items: unknown[] = [];
        const times: number[] = [];
        for (const cell of v as TtlCell<unknown>[]) {
          if (isExpired(cell.t, now, ttlMs)) continue;
          items.push(cell.v);
          times.push(cell.t);
        }
        if (items.length === 0) {
          m.delete(sk);
          return;
        }
        keys.push(sk);
        values.push(items);
        timestamps.push(times);
      });
      break;
    case "map":
      m.forEach((v, sk) => {
        const inner = v as Map<unknown, TtlCell<unknown>>;
        const userKeys: unknown[] = [];
        const userValues: unknown[] = [];
        const times: number[] = [];
        for (const [k, cell] of inner) {
          if (isExpired(cell.t, now, ttlMs)) {
            inner.delete(k);
            continue;
          }
          userKeys.push(k);
          userValues.push(cell.v);
          times.push(cell.t);
        }
        if (userKeys.length === 0) {
          m.delete(sk);
          return;
        }
        keys.push(sk);
        values.push([userKeys, userValues]);
        timestamps.push(times);
      });
      break;
  }
  return keys.length === 0 ? undefined : { keys, values, timestamps };
}

/** Where in a snapshot a malformed entry is, for messages. */
interface Place {
  readonly keyGroup: number;
  /** `undefined` for the default namespace. */
  readonly namespace?: string;
}

function malformed(name: string, place: Place, what: string, value: unknown): Error {
  let shown: string;
  try {
    shown = JSON.stringify(value, (_k, v) => typeof v === "bigint" ? `${v}n` : v);
  } catch {
    shown = String(value);
  }
  const ns = place.namespace === undefined ? "" : `, namespace ${JSON.stringify(place.namespace)}`;
  return new Error(
    `Malformed snapshot of keyed state '${name}', key group ${place.keyGroup}${ns}: ${what}, current value is ${shown}`,
  );
}

/** How {@linkcode loadTable} stores entries: key identities and TTL stamps. */
export interface Stamping {
  /** The time given to entries without a usable timestamp, ms of the table's TTL clock. */
  readonly now: number;
  /** Whether the snapshot's timestamps are of the table's clock (else every entry gets `now`). */
  readonly keepTimes: boolean;
  /** The backend's interner, which gives each restored key its identity in the tables. */
  readonly interner: KeyInterner;
}

/**
 * Loads the key groups of `state` within `[start, end]` into `table`
 * (others are another subtask's), merging with what is there.
 * @throws {Error} for a malformed group, or namespaces in a version 1
 * snapshot, naming state, key group and namespace.
 */
export function loadTable(
  table: StateTable,
  state: KeyedStateSnapshotState,
  [start, end]: readonly [number, number],
  stamping: Stamping,
  version: SnapshotVersion,
): void {
  for (const group of state.keyGroups) {
    const keyGroup = group.keyGroup;
    if (!(keyGroup >= start && keyGroup <= end)) continue;
    if (version === 1 && group.namespaces !== undefined) {
      throw malformed(
        table.name,
        group,
        "a version 1 snapshot has no namespaces",
        `${group.namespaces.length} namespace(s)`,
      );
    }
    const i = keyGroup - start;
    const m = table.maps[i] ??= new Map();
    const byNamespace = table.nsMaps[i] ??= new Map();
    loadGroup(
      table,
      m,
      (namespace) => {
        let nm = byNamespace.get(namespace);
        if (nm === undefined) byNamespace.set(namespace, nm = new Map());
        return nm;
      },
      group,
      stamping,
    );
    for (const [namespace, nm] of byNamespace) if (nm.size === 0) byNamespace.delete(namespace);
    if (byNamespace.size === 0) table.nsMaps[i] = undefined;
  }
}

/**
 * Loads one key group's entries (default namespace into `m`, the others
 * through `namespaceMap`) in the table's representation.
 * @throws {Error} for a malformed group, naming state, key group and namespace.
 */
function loadGroup(
  table: StateTable,
  m: Map<InternedKey, unknown>,
  namespaceMap: (namespace: string) => Map<InternedKey, unknown>,
  group: GroupColumns,
  stamping: Stamping,
): void {
  loadColumns(table, m, group, { keyGroup: group.keyGroup }, stamping);
  const namespaces: unknown = group.namespaces;
  if (namespaces === undefined) return;
  if (!Array.isArray(namespaces)) {
    throw malformed(table.name, group, "'namespaces' must be an array", namespaces);
  }
  for (const entry of namespaces as NamespaceColumns[]) {
    const namespace: unknown = entry?.namespace;
    if (typeof namespace !== "string" || namespace.length === 0) {
      throw malformed(table.name, group, "a namespace must be a non-empty string", namespace);
    }
    loadColumns(table, namespaceMap(namespace), entry, {
      keyGroup: group.keyGroup,
      namespace,
    }, stamping);
  }
}

function loadColumns(
  table: StateTable,
  m: Map<InternedKey, unknown>,
  columns: Columns,
  place: Place,
  stamping: Stamping,
): void {
  const { keys, values, timestamps } = columns;
  const name = table.name;
  if (!Array.isArray(keys) || !Array.isArray(values) || keys.length !== values.length) {
    throw malformed(name, place, "'keys' and 'values' must be arrays of equal length", columns);
  }
  if (
    timestamps !== undefined && (!Array.isArray(timestamps) || timestamps.length !== keys.length)
  ) {
    throw malformed(name, place, "'timestamps' must be an array as long as 'keys'", columns);
  }
  const cells = table.cells;
  const now = stamping.now;
  const interner = stamping.interner;
  const times = stamping.keepTimes ? timestamps : undefined;
  for (let i = 0; i < keys.length; i++) {
    const sk = interner.identity(keys[i]!);
    const value: unknown = values[i];
    const time: unknown = times?.[i];
    switch (table.kind) {
      case "value":
      case "reducing":
      case "aggregating": {
        if (value === undefined) {
          throw malformed(name, place, `a ${table.kind} state holds no undefined`, value);
        }
        if (isAccumulating(table.kind) && typeof value === "object" && value !== null) {
          table.shared.add(value); // the caller still holds the snapshot
        }
        m.set(sk, cells ? { v: value, t: typeof time === "number" ? time : now } : value);
        break;
      }
      case "list": {
        if (!Array.isArray(value) || value.length === 0) {
          throw malformed(name, place, "a list must be a non-empty array", value);
        }
        const itemTimes = Array.isArray(time) ? time : undefined;
        m.set(sk, cells ? value.map((v, j) => ({ v, t: itemTimes?.[j] ?? now })) : value.slice());
        break;
      }
      case "map": {
        const [userKeys, userValues] = Array.isArray(value) ? value : [];
        if (
          !Array.isArray(userKeys) || !Array.isArray(userValues) ||
          userKeys.length !== userValues.length || userKeys.length === 0
        ) {
          throw malformed(name, place, "a map must be [userKeys[], userValues[]]", value);
        }
        const entryTimes = Array.isArray(time) ? time : undefined;
        const inner = new Map<unknown, unknown>();
        for (let j = 0; j < userKeys.length; j++) {
          inner.set(
            userKeys[j],
            cells ? { v: userValues[j], t: entryTimes?.[j] ?? now } : userValues[j],
          );
        }
        m.set(sk, inner);
        break;
      }
    }
  }
}

/** Every (key group, namespace) map of a table. */
function* allMaps(table: StateTable): Generator<Map<InternedKey, unknown>> {
  for (const m of table.maps) if (m !== undefined) yield m;
  for (const byNamespace of table.nsMaps) {
    if (byNamespace !== undefined) yield* byNamespace.values();
  }
}

/**
 * Switches a table between plain values and TTL cells stamped `now` (TTL
 * enabled or disabled across a restore).
 */
export function convertTable(table: StateTable, toCells: boolean, now: number): void {
  const wrap = (v: unknown): unknown => toCells ? { v, t: now } : (v as TtlCell<unknown>).v;
  for (const m of allMaps(table)) {
    for (const [sk, v] of m) {
      if (isSingle(table.kind)) {
        m.set(sk, wrap(v));
      } else if (table.kind === "list") {
        m.set(sk, (v as unknown[]).map(wrap));
      } else {
        const inner = v as Map<unknown, unknown>;
        for (const [k, x] of inner) inner.set(k, wrap(x));
      }
    }
  }
  table.cells = toCells;
}

/** Calls `f` on every TTL cell of a table whose values are cells. */
export function forEachCell(table: StateTable, f: (cell: TtlCell<unknown>) => void): void {
  if (!table.cells) return;
  for (const m of allMaps(table)) {
    for (const v of m.values()) {
      if (isSingle(table.kind)) f(v as TtlCell<unknown>);
      else if (table.kind === "list") (v as TtlCell<unknown>[]).forEach(f);
      else (v as Map<unknown, TtlCell<unknown>>).forEach(f);
    }
  }
}
