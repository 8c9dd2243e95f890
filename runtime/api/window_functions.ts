/**
 * The functions a window runs when it fires (Flink's
 * `ProcessWindowFunction` and `ProcessAllWindowFunction`), and the context
 * they get: the window, time, per-window and per-key state, and side
 * outputs.
 *
 * `reduce` and `aggregate` take the `ReduceFunction` and `AggregateFunction`
 * of `functions.ts`; given together with a process window function, its
 * `elements` holds exactly one value: the window's reduction or aggregate.
 *
 * ## State
 *
 * - `windowState()` is keyed state of the current key *and window*: it
 *   lives until the window is purged for good (its cleanup time), when the
 *   function's `clear(context)` must clear what it wrote there. Merging
 *   windows (sessions) have no per-window state, as in Flink.
 * - `globalState()` is keyed state of the current key, shared by all its
 *   windows (the VOID namespace): what `getRuntimeContext().getState()`
 *   gives a `KeyedProcessFunction`.
 *
 * Both are in every checkpoint, and follow their key groups on rescale.
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { WatermarkStrategy } from "../time/watermark.ts";
 * import { TumblingEventTimeWindows } from "../time/windows/tumbling_windows.ts";
 *
 * // The warmest reading per sensor and 10 s window: `reduce` keeps one value per window
 * // (incrementally), and the process function gets it as its one element, with the window.
 * type Reading = { id: string; ts: number; t: number };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const lines: string[] = [];
 * env.fromCollection<Reading>([
 *   { id: "sensor_1", ts: 1_000, t: 35.8 },
 *   { id: "sensor_1", ts: 4_000, t: 36.2 },
 *   { id: "sensor_1", ts: 12_000, t: 32.4 },
 * ])
 *   .assignTimestampsAndWatermarks(
 *     WatermarkStrategy.forMonotonousTimestamps<Reading>().withTimestampAssigner((r) => r.ts),
 *   )
 *   .keyBy((r) => r.id)
 *   .window(TumblingEventTimeWindows.of(10_000))
 *   .reduce<string>((a, b) => (b.t > a.t ? b : a), {
 *     process(id, ctx, [warmest], out) {
 *       out.collect(`${id} from ${ctx.window().start}: ${warmest?.t}`);
 *     },
 *   })
 *   .uid("warmest-per-window")
 *   .sinkTo({ kind: "simple", invoke: (line) => { lines.push(line); } });
 * await env.execute("warmest per window");
 * assert.deepEqual(lines, ["sensor_1 from 0: 36.2", "sensor_1 from 10000: 32.4"]);
 * ```
 *
 * @module
 */

import type { Collector, FunctionHooks } from "./functions.ts";
import type { OutputTag } from "./output_tag.ts";
import type {
  AggregatingState,
  AggregatingStateDescriptor,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  ReducingState,
  ReducingStateDescriptor,
  ValueState,
  ValueStateDescriptor,
} from "./state.ts";
import type { Window } from "../time/windows/window.ts";

/**
 * Keyed state of one scope: the current key, and a window or not (Flink's
 * `KeyedStateStore`).
 */
export interface KeyedStateStore {
  /**
   * The {@linkcode ValueState} named by `descriptor` in this scope.
   * @throws {Error} for per-window state of merging windows.
   */
  getState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T>;
  /**
   * The {@linkcode ListState} named by `descriptor` in this scope.
   * @throws {Error} for per-window state of merging windows.
   */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
  /**
   * The {@linkcode MapState} named by `descriptor` in this scope.
   * @throws {Error} for per-window state of merging windows.
   */
  getMapState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV>;
  /**
   * The {@linkcode ReducingState} named by `descriptor` in this scope.
   * @throws {Error} for per-window state of merging windows.
   */
  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): ReducingState<T>;
  /**
   * The {@linkcode AggregatingState} named by `descriptor` in this scope.
   * @throws {Error} for per-window state of merging windows.
   */
  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): AggregatingState<IN, OUT>;
}

/**
 * What a window function gets besides the elements (Flink's
 * `ProcessWindowFunction.Context`). Times in ms.
 *
 * @typeParam W the window type.
 */
export interface ProcessWindowContext<W extends Window> {
  /** The window being evaluated (or cleared). */
  window(): W;
  /** The current processing time (the job's clock). */
  currentProcessingTime(): number;
  /** The operator's current event-time watermark (`-Infinity` before the first). */
  currentWatermark(): number;
  /** State of the current key and window (see the module docs). */
  windowState(): KeyedStateStore;
  /** State of the current key, across its windows (see the module docs). */
  globalState(): KeyedStateStore;
  /** Emits `value` to side output `tag`, with the window's `maxTimestamp()` as timestamp. */
  output<X>(tag: OutputTag<X>, value: X): void;
}

