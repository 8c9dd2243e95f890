/**
 * Internal: the scans of {@linkcode SqliteKeyedStateBackend} over one
 * state's table (Flink's `getKeys`, `getKeysAndNamespaces` and
 * `numKeyValueStateEntries`, which RocksDB answers with iterators over a
 * column family). Each function queries SQLite only: the caller writes the
 * cache's dirty entries back first, so the database holds the whole state.
 * Not part of the public API.
 *
 * ## Design
 *
 * - `keys` and `keysAndNamespaces` stream the rows (`StatementSync.iterate`),
 *   so memory does not grow with the state; they cost O(rows of the state),
 *   not O(key groups) as in the heap backend.
 * - A map state has one row per user key: further rows of a (key,
 *   namespace) already found live are skipped; a key is live when any of its
 *   rows holds a live TTL cell.
 * - Expired entries are skipped, not removed (removal happens when an entry
 *   is touched, as in the heap backend).
 * - `numKeys` and `numEntries` count in SQLite and count expired entries not
 *   yet removed (an upper bound with TTL), as Flink's RocksDB backend does.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
import { decode } from "../../actor/codec.ts";
import type { Key } from "../key_group.ts";
import { isExpired, type TtlCell } from "../_heap_state_base.ts";
import { escapeText, keyOfText, unescapeText } from "./_row_keys.ts";
import type { SqliteTable } from "./_sqlite_state_base.ts";

/** How a scan tells live TTL cells from expired ones. */
export interface ScanClock {
  /** The state's clock now, ms (ignored for states without TTL). */
  readonly now: number;
  /** A stored TTL time as the current clock sees it (`-Infinity` before event time becomes its start). */
  readonly liveTime: (t: number) => number;
}

/** Whether a stored value (cell, list of cells, or one map row's cell) has a live cell at `clock.now`. */
function isLive(table: SqliteTable, stored: unknown, clock: ScanClock): boolean {
  if (!table.cells || table.ttl === undefined) return true;
  const ttlMs = table.ttl.ttlMs;
  const live = (c: TtlCell<unknown>) => !isExpired(clock.liveTime(c.t), clock.now, ttlMs);
  return table.kind === "list"
    ? (stored as TtlCell<unknown>[]).some(live)
    : live(stored as TtlCell<unknown>);
}

/**
 * The keys (original form) with a live entry in `table` under `namespace`,
 * in key-group order, streamed from SQLite.
 *
 * @param db the backend's connection (the cache written back beforehand).
 * @param table the state's table record.
 * @param namespace the namespace, unescaped.
 * @param clock the state's clock for TTL.
 * @returns an iterator over the keys; changing state while iterating may or may not show the change.
 */
export function scanKeys(
  db: DatabaseSync,
  table: SqliteTable,
  namespace: string,
  clock: ScanClock,
): IterableIterator<Key> {
  const rows = db.prepare(
    `SELECT k${table.cells ? ", v" : ""} FROM s${table.id} WHERE ns = ? ORDER BY kg, k`,
  ).iterate(escapeText(namespace)) as unknown as Iterable<{ k: string; v?: Uint8Array }>;
  return liveKeys(table, rows, clock);
}

function* liveKeys(
  table: SqliteTable,
  rows: Iterable<{ k: string; v?: Uint8Array }>,
  clock: ScanClock,
): Generator<Key> {
  let last: string | undefined;
  for (const row of rows) {
    if (row.k === last) continue; // further user entries of a map already found live
    if (!isLive(table, table.cells ? decode(row.v!) : undefined, clock)) continue;
    last = row.k;
    yield keyOfText(row.k);
  }
}

/**
 * Every (key, namespace) with a live entry in `table`, key group by key
 * group, streamed from SQLite.
 *
 * @param db the backend's connection (the cache written back beforehand).
 * @param table the state's table record.
 * @param clock the state's clock for TTL.
 * @returns an iterator over `[key, namespace]` pairs.
 */
export function scanKeysAndNamespaces(
  db: DatabaseSync,
  table: SqliteTable,
  clock: ScanClock,
): IterableIterator<[Key, string]> {
  const rows = db.prepare(
    `SELECT k, ns${table.cells ? ", v" : ""} FROM s${table.id} ORDER BY kg, ns, k`,
  ).iterate() as unknown as Iterable<{ k: string; ns: string; v?: Uint8Array }>;
  return liveKeysAndNamespaces(table, rows, clock);
}

function* liveKeysAndNamespaces(
  table: SqliteTable,
  rows: Iterable<{ k: string; ns: string; v?: Uint8Array }>,
  clock: ScanClock,
): Generator<[Key, string]> {
  let lastK: string | undefined;
  let lastNs: string | undefined;
  for (const row of rows) {
    if (row.k === lastK && row.ns === lastNs) continue;
    if (!isLive(table, table.cells ? decode(row.v!) : undefined, clock)) continue;
    lastK = row.k;
    lastNs = row.ns;
    yield [keyOfText(row.k), unescapeText(row.ns)];
  }
}

/**
 * The number of keys with an entry in `table`'s default namespace, expired
 * entries not yet removed included.
 *
 * @returns a count of keys, O(rows of the state) in SQLite.
 */
export function countKeys(db: DatabaseSync, table: SqliteTable): number {
  const sql = table.kind === "map"
    ? `SELECT count(*) AS n FROM (SELECT DISTINCT kg, k FROM s${table.id} WHERE ns = '')`
    : `SELECT count(*) AS n FROM s${table.id} WHERE ns = ''`;
  return Number((db.prepare(sql).get() as { n: number }).n);
}

/**
 * The number of (key, namespace) entries in `table` (a map's user entries
 * of one key and namespace count once), expired entries not yet removed
 * included.
 *
 * @returns a count of entries, O(rows of the state) in SQLite.
 */
export function countEntries(db: DatabaseSync, table: SqliteTable): number {
  const sql = table.kind === "map"
    ? `SELECT count(*) AS n FROM (SELECT DISTINCT kg, k, ns FROM s${table.id})`
    : `SELECT count(*) AS n FROM s${table.id}`;
  return Number((db.prepare(sql).get() as { n: number }).n);
}
