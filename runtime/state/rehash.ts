/**
 * Re-hashing keyed state to another max parallelism: the pure regrouping
 * that lets a savepoint be restored with another number of key groups.
 *
 * Flink fixes the max parallelism for a job's lifetime: its key groups are
 * the unit of redistribution, and a savepoint taken with 128 key groups can
 * only be restored with 128 (Flink's `StateAssignmentOperation` fails with
 * "The maximum parallelism ... has been modified"). Weir goes beyond that
 * for savepoints (DESIGN §13): a canonical keyed snapshot
 * ({@linkcode KeyedStateSnapshot}) lists every entry with its *original*
 * key, so the entries can be assigned to their key group under another max
 * parallelism (`assignToKeyGroup(key, newMaxParallelism)`) and regrouped.
 * Timers ({@linkcode TimerServiceSnapshot}) carry their keys too and are
 * regrouped the same way.
 *
 * ```ts
 * import { rehashKeyedSnapshots } from "./rehash.ts";
 * const old = {
 *   version: 2 as const, maxParallelism: 4, keyGroupRange: [0, 3] as const,
 *   states: { sum: { kind: "value" as const, ttl: false, keyGroups: [
 *     { keyGroup: 1, keys: ["a", "b"], values: [1, 2] },
 *   ] } },
 * };
 * const moved = rehashKeyedSnapshots([old], { maxParallelism: 16 });
 * console.assert(moved.maxParallelism === 16);
 * ```
 *
 * ## Invariants
 *
 * - {@linkcode rehashKeyedSnapshots} and {@linkcode rehashTimerSnapshots}
 *   perform no I/O; the inputs are not modified. {@linkcode rehashKeyedHandles}
 *   (the restore path's entry) reads the handles it is given, nothing else.
 * - Every entry (key, namespace, value, TTL timestamp) of the input is in
 *   the output exactly once, under `assignToKeyGroup(key, maxParallelism)`,
 *   unless `keyGroupRange` is given and that key group lies outside it.
 * - The output follows the snapshot format's invariants: a key group
 *   appears at most once per state, in ascending order, only when it holds
 *   an entry; namespaces other than the default are non-empty.
 * - Within a new key group, entries keep the order of the input (snapshot
 *   order, then key-group order); timers are sorted by timestamp (stable),
 *   so they fire in the order they would have.
 *
 * @module
 */

import type { Key } from "./key_group.ts";
import { assignToKeyGroup, checkMaxParallelism, KeyGroupRange } from "./key_group.ts";
import type {
  KeyedStateSnapshot,
  KeyedStateSnapshotState,
  KeyGroupEntries,
  NamespaceEntries,
} from "./keyed_state_snapshot.ts";
import type { TimerKeyGroup, TimerServiceSnapshot } from "./timer_service.ts";
import type { StateHandle } from "../checkpoint/snapshot_contract.ts";
import type { StateReader } from "./keyed_state_backend.ts";
import { decode, encode } from "../actor/codec.ts";

/** Options of {@linkcode rehashKeyedSnapshots} and {@linkcode rehashTimerSnapshots}. */
export interface RehashOptions {
  /**
   * The new max parallelism (number of key groups), 1 to 32768.
   * @throws {RangeError} (from the functions) when out of range.
   */
  readonly maxParallelism: number;
  /**
   * Keep only the entries of these new key groups (the restoring subtask's
   * range); default every key group, `[0, maxParallelism - 1]`.
   */
  readonly keyGroupRange?: KeyGroupRange;
}

/** A column-wise group being filled: one per (state, new key group). */
interface GroupBuilder {
  keys: Key[];
  values: unknown[];
  timestamps: unknown[] | undefined;
  namespaces: Map<string, { keys: Key[]; values: unknown[]; timestamps: unknown[] | undefined }>;
}

