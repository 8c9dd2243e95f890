/**
 * Internal: the snapshot of {@linkcode SqliteKeyedStateBackend} (Flink's
 * `RocksFullSnapshotStrategy`: a RocksDB snapshot taken synchronously,
 * iterated and written asynchronously).
 *
 * ## Design
 *
 * - **Synchronous part** (in `snapshot()`): the cache writes every dirty
 *   entry back in one transaction, O(changed entries); then a read view is
 *   opened (`SqliteStore.openView`: a second connection whose read
 *   transaction is pinned before `snapshot()` returns). The TTL clocks'
 *   times are captured too.
 * - **Isolation.** The database is in WAL mode. A read transaction sees the
 *   database as of its first read, whatever the writing connection commits
 *   afterwards: SQLite keeps the pages the reader needs in the WAL (and
 *   stops checkpointing past the reader's mark) until the reader ends. So
 *   writes, deletes and write-backs after `snapshot()` never reach the view.
 * - **Asynchronous part** (`write()`): reads the view key group by key
 *   group, every state per key group, builds canonical
 *   {@linkcode KeyedStateSnapshot}s (kind `keyed`), and writes one private
 *   blob per chunk of consecutive key groups holding about `chunkRows`
 *   rows, yielding to the event loop after each chunk. Each blob is a
 *   complete version 2 snapshot of its key-group range (every state is
 *   listed, with the key groups of that range), so memory stays bounded by
 *   a chunk, and any backend restores the set of handles. Expired TTL
 *   entries are left out (they are not deleted from the database: the view
 *   is read-only).
 *
 * @module
 */

import type { DatabaseSync, StatementSync } from "node:sqlite";
import { decode, encode } from "../../actor/codec.ts";
import type { StateKind } from "../../api/state.ts";
import type {
  SnapshotResult,
  StateHandle,
  StateWriter,
} from "../../checkpoint/snapshot_contract.ts";
import { isExpired, isSingle, type TtlCell } from "../_heap_state_base.ts";
import type {
  KeyedStateSnapshot,
  KeyedStateSnapshotState,
  KeyGroupEntries,
  NamespaceEntries,
  TtlTime,
} from "../keyed_state_snapshot.ts";
import type { Key } from "../key_group.ts";
import { keyOfText, primitiveOfText, unescapeText } from "./_row_keys.ts";
import type { SqliteStore } from "./_sqlite_store.ts";
import type { SqliteTable } from "./_sqlite_state_base.ts";
import type { TtlClocks } from "../_ttl_clocks.ts";

/** What a snapshot captured of one state synchronously. */
export interface CapturedState {
  /** The state's name. */
  readonly name: string;
  /** Its kind. */
  readonly kind: StateKind;
  /** Its table id. */
  readonly id: number;
  /** Whether its rows hold TTL cells. */
  readonly cells: boolean;
  /** The cells' clock. */
  readonly cellTime: TtlTime;
  /** How to filter expired entries (registered TTL states), or `undefined` to keep all. */
  readonly expiry: { readonly ttlMs: number; readonly now: number } | undefined;
}

/**
 * What a snapshot keeps of each table record, taken in its synchronous
 * part: identity, TTL form, and the expiry of registered TTL states as of
 * now (their clock read once).
 *
 * @returns one {@linkcode CapturedState} per table, in the same order.
 */
export function captureStates(
  tables: readonly SqliteTable[],
  clocks: TtlClocks,
): CapturedState[] {
  return tables.map((t) => ({
    name: t.name,
    kind: t.kind,
    id: t.id,
    cells: t.cells,
    cellTime: t.cellTime,
    expiry: t.cells && t.ttl !== undefined
      ? { ttlMs: t.ttl.ttlMs, now: clocks.now(t.ttl.time) }
      : undefined,
  }));
}

/** Everything the asynchronous part needs. */
export interface SqliteSnapshotCapture {
  /** The backend's store (owns the view). */
  readonly store: SqliteStore;
  /** The pinned read view. */
  readonly view: DatabaseSync;
  /** The states, in registration order. */
  readonly states: readonly CapturedState[];
  /** The backend's key-group range. */
  readonly range: readonly [number, number];
  /** The max parallelism. */
  readonly maxParallelism: number;
  /** The operator uid. */
  readonly uid: string;
  /** The event-time start at the capture (`-Infinity` times become it), if known. */
  readonly eventTimeStart: number | undefined;
  /** Rows per written blob, about. */
  readonly chunkRows: number;
  /** Called once the view is released (written, discarded or failed). */
  readonly onRelease: () => void;
}

/** Name of one written blob (the writer prefixes subtask and attempt). */
export function chunkBlobName(uid: string, first: number, last: number): string {
  return `keyed-${encodeURIComponent(uid)}-kg${first}-${last}`;
}

interface Row {
  kg: number;
  k: string;
  ns: string;
  uk: string;
  v: Uint8Array;
}

interface Columns {
  keys: Key[];
  values: unknown[];
  timestamps?: unknown[];
}

function emptyColumns(cells: boolean): Columns {
  return cells ? { keys: [], values: [], timestamps: [] } : { keys: [], values: [] };
}

