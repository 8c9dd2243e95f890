/**
 * Window coGroup of two streams (Flink's `CoGroupedStreams`):
 * `first.coGroup(second).where(k1).equalTo(k2).window(assigner).apply(fn)`
 * hands `fn`, for every key and window, the window's elements of both
 * inputs: two arrays in arrival order, either of which may be empty (but
 * not both). It is how left, right and full outer joins over windows are
 * written.
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
 * type Click = { user: string; ts: number };
 * type View = { user: string; ts: number };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const byTs = <T extends { ts: number }>() =>
 *   WatermarkStrategy.forMonotonousTimestamps<T>().withTimestampAssigner((r) => r.ts);
 * const clicks = env.fromSource(
 *   new CollectionSource<Click>([{ user: "a", ts: 100 }, { user: "b", ts: 200 }]),
 *   byTs<Click>(),
 *   "clicks",
 * );
 * const views = env.fromSource(
 *   new CollectionSource<View>([{ user: "a", ts: 300 }, { user: "a", ts: 400 }]),
 *   byTs<View>(),
 *   "views",
 * );
 * const out: string[] = [];
 * clicks.coGroup(views)
 *   .where((c) => c.user)
 *   .equalTo((v) => v.user)
 *   .window(TumblingEventTimeWindows.of(1_000))
 *   .apply<string>((cs, vs, collector) => {
 *     collector.collect(`${cs[0]?.user ?? vs[0]?.user}: ${cs.length} clicks, ${vs.length} views`);
 *   })
 *   .uid("clicks-and-views")
 *   .sinkTo({ kind: "simple", invoke: (line) => { out.push(line); } });
 * await env.execute("coGroup");
 * assert.deepEqual(out.sort(), ["a: 1 clicks, 2 views", "b: 1 clicks, 0 views"]);
 * ```
 *
 * ## How it runs (as in Flink)
 *
 * Both inputs are tagged with their side, unioned and keyed by the side's
 * key selector (`tagged_union.ts`), then cut into windows by the assigner
 * and evaluated by a process window function that splits the window's
 * elements by tag. So the window state is list state of tagged elements
 * (checkpointed, rescaled by key group), the watermark is the minimum of
 * both inputs, and elements later than the allowed lateness are dropped and
 * counted in the window operator's `numLateRecordsDropped` (Flink's window
 * join and coGroup have no late-data side output either). Results carry the
 * window's `maxTimestamp()`.
 *
 * @module
 */

import type { Collector, FunctionHooks } from "./functions.ts";
import type { SingleOutputStreamOperator } from "./datastream.ts";
import type { ProcessWindowContext, ProcessWindowFunction } from "./window_functions.ts";
import type { TaggedUnion } from "./tagged_union.ts";
import {
  TwoInputEqualTo,
  type TwoInputKeys,
  TwoInputStreams,
  TwoInputWhere,
  TwoInputWithWindow,
} from "./two_input_window.ts";
import type { Key } from "../state/key_group.ts";
import type { WindowAssigner } from "../time/windows/window_assigner.ts";
import type { Window } from "../time/windows/window.ts";

/**
 * Evaluates one key's window of both inputs (Flink's `CoGroupFunction`):
 * `first` and `second` hold the window's elements of each input in arrival
 * order; one of them may be empty. Given as a function, or as an object
 * with `coGroup` and optional lifecycle hooks (`open`, `close`,
 * `initializeState`, `snapshotState`, checkpoint notifications), which are
 * forwarded to it by the window function that calls it.
 *
 * @typeParam IN1 records of the first input.
 * @typeParam IN2 records of the second input.
 * @typeParam OUT what it emits.
 */
export type CoGroupFunction<IN1, IN2, OUT> =
  | ((first: readonly IN1[], second: readonly IN2[], out: Collector<OUT>) => void)
  | (FunctionHooks & {
    coGroup(first: readonly IN1[], second: readonly IN2[], out: Collector<OUT>): void;
  });

/** The hooks a wrapping window function forwards to the function it wraps. */
const FORWARDED = [
  "initializeState",
  "snapshotState",
  "open",
  "close",
  "notifyCheckpointComplete",
  "notifyCheckpointAborted",
] as const;

/**
 * The process window function of window coGroup and join (Flink's
 * `CoGroupWindowFunction`, a `WrappingFunction`): splits a window's tagged
 * elements by side and calls `call(user, first, second, out)`. The user
 * function is copied per subtask on first use (the wrapper is copied
 * shallowly by the operator) and its lifecycle hooks are forwarded.
 *
 * @typeParam T1 records of the first input.
 * @typeParam T2 records of the second input.
 * @typeParam O what it emits.
 * @typeParam F the user function.
 */
