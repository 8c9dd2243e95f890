/**
 * Windowed streams (Flink's `WindowedStream` and `AllWindowedStream`): a
 * keyed (or whole) stream cut into windows by a `WindowAssigner`, refined
 * with a trigger, an evictor, allowed lateness and a late-data side output,
 * and turned back into a stream by a window function.
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { WatermarkStrategy } from "../time/watermark.ts";
 * import { TumblingEventTimeWindows } from "../time/windows/tumbling_windows.ts";
 * import { CollectionSource } from "./collection_source.ts";
 *
 * type Reading = { sensor: string; ts: number; count: number };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const sums: Reading[] = [];
 * env.fromSource(
 *   new CollectionSource<Reading>([
 *     { sensor: "a", ts: 100, count: 1 },
 *     { sensor: "a", ts: 900, count: 1 },
 *     { sensor: "a", ts: 1_100, count: 1 },
 *   ]),
 *   WatermarkStrategy.forMonotonousTimestamps<Reading>().withTimestampAssigner((r) => r.ts),
 *   "readings",
 * )
 *   .keyBy((r) => r.sensor)
 *   .window(TumblingEventTimeWindows.of(1_000))
 *   .reduce((a, b) => ({ ...a, count: a.count + b.count }))
 *   .uid("counts")
 *   .sinkTo({ kind: "simple", invoke: (r) => { sums.push(r); } });
 * await env.execute("windowed counts");
 * console.assert(sums.map((r) => r.count).join() === "2,1");
 * ```
 *
 * ## How a window function runs
 *
 * | function                           | window state                      | runs                       |
 * | ---------------------------------- | --------------------------------- | -------------------------- |
 * | `reduce(fn)`                       | one reduced value per window      | incrementally, per element |
 * | `aggregate(aggFn)`                 | one accumulator per window        | incrementally, per element |
 * | `process(fn)`                      | every element (list state)        | at each firing             |
 * | `reduce`/`aggregate` + `processFn` | one value; `processFn` sees `[it]` | incrementally, then once  |
 * | any, with `evictor(...)`           | every element (list state)        | at each firing             |
 *
 * The result records carry the window's `maxTimestamp()` (`end - 1` for
 * time windows).
 *
 * ## Invariants
 *
 * - A merging assigner (sessions) only takes a trigger that can merge.
 * - `allowedLateness` is an integer >= 0 ms; it only matters in event time.
 * - Reduce and aggregate functions have no lifecycle hooks (Flink's rule
 *   that they may not be rich functions): put `open`/`close` and state on
 *   the process window function.
 * - `windowAll` runs at parallelism 1 (and max parallelism 1), as Flink's
 *   `AllWindowedStream` does.
 *
 * @module
 */

import type { AggregateFunction, ReduceFunction } from "./functions.ts";
import type { OutputTag } from "./output_tag.ts";
import type { SingleOutputStreamOperator } from "./datastream.ts";
import type { ProcessAllWindowFunction, ProcessWindowFunction } from "./window_functions.ts";
import type { OperatorSpec } from "../graph/stream_graph.ts";
import type { Key } from "../state/key_group.ts";
import { isMergingWindowAssigner, type WindowAssigner } from "../time/windows/window_assigner.ts";
import type { Trigger } from "../time/windows/trigger.ts";
import type { Evictor } from "../time/windows/evictor.ts";
import type { Window } from "../time/windows/window.ts";

/** The process window function of a window operator: keyed or all-window. */
export type WindowProcessSpec =
  | {
    readonly kind: "keyed";
    readonly fn: ProcessWindowFunction<unknown, unknown, Key, Window>;
  }
  | { readonly kind: "all"; readonly fn: ProcessAllWindowFunction<unknown, unknown, Window> };

/** What a window operator computes per window. */
export type WindowFunctionSpec =
  | { readonly kind: "process"; readonly process: WindowProcessSpec }
  | {
    readonly kind: "reduce";
    readonly reduce: ReduceFunction<unknown>;
    readonly process: WindowProcessSpec | undefined;
  }
  | {
    readonly kind: "aggregate";
    readonly aggregate: AggregateFunction<unknown, unknown, unknown>;
    readonly process: WindowProcessSpec | undefined;
  };

/** Everything a window operator is built from (the graph's `"window"` operator). */
export interface WindowOperatorSpec {
  /** Puts elements into windows. */
  readonly assigner: WindowAssigner<unknown, Window>;
  /** Decides when windows fire and purge. */
  readonly trigger: Trigger<unknown, Window>;
  /** Removes elements before/after the function, or `undefined` (incremental state). */
  readonly evictor: Evictor<unknown, Window> | undefined;
  /** How long after a window's end (event time) late elements still update it, ms. */
  readonly allowedLateness: number;
  /** Where elements too late for every window go, or `undefined` (dropped and counted). */
  readonly lateDataTag: OutputTag<unknown> | undefined;
  /** The window function. */
  readonly function: WindowFunctionSpec;
}

