/**
 * Internal: the states of one {@linkcode SqliteKeyedStateBackend} — one
 * SQLite table each (RocksDB's column family per state in Flink's
 * `RocksDBKeyedStateBackend`) — their registration by descriptor, their
 * creation on restore, and the conversion of a table's rows when a state's
 * TTL changes across a restore or between clocks (Flink's
 * `TtlStateFactory` wraps values in `TtlValue`; here a cell `{ v, t }`).
 * Not part of the public API.
 *
 * ## Invariants
 *
 * - A name maps to one table record, of one kind, for the backend's life;
 *   table ids are dense, in registration/restore order.
 * - A registered state has one state object; registering it again with the
 *   same kind and TTL returns that object, anything else throws.
 * - A table's rows are TTL cells exactly when `cells` is set; their times
 *   are of the clock `cellTime`. Registering a state whose TTL disagrees
 *   rewrites every row once (plain ↔ cells, or cells restamped `now` when
 *   the clock changes: lifetimes restart at the registration, as in the
 *   heap backend).
 *
 * @module
 */

import type { StateKind, StateTtlConfig } from "../../api/state.ts";
import { decode, encode } from "../../actor/codec.ts";
import type { TtlTime } from "../keyed_state_snapshot.ts";
import { checkRegistration, type TtlCell } from "../_heap_state_base.ts";
import type { TtlClocks } from "../_ttl_clocks.ts";
import { type EntryCache, StateCache } from "./_entry_cache.ts";
import type { SqliteTable } from "./_sqlite_state_base.ts";
import type { TtlBinding } from "./_sqlite_states.ts";
import type { SqliteStore } from "./_sqlite_store.ts";

/** The table records of one backend, by name and by id. */
export class SqliteStateRegistry {
  readonly #store: SqliteStore;
  readonly #cache: EntryCache;
  readonly #clocks: TtlClocks;
  readonly #byName = new Map<string, SqliteTable>();
  readonly #byId: SqliteTable[] = [];

  /**
   * @param store the backend's database.
   * @param cache the backend's entry cache (a converted table's entries are dropped from it).
   * @param clocks the backend's TTL clocks.
   */
  constructor(store: SqliteStore, cache: EntryCache, clocks: TtlClocks) {
    this.#store = store;
    this.#cache = cache;
    this.#clocks = clocks;
  }

  /** Every table record, by id (registration/restore order). */
  get tables(): readonly SqliteTable[] {
    return this.#byId;
  }

  /** Names of all registered or restored states, in registration/restore order. */
  names(): string[] {
    return [...this.#byName.keys()];
  }

  /** The table record of id `id` (an id this registry gave out). */
  byId(id: number): SqliteTable {
    return this.#byId[id]!;
  }

  /** The table record of `name`, or `undefined` when no state of that name is registered or restored. */
  find(name: string): SqliteTable | undefined {
    return this.#byName.get(name);
  }

  /**
   * The table record of `name`.
   * @throws {Error} naming the known states when no state of that name is registered or restored.
   */
  get(name: string): SqliteTable {
    const table = this.#byName.get(name);
    if (table === undefined) {
      throw new Error(
        `No keyed state named '${name}' is registered or restored: known states are ${
          JSON.stringify(this.names())
        }`,
      );
    }
    return table;
  }

  /**
   * Registers state `name` of `kind` with `ttlConfig`, converting a restored
   * table's rows when their TTL form disagrees, and makes its state object
   * with `create` (once: later calls return the same object).
   *
   * @returns the state object.
   * @throws {RangeError} for an invalid TTL, or an event-time TTL without an event-time clock.
   * @throws {Error} when `name` is registered or restored as another kind,
   *   or registered with another TTL.
   */
  register<S extends object>(
    name: string,
    kind: StateKind,
    ttlConfig: StateTtlConfig | undefined,
    create: (table: SqliteTable, ttl: TtlBinding | undefined) => S,
  ): S {
    let table = this.#byName.get(name);
    const ttl = checkRegistration(name, kind, ttlConfig, table, this.#clocks.hasEventTime);
    if (table?.state !== undefined) return table.state as S;
    const time = ttl?.time ?? "ProcessingTime";
    if (time === "EventTime") this.#clocks.event(); // a registration is an access
    if (table === undefined) {
      table = this.create(name, kind, ttl !== undefined, time);
    } else if (table.cells !== (ttl !== undefined)) {
      this.#convert(table, ttl !== undefined, this.#clocks.now(time));
    } else if (table.cells && table.cellTime !== time) {
      this.#convert(table, true, this.#clocks.now(time)); // other clock: lifetimes restart now
    }
    table.cellTime = time;
    table.ttl = ttl;
    const binding = ttl === undefined ? undefined : { ttl, clock: this.#clocks.clockOf(time) };
    const state = create(table, binding);
    table.state = state;
    return state;
  }

  /**
   * Creates the (empty) table of a new state `name`, registered by the
   * caller next or restored.
   *
   * @param cells whether its rows are TTL cells.
   * @param cellTime the clock of the cells' times.
   * @returns the new table record.
   */
  create(name: string, kind: StateKind, cells: boolean, cellTime: TtlTime): SqliteTable {
    const id = this.#byId.length;
    const table: SqliteTable = {
      name,
      kind,
      id,
      stmts: this.#store.createTable(id),
      cache: new StateCache(id),
      cells,
      cellTime,
      ttl: undefined,
      state: undefined,
      shared: new WeakSet(),
    };
    this.#byId.push(table);
    this.#byName.set(name, table);
    return table;
  }

  /**
   * Rewrites every row of `table` in one transaction: plain values to TTL
   * cells stamped `now`, cells to plain values, or (cells to cells) every
   * time to `now`. The cache is written back and the table's cached
   * entries dropped first.
   */
  #convert(table: SqliteTable, toCells: boolean, now: number): void {
    this.#cache.forget(table.cache);
    const wrap = (v: unknown): unknown =>
      toCells
        ? { v: table.cells ? (v as TtlCell<unknown>).v : v, t: now }
        : (v as TtlCell<unknown>).v;
    const kind = table.kind;
    const db = this.#store.db;
    const fn = `weir_convert_${table.id}`;
    db.function(fn, (bytes) => {
      const stored = decode(bytes as Uint8Array);
      return encode(kind === "list" ? (stored as unknown[]).map(wrap) : wrap(stored));
    });
    this.#store.transaction(() => db.exec(`UPDATE s${table.id} SET v = ${fn}(v)`));
    table.cells = toCells;
  }
}
