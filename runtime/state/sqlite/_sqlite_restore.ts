/**
 * Internal: loading canonical keyed state snapshots (`keyed` handles of any
 * backend) into the SQLite keyed state backend's tables, with the checks
 * and error messages of the heap backend's `loadTable`. Only the key groups
 * of the backend's range are loaded (rescaling by key-group ranges); on a
 * (key, namespace) present in two snapshots the later wins. Not part of the
 * public API.
 *
 * {@linkcode restoreKeyedHandles} is the backend's `restore`: it checks each
 * handle's kind, skips handles whose key-group range misses the backend's,
 * decodes the rest and loads each in one transaction; a restored state's
 * table is created (or, registered already, kept with its TTL form:
 * snapshot times are kept only when of the table's clock and TTL).
 *
 * @module
 */

import { encode } from "../../actor/codec.ts";
import type { StateHandle } from "../../checkpoint/snapshot_contract.ts";
import type { StateReader } from "../keyed_state_backend.ts";
import { checkStateKind, type TtlTime } from "../keyed_state_snapshot.ts";
import { decodeKeyedHandle } from "../_heap_handles.ts";
import type { TtlClocks } from "../_ttl_clocks.ts";
import type { EntryCache } from "./_entry_cache.ts";
import type { SqliteStateRegistry } from "./_sqlite_registry.ts";
import type { SqliteStore } from "./_sqlite_store.ts";
import { isSingle } from "../_heap_state_base.ts";
import type {
  KeyedStateSnapshotState,
  KeyGroupEntries,
  NamespaceEntries,
  SnapshotVersion,
} from "../keyed_state_snapshot.ts";
import { type Key, stateKeyOf } from "../key_group.ts";
import { escapeText, primitiveText } from "./_row_keys.ts";
import type { SqliteTable } from "./_sqlite_state_base.ts";

/** How restored entries are stamped. */
export interface Stamping {
  /** The time given to entries without a usable timestamp, ms of the table's TTL clock. */
  readonly now: number;
  /** Whether the snapshot's timestamps are of the table's clock (else every entry gets `now`). */
  readonly keepTimes: boolean;
}

interface Place {
  readonly keyGroup: number;
  readonly namespace?: string;
}

function malformed(name: string, place: Place, what: string, value: unknown): Error {
  let shown: string;
  try {
    shown = JSON.stringify(value, (_k, v) => typeof v === "bigint" ? `${v}n` : v);
  } catch {
    shown = String(value);
  }
  if (shown !== undefined && shown.length > 200) shown = shown.slice(0, 200) + "…";
  const ns = place.namespace === undefined ? "" : `, namespace ${JSON.stringify(place.namespace)}`;
  return new Error(
    `Malformed snapshot of keyed state '${name}', key group ${place.keyGroup}${ns}: ${what}, current value is ${shown}`,
  );
}

/**
 * Writes the key groups of `state` within `[start, end]` into `table`'s
 * rows (run it inside a transaction).
 * @returns the number of entries loaded.
 * @throws {Error} for a malformed group, or namespaces in a version 1
 * snapshot, naming state, key group and namespace.
 */
export function loadState(
  table: SqliteTable,
  state: KeyedStateSnapshotState,
  [start, end]: readonly [number, number],
  stamping: Stamping,
  version: SnapshotVersion,
): number {
  const groups: unknown = state.keyGroups;
  if (!Array.isArray(groups)) {
    throw new Error(
      `Malformed snapshot of keyed state '${table.name}': 'keyGroups' must be an array, current value is ${typeof groups}`,
    );
  }
  let n = 0;
  for (const group of groups as KeyGroupEntries[]) {
    const keyGroup = group?.keyGroup;
    if (!Number.isInteger(keyGroup)) {
      throw malformed(table.name, { keyGroup }, "'keyGroup' must be an integer", keyGroup);
    }
    if (!(keyGroup >= start && keyGroup <= end)) continue;
    if (version === 1 && group.namespaces !== undefined) {
      throw malformed(
        table.name,
        group,
        "a version 1 snapshot has no namespaces",
        `${group.namespaces.length} namespace(s)`,
      );
    }
    n += loadColumns(table, group, "", { keyGroup }, stamping);
    const namespaces: unknown = group.namespaces;
    if (namespaces === undefined) continue;
    if (!Array.isArray(namespaces)) {
      throw malformed(table.name, group, "'namespaces' must be an array", namespaces);
    }
    for (const entry of namespaces as NamespaceEntries[]) {
      const namespace: unknown = entry?.namespace;
      if (typeof namespace !== "string" || namespace.length === 0) {
        throw malformed(table.name, group, "a namespace must be a non-empty string", namespace);
      }
      n += loadColumns(table, entry, namespace, { keyGroup, namespace }, stamping);
    }
  }
  return n;
}

