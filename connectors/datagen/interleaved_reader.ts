/**
 * The reader shared by the generating sources (`SequenceSource`,
 * `NexmarkSource`): each split is an interleaved run of numbers `next`,
 * `next + step`, … up to `last` (inclusive, `Infinity` when unbounded), and
 * the reader emits what the source makes of each number. Splits are served
 * round-robin, at most `batchSize` numbers per `pollNext`, under an optional
 * rate limit (a {@linkcode RateLimiter} on the job's processing-time clock).
 * A split's position is its next number, so a restore resumes exactly.
 *
 * Each split emits through its own split output
 * (`output.createOutputForSplit`, created at the first `pollNext` after the
 * split was added, so it counts for the subtask's watermark even before its
 * first record, and released after its last record), so each split has its
 * own watermarks and idleness (Flink's FLIP-27 split-local outputs).
 *
 * @module
 */

import type {
  InputStatus,
  ReaderOutput,
  SourceOutput,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
} from "../../runtime/api/source.ts";
import { type Sleep, sleepUntil } from "../../runtime/time/clock.ts";
import { RateLimiter } from "../../runtime/time/rate_limiter.ts";

/** The default `batchSize` of the generating sources: at most this many numbers per `pollNext`. */
export const DEFAULT_BATCH_SIZE = 1000;

/**
 * Checks a generating source's pacing options.
 *
 * @param source the source's class name, for messages, e.g. `"SequenceSource"`.
 * @param rateOption the name of its rate option, e.g. `"recordsPerSecond"`.
 * @param rate numbers per second over all subtasks, or `undefined` for no limit.
 * @param batchSize numbers per `pollNext`, or `undefined` for {@linkcode DEFAULT_BATCH_SIZE}.
 * @returns the batch size.
 * @throws {RangeError} when `rate` is given but not a positive finite
 *   number, or `batchSize` is not a positive integer, naming the current value.
 */
export function checkPacing(
  source: string,
  rateOption: string,
  rate: number | undefined,
  batchSize: number | undefined,
): number {
  if (rate !== undefined && !(rate > 0 && Number.isFinite(rate))) {
    throw new RangeError(
      `Cannot create a ${source} as '${rateOption}' must be a positive number: current value is ${rate}`,
    );
  }
  const batch = batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(batch) || batch < 1) {
    throw new RangeError(
      `Cannot create a ${source} as 'batchSize' must be a positive integer: current value is ${batch}`,
    );
  }
  return batch;
}

/**
 * The positions of `parallelism` interleaved splits: split `i` (id
 * `<prefix>-<i>`) starts at `first + i` and steps by `parallelism`, so split
 * `i` always goes to subtask `i`.
 *
 * @param source the source's class name, for messages.
 * @param prefix the split ids' prefix, e.g. `"sequence"`.
 * @param parallelism the source's parallelism.
 * @param first the first number of split 0.
 * @returns one position per split, in order.
 * @throws {RangeError} when `parallelism` is not a positive integer.
 */
export function interleavedSplits(
  source: string,
  prefix: string,
  parallelism: number,
  first: number,
): { splitId: string; next: number; step: number }[] {
  if (!Number.isInteger(parallelism) || parallelism < 1) {
    throw new RangeError(
      `Cannot enumerate ${source} splits as 'parallelism' must be a positive integer: current value is ${parallelism}`,
    );
  }
  return Array.from({ length: parallelism }, (_, i) => ({
    splitId: `${prefix}-${i}`,
    next: first + i,
    step: parallelism,
  }));
}

/** The position of one interleaved split. */
export interface InterleavedRange {
  /** The split's id. */
  readonly splitId: string;
  /** The next number to emit. */
  next: number;
  /** Distance between two numbers (>= 1). */
  readonly step: number;
  /** The last number, inclusive (`Infinity`: unbounded). */
  readonly last: number;
}

/** A range being read, with its split output once it emitted. */
interface ActiveRange<T> extends InterleavedRange {
  output: SourceOutput<T> | undefined;
}

/**
 * A reader over interleaved number splits (see the module docs). A source
 * says how its split shape maps to a range and back, and what to emit for
 * a number.
 */
export abstract class InterleavedReader<T, S extends SourceSplit> implements SourceReader<T, S> {
  /** The reader's context. */
  protected readonly context: SourceReaderContext;
  readonly #batchSize: number;
  readonly #limiter: RateLimiter | undefined;
  readonly #source: string;
  #splits: ActiveRange<T>[] = [];
  #cursor = 0;
  /** Splits were added since the last `pollNext`: their outputs are still to be created. */
  #newSplits = false;
  #waiter: Sleep | undefined;