/**
 * Regroups canonical keyed snapshots taken with one max parallelism under
 * another. The inputs are typically every old subtask's snapshot of one
 * operator (disjoint key-group ranges); the output is one snapshot that
 * holds their entries, grouped by new key group.
 *
 * @param snapshots snapshots of one operator, all of the same (old) max parallelism.
 * @param options the new max parallelism and, optionally, the new key-group range to keep.
 * @returns a version 2 snapshot with `maxParallelism` = the new one and
 *   `keyGroupRange` = `options.keyGroupRange` (default the full range).
 * @throws {RangeError} when the new max parallelism is out of range, or the
 *   key-group range exceeds it.
 * @throws {Error} when the snapshots disagree on their max parallelism, or
 *   on a state's kind, TTL or TTL clock (naming the state and both values).
 */
export function rehashKeyedSnapshots(
  snapshots: readonly KeyedStateSnapshot[],
  options: RehashOptions,
): KeyedStateSnapshot {
  const range = checkOptions(options);
  const { maxParallelism } = options;
  checkSameMaxParallelism(snapshots.map((s) => s.maxParallelism), "keyed state snapshots");
  const headers = new Map<string, Omit<KeyedStateSnapshotState, "keyGroups">>();
  const groups = new Map<string, Map<number, GroupBuilder>>();
  for (const snap of snapshots) {
    for (const [name, state] of Object.entries(snap.states)) {
      const known = headers.get(name);
      const header = {
        kind: state.kind,
        ttl: state.ttl,
        ...(state.ttlTimeCharacteristic === undefined
          ? {}
          : { ttlTimeCharacteristic: state.ttlTimeCharacteristic }),
      };
      if (known === undefined) {
        headers.set(name, header);
        groups.set(name, new Map());
      } else {
        checkSameHeader(name, known, header);
      }
      const byGroup = groups.get(name)!;
      for (const entries of state.keyGroups) {
        addEntries(byGroup, entries, state.ttl, maxParallelism, range);
      }
    }
  }
  const states: Record<string, KeyedStateSnapshotState> = {};
  for (const [name, header] of headers) {
    const byGroup = groups.get(name)!;
    const keyGroups: KeyGroupEntries[] = [...byGroup.keys()].sort((a, b) => a - b).map((kg) =>
      buildGroup(kg, byGroup.get(kg)!)
    );
    states[name] = { ...header, keyGroups };
  }
  return {
    version: 2,
    maxParallelism,
    keyGroupRange: [range.startKeyGroup, range.endKeyGroup],
    states,
  };
}

/**
 * Regroups timer snapshots under another max parallelism: every timer goes
 * to `assignToKeyGroup(timer key, maxParallelism)`, timers of a key group
 * sorted by timestamp (stable).
 *
 * @param snapshots timer snapshots of one operator (every old subtask's).
 * @param options the new max parallelism and, optionally, the key-group range to keep.
 * @returns one snapshot holding the (kept) timers of all inputs.
 * @throws {RangeError} when the new max parallelism is out of range, or the
 *   key-group range exceeds it.
 * @throws {Error} when a snapshot's version is not 1.
 */
export function rehashTimerSnapshots(
  snapshots: readonly TimerServiceSnapshot[],
  options: RehashOptions,
): TimerServiceSnapshot {
  const range = checkOptions(options);
  for (const [i, s] of snapshots.entries()) {
    if (s.version !== 1) {
      throw new Error(
        `Cannot re-hash timer snapshot ${i}: unsupported version (1 is read), current value is ${
          JSON.stringify(s.version)
        }`,
      );
    }
  }
  const domain = (pick: (s: TimerServiceSnapshot) => readonly TimerKeyGroup<Key>[]) => {
    const byGroup = new Map<number, { key: Key; timestamp: number; namespace: string }[]>();
    for (const s of snapshots) {
      for (const g of pick(s)) {
        for (let i = 0; i < g.keys.length; i++) {
          const key = g.keys[i]!;
          const kg = assignToKeyGroup(key, options.maxParallelism);
          if (!range.contains(kg)) continue;
          const list = byGroup.get(kg) ?? byGroup.set(kg, []).get(kg)!;
          list.push({ key, timestamp: g.timestamps[i]!, namespace: g.namespaces[i] ?? "" });
        }
      }
    }
    return [...byGroup.keys()].sort((a, b) => a - b).map((keyGroup): TimerKeyGroup<Key> => {
      const timers = byGroup.get(keyGroup)!.sort((a, b) => a.timestamp - b.timestamp);
      return {
        keyGroup,
        keys: timers.map((t) => t.key),
        timestamps: timers.map((t) => t.timestamp),
        namespaces: timers.map((t) => t.namespace),
      };
    });
  };
  return {
    version: 1,
    eventTime: domain((s) => s.eventTime),
    processingTime: domain((s) => s.processingTime),
  };
}

