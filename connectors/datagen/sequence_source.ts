/**
 * A source of the integers `from..to` (inclusive), bounded or unbounded,
 * optionally rate-limited (Flink's `NumberSequenceSource` and the
 * `datagen` connector's rate limit).
 *
 * ## Splits: interleaved
 *
 * With parallelism `p` the sequence is cut into `p` *interleaved* splits:
 * split `i` (`sequence-<i>`) holds `from + i`, `from + i + p`,
 * `from + i + 2p`, ... up to `to`. Interleaving, unlike contiguous ranges,
 * also works for an unbounded sequence (`to = Infinity`) and keeps every
 * subtask's numbers growing at the same pace. A split's position is the next
 * number it will emit; a split is plain data (`{ splitId, next, step, to }`,
 * with `to` possibly `Infinity`, which MessagePack encodes as a float64).
 *
 * ## Invariants
 *
 * - Every number of the range is emitted by exactly one split, and each
 *   split emits its numbers in increasing order.
 * - A reader with several splits (after a restore at a lower parallelism)
 *   takes one number from each in turn, so no split starves.
 * - A `pollNext` call emits at most `batchSize` numbers; a call that returns
 *   `END_OF_INPUT` emits nothing.
 * - With `recordsPerSecond` = *r*, each of the `p` readers emits at most
 *   *r* ÷ *p* records per second of processing time on average (a token bucket
 *   holding at most 100 ms worth of records, at least one), so the whole
 *   source emits at most *r* per second.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SequenceSource } from "./sequence_source.ts";
 *
 * const splits = new SequenceSource(1, 10).enumerateSplits({ parallelism: 3 });
 * assert.deepEqual(splits.map((s) => s.next), [1, 2, 3]);
 * assert.deepEqual(splits.map((s) => s.step), [3, 3, 3]);
 * ```
 *
 * @module
 */

import type {
  Boundedness,
  Source,
  SourceOutput,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
  SplitEnumeratorContext,
} from "../../runtime/api/source.ts";
import {
  checkPacing,
  type InterleavedRange,
  InterleavedReader,
  interleavedSplits,
} from "./interleaved_reader.ts";

/** One interleaved part of a {@linkcode SequenceSource}. Plain data, MessagePack-encodable. */
export interface SequenceSplit extends SourceSplit {
  /** `sequence-<i>`. */
  readonly splitId: string;
  /** The next number to emit (the split's position). */
  readonly next: number;
  /** The distance between two numbers of this split: the enumerating parallelism. */
  readonly step: number;
  /** The last number of the whole sequence (inclusive), or `Infinity`. */
  readonly to: number;
}

/** Options of {@linkcode SequenceSource}. */
export interface SequenceSourceOptions {
  /**
   * The total rate over all subtasks, in records per second of processing
   * time (> 0). Unlimited when absent.
   */
  readonly recordsPerSecond?: number;
  /** At most this many records per `pollNext` call (default 1000, at least 1). */
  readonly batchSize?: number;
}

/**
 * The integers `from..to`, inclusive, in interleaved splits (see the module
 * docs). Bounded unless `to` is `Infinity`. Exactly-once with checkpoints:
 * a split's position is its next number.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { SequenceSource } from "./sequence_source.ts";
 * import { ManualClock } from "../../runtime/time/manual_clock.ts";
 * import { RecordingReaderOutput } from "../testing/reader_output.ts";
 *
 * const source = new SequenceSource(1, 5);
 * const reader = source.createReader({
 *   subtaskIndex: 0,
 *   parallelism: 1,
 *   attempt: 0,
 *   operatorName: "numbers",
 *   currentProcessingTime: () => 0,
 *   clock: new ManualClock(),
 * });
 * reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
 * const output = new RecordingReaderOutput<number>();
 * while (reader.pollNext(output) !== "END_OF_INPUT");
 * assert.deepEqual(output.recordsOf("sequence-0"), [1, 2, 3, 4, 5]);
 * ```
 */
export class SequenceSource implements Source<number, SequenceSplit> {
  /** `"continuous-unbounded"` when `to` is `Infinity`, else `"bounded"`. */
  readonly boundedness: Boundedness;
  /** The first number. */
  readonly from: number;
  /** The last number (inclusive), or `Infinity`. */
  readonly to: number;
  /** The total rate limit in records per second, or `undefined` for none. */
  readonly recordsPerSecond: number | undefined;
  /** Records per `pollNext` call at most. */
  readonly batchSize: number;

  /**
   * Creates a source of the integers `from..to`.
   * @param from the first number, a safe integer.
   * @param to the last number (inclusive): a safe integer >= `from`, or `Infinity`.
   * @param options see {@linkcode SequenceSourceOptions}.
   * @throws {RangeError} when a bound, `recordsPerSecond` or `batchSize` is invalid.
   */
  constructor(from: number, to: number, options: SequenceSourceOptions = {}) {
    if (!Number.isSafeInteger(from)) {
      throw new RangeError(
        `Cannot create a SequenceSource as 'from' must be a safe integer: current value is ${from}`,
      );
    }
    if (to !== Number.POSITIVE_INFINITY && !(Number.isSafeInteger(to) && to >= from)) {
      throw new RangeError(
        `Cannot create a SequenceSource as 'to' must be Infinity or a safe integer >= from (${from}): current value is ${to}`,
      );
    }
    const rate = options.recordsPerSecond;
    const batchSize = checkPacing("SequenceSource", "recordsPerSecond", rate, options.batchSize);
    this.from = from;
    this.to = to;
    this.recordsPerSecond = rate;
    this.batchSize = batchSize;
    this.boundedness = to === Number.POSITIVE_INFINITY ? "continuous-unbounded" : "bounded";
  }

  /**
   * `parallelism` interleaved splits: split `i` starts at `from + i` and
   * steps by `parallelism`. Splits past `to` are returned too (already
   * finished), so split `i` always goes to subtask `i`.
   * @throws {RangeError} when `parallelism` is not a positive integer.
   */
  enumerateSplits(context: SplitEnumeratorContext): SequenceSplit[] {
    return interleavedSplits("SequenceSource", "sequence", context.parallelism, this.from)
      .map((split) => ({ ...split, to: this.to }));
  }

  /** Creates the reader of one source subtask; its rate is `recordsPerSecond / parallelism`. */
  createReader(context: SourceReaderContext): SourceReader<number, SequenceSplit> {
    const rate = this.recordsPerSecond === undefined
      ? undefined
      : this.recordsPerSecond / context.parallelism;
    return new SequenceReader(context, this.batchSize, rate);
  }
}

/** Emits each number of its splits as it is. */
class SequenceReader extends InterleavedReader<number, SequenceSplit> {
  constructor(context: SourceReaderContext, batchSize: number, rate: number | undefined) {
    super(context, "SequenceSource", batchSize, rate);
  }

  protected toRange({ splitId, next, step, to }: SequenceSplit): InterleavedRange {
    return { splitId, next, step, last: to };
  }

  protected fromRange({ splitId, next, step, last }: InterleavedRange): SequenceSplit {
    return { splitId, next, step, to: last };
  }

  protected emit(n: number, output: SourceOutput<number>): void {
    output.collect(n);
  }
}
