/**
 * The interval join operator (Flink's `IntervalJoinOperator`): a keyed
 * two-input operator that buffers each side's elements by timestamp in
 * keyed `MapState`, joins every arriving element with the other side's
 * buffered elements within the bounds, and drops each timestamp's bucket
 * with an event-time timer once the watermark says it can match nothing
 * more. See `runtime/api/interval_join.ts` for the user's view.
 *
 * ## The arithmetic (pure, below)
 *
 * With inclusive bounds `lower <= upper` (ms), a left element at `l` and a
 * right element at `r` join when `l + lower <= r <= l + upper`. Seen from
 * either side, the other side's timestamps that join lie in
 * `[ts + relLower, ts + relUpper]`, with `(lower, upper)` for the left side
 * and `(-upper, -lower)` for the right ({@linkcode relativeBounds}). An
 * element's bucket is removed at `ts + relUpper` when `relUpper > 0`, else
 * at `ts` ({@linkcode cleanupTime}); the timer of a side at `t` removes the
 * bucket {@linkcode bucketOfCleanup} gives, the inverse. An element is late
 * when its timestamp is below the operator's watermark ({@linkcode isLate}).
 *
 * ## State
 *
 * | state           | kind                             | namespace of its timers |
 * | --------------- | -------------------------------- | ----------------------- |
 * | `LEFT_BUFFER`   | `MapState<ts, leftElements[]>`   | `CLEANUP_LEFT`          |
 * | `RIGHT_BUFFER`  | `MapState<ts, rightElements[]>`  | `CLEANUP_RIGHT`         |
 *
 * Elements of one timestamp keep their arrival order; a bucket is replaced
 * (never changed in place) when an element joins it.
 *
 * @module
 */

import type { Collector } from "../../api/functions.ts";
import type { OutputTag } from "../../api/output_tag.ts";
import type {
  IntervalJoinOperatorSpec,
  ProcessJoinContext,
  ProcessJoinFunction,
} from "../../api/interval_join.ts";
import type { MapState } from "../../api/state.ts";
import { MapStateDescriptor } from "../../api/state.ts";
import type { Key } from "../../state/key_group.ts";
import { MIN_WATERMARK } from "../../time/watermark.ts";
import { SuppressRestartsError } from "../../failure.ts";
import { TwoInputUdfOperator, type TwoInputUdfOperatorOptions } from "./two_input_operator.ts";

/** The side of an interval join an element came from: input 1 is left, input 2 right. */
export type JoinSide = "left" | "right";

/** Inclusive bounds of an interval join, ms: `left.ts + lowerBound <= right.ts <= left.ts + upperBound`. */
export interface IntervalJoinBounds {
  /** The smallest `right.ts - left.ts` that joins. */
  readonly lowerBound: number;
  /** The largest `right.ts - left.ts` that joins. */
  readonly upperBound: number;
}

/**
 * The other side's timestamps that join an element of `side`, relative to
 * its own timestamp: `[ts + lower, ts + upper]`. Pure.
 */
export function relativeBounds(
  side: JoinSide,
  bounds: IntervalJoinBounds,
): { readonly lower: number; readonly upper: number } {
  return side === "left"
    ? { lower: bounds.lowerBound, upper: bounds.upperBound }
    : { lower: -bounds.upperBound, upper: -bounds.lowerBound };
}

/**
 * When an element of `side` at `timestamp` can join nothing more (ms): its
 * bucket is removed once the watermark reaches it (Flink's formula). Pure.
 */
export function cleanupTime(side: JoinSide, timestamp: number, bounds: IntervalJoinBounds): number {
  const { upper } = relativeBounds(side, bounds);
  return upper > 0 ? timestamp + upper : timestamp;
}

/** The bucket timestamp whose cleanup timer of `side` fires at `timerTimestamp`: the inverse of {@linkcode cleanupTime}. Pure. */
export function bucketOfCleanup(
  side: JoinSide,
  timerTimestamp: number,
  bounds: IntervalJoinBounds,
): number {
  const { upper } = relativeBounds(side, bounds);
  return upper > 0 ? timerTimestamp - upper : timerTimestamp;
}

/** Whether an element at `timestamp` is late for an operator at `watermark` (ms). Pure. */
export function isLate(timestamp: number, watermark: number): boolean {
  return watermark > MIN_WATERMARK && timestamp < watermark;
}

/** The timer namespace of each side's cleanup (Flink's names). */
export const CLEANUP_NAMESPACE: Readonly<Record<JoinSide, string>> = {
  left: "CLEANUP_LEFT",
  right: "CLEANUP_RIGHT",
};

/** The state name of each side's buffer (Flink's names). */
export const BUFFER_NAME: Readonly<Record<JoinSide, string>> = {
  left: "LEFT_BUFFER",
  right: "RIGHT_BUFFER",
};

