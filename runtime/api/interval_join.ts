/**
 * The interval join of two keyed streams on event time (Flink's
 * `KeyedStream.intervalJoin`): `left.intervalJoin(right).between(lower,
 * upper).process(fn)` calls `fn` for every pair of a left element `l` and
 * a right element `r` of one key with
 * `l.timestamp + lower <= r.timestamp <= l.timestamp + upper`
 * (either bound made exclusive by `lowerBoundExclusive()` /
 * `upperBoundExclusive()`).
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { WatermarkStrategy } from "../time/watermark.ts";
 * import { CollectionSource } from "./collection_source.ts";
 *
 * type Click = { user: string; ts: number };
 * type Buy = { user: string; ts: number; item: string };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const byTs = <T extends { ts: number }>() =>
 *   WatermarkStrategy.forMonotonousTimestamps<T>().withTimestampAssigner((r) => r.ts);
 * const clicks = env.fromSource(
 *   new CollectionSource<Click>([{ user: "a", ts: 1_000 }, { user: "b", ts: 1_000 }]),
 *   byTs<Click>(),
 *   "clicks",
 * ).keyBy((c) => c.user);
 * const buys = env.fromSource(
 *   new CollectionSource<Buy>([{ user: "a", ts: 1_500, item: "tea" }, { user: "b", ts: 9_000, item: "jam" }]),
 *   byTs<Buy>(),
 *   "buys",
 * ).keyBy((b) => b.user);
 * const converted: string[] = [];
 * clicks.intervalJoin(buys)
 *   .between(0, 5_000) // a buy up to 5 s after the click
 *   .process<string>({
 *     processElement(click, buy, ctx, out) {
 *       out.collect(`${click.user} bought ${buy.item} ${ctx.getRightTimestamp() - ctx.getLeftTimestamp()} ms after`);
 *     },
 *   })
 *   .uid("conversions")
 *   .sinkTo({ kind: "simple", invoke: (line) => { converted.push(line); } });
 * await env.execute("interval join");
 * assert.deepEqual(converted, ["a bought tea 500 ms after"]); // b's buy came 8 s after: no pair
 * ```
 *
 * ## How it runs (Flink's `IntervalJoinOperator`)
 *
 * One two-input keyed operator. Each side's elements are kept in keyed
 * `MapState` from timestamp to the elements of that timestamp. An element
 * that arrives is added to its side's buffer and joined with every buffered
 * element of the other side within the bounds, then an event-time timer is
 * set for when it can match nothing more: `ts + upper` for a left element
 * (`ts` when `upper <= 0`), `ts - lower` for a right element (`ts` when
 * `lower >= 0`); when the watermark reaches it, that timestamp's bucket of
 * that side is removed. So the state holds at most
 * the elements of the last `upper - lower` ms (plus the watermark's lag) per
 * key, and nothing once the watermark has passed every element's cleanup
 * time.
 *
 * - A result carries the larger of the two timestamps
 *   (`ctx.getTimestamp()`).
 * - An element whose timestamp is behind the operator's watermark (the
 *   minimum over both inputs) is late: it goes to the side output of
 *   `sideOutputLeftLateData` / `sideOutputRightLateData` when set, else is
 *   dropped and counted in the operator's `numLateRecordsDropped` metric
 *   (the counter is Weir's; Flink only drops).
 * - Every element must have a timestamp: one without ends the job (a
 *   restart would meet it again) with an error naming the operator.
 * - The buffers and timers are in every checkpoint and follow their key
 *   groups on rescale; after a restore the checkpointed watermark is the
 *   floor for lateness, so the output equals a run without the failure.
 *
 * @module
 */

import type { Collector, FunctionHooks } from "./functions.ts";
import type { OutputTag } from "./output_tag.ts";
import type { SingleOutputStreamOperator, StreamInput } from "./datastream.ts";
import type { TwoInputTransform } from "./connected_streams.ts";

/**
 * What {@linkcode ProcessJoinFunction.processElement} gets besides the pair
 * (Flink's `ProcessJoinFunction.Context`). Times in ms.
 */
export interface ProcessJoinContext {
  /** The left element's timestamp. */
  getLeftTimestamp(): number;
  /** The right element's timestamp. */
  getRightTimestamp(): number;
  /** The result's timestamp: the larger of the two. */
  getTimestamp(): number;
  /** Emits `value` to side output `tag`, with the result's timestamp. */
  output<X>(tag: OutputTag<X>, value: X): void;
}

