/**
 * The changelog segment format (Flink's FLIP-158 state changelog, as one
 * blob per checkpoint): the changes a {@linkcode ChangelogKeyedStateBackend}
 * recorded between two checkpoints, written as one shared blob of kind
 * `keyed-incremental`, and the pure checks of a segment read back.
 *
 * A segment holds, per state, the **net** change of every (key group, key,
 * namespace) written since the previous segment: the last value set (or a
 * clear), a list's reset and appended elements, a map's clear and per-user-key
 * puts and removes. Values are the stored forms, so replay needs no user
 * function: a reducing state's change is its reduced value, an aggregating
 * state's change is its accumulator.
 *
 * ```
 * { format: "weir-changelog", version: 1, maxParallelism: 128,
 *   keyGroupRange: [0, 63], checkpointId: 7, seq: 3, capturedAt: 1733070000000,
 *   states: {
 *     sum:   { kind: "value", ttl: false, changes: [[3, "a", "", 1, 42], [3, "b", "", 0]] },
 *     items: { kind: "list",  ttl: false, changes: [[5, "k", "", 0, ["x", "y"]]] },
 *     attrs: { kind: "map",   ttl: false, changes: [[9, "k", "", 1, ["u"], [7], ["v"]]] } } }
 * ```
 *
 * | state kind                          | change tuple                                               |
 * | ----------------------------------- | ---------------------------------------------------------- |
 * | `value`, `reducing`, `aggregating`  | `[kg, key, ns, 0]` clear; `[kg, key, ns, 1, value]` set     |
 * | `list`                              | `[kg, key, ns, reset 0/1, elements[]]`: reset replaces, else appends |
 * | `map`                               | `[kg, key, ns, cleared 0/1, putKeys[], putValues[], removedKeys[]]` |
 *
 * `kg` is the key group, `key` the original key, `ns` the namespace (`""`
 * is the default one). For a state with a TTL, each tuple has one more
 * field: the set value's last-access time, the appended elements' times, or
 * the put user keys' times (ms of the TTL's clock). A list reset with no elements, and a map cleared with
 * no puts, leave no entry.
 *
 * ## Invariants
 *
 * - A (key group, key, namespace) appears at most once per state per segment.
 * - Segments of one backend lineage are totally ordered by
 *   `(checkpointId, seq)`; replay applies them in that order.
 * - Every change's key group lies in the segment's `keyGroupRange`.
 *
 * @module
 */

import { decode } from "../../actor/codec.ts";
import type { StateKind } from "../../api/state.ts";
import type { Key } from "../key_group.ts";
import type { StateHandle } from "../../checkpoint/snapshot_contract.ts";
import type { TtlTime } from "../keyed_state_snapshot.ts";

/** The `format` tag of every segment, so a stray blob is refused by name. */
export const SEGMENT_FORMAT = "weir-changelog";

/** Clear (`0`) or set (`1`) of a value, reducing or aggregating entry. */
export type ValueChange =
  | readonly [keyGroup: number, key: Key, namespace: string, op: 0]
  | readonly [keyGroup: number, key: Key, namespace: string, op: 1, value: unknown, time?: number];

/** A list entry's change: `reset` 1 replaces the list by `elements`, 0 appends them. */
export type ListChange = readonly [
  keyGroup: number,
  key: Key,
  namespace: string,
  reset: 0 | 1,
  elements: readonly unknown[],
  times?: readonly number[],
];

/**
 * A map entry's change: `cleared` 1 empties the map first; then every
 * `putKeys[i]` is set to `putValues[i]` and every `removedKeys` entry removed.
 */
export type MapChange = readonly [
  keyGroup: number,
  key: Key,
  namespace: string,
  cleared: 0 | 1,
  putKeys: readonly unknown[],
  putValues: readonly unknown[],
  removedKeys: readonly unknown[],
  putTimes?: readonly number[],
];

/** Any change tuple; which one is given by the state's kind. */
export type StateChange = ValueChange | ListChange | MapChange;

/** The changes of one state in a segment. */
export interface SegmentState {
  /** The state's kind, as registered. */
  readonly kind: StateKind;
  /** Whether the state is registered with a TTL. */
  readonly ttl: boolean;
  /** The TTL's clock, when `ttl`. */
  readonly ttlTimeCharacteristic?: TtlTime;
  /** The TTL, ms, when `ttl`. */
  readonly ttlMs?: number;
  /** One net change per (key group, key, namespace) written since the previous segment. */
  readonly changes: readonly StateChange[];
}

