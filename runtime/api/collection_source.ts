/**
 * A bounded source over an in-memory array (Flink's `fromCollection`).
 *
 * The array is cut into `parallelism` contiguous ranges, one split each
 * (`range-0`, `range-1`, ...), so the first source subtask reads the first
 * range, and so on. A split's position is the index of the next element to
 * emit; the elements themselves stay in the source object and never enter a
 * checkpoint. Ranges of one reader are read one after the other, each
 * through its own split output (created when its reading starts, released
 * at its end).
 *
 * ## Invariants
 *
 * - Within a split, elements are emitted in array order, each exactly once
 *   per execution between a checkpoint and the next: a restore continues at
 *   the checkpointed index.
 * - A call to `pollNext` emits at most `batchSize` elements, and a call that
 *   returns `END_OF_INPUT` emits nothing.
 * - Elements are emitted as they are (not copied): don't mutate them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CollectionSource } from "./collection_source.ts";
 *
 * const source = new CollectionSource(["a", "b", "c", "d", "e"]);
 * const splits = source.enumerateSplits({ parallelism: 2 });
 * assert.deepEqual(splits.map((s) => [s.start, s.end]), [[0, 3], [3, 5]]);
 * ```
 *
 * @module
 */

import type {
  Boundedness,
  InputStatus,
  ReaderOutput,
  Source,
  SourceOutput,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
  SplitEnumeratorContext,
} from "./source.ts";

/** The default and upper bound of records emitted per `pollNext` call. */
const DEFAULT_BATCH_SIZE = 1000;

/**
 * A contiguous range `[start, end)` of a {@linkcode CollectionSource}'s array.
 * Plain data, MessagePack-encodable.
 */
export interface CollectionSplit extends SourceSplit {
  /** `range-<i>`, `i` being the range's index among `parallelism` ranges. */
  readonly splitId: string;
  /** The first index of the range. */
  readonly start: number;
  /** One past the last index of the range. */
  readonly end: number;
  /** The index of the next element to emit, in `[start, end]`. */
  readonly position: number;
}

/** Options of {@linkcode CollectionSource}. */
export interface CollectionSourceOptions {
  /** At most this many records per `pollNext` call (default 1000, at least 1). */
  readonly batchSize?: number;
}

/**
 * A bounded source of the elements of an array, in contiguous ranges (see
 * the module docs). Exactly-once with checkpoints: positions are indexes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CollectionSource } from "./collection_source.ts";
 * import { ManualClock } from "../time/manual_clock.ts";
 *
 * const source = new CollectionSource([1, 2, 3]);
 * const reader = source.createReader({
 *   subtaskIndex: 0,
 *   parallelism: 1,
 *   attempt: 0,
 *   operatorName: "numbers",
 *   currentProcessingTime: () => 0,
 *   clock: new ManualClock(),
 * });
 * reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
 * const seen: number[] = [];
 * const split = {
 *   collect: (n: number) => seen.push(n),
 *   emitWatermark() {},
 *   markIdle() {},
 *   markActive() {},
 * };
 * const output = {
 *   ...split,
 *   output() {},
 *   createOutputForSplit: () => split,
 *   releaseOutputForSplit() {},
 * };
 * while (reader.pollNext(output) !== "END_OF_INPUT");
 * assert.deepEqual(seen, [1, 2, 3]);
 * ```
 */
export class CollectionSource<T> implements Source<T, CollectionSplit> {
  /** Always `"bounded"`. */
  readonly boundedness: Boundedness = "bounded";
  /** A copy of the array given to the constructor. */
  readonly elements: readonly T[];
  /** Records per `pollNext` call at most. */
  readonly batchSize: number;