function checkOptions(options: RehashOptions): KeyGroupRange {
  checkMaxParallelism(options.maxParallelism);
  const range = options.keyGroupRange ?? new KeyGroupRange(0, options.maxParallelism - 1);
  if (range.endKeyGroup >= options.maxParallelism) {
    throw new RangeError(
      `Cannot re-hash keyed state: 'keyGroupRange' must lie within [0, ${
        options.maxParallelism - 1
      }] of max parallelism ${options.maxParallelism}: current value is ${range}`,
    );
  }
  return range;
}

function checkSameMaxParallelism(values: readonly number[], what: string): void {
  const distinct = [...new Set(values)];
  if (distinct.length > 1) {
    throw new Error(
      `Cannot re-hash ${what}: they were taken with different max parallelisms ` +
        `[${distinct.join(", ")}]; all must share one`,
    );
  }
}

function checkSameHeader(
  name: string,
  a: Omit<KeyedStateSnapshotState, "keyGroups">,
  b: Omit<KeyedStateSnapshotState, "keyGroups">,
): void {
  const show = (h: Omit<KeyedStateSnapshotState, "keyGroups">) =>
    `kind ${h.kind}, ttl ${h.ttl}${
      h.ttl ? ` (${h.ttlTimeCharacteristic ?? "ProcessingTime"})` : ""
    }`;
  if (
    a.kind !== b.kind || a.ttl !== b.ttl ||
    (a.ttl && (a.ttlTimeCharacteristic ?? "ProcessingTime") !==
        (b.ttlTimeCharacteristic ?? "ProcessingTime"))
  ) {
    throw new Error(
      `Cannot re-hash keyed state '${name}': the snapshots disagree on it (${show(a)} vs ${
        show(b)
      })`,
    );
  }
}

function addEntries(
  byGroup: Map<number, GroupBuilder>,
  entries: KeyGroupEntries,
  ttl: boolean,
  maxParallelism: number,
  range: KeyGroupRange,
): void {
  const builder = (key: Key): GroupBuilder | undefined => {
    const kg = assignToKeyGroup(key, maxParallelism);
    if (!range.contains(kg)) return undefined;
    let b = byGroup.get(kg);
    if (b === undefined) {
      b = { keys: [], values: [], timestamps: ttl ? [] : undefined, namespaces: new Map() };
      byGroup.set(kg, b);
    }
    return b;
  };
  for (let i = 0; i < entries.keys.length; i++) {
    const key = entries.keys[i]!;
    const b = builder(key);
    if (b === undefined) continue;
    b.keys.push(key);
    b.values.push(entries.values[i]);
    if (b.timestamps !== undefined) b.timestamps.push(entries.timestamps?.[i]);
  }
  for (const ns of entries.namespaces ?? []) addNamespace(ns, builder, ttl);
}