/** One changelog segment (see the module docs for the shape). */
export interface ChangelogSegment {
  /** Always {@linkcode SEGMENT_FORMAT}. */
  readonly format: typeof SEGMENT_FORMAT;
  /** Format version; `1` is written and read. */
  readonly version: 1;
  /** The number of key groups the key groups refer to. */
  readonly maxParallelism: number;
  /** The writing backend's key-group range, inclusive. */
  readonly keyGroupRange: readonly [number, number];
  /** The checkpoint whose synchronous part captured it. */
  readonly checkpointId: number;
  /** Tie-breaker within one checkpoint id (a per-backend counter). */
  readonly seq: number;
  /** Processing time of the capture, ms: the last-access time replay gives changed TTL entries. */
  readonly capturedAt: number;
  /** The changes, by state name. */
  readonly states: { readonly [name: string]: SegmentState };
}

/** `a` before `b` in replay order: by checkpoint id, then `seq`. */
export function compareSegments(a: ChangelogSegment, b: ChangelogSegment): number {
  return a.checkpointId - b.checkpointId || a.seq - b.seq;
}

/**
 * Decodes and checks one segment blob.
 *
 * @param handle the handle it was read from (named in errors).
 * @param bytes the blob.
 * @param maxParallelism the restoring backend's; it must equal the segment's.
 * @returns the segment.
 * @throws {Error} naming the handle's path when the bytes do not decode, are
 * not a changelog segment, have another version or max parallelism, or a
 * state or change is malformed.
 */
export function decodeSegment(
  handle: StateHandle,
  bytes: Uint8Array,
  maxParallelism: number,
): ChangelogSegment {
  const where = `Cannot restore changelog segment '${handle.path}'`;
  let value: unknown;
  try {
    value = decode(bytes);
  } catch (e) {
    throw new Error(`${where}: its ${bytes.length} bytes do not decode (${(e as Error).message})`, {
      cause: e,
    });
  }
  const seg = value as Partial<ChangelogSegment> | null;
  if (typeof seg !== "object" || seg === null || seg.format !== SEGMENT_FORMAT) {
    throw new Error(`${where}: it is not a changelog segment (no format '${SEGMENT_FORMAT}')`);
  }
  if (seg.version !== 1) {
    throw new Error(
      `${where}: unsupported version (this backend reads 1), current value is ${
        JSON.stringify(seg.version)
      }`,
    );
  }
  if (seg.maxParallelism !== maxParallelism) {
    throw new Error(
      `${where}: written with max parallelism ${seg.maxParallelism}, restoring with ${maxParallelism}: max parallelism must not change across restores of a checkpoint`,
    );
  }
  const range = seg.keyGroupRange;
  if (
    !Array.isArray(range) || range.length !== 2 || !Number.isInteger(range[0]) ||
    !Number.isInteger(range[1]) || !Number.isInteger(seg.checkpointId) ||
    !Number.isInteger(seg.seq) || typeof seg.capturedAt !== "number" ||
    typeof seg.states !== "object" || seg.states === null
  ) {
    throw new Error(
      `${where}: malformed header (keyGroupRange, checkpointId, seq, capturedAt or states)`,
    );
  }
  for (const [name, state] of Object.entries(seg.states)) {
    checkSegmentState(where, name, state, range as [number, number]);
  }
  return seg as ChangelogSegment;
}

const CHANGE_LENGTH: { readonly [kind in StateKind]: readonly number[] } = {
  value: [4, 5, 6],
  reducing: [4, 5, 6],
  aggregating: [4, 5, 6],
  list: [5, 6],
  map: [7, 8],
};

function checkSegmentState(
  where: string,
  name: string,
  state: SegmentState,
  [first, last]: readonly [number, number],
): void {
  const lengths = CHANGE_LENGTH[state?.kind];
  if (lengths === undefined || !Array.isArray(state.changes)) {
    throw new Error(
      `${where}: state '${name}' has an unknown kind or no changes array, current kind is ${
        JSON.stringify(state?.kind)
      }`,
    );
  }
  for (let i = 0; i < state.changes.length; i++) {
    const change = state.changes[i] as readonly unknown[];
    const kg = change?.[0];
    if (
      !Array.isArray(change) || !lengths.includes(change.length) || typeof kg !== "number" ||
      kg < first || kg > last || typeof change[2] !== "string"
    ) {
      throw new Error(
        `${where}: state '${name}' (${state.kind}) change ${i} is malformed or outside key groups [${first}, ${last}]: current value is ${
          describe(change)
        }`,
      );
    }
  }
}

function describe(value: unknown): string {
  try {
    const text = JSON.stringify(value, (_k, v) => typeof v === "bigint" ? `${v}n` : v) ?? "";
    return text.length > 200 ? text.slice(0, 200) + "…" : text;
  } catch {
    return String(value);
  }
}