  /**
   * @param context the reader's context.
   * @param source the source's class name, for error messages.
   * @param batchSize numbers per `pollNext`, at most.
   * @param rate this reader's share of the rate, in records per second (`undefined`: unlimited).
   */
  protected constructor(
    context: SourceReaderContext,
    source: string,
    batchSize: number,
    rate: number | undefined,
  ) {
    this.context = context;
    this.#source = source;
    this.#batchSize = batchSize;
    this.#limiter = rate === undefined ? undefined : new RateLimiter(rate);
  }

  /**
   * The range of a split, or `undefined` when the split is malformed.
   * `next > last` means the split is exhausted.
   */
  protected abstract toRange(split: S): InterleavedRange | undefined;
  /** The split shape of a range's current position. */
  protected abstract fromRange(range: InterleavedRange): S;
  /** Emits the record of number `n` into its split's output. */
  protected abstract emit(n: number, output: SourceOutput<T>): void;

  /** Adds splits; exhausted ones are dropped. @throws {Error} naming a malformed split. */
  addSplits(splits: S[]): void {
    for (const split of splits) {
      const range = this.toRange(split);
      const valid = range !== undefined && Number.isSafeInteger(range.next) &&
        Number.isSafeInteger(range.step) && range.step >= 1 &&
        (range.last === Number.POSITIVE_INFINITY || Number.isSafeInteger(range.last));
      if (!valid) {
        throw new Error(
          `Cannot add split ${split.splitId} to ${this.#source} ${this.context.operatorName}: ` +
            `it is not one of its splits (${JSON.stringify(split)})`,
        );
      }
      if (range.next <= range.last) {
        this.#splits.push({ ...range, output: undefined });
        this.#newSplits = true;
      }
    }
  }

  /**
   * Emits up to `batchSize` records, round-robin over the splits, each into
   * its split's output; a split's output is released after its last record.
   * @throws {RangeError} when a split runs past `Number.MAX_SAFE_INTEGER`.
   */
  pollNext(output: ReaderOutput<T>): InputStatus {
    if (this.#splits.length === 0) return "END_OF_INPUT";
    if (this.#newSplits) {
      this.#newSplits = false;
      for (const split of this.#splits) split.output ??= output.createOutputForSplit(split.splitId);
    }
    let budget = this.#batchSize;
    if (this.#limiter !== undefined) {
      budget = Math.min(budget, this.#limiter.available(this.context.currentProcessingTime()));
      if (budget === 0) return "NOTHING_AVAILABLE";
    }
    let emitted = 0;
    while (emitted < budget && this.#splits.length > 0) {
      if (this.#cursor >= this.#splits.length) this.#cursor = 0;
      const split = this.#splits[this.#cursor]!;
      const n = split.next;
      if (n > Number.MAX_SAFE_INTEGER) {
        throw new RangeError(
          `${this.#source} ${this.context.operatorName} split ${split.splitId} ran past ` +
            `Number.MAX_SAFE_INTEGER at ${n}`,
        );
      }
      const out = split.output!;
      split.next = n + split.step;
      emitted++;
      if (split.next > split.last) {
        this.#splits.splice(this.#cursor, 1);
        this.emit(n, out);
        output.releaseOutputForSplit(split.splitId);
      } else {
        this.#cursor++;
        this.emit(n, out);
      }
    }
    this.#limiter?.take(emitted);
    return "MORE_AVAILABLE";
  }

  /** Resolves when the rate limit lets the next record go, on the reader context's `clock`. */
  isAvailable(): Promise<void> {
    if (this.#waiter !== undefined) return this.#waiter.promise;
    const limiter = this.#limiter;
    const now = this.context.currentProcessingTime();
    if (limiter === undefined || this.#splits.length === 0 || limiter.available(now) > 0) {
      return Promise.resolve();
    }
    const waiter = sleepUntil(this.context.clock, limiter.nextAt(now));
    this.#waiter = waiter;
    waiter.promise.then(() => {
      if (this.#waiter === waiter) this.#waiter = undefined;
    });
    return waiter.promise;
  }

  /** The splits at their current positions. */
  snapshotState(_checkpointId: number): S[] {
    return this.#splits.map(({ splitId, next, step, last }) =>
      this.fromRange({ splitId, next, step, last })
    );
  }

  /** Cancels a pending rate-limit wait. */
  close(): void {
    this.#waiter?.cancel();
  }
}