/**
 * Processes one joined pair of an interval join (Flink's
 * `ProcessJoinFunction`). It may have lifecycle hooks (`open`, `close`,
 * `initializeState`, `snapshotState`, checkpoint notifications) and use
 * keyed state of the join key through the runtime context.
 *
 * @typeParam IN1 left elements.
 * @typeParam IN2 right elements.
 * @typeParam OUT what it emits; results carry `ctx.getTimestamp()`.
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { WatermarkStrategy } from "../time/watermark.ts";
 * import type { ProcessJoinFunction } from "./interval_join.ts";
 *
 * // Pairs each click with the buys of its user from 1 s before to 1 s after it.
 * type Click = { user: string; ts: number };
 * type Buy = { user: string; ts: number; item: string };
 * const pair: ProcessJoinFunction<Click, Buy, string> = {
 *   processElement(click, buy, ctx, out) {
 *     out.collect(`${click.user} ${buy.item} at ${ctx.getTimestamp()}`); // the later of the two
 *   },
 * };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const byTs = <T extends { ts: number }>() =>
 *   WatermarkStrategy.forMonotonousTimestamps<T>().withTimestampAssigner((r) => r.ts);
 * const clicks = env.fromCollection<Click>([{ user: "a", ts: 2_000 }])
 *   .assignTimestampsAndWatermarks(byTs<Click>()).keyBy((c) => c.user);
 * const buys = env.fromCollection<Buy>([
 *   { user: "a", ts: 1_200, item: "tea" }, // 800 ms before the click: joins
 *   { user: "a", ts: 3_500, item: "jam" }, // 1.5 s after: too late
 * ]).assignTimestampsAndWatermarks(byTs<Buy>()).keyBy((b) => b.user);
 * const lines: string[] = [];
 * clicks.intervalJoin(buys).between(-1_000, 1_000).process(pair)
 *   .uid("clicks-with-buys")
 *   .sinkTo({ kind: "simple", invoke: (line) => { lines.push(line); } });
 * await env.execute("process join function");
 * assert.deepEqual(lines, ["a tea at 2000"]);
 * ```
 */
export interface ProcessJoinFunction<IN1, IN2, OUT> extends FunctionHooks {
  /** Called for every pair within the bounds: emit with `out`, or to side outputs with `ctx`. */
  processElement(left: IN1, right: IN2, ctx: ProcessJoinContext, out: Collector<OUT>): void;
}

/**
 * The operator spec of an interval join (the graph's `"intervalJoin"`
 * two-input operator). The bounds are inclusive, ms: exclusive bounds
 * given to the API are already moved by 1 ms.
 */
export interface IntervalJoinOperatorSpec {
  /** The kind of two-input operator. */
  readonly kind: "intervalJoin";
  /** The user's join function. */
  readonly fn: ProcessJoinFunction<unknown, unknown, unknown>;
  /** The smallest `right.ts - left.ts` that joins, ms (inclusive). */
  readonly lowerBound: number;
  /** The largest `right.ts - left.ts` that joins, ms (inclusive). */
  readonly upperBound: number;
  /** Where late left elements go, or `undefined` (dropped and counted). */
  readonly leftLateDataTag: OutputTag<unknown> | undefined;
  /** Where late right elements go, or `undefined` (dropped and counted). */
  readonly rightLateDataTag: OutputTag<unknown> | undefined;
}

/** Both inputs of an interval join, and how to add the operator. */
interface JoinInputs {
  readonly left: readonly StreamInput[];
  readonly right: readonly StreamInput[];
  readonly transform: TwoInputTransform;
}

function checkBound(name: string, value: number): void {
  if (!Number.isSafeInteger(value)) {
    throw new RangeError(
      `intervalJoin().between() needs an integer ${name} in ms: current value is ${value}`,
    );
  }
}

/**
 * An interval join waiting for its bounds (Flink's
 * `KeyedStream.IntervalJoin`). Made by `KeyedStream.intervalJoin(other)`.
 *
 * @typeParam T1 left elements.
 * @typeParam T2 right elements.
 */
export class IntervalJoin<T1, T2> {
  declare private readonly _types: [T1, T2];
  readonly #inputs: JoinInputs;

  /** @internal Use `KeyedStream.intervalJoin(other)`. */
  constructor(inputs: JoinInputs) {
    this.#inputs = inputs;
  }

