/**
 * Two streams of different types as one (Flink's `CoGroupedStreams.TaggedUnion`):
 * each record is wrapped with the side it came from, the two tagged streams
 * are unioned and keyed by each side's own key selector. Window joins,
 * coGroup and the interval join are built on it, as Flink builds its window
 * join and coGroup.
 *
 * ## Invariants
 *
 * - `tag` is 1 for the first (left) input and 2 for the second (right);
 *   `value` is the record as its input emitted it (not copied).
 * - The tagging maps keep each record's timestamp, and the union forwards
 *   the minimum watermark of both inputs, as a two-input operator would.
 *
 * @module
 */

import type { DataStream, KeyedStream } from "./datastream.ts";
import type { Key } from "../state/key_group.ts";

/**
 * A record of one of two inputs, tagged with its side (Flink's
 * `TaggedUnion.one(...)` / `TaggedUnion.two(...)`).
 *
 * @typeParam T1 records of the first input.
 * @typeParam T2 records of the second input.
 */
export type TaggedUnion<T1, T2> =
  | { readonly tag: 1; readonly value: T1 }
  | { readonly tag: 2; readonly value: T2 };

/** Options of {@linkcode keyedTaggedUnion}. */
export interface KeyedTaggedUnionOptions<T1, T2, K extends Key> {
  /** The first (left) input. */
  readonly first: DataStream<T1>;
  /** The second (right) input. */
  readonly second: DataStream<T2>;
  /** The key of a first-input record. */
  readonly firstKey: (value: T1) => K;
  /** The key of a second-input record. */
  readonly secondKey: (value: T2) => K;
  /** Prefix of the tagging operators' names (e.g. `"Join"` gives `"Join: tag first"`). */
  readonly name: string;
}

/**
 * Tags both inputs, unions them and keys the union by the side's key
 * selector: records of both sides with equal keys meet on one subtask.
 * @returns the keyed union; its key selector calls `firstKey` or
 *   `secondKey` by the record's tag.
 */
export function keyedTaggedUnion<T1, T2, K extends Key>(
  options: KeyedTaggedUnionOptions<T1, T2, K>,
): KeyedStream<TaggedUnion<T1, T2>, K> {
  const { firstKey, secondKey } = options;
  const first = options.first
    .map((value): TaggedUnion<T1, T2> => ({ tag: 1, value }))
    .name(`${options.name}: tag first`);
  const second = options.second
    .map((value): TaggedUnion<T1, T2> => ({ tag: 2, value }))
    .name(`${options.name}: tag second`);
  return first.union(second).keyBy((u) => u.tag === 1 ? firstKey(u.value) : secondKey(u.value));
}

/**
 * Checks that `fn` is a key selector.
 * @param what names the argument in the error, e.g. `"join().where()"`.
 * @throws {TypeError} when `fn` is not a function.
 */
export function checkKeySelector(fn: unknown, what: string): void {
  if (typeof fn !== "function") {
    throw new TypeError(
      `${what} needs a key selector function (value) => key: current value is ${String(fn)}`,
    );
  }
}