/** Adds the window operator to the graph: the input stream's `transform`. */
export type WindowTransform = <O>(
  spec: OperatorSpec,
  name: string,
) => SingleOutputStreamOperator<O>;

const HOOKS = ["open", "close", "initializeState", "snapshotState"] as const;

function checkNotRich(what: string, fn: unknown): void {
  if (typeof fn !== "object" || fn === null) return;
  const hooks = HOOKS.filter((h) => typeof (fn as Record<string, unknown>)[h] === "function");
  if (hooks.length > 0) {
    throw new TypeError(
      `The ${what} of a window cannot have lifecycle hooks (it has ${
        hooks.join(", ")
      }): pass a process window function as the second argument and put them there`,
    );
  }
}

function checkReduce(fn: unknown): void {
  const ok = typeof fn === "function" ||
    (typeof fn === "object" && fn !== null &&
      typeof (fn as { reduce?: unknown }).reduce === "function");
  if (!ok) {
    throw new TypeError(
      `A window's reduce needs a function (a, b) => c or an object with reduce(): current value is ${
        String(fn)
      }`,
    );
  }
  checkNotRich("ReduceFunction", fn);
}

function checkAggregate(fn: unknown): void {
  const methods = ["createAccumulator", "add", "getResult", "merge"] as const;
  const missing = typeof fn === "object" && fn !== null
    ? methods.filter((m) => typeof (fn as Record<string, unknown>)[m] !== "function")
    : [...methods];
  if (missing.length > 0) {
    throw new TypeError(
      `A window's aggregate needs an AggregateFunction, but ${
        missing.join(", ")
      } is missing: current value is ${String(fn)}`,
    );
  }
  checkNotRich("AggregateFunction", fn);
}

function checkProcess(fn: unknown): void {
  if (
    typeof fn !== "object" || fn === null ||
    typeof (fn as { process?: unknown }).process !== "function"
  ) {
    throw new TypeError(
      `A window function needs an object with process(): current value is ${String(fn)}`,
    );
  }
}

/** The operator name's function part: `"Reduce, ProcessWindowFunction"` and the like. */
function functionName(
  incremental: string | undefined,
  process: WindowProcessSpec | undefined,
): string {
  const processName = process === undefined
    ? undefined
    : process.kind === "keyed"
    ? "ProcessWindowFunction"
    : "ProcessAllWindowFunction";
  return [incremental, processName].filter((n) => n !== undefined).join(", ");
}

function describe(value: unknown): string {
  const text = String(value);
  if (text !== "[object Object]") return text;
  const name = (value as { constructor?: { name?: string } }).constructor?.name;
  return name && name !== "Object" ? name : "custom";
}

/**
 * What both windowed streams share (Flink's `WindowedStream` and
 * `AllWindowedStream`, two copies there, one base here): the trigger,
 * evictor, allowed lateness and late-data tag, and the window operator they
 * build; each adds `reduce`, `aggregate` and `process` with its own kind of
 * window function.
 *
 * @typeParam T the element type.
 * @typeParam W the window type.
 */
export abstract class AbstractWindowedStream<T, W extends Window> {
  readonly #assigner: WindowAssigner<T, W>;
  readonly #transform: WindowTransform;
  #trigger: Trigger<T, W>;
  #evictor: Evictor<T, W> | undefined;
  #allowedLateness = 0;
  #lateDataTag: OutputTag<T> | undefined;

  /**
   * @internal Use `KeyedStream.window(assigner)` or `DataStream.windowAll(assigner)`.
   * @param assigner puts elements into windows.
   * @param transform adds the operator to the (keyed) stream.
   */
  constructor(assigner: WindowAssigner<T, W>, transform: WindowTransform) {
    this.#assigner = assigner;
    this.#transform = transform;
    this.#trigger = assigner.getDefaultTrigger();
  }