  /**
   * Joins a left element at `t` with the right elements in
   * `[t + lowerMs, t + upperMs]` (both inclusive until made exclusive).
   * @throws {RangeError} unless both are integers and `lowerMs <= upperMs`.
   */
  between(lowerMs: number, upperMs: number): IntervalJoined<T1, T2> {
    checkBound("lower bound", lowerMs);
    checkBound("upper bound", upperMs);
    if (lowerMs > upperMs) {
      throw new RangeError(
        `intervalJoin().between() needs lowerMs <= upperMs: current values are ${lowerMs} and ${upperMs}`,
      );
    }
    return new IntervalJoined<T1, T2>(this.#inputs, lowerMs, upperMs);
  }
}

/**
 * An interval join with its bounds, to be refined and processed (Flink's
 * `KeyedStream.IntervalJoined`).
 *
 * @typeParam T1 left elements.
 * @typeParam T2 right elements.
 */
export class IntervalJoined<T1, T2> {
  readonly #inputs: JoinInputs;
  readonly #lower: number;
  readonly #upper: number;
  #lowerInclusive = true;
  #upperInclusive = true;
  #leftLate: OutputTag<T1> | undefined;
  #rightLate: OutputTag<T2> | undefined;

  /** @internal Use `IntervalJoin.between`. */
  constructor(inputs: JoinInputs, lowerMs: number, upperMs: number) {
    this.#inputs = inputs;
    this.#lower = lowerMs;
    this.#upper = upperMs;
  }

  /** Excludes the lower bound: `r.ts > l.ts + lower`. */
  lowerBoundExclusive(): this {
    this.#lowerInclusive = false;
    return this;
  }

  /** Excludes the upper bound: `r.ts < l.ts + upper`. */
  upperBoundExclusive(): this {
    this.#upperInclusive = false;
    return this;
  }

  /**
   * Sends late left elements to side output `tag` (read it with
   * `getSideOutput(tag)` on the result) instead of dropping them.
   * @throws {TypeError} when `tag` is not an `OutputTag`.
   */
  sideOutputLeftLateData(tag: OutputTag<T1>): this {
    this.#leftLate = checkTag(tag, "sideOutputLeftLateData");
    return this;
  }

  /**
   * Sends late right elements to side output `tag` instead of dropping them.
   * @throws {TypeError} when `tag` is not an `OutputTag`.
   */
  sideOutputRightLateData(tag: OutputTag<T2>): this {
    this.#rightLate = checkTag(tag, "sideOutputRightLateData");
    return this;
  }

  /**
   * Adds the interval join operator, calling `fn` per joined pair. Set a
   * `uid` on the result: its state holds both sides' buffers.
   * @throws {RangeError} when exclusive bounds leave an empty interval
   *   (e.g. `between(0, 0).lowerBoundExclusive()`).
   * @throws {TypeError} when `fn` has no `processElement`.
   */
  process<O>(fn: ProcessJoinFunction<T1, T2, O>): SingleOutputStreamOperator<O> {
    if (
      typeof fn !== "object" || fn === null ||
      typeof (fn as { processElement?: unknown }).processElement !== "function"
    ) {
      throw new TypeError(
        `intervalJoin().process() needs a ProcessJoinFunction (an object with processElement): current value is ${
          String(fn)
        }`,
      );
    }
    const lowerBound = this.#lowerInclusive ? this.#lower : this.#lower + 1;
    const upperBound = this.#upperInclusive ? this.#upper : this.#upper - 1;
    if (lowerBound > upperBound) {
      throw new RangeError(
        `intervalJoin() bounds ${this.#lowerInclusive ? "[" : "("}${this.#lower}, ${this.#upper}${
          this.#upperInclusive ? "]" : ")"
        } hold no timestamp difference: make a bound inclusive or widen them`,
      );
    }
    const spec: IntervalJoinOperatorSpec = {
      kind: "intervalJoin",
      fn: fn as ProcessJoinFunction<unknown, unknown, unknown>,
      lowerBound,
      upperBound,
      leftLateDataTag: this.#leftLate as OutputTag<unknown> | undefined,
      rightLateDataTag: this.#rightLate as OutputTag<unknown> | undefined,
    };
    return this.#inputs.transform<O>({
      spec,
      name: `IntervalJoin([${lowerBound}, ${upperBound}])`,
      inputs1: this.#inputs.left,
      inputs2: this.#inputs.right,
    });
  }
}

function checkTag<X>(tag: OutputTag<X>, what: string): OutputTag<X> {
  if (typeof tag !== "object" || tag === null || typeof tag.id !== "string") {
    throw new TypeError(
      `intervalJoin().${what}() needs an OutputTag: current value is ${String(tag)}`,
    );
  }
  return tag;
}