  /**
   * Creates a source of `elements`.
   * @param elements the records, copied (the array, not the elements).
   * @param options see {@linkcode CollectionSourceOptions}.
   * @throws {RangeError} when `batchSize` is not a positive integer.
   */
  constructor(elements: readonly T[], options: CollectionSourceOptions = {}) {
    const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new RangeError(
        `Cannot create a CollectionSource as 'batchSize' must be a positive integer: current value is ${batchSize}`,
      );
    }
    this.elements = [...elements];
    this.batchSize = batchSize;
  }

  /**
   * Cuts the array into `parallelism` contiguous ranges of sizes that differ
   * by at most one (the first ones are the longer); some are empty when the
   * array has fewer elements than `parallelism`.
   * @throws {RangeError} when `parallelism` is not a positive integer.
   */
  enumerateSplits(context: SplitEnumeratorContext): CollectionSplit[] {
    const { parallelism } = context;
    if (!Number.isInteger(parallelism) || parallelism < 1) {
      throw new RangeError(
        `Cannot enumerate CollectionSource splits as 'parallelism' must be a positive integer: current value is ${parallelism}`,
      );
    }
    const n = this.elements.length;
    const base = Math.floor(n / parallelism);
    const extra = n % parallelism;
    const splits: CollectionSplit[] = [];
    let start = 0;
    for (let i = 0; i < parallelism; i++) {
      const end = start + base + (i < extra ? 1 : 0);
      splits.push({ splitId: `range-${i}`, start, end, position: start });
      start = end;
    }
    return splits;
  }

  /** Creates the reader of one source subtask. */
  createReader(context: SourceReaderContext): SourceReader<T, CollectionSplit> {
    return new CollectionReader(this.elements, this.batchSize, context.operatorName);
  }
}

interface ReaderSplit<T> {
  readonly splitId: string;
  readonly start: number;
  readonly end: number;
  position: number;
  /** The split's output, created when its reading starts and released at its end. */
  output: SourceOutput<T> | undefined;
}

class CollectionReader<T> implements SourceReader<T, CollectionSplit> {
  readonly #elements: readonly T[];
  readonly #batchSize: number;
  readonly #operatorName: string;
  /** Unfinished splits, read in assignment order. */
  #splits: ReaderSplit<T>[] = [];

  constructor(elements: readonly T[], batchSize: number, operatorName: string) {
    this.#elements = elements;
    this.#batchSize = batchSize;
    this.#operatorName = operatorName;
  }

  addSplits(splits: CollectionSplit[]): void {
    for (const split of splits) {
      const { splitId, start, end, position } = split;
      const fits = Number.isInteger(start) && Number.isInteger(end) &&
        Number.isInteger(position) && 0 <= start && start <= position && position <= end &&
        end <= this.#elements.length;
      if (!fits) {
        throw new Error(
          `Cannot add split ${splitId} to CollectionSource ${this.#operatorName}: range [${start}, ${end}) at position ${position} does not fit a collection of ${this.#elements.length} elements (did the collection change since the checkpoint?)`,
        );
      }
      if (position < end) this.#splits.push({ splitId, start, end, position, output: undefined });
    }
  }

  pollNext(output: ReaderOutput<T>): InputStatus {
    let budget = this.#batchSize;
    let emitted = 0;
    while (budget > 0) {
      const split = this.#splits[0];
      if (split === undefined) break;
      const out = split.output ??= output.createOutputForSplit(split.splitId);
      const stop = Math.min(split.end, split.position + budget);
      while (split.position < stop) {
        const element = this.#elements[split.position] as T;
        split.position++;
        emitted++;
        budget--;
        out.collect(element);
      }
      if (split.position >= split.end) {
        this.#splits.shift();
        output.releaseOutputForSplit(split.splitId);
      }
    }
    // The call that reports the end emits nothing.
    return emitted > 0 ? "MORE_AVAILABLE" : "END_OF_INPUT";
  }

  snapshotState(_checkpointId: number): CollectionSplit[] {
    return this.#splits.map(({ splitId, start, end, position }) => ({
      splitId,
      start,
      end,
      position,
    }));
  }
}
