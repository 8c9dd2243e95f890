/**
 * Who reads which split, for sources with split discovery (see "Split
 * discovery" in `source.ts`): pure decisions, no I/O. The idea is that of
 * Flink's `KafkaTopicPartitionAssigner` (each subtask of the legacy
 * `FlinkKafkaConsumer` computes, alone, whether it owns a partition) with
 * a hash of the split id in place of Kafka's topic hash plus partition
 * number, since split ids here are plain strings.
 *
 * ## Ownership
 *
 * `splitOwner(id, p)` is the 32-bit FNV-1a hash of the UTF-8 bytes of `id`,
 * modulo `p`. It depends on nothing but the id and the parallelism, so:
 *
 * - every subtask computes the same owner for a split, without talking to
 *   the others;
 * - a split keeps its owner across restarts at the same parallelism, and
 *   after a resume at another parallelism every split (checkpointed or
 *   discovered later) is owned by exactly one subtask again.
 *
 * A hash may give one subtask more splits than another (with few splits,
 * some subtasks get none); round-robin over a sorted list would balance
 * better but moves splits to other owners whenever a new id sorts before
 * them, which a subtask that holds a split cannot learn of.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { newOwnedSplits, splitOwner } from "./split_assignment.ts";
 *
 * const owner = splitOwner("orders:orders.eu", 3);
 * assert.ok(owner >= 0 && owner < 3);
 * const mine = newOwnedSplits({
 *   discovered: [{ splitId: "orders:orders.eu" }, { splitId: "orders:orders.us" }],
 *   known: new Set(["orders:orders.us"]),
 *   subtaskIndex: owner,
 *   parallelism: 3,
 * });
 * assert.deepEqual(mine.map((s) => s.splitId), ["orders:orders.eu"]);
 * ```
 *
 * @module
 */

import { SuppressRestartsError } from "../failure.ts";
import type { SourceSplit } from "./source.ts";

const utf8 = new TextEncoder();

function checkParallelism(parallelism: number): void {
  if (!Number.isSafeInteger(parallelism) || parallelism < 1) {
    throw new RangeError(
      `Split ownership needs a parallelism that is a positive integer: current value is ${parallelism}`,
    );
  }
}

/**
 * The source subtask (0 … `parallelism` - 1) that owns split `splitId`:
 * FNV-1a (32 bit) of the id's UTF-8 bytes, modulo `parallelism`.
 * @throws {RangeError} when `parallelism` is not a positive integer.
 */
export function splitOwner(splitId: string, parallelism: number): number {
  checkParallelism(parallelism);
  let hash = 0x811c9dc5;
  for (const byte of utf8.encode(splitId)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % parallelism;
}

/**
 * The splits of `splits` that subtask `subtaskIndex` owns, in their order.
 * @throws {RangeError} when `parallelism` is not a positive integer or
 *   `subtaskIndex` is not in 0 … `parallelism` - 1.
 */
export function ownedSplits<S extends SourceSplit>(
  splits: readonly S[],
  subtaskIndex: number,
  parallelism: number,
): S[] {
  checkParallelism(parallelism);
  if (!Number.isSafeInteger(subtaskIndex) || subtaskIndex < 0 || subtaskIndex >= parallelism) {
    throw new RangeError(
      `Split ownership needs a subtask index in 0..${
        parallelism - 1
      }: current value is ${subtaskIndex}`,
    );
  }
  return splits.filter((s) => splitOwner(s.splitId, parallelism) === subtaskIndex);
}

/** What {@linkcode newOwnedSplits} decides on. */
export interface NewOwnedSplitsInput<S extends SourceSplit> {
  /** What a discovery returned (every split that exists, any owner). */
  readonly discovered: readonly S[];
  /** The ids of the splits the subtask holds already (restored, enumerated or discovered before). */
  readonly known: ReadonlySet<string>;
  /** The subtask deciding. */
  readonly subtaskIndex: number;
  /** The source's parallelism. */
  readonly parallelism: number;
}

/**
 * The discovered splits subtask `subtaskIndex` must add to its reader: those
 * it owns and does not hold yet, in discovery order, each id once (the first
 * occurrence wins).
 * @throws {RangeError} as {@linkcode ownedSplits}.
 */
export function newOwnedSplits<S extends SourceSplit>(input: NewOwnedSplitsInput<S>): S[] {
  const seen = new Set<string>();
  const out: S[] = [];
  for (const split of ownedSplits(input.discovered, input.subtaskIndex, input.parallelism)) {
    if (input.known.has(split.splitId) || seen.has(split.splitId)) continue;
    seen.add(split.splitId);
    out.push(split);
  }
  return out;
}

/**
 * Checks that restored splits (the union of every old subtask's splits)
 * name each split once: two subtasks never read one split, so a repeat
 * means the checkpoint is corrupt, and reading the split twice would emit
 * its records twice.
 * @param splits the restored splits.
 * @param where the source, for the error (e.g. `source 'orders' (uid orders)`).
 * @throws {SuppressRestartsError} naming the split id and `where` when an id
 *   appears twice (a restart would restore the same checkpoint again).
 */
export function checkDistinctSplitIds(splits: readonly SourceSplit[], where: string): void {
  const seen = new Set<string>();
  for (const { splitId } of splits) {
    if (seen.has(splitId)) {
      throw new SuppressRestartsError(
        `Cannot restore ${where}: split ${
          JSON.stringify(splitId)
        } is in the checkpoint twice (each split must be held by one subtask)`,
      );
    }
    seen.add(splitId);
  }
}