/**
 * Evaluates a window of a keyed stream with all its elements at hand
 * (Flink's `ProcessWindowFunction`). Records it emits carry the window's
 * `maxTimestamp()`.
 *
 * The method keeps Flink's parameter order, so Flink functions port line
 * by line.
 *
 * @typeParam IN the elements (or, after `reduce`/`aggregate`, their result).
 * @typeParam OUT what it emits.
 * @typeParam KEY the key.
 * @typeParam W the window type.
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { WatermarkStrategy } from "../time/watermark.ts";
 * import { TumblingEventTimeWindows } from "../time/windows/tumbling_windows.ts";
 * import type { TimeWindow } from "../time/windows/window.ts";
 * import type { ProcessWindowFunction } from "./window_functions.ts";
 *
 * // Readings per sensor and 10 s window, with the window's bounds and its average.
 * type Reading = { id: string; ts: number; t: number };
 * const summary: ProcessWindowFunction<Reading, string, string, TimeWindow> = {
 *   process(id, ctx, readings, out) {
 *     const avg = readings.reduce((sum, r) => sum + r.t, 0) / readings.length;
 *     out.collect(`${id} [${ctx.window().start}, ${ctx.window().end}): ${readings.length} readings, avg ${avg}`);
 *   },
 * };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const lines: string[] = [];
 * env.fromCollection<Reading>([
 *   { id: "sensor_1", ts: 1_000, t: 30 },
 *   { id: "sensor_2", ts: 2_000, t: 15 },
 *   { id: "sensor_1", ts: 9_000, t: 34 },
 *   { id: "sensor_1", ts: 11_000, t: 31 },
 * ])
 *   .assignTimestampsAndWatermarks(
 *     WatermarkStrategy.forMonotonousTimestamps<Reading>().withTimestampAssigner((r) => r.ts),
 *   )
 *   .keyBy((r) => r.id)
 *   .window(TumblingEventTimeWindows.of(10_000))
 *   .process(summary)
 *   .uid("readings-per-window")
 *   .sinkTo({ kind: "simple", invoke: (line) => { lines.push(line); } });
 * await env.execute("process window function");
 * assert.deepEqual(lines.sort(), [
 *   "sensor_1 [0, 10000): 2 readings, avg 32",
 *   "sensor_1 [10000, 20000): 1 readings, avg 31",
 *   "sensor_2 [0, 10000): 1 readings, avg 15",
 * ]);
 * ```
 */
export interface ProcessWindowFunction<IN, OUT, KEY, W extends Window> extends FunctionHooks {
  /**
   * Evaluates one window of `key`.
   * @param key the key.
   * @param context the window, time, state and side outputs.
   * @param elements the window's elements in arrival order, or the one
   *   reduced/aggregated value; do not mutate.
   * @param out emits results.
   */
  process(
    key: KEY,
    context: ProcessWindowContext<W>,
    elements: readonly IN[],
    out: Collector<OUT>,
  ): void;
  /** Called when the window is purged for good: clear `context.windowState()` here. */
  clear?(context: ProcessWindowContext<W>): void;
}

/**
 * Evaluates a window of a non-keyed stream (`windowAll`), with all its
 * elements at hand (Flink's `ProcessAllWindowFunction`). The context is
 * that of {@linkcode ProcessWindowFunction}; its state is the one
 * all-window's.
 *
 * @typeParam IN the elements (or, after `reduce`/`aggregate`, their result).
 * @typeParam OUT what it emits.
 * @typeParam W the window type.
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { WatermarkStrategy } from "../time/watermark.ts";
 * import { TumblingEventTimeWindows } from "../time/windows/tumbling_windows.ts";
 * import type { TimeWindow } from "../time/windows/window.ts";
 * import type { ProcessAllWindowFunction } from "./window_functions.ts";
 *
 * // How many sensors reported in each 10 s window, over all readings (one subtask).
 * type Reading = { id: string; ts: number; t: number };
 * const sensorsPerWindow: ProcessAllWindowFunction<Reading, string, TimeWindow> = {
 *   process(ctx, readings, out) {
 *     const sensors = new Set(readings.map((r) => r.id));
 *     out.collect(`${ctx.window().start}: ${sensors.size} sensors, ${readings.length} readings`);
 *   },
 * };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const lines: string[] = [];
 * env.fromCollection<Reading>([
 *   { id: "sensor_1", ts: 1_000, t: 30 },
 *   { id: "sensor_2", ts: 2_000, t: 15 },
 *   { id: "sensor_1", ts: 9_000, t: 34 },
 *   { id: "sensor_1", ts: 11_000, t: 31 },
 * ])
 *   .assignTimestampsAndWatermarks(
 *     WatermarkStrategy.forMonotonousTimestamps<Reading>().withTimestampAssigner((r) => r.ts),
 *   )
 *   .windowAll(TumblingEventTimeWindows.of(10_000))
 *   .process(sensorsPerWindow)
 *   .uid("sensors-per-window")
 *   .sinkTo({ kind: "simple", invoke: (line) => { lines.push(line); } });
 * await env.execute("process all-window function");
 * assert.deepEqual(lines, ["0: 2 sensors, 3 readings", "10000: 1 sensors, 1 readings"]);
 * ```
 */
export interface ProcessAllWindowFunction<IN, OUT, W extends Window> extends FunctionHooks {
  /**
   * Evaluates one window.
   * @param context the window, time, state and side outputs.
   * @param elements the window's elements in arrival order, or the one
   *   reduced/aggregated value; do not mutate.
   * @param out emits results.
   */
  process(context: ProcessWindowContext<W>, elements: readonly IN[], out: Collector<OUT>): void;
  /** Called when the window is purged for good: clear `context.windowState()` here. */
  clear?(context: ProcessWindowContext<W>): void;
}
