/**
 * Internal: moving entries between {@linkcode SqliteKeyedStateBackend}'s
 * cache (`_entry_cache.ts`) and SQLite: loading the entry of (current key,
 * namespace) on a miss, creating a blank one for a blind write, and writing
 * dirty entries back in one transaction (Flink's RocksDB backend reads and
 * writes through `RocksDB.get`/`WriteBatch`; here a batch is a SQLite
 * transaction). Not part of the public API.
 *
 * ## Invariants
 *
 * - A loaded entry is clean; a blank entry is dirty and absent, so written
 *   back alone it deletes whatever row the key had (for a map, all of its
 *   user entries: `cleared`).
 * - A non-map entry is one row (user key `""`); an absent value deletes it.
 *   A map entry is one row per user key; a cleared map entry deletes its
 *   rows first, then writes its user entries; otherwise only the changed
 *   user keys are written or deleted.
 * - A batch is written in primary-key order (table, key group, key), so
 *   neighbouring rows share B-tree pages.
 *
 * @module
 */

import { decode, encode } from "../../actor/codec.ts";
import type { CachedEntry, EntryCache } from "./_entry_cache.ts";
import { escapeText, primitiveOfText, primitiveText } from "./_row_keys.ts";
import type { SqliteKeyContext, SqliteTable } from "./_sqlite_state_base.ts";
import type { SqliteStore } from "./_sqlite_store.ts";

/**
 * Reads (current key, `namespace`) of `table` from SQLite and adds it to
 * `cache` as a clean entry (value `undefined` when there is no row; a map's
 * weight is 1 + its user entries).
 *
 * @returns the cached entry.
 * @throws {TypeError} when the current key has no text form (`_row_keys.ts`).
 */
export function loadEntry(
  cache: EntryCache,
  table: SqliteTable,
  ctx: SqliteKeyContext,
  namespace: string,
): CachedEntry {
  const kText = primitiveText(ctx.keyId, "A key");
  const nsText = escapeText(namespace);
  let value: unknown;
  let weight = 1;
  if (table.kind === "map") {
    const rows = table.stmts.getAll.all(ctx.keyGroup, kText, nsText) as unknown as {
      uk: string;
      v: Uint8Array;
    }[];
    if (rows.length > 0) {
      const inner = new Map<unknown, unknown>();
      for (const row of rows) inner.set(primitiveOfText(row.uk), decode(row.v));
      value = inner;
      weight += inner.size;
    }
  } else {
    const row = table.stmts.get.get(ctx.keyGroup, kText, nsText, "") as
      | { v: Uint8Array }
      | undefined;
    if (row !== undefined) value = decode(row.v);
  }
  return cache.add({
    owner: table.cache,
    keyGroup: ctx.keyGroup,
    keyId: ctx.keyId,
    namespace,
    value,
    dirty: false,
    ref: false,
    weight,
    changed: undefined,
    cleared: false,
  });
}

/**
 * Adds a blank entry of (current key, `namespace`) of `table` to `cache`
 * without reading SQLite: absent and dirty (a map's also `cleared`).
 *
 * @returns the cached entry.
 */
export function blankEntry(
  cache: EntryCache,
  table: SqliteTable,
  ctx: SqliteKeyContext,
  namespace: string,
): CachedEntry {
  return cache.add({
    owner: table.cache,
    keyGroup: ctx.keyGroup,
    keyId: ctx.keyId,
    namespace,
    value: undefined,
    dirty: true,
    ref: false,
    weight: 1,
    changed: undefined,
    cleared: table.kind === "map",
  });
}

/**
 * Writes `entries` back to SQLite in one transaction, in primary-key order.
 *
 * @param tableOf the table record of a table id (every entry's owner is registered).
 * @throws {TypeError} when a key or map user key has no text form; the transaction is rolled back.
 */
export function writeBackEntries(
  store: SqliteStore,
  tableOf: (id: number) => SqliteTable,
  entries: readonly CachedEntry[],
): void {
  const rows = entries.map((e) => ({ e, kText: primitiveText(e.keyId, "A key") }));
  rows.sort((a, b) =>
    a.e.owner.tableId - b.e.owner.tableId || a.e.keyGroup - b.e.keyGroup ||
    (a.kText < b.kText ? -1 : a.kText > b.kText ? 1 : 0)
  );
  store.transaction(() => {
    for (const { e, kText } of rows) {
      const table = tableOf(e.owner.tableId);
      const { put, del, delEntry } = table.stmts;
      const nsText = escapeText(e.namespace);
      if (table.kind !== "map") {
        if (e.value === undefined) del.run(e.keyGroup, kText, nsText, "");
        else put.run(e.keyGroup, kText, nsText, "", encode(e.value));
        continue;
      }
      const inner = e.value as Map<unknown, unknown> | undefined;
      if (e.cleared) delEntry.run(e.keyGroup, kText, nsText);
      const userKeys = e.cleared ? inner?.keys() ?? [] : e.changed ?? [];
      for (const uk of userKeys) {
        const ukText = primitiveText(uk, "A map state's user key");
        const v = inner?.get(uk);
        if (v === undefined) del.run(e.keyGroup, kText, nsText, ukText);
        else put.run(e.keyGroup, kText, nsText, ukText, encode(v));
      }
    }
  });
}