export class CoGroupWindowFunction<T1, T2, O, F>
  implements ProcessWindowFunction<TaggedUnion<T1, T2>, O, Key, Window> {
  // Copied per subtask (shallowly): no #private fields.
  private user: F;
  private copied = false;
  private readonly call: (user: F, first: T1[], second: T2[], out: Collector<O>) => void;

  /**
   * Wraps `user`, to be called by `call` at each firing.
   * @param user the user's function (copied per subtask on first use).
   * @param call runs `user` on one window's split elements.
   */
  constructor(user: F, call: (user: F, first: T1[], second: T2[], out: Collector<O>) => void) {
    this.user = user;
    this.call = call;
  }

  /** The subtask's own copy of the user function. */
  private own(): F {
    if (!this.copied) {
      const fn = this.user as unknown;
      if (typeof fn === "object" && fn !== null) {
        this.user = Object.assign(Object.create(Object.getPrototypeOf(fn)), fn) as F;
      }
      this.copied = true;
    }
    return this.user;
  }

  /** Calls the user function's hook `name`, if it has one. */
  private forward(name: (typeof FORWARDED)[number], arg?: unknown): unknown {
    const fn = this.own() as unknown;
    if (typeof fn !== "object" || fn === null) return undefined;
    const hook = (fn as Record<string, unknown>)[name];
    return typeof hook === "function" ? hook.call(fn, arg) : undefined;
  }

  /** Forwards `initializeState` (Flink's `CheckpointedFunction`). */
  initializeState(context: unknown): void | Promise<void> {
    return this.forward("initializeState", context) as void | Promise<void>;
  }
  /** Forwards `snapshotState`. */
  snapshotState(context: unknown): void | Promise<void> {
    return this.forward("snapshotState", context) as void | Promise<void>;
  }
  /** Forwards `open` (Flink's `RichFunction`). */
  open(context: unknown): void | Promise<void> {
    return this.forward("open", context) as void | Promise<void>;
  }
  /** Forwards `close`. */
  close(): void | Promise<void> {
    return this.forward("close") as void | Promise<void>;
  }
  /** Forwards `notifyCheckpointComplete` (Flink's `CheckpointListener`). */
  notifyCheckpointComplete(checkpointId: number): void | Promise<void> {
    return this.forward("notifyCheckpointComplete", checkpointId) as void | Promise<void>;
  }
  /** Forwards `notifyCheckpointAborted`. */
  notifyCheckpointAborted(checkpointId: number): void | Promise<void> {
    return this.forward("notifyCheckpointAborted", checkpointId) as void | Promise<void>;
  }

  /** Splits the window's elements by tag, in arrival order, and calls the user function. */
  process(
    _key: Key,
    _context: ProcessWindowContext<Window>,
    elements: readonly TaggedUnion<T1, T2>[],
    out: Collector<O>,
  ): void {
    const first: T1[] = [];
    const second: T2[] = [];
    for (const e of elements) {
      if (e.tag === 1) first.push(e.value);
      else second.push(e.value);
    }
    this.call(this.own(), first, second, out);
  }
}

/**
 * Two streams to be coGrouped over windows (Flink's `CoGroupedStreams`):
 * name the keys with `where` and `equalTo`, then the windows.
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
 *
 * // A left outer join of clicks with buys per user and 10 s window: a click without a buy
 * // still yields a line, which a window join (inner) would not.
 * type Click = { user: string; ts: number };
 * type Buy = { user: string; ts: number; item: string };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const byTs = <T extends { ts: number }>() =>
 *   WatermarkStrategy.forMonotonousTimestamps<T>().withTimestampAssigner((r) => r.ts);
 * const clicks = env.fromCollection<Click>([{ user: "a", ts: 1_000 }, { user: "b", ts: 2_000 }])
 *   .assignTimestampsAndWatermarks(byTs<Click>());
 * const buys = env.fromCollection<Buy>([{ user: "a", ts: 3_000, item: "jam" }, { user: "c", ts: 4_000, item: "tea" }])
 *   .assignTimestampsAndWatermarks(byTs<Buy>());
 * const lines: string[] = [];
 * clicks.coGroup(buys)
 *   .where((c) => c.user)
 *   .equalTo((b) => b.user)
 *   .window(TumblingEventTimeWindows.of(10_000))
 *   .apply<string>((userClicks, userBuys, out) => {
 *     for (const c of userClicks) {
 *       out.collect(`${c.user}: ${userBuys.map((b) => b.item).join(", ") || "no buy"}`);
 *     }
 *   })
 *   .uid("clicks-left-join-buys")
 *   .sinkTo({ kind: "simple", invoke: (line) => { lines.push(line); } });
 * await env.execute("coGrouped streams");
 * assert.deepEqual(lines.sort(), ["a: jam", "b: no buy"]); // c bought without a click: no line
 * ```
 */