function loadColumns(
  table: SqliteTable,
  columns: { keys: readonly Key[]; values: readonly unknown[]; timestamps?: readonly unknown[] },
  namespace: string,
  place: Place,
  stamping: Stamping,
): number {
  const { keys, values, timestamps } = columns;
  const name = table.name;
  if (!Array.isArray(keys) || !Array.isArray(values) || keys.length !== values.length) {
    throw malformed(name, place, "'keys' and 'values' must be arrays of equal length", {
      keys: Array.isArray(keys) ? `${keys.length} keys` : keys,
      values: Array.isArray(values) ? `${values.length} values` : values,
    });
  }
  if (
    timestamps !== undefined && (!Array.isArray(timestamps) || timestamps.length !== keys.length)
  ) {
    throw malformed(name, place, "'timestamps' must be an array as long as 'keys'", timestamps);
  }
  const { put, delEntry } = table.stmts;
  const kg = place.keyGroup;
  const nsText = escapeText(namespace);
  const cells = table.cells;
  const now = stamping.now;
  const times = stamping.keepTimes ? timestamps : undefined;
  const stamp = (t: unknown) => typeof t === "number" ? t : now;
  for (let i = 0; i < keys.length; i++) {
    let kText: string;
    try {
      kText = primitiveText(stateKeyOf(keys[i]!), "A key");
    } catch (e) {
      throw malformed(name, place, `key ${i} is not a key (${(e as Error).message})`, keys[i]);
    }
    const value: unknown = values[i];
    const time: unknown = times?.[i];
    if (isSingle(table.kind)) {
      if (value === undefined) {
        throw malformed(name, place, `a ${table.kind} state holds no undefined`, value);
      }
      put.run(kg, kText, nsText, "", encode(cells ? { v: value, t: stamp(time) } : value));
    } else if (table.kind === "list") {
      if (!Array.isArray(value) || value.length === 0) {
        throw malformed(name, place, "a list must be a non-empty array", value);
      }
      const itemTimes = Array.isArray(time) ? time : undefined;
      const stored = cells ? value.map((v, j) => ({ v, t: stamp(itemTimes?.[j]) })) : value;
      put.run(kg, kText, nsText, "", encode(stored));
    } else {
      const [userKeys, userValues] = Array.isArray(value) ? value : [];
      if (
        !Array.isArray(userKeys) || !Array.isArray(userValues) ||
        userKeys.length !== userValues.length || userKeys.length === 0
      ) {
        throw malformed(name, place, "a map must be [userKeys[], userValues[]]", value);
      }
      const entryTimes = Array.isArray(time) ? time : undefined;
      delEntry.run(kg, kText, nsText); // the later snapshot's map replaces the whole map
      for (let j = 0; j < userKeys.length; j++) {
        let ukText: string;
        try {
          ukText = primitiveText(userKeys[j], `User key ${j}`);
        } catch (e) {
          throw malformed(name, place, (e as Error).message, userKeys[j]);
        }
        const v = userValues[j];
        put.run(kg, kText, nsText, ukText, encode(cells ? { v, t: stamp(entryTimes?.[j]) } : v));
      }
    }
  }
  return keys.length;
}

/** The parts of a backend a restore writes into. */
export interface RestoreTarget {
  /** The backend's database. */
  readonly store: SqliteStore;
  /** The backend's cache (written back before, and a restored state's entries dropped). */
  readonly cache: EntryCache;
  /** The backend's states. */
  readonly states: SqliteStateRegistry;
  /** The backend's TTL clocks (restored entries without a usable time are stamped now). */
  readonly clocks: TtlClocks;
  /** The backend's key-group range, inclusive. */
  readonly range: readonly [number, number];
  /** The job's max parallelism; every handle must have it. */
  readonly maxParallelism: number;
}

/**
 * Loads `target`'s key groups from canonical `keyed` handles, in order
 * (later handles win), each in one SQLite transaction.
 *
 * @throws {Error} naming the handle when it is not of kind `keyed`, does
 *   not decode, has another max parallelism, or holds a malformed state
 *   (that handle's transaction is rolled back).
 */
export async function restoreKeyedHandles(
  target: RestoreTarget,
  handles: readonly StateHandle[],
  read: StateReader,
): Promise<void> {
  const [start, end] = target.range;
  for (const handle of handles) {
    if (handle.kind !== "keyed") {
      throw new Error(
        `Cannot restore keyed state handle '${handle.path}': the SQLite keyed state backend reads handles of kind 'keyed' only, current value is '${handle.kind}'`,
      );
    }
    const r = handle.keyGroupRange;
    if (r !== undefined && (r[1] < start || r[0] > end)) continue;
    const snapshot = await decodeKeyedHandle(handle, read, target.maxParallelism);
    const version = snapshot.version;
    try {
      target.cache.flush();
      target.store.transaction(() => {
        for (const [name, state] of Object.entries(snapshot.states)) {
          restoreState(target, name, state, version);
        }
      });
    } catch (e) {
      throw new Error(
        `Cannot restore keyed state handle '${handle.path}': ${(e as Error).message}`,
        { cause: e },
      );
    }
  }
}

function restoreState(
  target: RestoreTarget,
  name: string,
  state: KeyedStateSnapshotState,
  version: SnapshotVersion,
): void {
  checkStateKind(name, state, version);
  const snapTime: TtlTime = state.ttlTimeCharacteristic ?? "ProcessingTime";
  let table = target.states.find(name);
  if (table !== undefined && table.kind !== state.kind) {
    throw new Error(
      `Cannot restore keyed state '${name}' as ${state.kind} state: it is already ${
        table.state ? "registered" : "restored"
      } as ${table.kind} state`,
    );
  }
  table ??= target.states.create(name, state.kind, state.ttl === true, snapTime);
  target.cache.forget(table.cache);
  const stamping = {
    now: table.cells ? target.clocks.now(table.cellTime) : NaN,
    keepTimes: state.ttl === true && snapTime === table.cellTime,
  };
  loadState(table, state, target.range, stamping, version);
}
