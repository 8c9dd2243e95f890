/**
 * Internal: conversion between the live tables of
 * `HeapKeyedStateBackend` and the column-wise key groups of a keyed state
 * snapshot (see `KeyGroupEntries` in `heap_keyed_backend.ts` for the shapes).
 * Not part of the public API.
 *
 * @module
 */

import type { StateKind } from "../api/state.ts";
import { type Key, keyOfStateKey, type StateKey, stateKeyOf } from "./key_group.ts";
import type { StateTable, TtlCell } from "./_heap_states.ts";

/** A key group's entries, column-wise; see `KeyGroupEntries` in `heap_keyed_backend.ts`. */
export interface GroupColumns {
  /** The key group. */
  readonly keyGroup: number;
  /** Original keys. */
  readonly keys: readonly Key[];
  /** Per key: the value, the list, or `[userKeys, userValues]`. */
  readonly values: readonly unknown[];
  /** Per key, TTL states only: the last-access time(s), ms. */
  readonly timestamps?: readonly unknown[];
}

/**
 * Copies one key group's map into columns, dropping (and deleting) expired
 * entries. Returns `undefined` when nothing is left. Allocates per key only
 * for list and map states and for TTL states.
 */
export function snapshotGroup(
  table: StateTable,
  keyGroup: number,
  m: Map<StateKey, unknown>,
  now: number,
): GroupColumns | undefined {
  if (!table.cells) {
    // Bulk copies through the Map iterators: no per-entry closure or growth.
    const keys = originalKeys(Array.from(m.keys()));
    let values: unknown[];
    switch (table.kind) {
      case "value":
        values = Array.from(m.values());
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
    return keys.length === 0 ? undefined : { keyGroup, keys, values };
  }
  const keys: Key[] = [];
  const values: unknown[] = [];
  const timestamps: unknown[] = [];
  const ttlMs = table.ttl?.ttlMs ?? Infinity; // a restored, unregistered state keeps everything
  switch (table.kind) {
    case "value":
      m.forEach((v, sk) => {
        const cell = v as TtlCell<unknown>;
        if (cell.t + ttlMs <= now) {
          m.delete(sk);
          return;
        }
        keys.push(keyOfStateKey(sk));
        values.push(cell.v);
        timestamps.push(cell.t);
      });
      break;
    case "list":
      m.forEach((v, sk) => {
        const items: unknown[] = [];
        const times: number[] = [];
        for (const cell of v as TtlCell<unknown>[]) {
          if (cell.t + ttlMs <= now) continue;
          items.push(cell.v);
          times.push(cell.t);
        }
        if (items.length === 0) {
          m.delete(sk);
          return;
        }
        keys.push(keyOfStateKey(sk));
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
          if (cell.t + ttlMs <= now) {
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
        keys.push(keyOfStateKey(sk));
        values.push([userKeys, userValues]);
        timestamps.push(times);
      });
      break;
  }
  return keys.length === 0 ? undefined : { keyGroup, keys, values, timestamps };
}

/** Turns state keys into original keys in place; only tuples and NUL-prefixed strings differ. */
function originalKeys(stateKeys: StateKey[]): Key[] {
  for (let i = 0; i < stateKeys.length; i++) {
    const sk = stateKeys[i]!;
    if (typeof sk === "string" && sk.charCodeAt(0) === 0) {
      stateKeys[i] = keyOfStateKey(sk) as StateKey;
    }
  }
  return stateKeys;
}

function malformed(name: string, keyGroup: number, what: string, value: unknown): Error {
  let shown: string;
  try {
    shown = JSON.stringify(value, (_k, v) => typeof v === "bigint" ? `${v}n` : v);
  } catch {
    shown = String(value);
  }
  return new Error(
    `Malformed snapshot of keyed state '${name}', key group ${keyGroup}: ${what}, current value is ${shown}`,
  );
}

/**
 * Loads one key group's columns (with or without timestamps) into `m` in
 * the table's representation; missing timestamps become `now`.
 */
export function loadGroup(
  table: StateTable,
  m: Map<StateKey, unknown>,
  group: GroupColumns,
  now: number,
): void {
  const { keyGroup, keys, values, timestamps } = group;
  const name = table.name;
  if (!Array.isArray(keys) || !Array.isArray(values) || keys.length !== values.length) {
    throw malformed(name, keyGroup, "'keys' and 'values' must be arrays of equal length", group);
  }
  if (
    timestamps !== undefined && (!Array.isArray(timestamps) || timestamps.length !== keys.length)
  ) {
    throw malformed(name, keyGroup, "'timestamps' must be an array as long as 'keys'", group);
  }
  const cells = table.cells;
  for (let i = 0; i < keys.length; i++) {
    const sk = stateKeyOf(keys[i]!);
    const value: unknown = values[i];
    const time: unknown = timestamps?.[i];
    switch (table.kind) {
      case "value": {
        if (value === undefined) {
          throw malformed(name, keyGroup, "a value state holds no undefined", value);
        }
        m.set(sk, cells ? { v: value, t: typeof time === "number" ? time : now } : value);
        break;
      }
      case "list": {
        if (!Array.isArray(value) || value.length === 0) {
          throw malformed(name, keyGroup, "a list must be a non-empty array", value);
        }
        const times = Array.isArray(time) ? time : undefined;
        m.set(sk, cells ? value.map((v, j) => ({ v, t: times?.[j] ?? now })) : value.slice());
        break;
      }
      case "map": {
        const [userKeys, userValues] = Array.isArray(value) ? value : [];
        if (
          !Array.isArray(userKeys) || !Array.isArray(userValues) ||
          userKeys.length !== userValues.length || userKeys.length === 0
        ) {
          throw malformed(name, keyGroup, "a map must be [userKeys[], userValues[]]", value);
        }
        const times = Array.isArray(time) ? time : undefined;
        const inner = new Map<unknown, unknown>();
        for (let j = 0; j < userKeys.length; j++) {
          inner.set(
            userKeys[j],
            cells ? { v: userValues[j], t: times?.[j] ?? now } : userValues[j],
          );
        }
        m.set(sk, inner);
        break;
      }
    }
  }
}

/** Switches a table between plain values and TTL cells (TTL enabled or disabled across a restore). */
export function convertTable(table: StateTable, toCells: boolean, now: number): void {
  const wrap = (v: unknown): unknown => toCells ? { v, t: now } : (v as TtlCell<unknown>).v;
  for (const m of table.maps) {
    if (m === undefined) continue;
    for (const [sk, v] of m) {
      switch (table.kind) {
        case "value":
          m.set(sk, wrap(v));
          break;
        case "list":
          m.set(sk, (v as unknown[]).map(wrap));
          break;
        case "map": {
          const inner = v as Map<unknown, unknown>;
          for (const [k, x] of inner) inner.set(k, wrap(x));
          break;
        }
      }
    }
  }
  table.cells = toCells;
}

/** Whether a TTL entry (value cell, list of cells or map of cells) has a live cell. */
export function hasLiveCell(kind: StateKind, v: unknown, ttlMs: number, now: number): boolean {
  switch (kind) {
    case "value":
      return (v as TtlCell<unknown>).t + ttlMs > now;
    case "list":
      return (v as TtlCell<unknown>[]).some((c) => c.t + ttlMs > now);
    case "map":
      for (const c of (v as Map<unknown, TtlCell<unknown>>).values()) {
        if (c.t + ttlMs > now) return true;
      }
      return false;
  }
}