/** The {@linkcode SnapshotResult} of a capture. */
export function sqliteSnapshotResult(capture: SqliteSnapshotCapture): SnapshotResult {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    capture.store.closeView(capture.view);
    capture.onRelease();
  };
  return {
    async write(writer: StateWriter): Promise<StateHandle[]> {
      if (released) {
        throw new Error(
          `Keyed state snapshot of '${capture.uid}' (checkpoint ${writer.checkpointId}) was discarded before write()`,
        );
      }
      if (capture.store.closed) {
        release();
        throw new Error(
          `Keyed state snapshot of '${capture.uid}' (checkpoint ${writer.checkpointId}) cannot be written: its SQLite keyed state backend was disposed`,
        );
      }
      try {
        return await writeChunks(capture, writer);
      } finally {
        release();
      }
    },
    discard: release,
  };
}

async function writeChunks(
  capture: SqliteSnapshotCapture,
  writer: StateWriter,
): Promise<StateHandle[]> {
  const { view, states, range: [start, end] } = capture;
  const scans = states.map((s) =>
    view.prepare(`SELECT kg, k, ns, uk, v FROM s${s.id} WHERE kg = ? ORDER BY k, ns, uk`)
  );
  const handles: StateHandle[] = [];
  let first = start;
  let rows = 0;
  let groups: KeyGroupEntries[][] = states.map(() => []);
  for (let kg = start; kg <= end; kg++) {
    for (let i = 0; i < states.length; i++) {
      const [group, n] = readGroup(states[i]!, scans[i]!, kg, capture.eventTimeStart);
      rows += n;
      if (group !== undefined) groups[i]!.push(group);
    }
    if (rows < capture.chunkRows && kg < end) continue;
    const snapshot: KeyedStateSnapshot = {
      version: 2,
      maxParallelism: capture.maxParallelism,
      keyGroupRange: [first, kg],
      states: Object.fromEntries(states.map((s, i) => [s.name, stateOf(s, groups[i]!)])),
    };
    const bytes = encode(snapshot);
    if (writer.cancelled) return [];
    handles.push(
      await writer.writePrivate(
        chunkBlobName(capture.uid, first, kg),
        bytes,
        "keyed",
        capture.uid,
        [first, kg],
      ),
    );
    first = kg + 1;
    rows = 0;
    groups = states.map(() => []);
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (writer.cancelled) return [];
  }
  return handles;
}

function stateOf(s: CapturedState, keyGroups: KeyGroupEntries[]): KeyedStateSnapshotState {
  return s.cells
    ? { kind: s.kind, ttl: true, ttlTimeCharacteristic: s.cellTime, keyGroups }
    : { kind: s.kind, ttl: false, keyGroups };
}

/** One key group of one state, as canonical columns; `undefined` when nothing live. Also returns the rows read. */
function readGroup(
  s: CapturedState,
  scan: StatementSync,
  kg: number,
  eventTimeStart: number | undefined,
): [KeyGroupEntries | undefined, number] {
  const rows = scan.all(kg) as unknown as Row[];
  if (rows.length === 0) return [undefined, 0];
  const time = (t: number) => t === -Infinity && eventTimeStart !== undefined ? eventTimeStart : t;
  const live = (cell: TtlCell<unknown>) =>
    s.expiry === undefined || !isExpired(time(cell.t), s.expiry.now, s.expiry.ttlMs);
  let main: Columns | undefined;
  const byNamespace = new Map<string, Columns>();
  const columnsFor = (nsText: string): Columns => {
    if (nsText === "") return main ??= emptyColumns(s.cells);
    const ns = unescapeText(nsText);
    let c = byNamespace.get(ns);
    if (c === undefined) byNamespace.set(ns, c = emptyColumns(s.cells));
    return c;
  };
  const push = (nsText: string, kText: string, value: unknown, t: unknown) => {
    const c = columnsFor(nsText);
    c.keys.push(keyOfText(kText));
    c.values.push(value);
    c.timestamps?.push(t);
  };
  if (isSingle(s.kind) || s.kind === "list") {
    for (const row of rows) {
      const stored = decode(row.v);
      if (!s.cells) push(row.ns, row.k, stored, undefined);
      else if (isSingle(s.kind)) {
        const cell = stored as TtlCell<unknown>;
        if (live(cell)) push(row.ns, row.k, cell.v, time(cell.t));
      } else {
        const cells = (stored as TtlCell<unknown>[]).filter(live);
        if (cells.length > 0) {
          push(row.ns, row.k, cells.map((c) => c.v), cells.map((c) => time(c.t)));
        }
      }
    }
  } else {
    // Map state: the rows of one (k, ns) are adjacent (primary key order).
    let i = 0;
    while (i < rows.length) {
      const { k, ns } = rows[i]!;
      const userKeys: unknown[] = [];
      const userValues: unknown[] = [];
      const times: number[] = [];
      for (; i < rows.length && rows[i]!.k === k && rows[i]!.ns === ns; i++) {
        const row = rows[i]!;
        const stored = decode(row.v);
        if (s.cells) {
          const cell = stored as TtlCell<unknown>;
          if (!live(cell)) continue;
          userValues.push(cell.v);
          times.push(time(cell.t));
        } else {
          userValues.push(stored);
        }
        userKeys.push(primitiveOfText(row.uk));
      }
      if (userKeys.length > 0) push(ns, k, [userKeys, userValues], s.cells ? times : undefined);
    }
  }
  if (main === undefined && byNamespace.size === 0) return [undefined, rows.length];
  const namespaces: NamespaceEntries[] = [...byNamespace].map(([namespace, c]) => ({
    namespace,
    ...c,
  }));
  const group: KeyGroupEntries = namespaces.length > 0
    ? { keyGroup: kg, ...(main ?? emptyColumns(s.cells)), namespaces }
    : { keyGroup: kg, ...main! };
  return [group, rows.length];
}