  /**
   * Sets the trigger, replacing the assigner's default (Flink's `trigger`).
   * @throws {TypeError} when the assigner merges windows (sessions) and the trigger cannot merge.
   */
  trigger(trigger: Trigger<T, W>): this {
    if (isMergingWindowAssigner(this.#assigner) && !(trigger.canMerge?.() ?? false)) {
      throw new TypeError(
        `A merging window assigner (${this.#assigner}) cannot be used with a trigger that does not support merging: ${
          describe(trigger)
        } has no canMerge() returning true`,
      );
    }
    this.#trigger = trigger;
    return this;
  }

  /**
   * Sets an evictor: the window then keeps every element and runs its
   * function over them at each firing (Flink's `EvictingWindowOperator`).
   */
  evictor(evictor: Evictor<T, W>): this {
    this.#evictor = evictor;
    return this;
  }

  /**
   * Lets elements up to `ms` behind a window's end (in event time) still
   * update it and fire it again; the window's state is dropped once the
   * watermark passes `maxTimestamp() + ms`. Default 0.
   * @throws {RangeError} unless `ms` is an integer >= 0.
   */
  allowedLateness(ms: number): this {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new RangeError(
        `The allowed lateness must be an integer >= 0 ms: current value is ${ms}`,
      );
    }
    this.#allowedLateness = ms;
    return this;
  }

  /**
   * Sends elements too late for every window to side output `tag` instead
   * of dropping them (read it with `getSideOutput(tag)` on the result).
   * Without it, they are dropped and counted in the operator's
   * `numLateRecordsDropped` metric.
   * @throws {TypeError} when `tag` is not an `OutputTag`.
   */
  sideOutputLateData(tag: OutputTag<T>): this {
    if (typeof tag !== "object" || tag === null || typeof tag.id !== "string") {
      throw new TypeError(`sideOutputLateData needs an OutputTag: current value is ${String(tag)}`);
    }
    this.#lateDataTag = tag;
    return this;
  }

  /**
   * The window operator reducing each window with `fn`, then evaluating
   * the reduction with `process` when given.
   * @throws {TypeError} for a bad reduce or process function.
   */
  protected reduceWindows<O>(
    fn: unknown,
    process: WindowProcessSpec | undefined,
  ): SingleOutputStreamOperator<O> {
    checkReduce(fn);
    if (process !== undefined) checkProcess(process.fn);
    const spec = { kind: "reduce", reduce: fn as ReduceFunction<unknown>, process } as const;
    return this.#build<O>(spec, functionName("Reduce", process));
  }

  /**
   * The window operator aggregating each window with `fn`, then evaluating
   * the result with `process` when given.
   * @throws {TypeError} for a bad aggregate or process function.
   */
  protected aggregateWindows<O>(
    fn: unknown,
    process: WindowProcessSpec | undefined,
  ): SingleOutputStreamOperator<O> {
    checkAggregate(fn);
    if (process !== undefined) checkProcess(process.fn);
    const aggregate = fn as AggregateFunction<unknown, unknown, unknown>;
    return this.#build<O>(
      { kind: "aggregate", aggregate, process },
      functionName("Aggregate", process),
    );
  }

  /**
   * The window operator evaluating each window's elements with `process`.
   * @throws {TypeError} for a bad process function.
   */
  protected processWindows<O>(process: WindowProcessSpec): SingleOutputStreamOperator<O> {
    checkProcess(process.fn);
    return this.#build<O>({ kind: "process", process }, functionName(undefined, process));
  }

  /** Adds the window operator computing `fn`. */
  #build<O>(fn: WindowFunctionSpec, functionName: string): SingleOutputStreamOperator<O> {
    const spec: WindowOperatorSpec = {
      assigner: this.#assigner as WindowAssigner<unknown, Window>,
      trigger: this.#trigger as Trigger<unknown, Window>,
      evictor: this.#evictor as Evictor<unknown, Window> | undefined,
      allowedLateness: this.#allowedLateness,
      lateDataTag: this.#lateDataTag as OutputTag<unknown> | undefined,
      function: fn,
    };
    const evicting = this.#evictor === undefined ? "" : ", Evicting";
    return this.#transform<O>(
      { kind: "window", window: spec },
      `Window(${this.#assigner}, ${describe(this.#trigger)}${evicting}, ${functionName})`,
    );
  }
}

/**
 * A keyed stream cut into windows (Flink's `WindowedStream`). Configure it
 * with `trigger`, `evictor`, `allowedLateness` and `sideOutputLateData`,
 * then apply `reduce`, `aggregate` or `process`.
 *
 * @typeParam T the element type.
 * @typeParam K the key type.
 * @typeParam W the window type.
 */
