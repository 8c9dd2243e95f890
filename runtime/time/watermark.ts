/**
 * Event time: timestamps and watermarks, after Flink's `WatermarkStrategy`
 * ("Generating Watermarks", Flink docs).
 *
 * A watermark *w* declares that no record with timestamp <= *w* follows. Source
 * subtasks generate watermarks periodically (every `autoWatermarkIntervalMs`,
 * default 200 ms) from the timestamps they saw; they travel in-band through
 * the channels, and a subtask with several input channels uses the minimum
 * over its channels. At the end of bounded input a source emits
 * {@linkcode MAX_WATERMARK}, which fires every pending event-time timer.
 *
 * @module
 */

/** The watermark that ends event time: every timer and window fires. */
export const MAX_WATERMARK: number = Number.POSITIVE_INFINITY;
/** The watermark before any was seen. */
export const MIN_WATERMARK: number = Number.NEGATIVE_INFINITY;

/** Extracts a record's event timestamp in ms. */
export type TimestampAssigner<T> = (record: T, sourceTimestamp: number | undefined) => number;

/** Generates watermarks from the timestamps a source subtask sees (Flink's `WatermarkGenerator`). */
export interface WatermarkGenerator {
  /** Sees one record's timestamp (ms). */
  onEvent(timestamp: number): void;
  /** The watermark to emit now, or `undefined` for none yet. Called periodically. */
  onPeriodicEmit(): number | undefined;
}

/**
 * How a source assigns timestamps and generates watermarks. Build one with
 * the static factories, then refine it with `withTimestampAssigner`.
 *
 * @example
 * ```ts
 * import { WatermarkStrategy } from "./watermark.ts";
 * const strategy = WatermarkStrategy.forBoundedOutOfOrderness<{ ts: number }>(5_000)
 *   .withTimestampAssigner((r) => r.ts);
 * ```
 */
export class WatermarkStrategy<T> {
  /** The timestamp assigner, if any (else a source's own timestamps are kept). */
  readonly timestampAssigner: TimestampAssigner<T> | undefined;
  /** Creates one generator per source subtask; `undefined` means no watermarks. */
  readonly createGenerator: (() => WatermarkGenerator) | undefined;

  private constructor(
    assigner: TimestampAssigner<T> | undefined,
    createGenerator: (() => WatermarkGenerator) | undefined,
  ) {
    this.timestampAssigner = assigner;
    this.createGenerator = createGenerator;
  }

  /** No watermarks: event-time timers never fire before the end of input. */
  static noWatermarks<T>(): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(undefined, undefined);
  }

  /** Timestamps never decrease: the watermark is the largest timestamp seen minus 1 ms. */
  static forMonotonousTimestamps<T>(): WatermarkStrategy<T> {
    return WatermarkStrategy.forBoundedOutOfOrderness<T>(0);
  }

  /**
   * Records may arrive up to `maxOutOfOrdernessMs` late: the watermark is the
   * largest timestamp seen minus `maxOutOfOrdernessMs` minus 1 ms.
   * @throws {RangeError} when `maxOutOfOrdernessMs` is negative or not finite.
   */
  static forBoundedOutOfOrderness<T>(maxOutOfOrdernessMs: number): WatermarkStrategy<T> {
    if (!Number.isFinite(maxOutOfOrdernessMs) || maxOutOfOrdernessMs < 0) {
      throw new RangeError(
        `'maxOutOfOrdernessMs' must be a finite number >= 0: current value is ${maxOutOfOrdernessMs}`,
      );
    }
    return new WatermarkStrategy<T>(
      undefined,
      () => new BoundedOutOfOrdernessGenerator(maxOutOfOrdernessMs),
    );
  }

  /** The same strategy, with timestamps taken from each record by `assigner`. */
  withTimestampAssigner(assigner: TimestampAssigner<T>): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(assigner, this.createGenerator);
  }
}

/** Watermark = max timestamp seen - bound - 1 (Flink's `BoundedOutOfOrdernessWatermarks`). */
class BoundedOutOfOrdernessGenerator implements WatermarkGenerator {
  #maxTimestamp = Number.NEGATIVE_INFINITY;
  readonly #bound: number;
  constructor(bound: number) {
    this.#bound = bound;
  }
  onEvent(timestamp: number): void {
    if (timestamp > this.#maxTimestamp) this.#maxTimestamp = timestamp;
  }
  onPeriodicEmit(): number | undefined {
    if (this.#maxTimestamp === Number.NEGATIVE_INFINITY) return undefined;
    return this.#maxTimestamp - this.#bound - 1;
  }
}
