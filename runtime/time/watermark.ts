/**
 * Event time: timestamps, watermarks and watermark status, after Flink's
 * `WatermarkStrategy` and `WatermarkGenerator` ("Generating Watermarks",
 * Flink docs; FLIP-126 for the generator API, FLIP-27 and FLIP-182 for
 * per-split generation and idleness).
 *
 * A watermark *w* (ms) declares that no record with timestamp <= *w*
 * follows. Sources run one {@linkcode WatermarkGenerator} per split; a source
 * subtask emits the minimum over its active splits (see
 * `watermark_multiplexer.ts`). Watermarks travel in-band through the
 * channels, and a subtask with several input channels uses the minimum over
 * its active channels (see `status_watermark_valve.ts`). At the end of
 * bounded input a source emits {@linkcode MAX_WATERMARK}, which fires every
 * pending event-time timer.
 *
 * ## Watermark status
 *
 * A split (and a subtask, and a channel) is `"active"` or `"idle"`
 * ({@linkcode WatermarkStatus}). `WatermarkStrategy.withIdleness(ms)` marks a
 * split idle after `ms` of processing time without records; a record makes
 * it active again. An idle input is left out of the minimum downstream, so a
 * quiet split or partition does not hold back event time. A source subtask
 * that owns no split is idle from the start.
 *
 * ## Difference from Flink: watermarks hold across a restore
 *
 * Flink does not checkpoint watermarks: after a restore every operator
 * starts again at `Long.MIN_VALUE`, so a record that was late before the
 * failure can be on time when it is replayed, and a window that dropped it
 * may now take it. Weir keeps what is needed for late-data decisions to
 * match a run without the failure:
 *
 * - each split keeps, in the source's checkpoint, the last watermark it
 *   contributed and its generator's state
 *   ({@linkcode WatermarkGenerator.snapshotState}, e.g. the highest timestamp
 *   seen), so its watermark resumes where it was;
 * - each operator keeps its current watermark, and after a restore uses it
 *   as a floor until a higher watermark arrives. On a rescale the floor is
 *   the minimum over the old subtasks: a new subtask consumes what several
 *   old ones did, and only their minimum is a watermark that every one of
 *   them had passed (a higher floor would drop records an old subtask still
 *   took).
 *
 * The floor is not operator state: an operator holding only a watermark
 * does not count as stateful when resuming with `allowNonRestoredState`.
 *
 * ## Invariants
 *
 * - A generator's watermarks only count when they grow: outputs ignore a
 *   watermark not above the last one.
 * - `MAX_WATERMARK` is emitted only by a bounded input that ended.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { WatermarkStrategy } from "./watermark.ts";
 * import { ManualClock } from "./manual_clock.ts";
 *
 * const strategy = WatermarkStrategy.forBoundedOutOfOrderness<{ ts: number }>(5_000)
 *   .withTimestampAssigner((r) => r.ts)
 *   .withIdleness(60_000);
 * const generator = strategy.createGenerator!({ clock: new ManualClock() });
 * const emitted: number[] = [];
 * const output = { emitWatermark: (w: number) => emitted.push(w), markIdle() {}, markActive() {} };
 * generator.onEvent({ ts: 10_000 }, 10_000, output);
 * generator.onPeriodicEmit(output);
 * assert.deepEqual(emitted, [4_999]);
 * ```
 *
 * @module
 */

import type { Clock } from "./clock.ts";

/** The watermark that ends event time: every timer and window fires. */
export const MAX_WATERMARK: number = Number.POSITIVE_INFINITY;
/** The watermark before any was seen. */
export const MIN_WATERMARK: number = Number.NEGATIVE_INFINITY;

/**
 * The key under which a subtask's checkpoint keeps its operators' watermark
 * floors (see "Difference from Flink" above); no operator may have it as
 * its uid.
 */
export const WATERMARK_FLOORS_KEY = "weir.watermarks";

/**
 * Whether an input currently drives event time (Flink's `WatermarkStatus`):
 * an `"idle"` split, subtask or channel is left out of the minimum
 * downstream until it becomes `"active"` again.
 */