export class CoGroupedStreams<T1, T2> extends TwoInputStreams<T1, T2> {
  /**
   * The key of the first input's records.
   * @throws {TypeError} when `keySelector` is not a function.
   */
  where<K extends Key>(keySelector: (value: T1) => K): CoGroupedWhere<T1, T2, K> {
    return new CoGroupedWhere(this.withFirstKey(keySelector, "coGroup().where()"));
  }
}

/** A coGroup with its first key (Flink's `CoGroupedStreams.Where`). */
export class CoGroupedWhere<T1, T2, K extends Key> extends TwoInputWhere<T1, T2, K> {
  /**
   * The key of the second input's records; records of both inputs with
   * equal keys (by the key group hash and `===` of the encoded key, as for
   * `keyBy`) meet.
   * @throws {TypeError} when `keySelector` is not a function.
   */
  equalTo(keySelector: (value: T2) => K): CoGroupedEqualTo<T1, T2, K> {
    return new CoGroupedEqualTo(this.withSecondKey(keySelector, "coGroup().where().equalTo()"));
  }
}

/** A coGroup with both keys (Flink's `CoGroupedStreams.Where.EqualTo`). */
export class CoGroupedEqualTo<T1, T2, K extends Key> extends TwoInputEqualTo<T1, T2, K> {
  /**
   * Cuts both inputs into windows of `assigner` (it sees the elements
   * tagged, see {@linkcode TaggedUnion}; time assigners ignore the value).
   * @param assigner e.g. `TumblingEventTimeWindows.of(1_000)`.
   */
  window<W extends Window>(
    assigner: WindowAssigner<TaggedUnion<T1, T2>, W>,
  ): CoGroupedWithWindow<T1, T2, K, W> {
    return new CoGroupedWithWindow({ ...this.keys, assigner });
  }
}

/**
 * A windowed coGroup, to be configured and applied (Flink's
 * `CoGroupedStreams.WithWindow`).
 *
 * @typeParam T1 records of the first input.
 * @typeParam T2 records of the second input.
 * @typeParam K the key.
 * @typeParam W the window type.
 */
export class CoGroupedWithWindow<T1, T2, K extends Key, W extends Window>
  extends TwoInputWithWindow<T1, T2, K, W> {
  /** @internal Use `CoGroupedEqualTo.window`. */
  constructor(
    options: TwoInputKeys<T1, T2, K> & {
      readonly assigner: WindowAssigner<TaggedUnion<T1, T2>, W>;
    },
  ) {
    super("coGroup", options, options.assigner);
  }

  /**
   * Applies `fn` to every key's window of both inputs, when the window
   * fires. Set a `uid` on the result: it is the window operator, whose
   * state holds the windows' elements.
   * @throws {TypeError} when `fn` is neither a function nor an object with
   *   `coGroup`, or for a trigger that cannot merge on a merging assigner.
   */
  apply<O>(fn: CoGroupFunction<T1, T2, O>): SingleOutputStreamOperator<O> {
    return this.build(new CoGroupWindowFunction(fn, coGroupCaller<T1, T2, O>(fn)), "CoGroup");
  }
}

function coGroupCaller<T1, T2, O>(
  fn: CoGroupFunction<T1, T2, O>,
): (user: CoGroupFunction<T1, T2, O>, first: T1[], second: T2[], out: Collector<O>) => void {
  if (typeof fn === "function") {
    return (user, first, second, out) => (user as typeof fn)(first, second, out);
  }
  if (typeof fn === "object" && fn !== null && typeof fn.coGroup === "function") {
    return (user, first, second, out) =>
      (user as Exclude<typeof fn, (...args: never[]) => void>).coGroup(first, second, out);
  }
  throw new TypeError(
    `coGroup().apply() needs a CoGroupFunction (a function (first, second, out) or an object with coGroup()): current value is ${
      String(fn)
    }`,
  );
}
