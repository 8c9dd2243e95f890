/**
 * Internal: what {@linkcode HeapKeyedStateBackend} does to its state tables
 * as a whole — registering a state (creating or converting its table),
 * restoring one state's snapshot into its table, the canonical full copy,
 * the copy-on-write snapshot's captures — over a {@linkcode TableSet}
 * (the backend's tables, clocks and key groups). The per-record paths
 * (`setCurrentKey`, the state objects) do not pass through here. Not part
 * of the public API.
 *
 * ## Invariants
 *
 * - Every change of a whole table (a TTL enabled, disabled or moved to the
 *   other clock at registration, event time starting, a restore, the
 *   canonical copy, which removes expired entries) first drains the table's
 *   snapshots in flight ({@linkcode drainCaptures}), so that a snapshot
 *   writes the state as it was when `snapshot()` returned.
 * - A table's kind never changes once created.
 *
 * @module
 */

import type { StateKind, StateTtlConfig } from "../api/state.ts";
import type { InternedKey, KeyInterner } from "./_key_interner.ts";
import {
  checkRegistration,
  defineEntry,
  newTable,
  type StateTable,
  type TtlSettings,
} from "./_heap_state_base.ts";
import {
  checkStateKind,
  type KeyedStateSnapshot,
  type KeyedStateSnapshotState,
  type SnapshotVersion,
  type TtlTime,
} from "./keyed_state_snapshot.ts";
import { convertTable, forEachCell, loadTable, snapshotTable } from "./_heap_snapshot.ts";
import { stampUnstarted, type TtlClocks } from "./_ttl_clocks.ts";
import { TableCapture } from "./_heap_cow.ts";

/** A backend's state tables and what operations on them need. */
export interface TableSet {
  /** The tables by state name, in registration/restore order. */
  readonly tables: Map<string, StateTable>;
  /** The TTL clocks. */
  readonly clocks: TtlClocks;
  /** The backend's key-group range, inclusive. */
  readonly range: readonly [start: number, end: number];
  /** The backend's max parallelism. */
  readonly maxParallelism: number;
  /** The backend's composite-key interner (restored keys are interned). */
  readonly interner: KeyInterner;
}

/** Finishes every snapshot in flight of `table` synchronously, before a change of the whole table. */
export function drainCaptures(table: StateTable): void {
  for (const capture of [...table.captures]) capture.drain();
}

/**
 * Registers state `name` of `kind` (or returns its state object when
 * registered already): creates its table, or takes over the restored one,
 * converting its cells when the TTL was enabled, disabled or moved to the
 * other clock since; then makes the state object with `create`.
 *
 * @throws {Error} when the name is registered (or restored) as another
 *   kind, or registered with another TTL.
 * @throws {RangeError} for an invalid TTL, or an event-time TTL without an
 *   event-time clock.
 */
export function registerState<S extends object>(
  set: TableSet,
  name: string,
  kind: StateKind,
  ttlConfig: StateTtlConfig | undefined,
  create: (table: StateTable, ttl: TtlSettings | undefined, clock: () => number) => S,
): S {
  const { tables, clocks } = set;
  let table = tables.get(name);
  const ttl = checkRegistration(name, kind, ttlConfig, table, clocks.hasEventTime);
  if (table?.state !== undefined) return table.state as S;
  const time = ttl?.time ?? "ProcessingTime";
  if (time === "EventTime") clocks.event(); // a registration is an access: event time may start
  if (table === undefined) {
    table = newTable(name, kind, set.range[1] - set.range[0] + 1, ttl !== undefined, time);
    tables.set(name, table);
  } else if (table.cells !== (ttl !== undefined)) {
    drainCaptures(table);
    convertTable(table, ttl !== undefined, clocks.now(time));
  } else if (table.cells && table.cellTime !== time) {
    // Times of the other clock mean nothing here: lifetimes restart now.
    const now = clocks.now(time);
    drainCaptures(table);
    forEachCell(table, (cell) => cell.t = now);
  }
  table.cellTime = time;
  table.ttl = ttl;
  const state = create(table, ttl, clocks.clockOf(time));
  table.state = state;
  const start = clocks.eventTimeStart;
  if (time === "EventTime" && start !== undefined) {
    drainCaptures(table);
    stampUnstarted(table, start);
  }
  return state;
}