export type WatermarkStatus = "active" | "idle";

/**
 * Extracts a record's event timestamp in ms (Flink's `TimestampAssigner`).
 * `sourceTimestamp` is the timestamp the source gave the record, if any.
 */
export type TimestampAssigner<T> = (record: T, sourceTimestamp: number | undefined) => number;

/**
 * Where a {@linkcode WatermarkGenerator} emits (Flink's `WatermarkOutput`).
 * Watermarks are in ms; one not above the output's last is ignored.
 */
export interface WatermarkOutput {
  /** Emits watermark `watermark` (ms); also marks the output active. */
  emitWatermark(watermark: number): void;
  /** Marks the output idle: it no longer holds back event time downstream. */
  markIdle(): void;
  /** Marks the output active again (a record or a watermark does it too). */
  markActive(): void;
}

/**
 * Generates watermarks from the events of one split (in a source) or one
 * subtask (in `assignTimestampsAndWatermarks`), after Flink's
 * `WatermarkGenerator`. A generator may emit in `onEvent` (punctuated
 * watermarks) or in `onPeriodicEmit`, called every auto-watermark interval
 * (`setAutoWatermarkInterval`, default 200 ms of processing time).
 *
 * `snapshotState` and `restoreState` go beyond Flink: implement them so a
 * split's watermark resumes after a restore exactly where it was (see the
 * module docs); without them the split resumes from the last watermark it
 * emitted.
 */
export interface WatermarkGenerator<T = unknown> {
  /** Sees one event and its timestamp (ms); may emit a watermark at once. */
  onEvent(event: T, eventTimestamp: number, output: WatermarkOutput): void;
  /** Called periodically; emits the watermark due now, if any. */
  onPeriodicEmit(output: WatermarkOutput): void;
  /**
   * The generator's state, MessagePack-encodable (e.g. the highest
   * timestamp seen), checkpointed with its split.
   */
  snapshotState?(): unknown;
  /**
   * Restores what `snapshotState` returned, before any event.
   * @throws {Error} when `state` is not what this generator snapshots.
   */
  restoreState?(state: unknown): void;
}

/** What a generator gets when it is created (Flink's `WatermarkGeneratorSupplier.Context`). */
export interface WatermarkGeneratorContext {
  /** The job's processing-time clock. */
  readonly clock: Clock;
}

/** Creates one generator per split or subtask (Flink's `WatermarkGeneratorSupplier`). */
export type WatermarkGeneratorSupplier<T> = (
  context: WatermarkGeneratorContext,
) => WatermarkGenerator<T>;

/**
 * How a source (or `assignTimestampsAndWatermarks`) assigns timestamps,
 * generates watermarks and detects idleness. Build one with the static
 * factories, then refine it with `withTimestampAssigner` and
 * `withIdleness`. Strategies are immutable.
 *
 * @example
 * ```ts
 * import { WatermarkStrategy } from "./watermark.ts";
 * const strategy = WatermarkStrategy.forBoundedOutOfOrderness<{ ts: number }>(5_000)
 *   .withTimestampAssigner((r) => r.ts)
 *   .withIdleness(30_000);
 * console.assert(strategy.idleTimeoutMs === 30_000);
 * ```
 */
export class WatermarkStrategy<T> {
  /** The timestamp assigner, if any (else a source's own timestamps are kept). */
  readonly timestampAssigner: TimestampAssigner<T> | undefined;
  /** Creates one generator per split or subtask; `undefined` means no watermarks. */
  readonly createGenerator: WatermarkGeneratorSupplier<T> | undefined;
  /**
   * Processing time without records after which a split (and a subtask
   * whose splits are all idle) is idle, in ms; `undefined`: never idle.
   */
  readonly idleTimeoutMs: number | undefined;

  private constructor(
    assigner: TimestampAssigner<T> | undefined,
    createGenerator: WatermarkGeneratorSupplier<T> | undefined,
    idleTimeoutMs: number | undefined,
  ) {
    this.timestampAssigner = assigner;
    this.createGenerator = createGenerator;
    this.idleTimeoutMs = idleTimeoutMs;
  }

