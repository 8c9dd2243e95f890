/**
 * Internal: scans of one state's table in `HeapKeyedStateBackend`: the keys
 * (and namespaces) with a live entry, and the number of entries. Not part
 * of the public API.
 *
 * @module
 */

import type { StateKind } from "../api/state.ts";
import type { Key } from "./key_group.ts";
import type { InternedKey } from "./_key_interner.ts";
import { VOID_NAMESPACE } from "./internal_state.ts";
import { isExpired, isSingle, type StateTable, type TtlCell } from "./_heap_state_base.ts";
import type { Expiry } from "./_heap_snapshot.ts";

/** Whether a TTL entry (a cell, a list of cells or a map of cells) has a live cell. */
function hasLiveCell(kind: StateKind, v: unknown, ttlMs: number, now: number): boolean {
  if (isSingle(kind)) return !isExpired((v as TtlCell<unknown>).t, now, ttlMs);
  if (kind === "list") {
    return (v as TtlCell<unknown>[]).some((c) => !isExpired(c.t, now, ttlMs));
  }
  for (const c of (v as Map<unknown, TtlCell<unknown>>).values()) {
    if (!isExpired(c.t, now, ttlMs)) return true;
  }
  return false;
}

/** Whether a stored entry has a live value (always, without TTL or a known one). */
function isLive(table: StateTable, expiry: Expiry | undefined, stored: unknown): boolean {
  return !table.cells || expiry === undefined ||
    hasLiveCell(table.kind, stored, expiry.ttlMs, expiry.now);
}

/** The keys with a live entry in `namespace`, key group by key group. */
export function* liveKeys(
  table: StateTable,
  namespace: string,
  expiry: Expiry | undefined,
): Generator<Key> {
  for (let i = 0; i < table.maps.length; i++) {
    const m = namespace === VOID_NAMESPACE ? table.maps[i] : table.nsMaps[i]?.get(namespace);
    if (m === undefined) continue;
    for (const [sk, v] of m) if (isLive(table, expiry, v)) yield sk; // an identity is the key
  }
}

/** Every (key, namespace) with a live entry, key group by key group, the default namespace first. */
export function* liveKeysAndNamespaces(
  table: StateTable,
  expiry: Expiry | undefined,
): Generator<[Key, string]> {
  // Copied per map before yielding: the caller may change the state meanwhile.
  const live = (m: Map<InternedKey, unknown>, namespace: string) =>
    Array.from(m)
      .filter(([, v]) => isLive(table, expiry, v))
      .map(([sk]): [Key, string] => [sk, namespace]);
  for (let i = 0; i < table.maps.length; i++) {
    const m = table.maps[i];
    if (m !== undefined) yield* live(m, VOID_NAMESPACE);
    for (const [namespace, nm] of table.nsMaps[i] ?? []) yield* live(nm, namespace);
  }
}

/** The number of (key, namespace) entries, expired but uncleaned ones included. */
export function countEntries(table: StateTable): number {
  let n = 0;
  for (const m of table.maps) n += m?.size ?? 0;
  for (const byNamespace of table.nsMaps) {
    for (const m of byNamespace?.values() ?? []) n += m.size;
  }
  return n;
}
