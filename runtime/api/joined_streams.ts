/**
 * Window join of two streams (Flink's `JoinedStreams`):
 * `first.join(second).where(k1).equalTo(k2).window(assigner).apply(fn)`
 * emits, for every key and window, `fn` of every pair of one first-input
 * and one second-input element of that window: the cross product, an inner
 * join. A window with elements of only one input emits nothing (write outer
 * joins with `coGroup`).
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { WatermarkStrategy } from "../time/watermark.ts";
 * import { TumblingEventTimeWindows } from "../time/windows/tumbling_windows.ts";
 * import { CollectionSource } from "./collection_source.ts";
 *
 * type Order = { id: number; user: string; ts: number };
 * type Payment = { order: number; amount: number; ts: number };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const byTs = <T extends { ts: number }>() =>
 *   WatermarkStrategy.forMonotonousTimestamps<T>().withTimestampAssigner((r) => r.ts);
 * const orders = env.fromSource(
 *   new CollectionSource<Order>([{ id: 1, user: "a", ts: 100 }, { id: 2, user: "b", ts: 200 }]),
 *   byTs<Order>(),
 *   "orders",
 * );
 * const payments = env.fromSource(
 *   new CollectionSource<Payment>([{ order: 1, amount: 5, ts: 300 }]),
 *   byTs<Payment>(),
 *   "payments",
 * );
 * const paid: string[] = [];
 * orders.join(payments)
 *   .where((o) => o.id)
 *   .equalTo((p) => p.order)
 *   .window(TumblingEventTimeWindows.of(1_000))
 *   .apply((o, p) => `${o.user} paid ${p.amount}`)
 *   .uid("paid-orders")
 *   .sinkTo({ kind: "simple", invoke: (line) => { paid.push(line); } });
 * await env.execute("window join");
 * assert.deepEqual(paid, ["a paid 5"]); // order 2 has no payment: an inner join drops it
 * ```
 *
 * ## How it runs (as in Flink)
 *
 * A window join is a window coGroup (`co_grouped_streams.ts`) whose
 * function loops over the pairs: for each first-input element in arrival
 * order, for each second-input element in arrival order, `join(first,
 * second)`. Results carry the window's `maxTimestamp()`; late elements are
 * dropped and counted in `numLateRecordsDropped`; window state is in every
 * checkpoint.
 *
 * @module
 */

import type { Collector, FunctionHooks } from "./functions.ts";
import type { SingleOutputStreamOperator } from "./datastream.ts";
import { CoGroupWindowFunction } from "./co_grouped_streams.ts";
import {
  TwoInputEqualTo,
  type TwoInputKeys,
  TwoInputStreams,
  TwoInputWhere,
  TwoInputWithWindow,
} from "./two_input_window.ts";
import type { TaggedUnion } from "./tagged_union.ts";
import type { Key } from "../state/key_group.ts";
import type { WindowAssigner } from "../time/windows/window_assigner.ts";
import type { Window } from "../time/windows/window.ts";

/**
 * Joins one pair into one result (Flink's `JoinFunction`): a function
 * `(first, second) => result`, or an object with `join(first, second)` and
 * optional lifecycle hooks. Its `join` must declare at most two
 * parameters: one that declares three is a {@linkcode FlatJoinFunction}.
 *
 * @typeParam IN1 records of the first input.
 * @typeParam IN2 records of the second input.
 * @typeParam OUT the result.
 */
export type JoinFunction<IN1, IN2, OUT> =
  | ((first: IN1, second: IN2) => OUT)
  | (FunctionHooks & { join(first: IN1, second: IN2): OUT });

/**
 * Joins one pair into zero or more results through a collector (Flink's
 * `FlatJoinFunction`): a function `(first, second, out) => void`, or an
 * object with `join(first, second, out)`. Weir tells it from a
 * {@linkcode JoinFunction} by its declared parameter count (three).
 *
 * @typeParam IN1 records of the first input.
 * @typeParam IN2 records of the second input.
 * @typeParam OUT the results.
 */
export type FlatJoinFunction<IN1, IN2, OUT> =
  | ((first: IN1, second: IN2, out: Collector<OUT>) => void)
  | (FunctionHooks & { join(first: IN1, second: IN2, out: Collector<OUT>): void });

/**
 * Two streams to be joined over windows (Flink's `JoinedStreams`): name
 * the keys with `where` and `equalTo`, then the windows.
 *
 * @typeParam T1 records of the first input.
 * @typeParam T2 records of the second input.
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { WatermarkStrategy } from "../time/watermark.ts";
 * import { TumblingEventTimeWindows } from "../time/windows/tumbling_windows.ts";
 * import type { FlatJoinFunction } from "./joined_streams.ts";
 *
 * // Buys that followed a click of the same user in the same 10 s window. A FlatJoinFunction
 * // (three parameters) emits zero or more results per pair.
 * type Click = { user: string; ts: number };
 * type Buy = { user: string; ts: number; item: string };
 * const clickThenBuy: FlatJoinFunction<Click, Buy, string> = (click, buy, out) => {
 *   if (buy.ts >= click.ts) out.collect(`${click.user} clicked, then bought ${buy.item}`);
 * };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const byTs = <T extends { ts: number }>() =>
 *   WatermarkStrategy.forMonotonousTimestamps<T>().withTimestampAssigner((r) => r.ts);
 * const clicks = env.fromCollection<Click>([{ user: "a", ts: 1_000 }, { user: "b", ts: 2_000 }])
 *   .assignTimestampsAndWatermarks(byTs<Click>());
 * const buys = env.fromCollection<Buy>([
 *   { user: "a", ts: 500, item: "tea" }, // before the click
 *   { user: "a", ts: 3_000, item: "jam" },
 *   { user: "b", ts: 12_000, item: "cake" }, // in the next window
 * ]).assignTimestampsAndWatermarks(byTs<Buy>());
 * const lines: string[] = [];
 * clicks.join(buys)
 *   .where((c) => c.user)
 *   .equalTo((b) => b.user)
 *   .window(TumblingEventTimeWindows.of(10_000))
 *   .apply(clickThenBuy)
 *   .uid("clicks-then-buys")
 *   .sinkTo({ kind: "simple", invoke: (line) => { lines.push(line); } });
 * await env.execute("joined streams");
 * assert.deepEqual(lines, ["a clicked, then bought jam"]);
 * ```
 */