  /** No watermarks: event-time timers never fire before the end of input. */
  static noWatermarks<T>(): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(undefined, undefined, undefined);
  }

  /** Timestamps never decrease: the watermark is the largest timestamp seen minus 1 ms. */
  static forMonotonousTimestamps<T>(): WatermarkStrategy<T> {
    return WatermarkStrategy.forBoundedOutOfOrderness<T>(0);
  }

  /**
   * Records may arrive up to `maxOutOfOrdernessMs` late: the watermark is the
   * largest timestamp seen minus `maxOutOfOrdernessMs` minus 1 ms, emitted
   * periodically (Flink's `BoundedOutOfOrdernessWatermarks`). Its state, the
   * largest timestamp seen, is checkpointed with each split.
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
      () => new BoundedOutOfOrdernessWatermarks(maxOutOfOrdernessMs),
      undefined,
    );
  }

  /**
   * A strategy whose generators `supplier` makes (Flink's
   * `WatermarkStrategy.forGenerator`), e.g. punctuated watermarks.
   * @throws {TypeError} when `supplier` is not a function.
   */
  static forGenerator<T>(supplier: WatermarkGeneratorSupplier<T>): WatermarkStrategy<T> {
    if (typeof supplier !== "function") {
      throw new TypeError(
        `WatermarkStrategy.forGenerator needs a function: current value is ${typeof supplier}`,
      );
    }
    return new WatermarkStrategy<T>(undefined, supplier, undefined);
  }

  /** The same strategy, with timestamps taken from each record by `assigner`. */
  withTimestampAssigner(assigner: TimestampAssigner<T>): WatermarkStrategy<T> {
    return new WatermarkStrategy<T>(assigner, this.createGenerator, this.idleTimeoutMs);
  }

  /**
   * The same strategy, marking a split idle after `idleTimeoutMs` of
   * processing time (the job's clock) without records, and a source subtask
   * idle when all its splits are (Flink's `withIdleness`). Idleness is
   * checked every auto-watermark interval, so a split turns idle between
   * `idleTimeoutMs` and `idleTimeoutMs` plus one interval after its last
   * record. A record makes it active again.
   * @throws {RangeError} unless `idleTimeoutMs` is a positive finite number.
   */
  withIdleness(idleTimeoutMs: number): WatermarkStrategy<T> {
    if (!(Number.isFinite(idleTimeoutMs) && idleTimeoutMs > 0)) {
      throw new RangeError(
        `'idleTimeoutMs' must be a positive finite number: current value is ${idleTimeoutMs}`,
      );
    }
    return new WatermarkStrategy<T>(this.timestampAssigner, this.createGenerator, idleTimeoutMs);
  }
}

/**
 * Watermark = largest timestamp seen - bound - 1 ms, emitted periodically
 * (Flink's `BoundedOutOfOrdernessWatermarks`). Its state is the largest
 * timestamp seen (`-Infinity` before any).
 */
class BoundedOutOfOrdernessWatermarks implements WatermarkGenerator<unknown> {
  #maxTimestamp = Number.NEGATIVE_INFINITY;
  readonly #bound: number;
  constructor(bound: number) {
    this.#bound = bound;
  }
  onEvent(_event: unknown, timestamp: number): void {
    if (timestamp > this.#maxTimestamp) this.#maxTimestamp = timestamp;
  }
  onPeriodicEmit(output: WatermarkOutput): void {
    if (this.#maxTimestamp === Number.NEGATIVE_INFINITY) return;
    output.emitWatermark(this.#maxTimestamp - this.#bound - 1);
  }
  snapshotState(): number {
    return this.#maxTimestamp;
  }
  restoreState(state: unknown): void {
    if (typeof state !== "number" || Number.isNaN(state)) {
      throw new Error(
        `Cannot restore a bounded-out-of-orderness watermark generator: its state must be the largest timestamp seen (a number), current value is ${
          JSON.stringify(state)
        }`,
      );
    }
    if (state > this.#maxTimestamp) this.#maxTimestamp = state;
  }
}