function addNamespace(
  ns: NamespaceEntries,
  builder: (key: Key) => GroupBuilder | undefined,
  ttl: boolean,
): void {
  for (let i = 0; i < ns.keys.length; i++) {
    const key = ns.keys[i]!;
    const b = builder(key);
    if (b === undefined) continue;
    let target = b.namespaces.get(ns.namespace);
    if (target === undefined) {
      target = { keys: [], values: [], timestamps: ttl ? [] : undefined };
      b.namespaces.set(ns.namespace, target);
    }
    target.keys.push(key);
    target.values.push(ns.values[i]);
    if (target.timestamps !== undefined) target.timestamps.push(ns.timestamps?.[i]);
  }
}

function buildGroup(keyGroup: number, b: GroupBuilder): KeyGroupEntries {
  const namespaces: NamespaceEntries[] = [...b.namespaces].map(([namespace, n]) => ({
    namespace,
    keys: n.keys,
    values: n.values,
    ...(n.timestamps === undefined ? {} : { timestamps: n.timestamps }),
  }));
  return {
    keyGroup,
    keys: b.keys,
    values: b.values,
    ...(b.timestamps === undefined ? {} : { timestamps: b.timestamps }),
    ...(namespaces.length === 0 ? {} : { namespaces }),
  };
}

/** Options of {@linkcode rehashKeyedHandles}. */
export interface RehashHandlesOptions extends RehashOptions {
  /** The keyed-state handles (kind `keyed`: canonical snapshots) of one operator, every old subtask's. */
  readonly handles: readonly StateHandle[];
  /** Reads a handle's blob. */
  readonly read: StateReader;
  /** The operator's uid, for the synthetic handle's path and messages. */
  readonly uid: string;
}

/**
 * The restore path's use of {@linkcode rehashKeyedSnapshots}: reads and
 * decodes every canonical keyed snapshot of `handles`, re-hashes them into
 * the new max parallelism (keeping `keyGroupRange`), and returns one
 * in-memory handle of the result with a reader that serves it (and passes
 * every other handle to `read`). Used when a savepoint is restored with
 * another max parallelism.
 *
 * @returns `handles`: one synthetic handle (kind `keyed`, path
 *   `rehashed:<uid>`), or none when there was no keyed state; `read`: the reader to restore with.
 * @throws {Error} naming the handle when it is not of kind `keyed` (an
 *   incremental handle: only canonical savepoints can be re-hashed) or does
 *   not decode to a keyed snapshot; what {@linkcode rehashKeyedSnapshots} throws.
 */
export async function rehashKeyedHandles(
  options: RehashHandlesOptions,
): Promise<{ handles: StateHandle[]; read: StateReader }> {
  const { handles, read, uid } = options;
  if (handles.length === 0) return { handles: [], read };
  const snapshots: KeyedStateSnapshot[] = [];
  for (const handle of handles) {
    if (handle.kind !== "keyed") {
      throw new Error(
        `Cannot re-hash keyed state handle '${handle.path}' of operator ${uid} to max ` +
          `parallelism ${options.maxParallelism}: only canonical handles (kind 'keyed', as ` +
          `savepoints hold) can be re-hashed, current value is '${handle.kind}'`,
      );
    }
    const value = decode(await read(handle)) as KeyedStateSnapshot;
    if (
      typeof value !== "object" || value === null || typeof value.states !== "object" ||
      !Number.isInteger(value.maxParallelism)
    ) {
      throw new Error(
        `Cannot re-hash keyed state handle '${handle.path}' of operator ${uid}: it does not ` +
          `hold a canonical keyed snapshot`,
      );
    }
    snapshots.push(value);
  }
  const bytes = encode(rehashKeyedSnapshots(snapshots, options));
  const range = options.keyGroupRange ?? new KeyGroupRange(0, options.maxParallelism - 1);
  const handle: StateHandle = {
    path: `rehashed:${uid}`,
    bytes: bytes.byteLength,
    kind: "keyed",
    shared: false,
    uid,
    keyGroupRange: [range.startKeyGroup, range.endKeyGroup],
  };
  const reader =
    ((h: StateHandle) => h === handle ? Promise.resolve(bytes) : read(h)) as StateReader;
  return { handles: [handle], read: reader };
}