export class JoinedStreams<T1, T2> extends TwoInputStreams<T1, T2> {
  /**
   * The key of the first input's records.
   * @throws {TypeError} when `keySelector` is not a function.
   */
  where<K extends Key>(keySelector: (value: T1) => K): JoinedWhere<T1, T2, K> {
    return new JoinedWhere(this.withFirstKey(keySelector, "join().where()"));
  }
}

/** A join with its first key (Flink's `JoinedStreams.Where`). */
export class JoinedWhere<T1, T2, K extends Key> extends TwoInputWhere<T1, T2, K> {
  /**
   * The key of the second input's records; pairs with equal keys join.
   * @throws {TypeError} when `keySelector` is not a function.
   */
  equalTo(keySelector: (value: T2) => K): JoinedEqualTo<T1, T2, K> {
    return new JoinedEqualTo(this.withSecondKey(keySelector, "join().where().equalTo()"));
  }
}

/** A join with both keys (Flink's `JoinedStreams.Where.EqualTo`). */
export class JoinedEqualTo<T1, T2, K extends Key> extends TwoInputEqualTo<T1, T2, K> {
  /**
   * Cuts both inputs into windows of `assigner` (it sees the elements
   * tagged, see {@linkcode TaggedUnion}).
   * @param assigner e.g. `TumblingEventTimeWindows.of(10_000)`.
   */
  window<W extends Window>(
    assigner: WindowAssigner<TaggedUnion<T1, T2>, W>,
  ): JoinedWithWindow<T1, T2, K, W> {
    return new JoinedWithWindow({ ...this.keys, assigner });
  }
}

/**
 * A windowed join, to be configured and applied (Flink's
 * `JoinedStreams.WithWindow`).
 *
 * @typeParam T1 records of the first input.
 * @typeParam T2 records of the second input.
 * @typeParam K the key.
 * @typeParam W the window type.
 */
export class JoinedWithWindow<T1, T2, K extends Key, W extends Window>
  extends TwoInputWithWindow<T1, T2, K, W> {
  /** @internal Use `JoinedEqualTo.window`. */
  constructor(
    options: TwoInputKeys<T1, T2, K> & {
      readonly assigner: WindowAssigner<TaggedUnion<T1, T2>, W>;
    },
  ) {
    super("join", options, options.assigner);
  }

  /**
   * Applies `fn` to every pair of a key's window when it fires: a
   * {@linkcode JoinFunction} emits its result, a {@linkcode FlatJoinFunction}
   * (three declared parameters) emits through its collector. Set a `uid` on
   * the result: it is the window operator.
   * @throws {TypeError} when `fn` is neither a function nor an object with
   *   `join`, or for a trigger that cannot merge on a merging assigner.
   */
  apply<O>(fn: JoinFunction<T1, T2, O>): SingleOutputStreamOperator<O>;
  /** Applies a {@linkcode FlatJoinFunction} to every pair (see the overload above). */
  apply<O>(fn: FlatJoinFunction<T1, T2, O>): SingleOutputStreamOperator<O>;
  apply<O>(
    fn: JoinFunction<T1, T2, O> | FlatJoinFunction<T1, T2, O>,
  ): SingleOutputStreamOperator<O> {
    return this.build(new CoGroupWindowFunction(fn, joinCaller<T1, T2, O>(fn)), "Join");
  }
}

type AnyJoin<T1, T2, O> = JoinFunction<T1, T2, O> | FlatJoinFunction<T1, T2, O>;

/** The cross product loop of Flink's `JoinCoGroupFunction` / `FlatJoinCoGroupFunction`. */
function joinCaller<T1, T2, O>(
  fn: AnyJoin<T1, T2, O>,
): (user: AnyJoin<T1, T2, O>, first: T1[], second: T2[], out: Collector<O>) => void {
  const method = typeof fn === "function"
    ? fn
    : typeof fn === "object" && fn !== null && typeof fn.join === "function"
    ? fn.join
    : undefined;
  if (method === undefined) {
    throw new TypeError(
      `join().apply() needs a JoinFunction or FlatJoinFunction (a function, or an object with join()): current value is ${
        String(fn)
      }`,
    );
  }
  const flat = method.length >= 3;
  const pick = typeof fn === "function"
    ? (user: AnyJoin<T1, T2, O>) => user as (a: T1, b: T2, out: Collector<O>) => O | void
    : (user: AnyJoin<T1, T2, O>) => {
      const obj = user as { join(a: T1, b: T2, out: Collector<O>): O | void };
      return (a: T1, b: T2, out: Collector<O>) => obj.join(a, b, out);
    };
  return (user, first, second, out) => {
    if (first.length === 0 || second.length === 0) return;
    const join = pick(user);
    for (const a of first) {
      for (const b of second) {
        if (flat) join(a, b, out);
        else out.collect(join(a, b, out) as O);
      }
    }
  };
}