/** Runs a {@linkcode ProcessJoinFunction} over buffered elements (see the module docs). */
export class IntervalJoinOperator
  extends TwoInputUdfOperator<ProcessJoinFunction<unknown, unknown, unknown>> {
  readonly #bounds: IntervalJoinBounds;
  readonly #lateTags: Readonly<Record<JoinSide, OutputTag<unknown> | undefined>>;
  #buffers!: Record<JoinSide, MapState<number, unknown[]>>;
  #numLateRecordsDropped = 0;
  #leftTimestamp = 0;
  #rightTimestamp = 0;
  #resultTimestamp = 0;
  readonly #ctx: ProcessJoinContext = {
    getLeftTimestamp: () => this.#leftTimestamp,
    getRightTimestamp: () => this.#rightTimestamp,
    getTimestamp: () => this.#resultTimestamp,
    output: <X>(tag: OutputTag<X>, value: X) => {
      this.output.collectSide(tag.id, value, this.#resultTimestamp);
    },
  };
  readonly #out: Collector<unknown> = {
    collect: (value: unknown) => this.output.collect(value, this.#resultTimestamp),
  };

  /**
   * @param options the operator's parts; `spec` its bounds, late-data tags
   *   and function (`options.fn` is ignored for `spec.fn`).
   */
  constructor(
    options: Omit<TwoInputUdfOperatorOptions<unknown>, "fn"> & {
      readonly spec: IntervalJoinOperatorSpec;
    },
  ) {
    super({ ...options, fn: options.spec.fn });
    this.#bounds = { lowerBound: options.spec.lowerBound, upperBound: options.spec.upperBound };
    this.#lateTags = {
      left: options.spec.leftLateDataTag,
      right: options.spec.rightLateDataTag,
    };
  }

  override async open(): Promise<void> {
    if (!this.keyed || !this.keySelector || !this.keySelector2) {
      throw new SuppressRestartsError(
        `${this.where()} is an interval join of streams that are not both keyed: ` +
          `call intervalJoin on a KeyedStream with another KeyedStream`,
      );
    }
    this.#buffers = {
      left: this.keyed.getMapState(new MapStateDescriptor<number, unknown[]>(BUFFER_NAME.left)),
      right: this.keyed.getMapState(new MapStateDescriptor<number, unknown[]>(BUFFER_NAME.right)),
    };
    await super.open();
  }

  /** Late elements dropped so far (no late-data tag for their side). */
  get numLateRecordsDropped(): number {
    return this.#numLateRecordsDropped;
  }

  /** The operator's counters, by metric name. */
  metrics(): Readonly<Record<string, number>> {
    return { numLateRecordsDropped: this.#numLateRecordsDropped };
  }

  /** How many keys have buffered elements on each side (0 and 0 once the watermark passed them all). */
  bufferedKeys(): { readonly left: number; readonly right: number } {
    return {
      left: this.keyed!.numKeys(BUFFER_NAME.left),
      right: this.keyed!.numKeys(BUFFER_NAME.right),
    };
  }

  processElement1(value: unknown, timestamp: number | undefined, keyGroup?: number, key?: unknown) {
    this.setKeyOf(value, keyGroup, key);
    this.#process("left", value, timestamp);
  }

  processElement2(value: unknown, timestamp: number | undefined, keyGroup?: number, key?: unknown) {
    this.setKeyOf2(value, keyGroup, key);
    this.#process("right", value, timestamp);
  }

  #process(side: JoinSide, value: unknown, timestamp: number | undefined): void {
    if (timestamp === undefined) {
      throw new SuppressRestartsError(
        `${this.where()} got a ${side} element without a timestamp (key ${
          String(this.currentKey)
        }): an interval join runs on event time; assign timestamps to both inputs ` +
          `(fromSource with a WatermarkStrategy, or assignTimestampsAndWatermarks)`,
      );
    }
    if (isLate(timestamp, this.currentWatermark)) {
      const tag = this.#lateTags[side];
      if (tag === undefined) this.#numLateRecordsDropped++;
      else this.output.collectSide(tag.id, value, timestamp);
      return;
    }
    const ours = this.#buffers[side];
    const other = side === "left" ? this.#buffers.right : this.#buffers.left;
    ours.put(timestamp, [...(ours.get(timestamp) ?? []), value]);
    const { lower, upper } = relativeBounds(side, this.#bounds);
    for (const [otherTimestamp, elements] of other.entries()) {
      if (otherTimestamp < timestamp + lower || otherTimestamp > timestamp + upper) continue;
      for (const element of elements) {
        if (side === "left") this.#collect(value, element, timestamp, otherTimestamp);
        else this.#collect(element, value, otherTimestamp, timestamp);
      }
    }
    this.timers!.registerEventTimeTimer(
      this.currentKey!,
      cleanupTime(side, timestamp, this.#bounds),
      CLEANUP_NAMESPACE[side],
    );
  }

  #collect(left: unknown, right: unknown, leftTimestamp: number, rightTimestamp: number): void {
    this.#leftTimestamp = leftTimestamp;
    this.#rightTimestamp = rightTimestamp;
    this.#resultTimestamp = Math.max(leftTimestamp, rightTimestamp);
    this.fn.processElement(left, right, this.#ctx, this.#out);
  }

  protected override fireTimer(
    key: Key,
    timestamp: number,
    domain: "event-time" | "processing-time",
    namespace: string,
  ): void {
    if (domain !== "event-time") return;
    const side: JoinSide | undefined = namespace === CLEANUP_NAMESPACE.left
      ? "left"
      : namespace === CLEANUP_NAMESPACE.right
      ? "right"
      : undefined;
    if (side === undefined) {
      throw new Error(`${this.where()} fired a timer of unknown namespace '${namespace}'`);
    }
    this.setKey(key);
    this.#buffers[side].remove(bucketOfCleanup(side, timestamp, this.#bounds));
  }
}