/**
 * Loads state `name` of a snapshot (format `version`) into its table,
 * creating the table when the state is not registered yet.
 * @throws {Error} when the state's kind is unknown or differs from its
 *   table's, or an entry is malformed (see `loadTable`).
 */
export function restoreState(
  set: TableSet,
  name: string,
  state: KeyedStateSnapshotState,
  version: SnapshotVersion,
): void {
  const { tables, clocks } = set;
  checkStateKind(name, state, version);
  const snapTime: TtlTime = state.ttlTimeCharacteristic ?? "ProcessingTime";
  let table = tables.get(name);
  if (table !== undefined && table.kind !== state.kind) {
    throw new Error(
      `Cannot restore keyed state '${name}' as ${state.kind} state: it is already ${
        table.state ? "registered" : "restored"
      } as ${table.kind} state`,
    );
  }
  if (table === undefined) {
    table = newTable(name, state.kind, set.range[1] - set.range[0] + 1, state.ttl, snapTime);
    tables.set(name, table);
  }
  const stamping = {
    now: table.cells ? clocks.now(table.cellTime) : NaN,
    keepTimes: state.ttl && snapTime === table.cellTime,
    interner: set.interner,
  };
  drainCaptures(table);
  loadTable(table, state, set.range, stamping, version);
  const start = clocks.eventTimeStart;
  if (table.ttl?.time === "EventTime" && start !== undefined) stampUnstarted(table, start);
}

/**
 * The synchronous full copy of every table as a version 2 snapshot (see
 * `HeapKeyedStateBackend.snapshotCanonical`); removes expired entries.
 */
export function canonicalSnapshot(set: TableSet): KeyedStateSnapshot {
  const states: Record<string, KeyedStateSnapshotState> = {};
  const [start, end] = set.range;
  for (const table of set.tables.values()) {
    drainCaptures(table); // this pass removes expired entries
    defineEntry(states, table.name, snapshotTable(table, start, set.clocks.expiry(table.ttl)));
  }
  return { version: 2, maxParallelism: set.maxParallelism, keyGroupRange: [start, end], states };
}

/** Begins a copy-on-write capture of every table (the synchronous part of `snapshot()`). */
export function captureTables(set: TableSet): TableCapture[] {
  const tables = [...set.tables.values()];
  // Reading the clocks first: event time may start, which stamps (and drains) tables.
  const expiries = tables.map((table) => set.clocks.expiry(table.ttl));
  return tables.map((table, i) => new TableCapture(table, set.range[0], expiries[i]));
}

/**
 * Drops the interned composite keys no table holds any more (those of
 * removed entries), when worth it at `entries` stored entries; else
 * postpones the next look.
 */
export function sweepInterner(set: TableSet, entries: number): void {
  const interner = set.interner;
  if (!interner.worthSweeping(entries)) return interner.postpone(entries);
  interner.sweep((keep: (identity: InternedKey) => void) => {
    const keepAll = (m: Map<InternedKey, unknown> | undefined) => {
      if (m !== undefined) { for (const identity of m.keys()) keep(identity); }
    };
    for (const table of set.tables.values()) {
      for (const m of table.maps) keepAll(m);
      for (const byNamespace of table.nsMaps) byNamespace?.forEach(keepAll);
    }
  });
}

/**
 * The table of state `name`.
 * @throws {Error} naming the known states when none of that name is
 *   registered or restored.
 */
export function tableNamed(set: TableSet, name: string): StateTable {
  const table = set.tables.get(name);
  if (table === undefined) {
    throw new Error(
      `No keyed state named '${name}' is registered or restored: known states are ${
        JSON.stringify([...set.tables.keys()])
      }`,
    );
  }
  return table;
}