export class WindowedStream<T, K extends Key, W extends Window>
  extends AbstractWindowedStream<T, W> {
  declare private readonly _key: K;

  /**
   * Reduces each window incrementally with `fn`, emitting the reduction
   * when the window fires, or handing it to `processWindowFn` as its one
   * element.
   * @throws {TypeError} when `fn` is no reduce function or has lifecycle hooks.
   */
  reduce(fn: ReduceFunction<T>): SingleOutputStreamOperator<T>;
  /** Reduces incrementally, then evaluates the reduction with `processWindowFn`. */
  reduce<O>(
    fn: ReduceFunction<T>,
    processWindowFn: ProcessWindowFunction<T, O, K, W>,
  ): SingleOutputStreamOperator<O>;
  reduce<O>(
    fn: ReduceFunction<T>,
    processWindowFn?: ProcessWindowFunction<T, O, K, W>,
  ): SingleOutputStreamOperator<O> {
    return this.reduceWindows<O>(fn, keyedProcess(processWindowFn));
  }

  /**
   * Aggregates each window incrementally with `aggFn` (one accumulator per
   * key and window), emitting `getResult` when the window fires, or handing
   * it to `processWindowFn` as its one element.
   * @throws {TypeError} when `aggFn` lacks a method or has lifecycle hooks.
   */
  aggregate<ACC, R>(aggFn: AggregateFunction<T, ACC, R>): SingleOutputStreamOperator<R>;
  /** Aggregates incrementally, then evaluates the result with `processWindowFn`. */
  aggregate<ACC, V, R>(
    aggFn: AggregateFunction<T, ACC, V>,
    processWindowFn: ProcessWindowFunction<V, R, K, W>,
  ): SingleOutputStreamOperator<R>;
  aggregate<ACC, V, R>(
    aggFn: AggregateFunction<T, ACC, V>,
    processWindowFn?: ProcessWindowFunction<V, R, K, W>,
  ): SingleOutputStreamOperator<R> {
    return this.aggregateWindows<R>(aggFn, keyedProcess(processWindowFn));
  }

  /**
   * Evaluates each window with all its elements (kept in list state).
   * @throws {TypeError} when `fn` has no `process` method.
   */
  process<O>(fn: ProcessWindowFunction<T, O, K, W>): SingleOutputStreamOperator<O> {
    return this.processWindows<O>(keyedProcess(fn)!);
  }
}

function keyedProcess<IN, O, K, W extends Window>(
  fn: ProcessWindowFunction<IN, O, K, W> | undefined,
): WindowProcessSpec | undefined {
  return fn === undefined
    ? undefined
    : { kind: "keyed", fn: fn as unknown as ProcessWindowFunction<unknown, unknown, Key, Window> };
}

function allProcess<IN, O, W extends Window>(
  fn: ProcessAllWindowFunction<IN, O, W> | undefined,
): WindowProcessSpec | undefined {
  return fn === undefined
    ? undefined
    : { kind: "all", fn: fn as unknown as ProcessAllWindowFunction<unknown, unknown, Window> };
}

/**
 * A whole (non-keyed) stream cut into windows (Flink's
 * `AllWindowedStream`). Every element goes to one subtask: the operator
 * runs at parallelism 1.
 *
 * @typeParam T the element type.
 * @typeParam W the window type.
 */
export class AllWindowedStream<T, W extends Window> extends AbstractWindowedStream<T, W> {
  /**
   * Reduces each window incrementally (see `WindowedStream.reduce`).
   * @throws {TypeError} when `fn` is no reduce function or has lifecycle hooks.
   */
  reduce(fn: ReduceFunction<T>): SingleOutputStreamOperator<T>;
  /** Reduces incrementally, then evaluates the reduction with `processWindowFn`. */
  reduce<O>(
    fn: ReduceFunction<T>,
    processWindowFn: ProcessAllWindowFunction<T, O, W>,
  ): SingleOutputStreamOperator<O>;
  reduce<O>(
    fn: ReduceFunction<T>,
    processWindowFn?: ProcessAllWindowFunction<T, O, W>,
  ): SingleOutputStreamOperator<O> {
    return this.reduceWindows<O>(fn, allProcess(processWindowFn));
  }

  /**
   * Aggregates each window incrementally (see `WindowedStream.aggregate`).
   * @throws {TypeError} when `aggFn` lacks a method or has lifecycle hooks.
   */
  aggregate<ACC, R>(aggFn: AggregateFunction<T, ACC, R>): SingleOutputStreamOperator<R>;
  /** Aggregates incrementally, then evaluates the result with `processWindowFn`. */
  aggregate<ACC, V, R>(
    aggFn: AggregateFunction<T, ACC, V>,
    processWindowFn: ProcessAllWindowFunction<V, R, W>,
  ): SingleOutputStreamOperator<R>;
  aggregate<ACC, V, R>(
    aggFn: AggregateFunction<T, ACC, V>,
    processWindowFn?: ProcessAllWindowFunction<V, R, W>,
  ): SingleOutputStreamOperator<R> {
    return this.aggregateWindows<R>(aggFn, allProcess(processWindowFn));
  }

  /**
   * Evaluates each window with all its elements.
   * @throws {TypeError} when `fn` has no `process` method.
   */
  process<O>(fn: ProcessAllWindowFunction<T, O, W>): SingleOutputStreamOperator<O> {
    return this.processWindows<O>(allProcess(fn)!);
  }
}
