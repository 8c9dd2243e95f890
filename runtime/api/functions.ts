/**
 * The interfaces user code implements: map/filter/flatMap/reduce functions,
 * process functions with timers and side outputs, and the lifecycle hooks
 * of Flink's rich functions (`open`/`close`), `CheckpointedFunction`
 * (operator state) and `CheckpointListener` (checkpoint notifications).
 *
 * ## Threading
 *
 * Every call into user code happens on its subtask's single mailbox loop
 * (Flink's mailbox model): `processElement`, `onTimer`, `snapshotState` and
 * the notifications never run concurrently for one subtask, so user code
 * needs no locks.
 *
 * ## Instances
 *
 * A function given as an object is copied per parallel subtask (a new object
 * with the same prototype and a shallow copy of its own fields), as Flink
 * gives every subtask its own deserialized copy. Create mutable fields in
 * `open()` or `initializeState()`. ECMAScript `#private` fields cannot be
 * copied: use TypeScript `private` fields in function classes. A function
 * given as a plain arrow function is shared by all subtasks; keep it free of
 * mutable captured variables.
 *
 * @module
 */

import type {
  AggregatingState,
  AggregatingStateDescriptor,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  OperatorStateStore,
  ReducingState,
  ReducingStateDescriptor,
  ValueState,
  ValueStateDescriptor,
} from "./state.ts";
import type { OutputTag } from "./output_tag.ts";

/** Collects a function's output records. */
export interface Collector<T> {
  /**
   * Emits `value` downstream, with the input record's timestamp if it had
   * one. `value` is immutable from then on: chained operators, and network
   * edges inside a thread too, hand the object itself to the next function
   * (object reuse, see `StreamExecutionEnvironment.disableObjectReuse`), so
   * neither the caller nor a receiver may change it. Emit a new object
   * instead of changing and re-emitting one.
   */
  collect(value: T): void;
}

/**
 * What a running subtask tells its functions about itself and gives them
 * access to keyed state (Flink's `RuntimeContext`).
 */
export interface RuntimeContext {
  /** The job's name as given to `execute(name)`. */
  readonly jobName: string;
  /** The operator's name. */
  readonly operatorName: string;
  /** The operator's stable uid. */
  readonly uid: string;
  /** This subtask's index, 0-based. */
  readonly subtaskIndex: number;
  /** The operator's parallelism. */
  readonly parallelism: number;
  /** The number of key groups. */
  readonly maxParallelism: number;
  /** The execution attempt, 0 for the first run and +1 per restart. */
  readonly attempt: number;
  /**
   * The keyed {@linkcode ValueState} for `descriptor`, scoped to the current key.
   * @throws {Error} on an operator that is not applied to a `KeyedStream`.
   */
  getState<T>(descriptor: ValueStateDescriptor<T>): ValueState<T>;
  /**
   * The keyed {@linkcode ListState} for `descriptor`.
   * @throws {Error} on an operator that is not applied to a `KeyedStream`.
   */
  getListState<T>(descriptor: ListStateDescriptor<T>): ListState<T>;
  /**
   * The keyed {@linkcode MapState} for `descriptor`.
   * @throws {Error} on an operator that is not applied to a `KeyedStream`.
   */
  getMapState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV>;
  /**
   * The keyed {@linkcode ReducingState} for `descriptor`.
   * @throws {Error} on an operator that is not applied to a `KeyedStream`.
   */
  getReducingState<T>(descriptor: ReducingStateDescriptor<T>): ReducingState<T>;
  /**
   * The keyed {@linkcode AggregatingState} for `descriptor`.
   * @throws {Error} on an operator that is not applied to a `KeyedStream`.
   */
  getAggregatingState<IN, ACC, OUT>(
    descriptor: AggregatingStateDescriptor<IN, ACC, OUT>,
  ): AggregatingState<IN, OUT>;
}

/** Lifecycle hooks of a function (Flink's `RichFunction`). Both are optional. */
export interface RichFunction {
  /** Called once per subtask before the first record, after state is restored. */
  open?(context: RuntimeContext): void | Promise<void>;
  /** Called once per subtask when it finishes or is cancelled. */
  close?(): void | Promise<void>;
}

/** What {@linkcode CheckpointedFunction.initializeState} gets. */
export interface FunctionInitializationContext {
  /** True when the subtask was restored from a checkpoint or savepoint. */
  readonly isRestored: boolean;
  /** The checkpoint restored from, when `isRestored`. */
  readonly restoredCheckpointId: number | undefined;
  /** The subtask's operator state. */
  readonly operatorStateStore: OperatorStateStore;
}

/** What {@linkcode CheckpointedFunction.snapshotState} gets. */
export interface FunctionSnapshotContext {
  /** The checkpoint being taken. */
  readonly checkpointId: number;
  /** When the coordinator triggered it, in ms since the epoch. */
  readonly checkpointTimestamp: number;
}

/**
 * A function with operator state (Flink's `CheckpointedFunction`).
 *
 * `initializeState` runs before `open`, on the first start and on every
 * restore. `snapshotState` runs in the synchronous part of a checkpoint,
 * when the barrier reaches this operator: copy the function's fields into its
 * operator state there.
 */
export interface CheckpointedFunction {
  /** Registers and, on restore, reads operator state. */
  initializeState(context: FunctionInitializationContext): void | Promise<void>;
  /** Writes the function's fields into its operator state for checkpoint `context.checkpointId`. */
  snapshotState(context: FunctionSnapshotContext): void | Promise<void>;
}

/**
 * Checkpoint notifications (Flink's `CheckpointListener`).
 *
 * Notifications may be lost, late or out of order (a restart can intervene),
 * so completing checkpoint *n* means every checkpoint up to *n* is complete.
 */
export interface CheckpointListener {
  /** Checkpoint `checkpointId` completed: its metadata is durable. */
  notifyCheckpointComplete?(checkpointId: number): void | Promise<void>;
  /** Checkpoint `checkpointId` was aborted and will never complete. */
  notifyCheckpointAborted?(checkpointId: number): void | Promise<void>;
}

/** Any function object may add these hooks. */
export type FunctionHooks = RichFunction & Partial<CheckpointedFunction> & CheckpointListener;

/** Transforms each record into exactly one record. */
export type MapFunction<I, O> = ((value: I) => O) | (FunctionHooks & { map(value: I): O });

/** Keeps the records for which it returns true. */
export type FilterFunction<I> =
  | ((value: I) => boolean)
  | (FunctionHooks & { filter(value: I): boolean });

/** Transforms each record into zero or more records. */
export type FlatMapFunction<I, O> =
  | ((value: I, out: Collector<O>) => void)
  | (FunctionHooks & { flatMap(value: I, out: Collector<O>): void });

/** Combines two values of a key into one (associative). */
export type ReduceFunction<T> =
  | ((accumulated: T, value: T) => T)
  | (FunctionHooks & { reduce(accumulated: T, value: T): T });

/**
 * An incremental aggregation with an accumulator (Flink's
 * `AggregateFunction`): `createAccumulator` starts one, `add` folds a value
 * into it, `getResult` reads it, and `merge` combines two (for merging
 * windows). It is what `AggregatingStateDescriptor`, `KeyedStream.aggregate`
 * and windows' `aggregate` take.
 *
 * `add` and `merge` may change their accumulator argument in place and
 * return it, or return a new one; never return `undefined`. `getResult` may
 * return the accumulator itself (it is copied before it next changes in
 * place), but not a part of it that `add` changes in place. Accumulators
 * are stored in keyed state, so they must be plain, MessagePack-encodable
 * data (see `runtime/api/state.ts`).
 *
 * @example
 * ```ts
 * import type { AggregateFunction } from "./functions.ts";
 * const average: AggregateFunction<number, { sum: number; count: number }, number> = {
 *   createAccumulator: () => ({ sum: 0, count: 0 }),
 *   add: (value, acc) => ({ sum: acc.sum + value, count: acc.count + 1 }),
 *   getResult: (acc) => acc.sum / acc.count,
 *   merge: (a, b) => ({ sum: a.sum + b.sum, count: a.count + b.count }),
 * };
 * ```
 */
export interface AggregateFunction<IN, ACC, OUT> {
  /** A new, empty accumulator. */
  createAccumulator(): ACC;
  /** Folds `value` into `accumulator`; returns the accumulator (the same or a new one). */
  add(value: IN, accumulator: ACC): ACC;
  /** The result an accumulator stands for. */
  getResult(accumulator: ACC): OUT;
  /** Combines two accumulators into one (the same as either, or a new one). */
  merge(a: ACC, b: ACC): ACC;
}

/** A timestamp that means "no timestamp" never appears: records without one carry `undefined`. */
export type Timestamp = number | undefined;

/** Timers and time of a process function (Flink's `TimerService`). Times in ms. */
export interface TimerService {
  /** The current processing time, from the job's clock. */
  currentProcessingTime(): number;
  /** The operator's current event-time watermark (`-Infinity` before the first). */
  currentWatermark(): number;
  /**
   * Fires `onTimer` for the current key when processing time reaches `time`.
   * Registering the same (key, time) twice fires once.
   * @throws {Error} outside a keyed context.
   */
  registerProcessingTimeTimer(time: number): void;
  /**
   * Fires `onTimer` for the current key when the watermark reaches `time`.
   * @throws {Error} outside a keyed context.
   */
  registerEventTimeTimer(time: number): void;
  /** Deletes the current key's processing-time timer at `time`, if any. */
  deleteProcessingTimeTimer(time: number): void;
  /** Deletes the current key's event-time timer at `time`, if any. */
  deleteEventTimeTimer(time: number): void;
}

/** What `processElement` of a {@linkcode ProcessFunction} gets. */
export interface ProcessContext {
  /** The record's event timestamp in ms, or `undefined`. */
  timestamp(): Timestamp;
  /** Emits `value` to the side output named by `tag`. */
  output<X>(tag: OutputTag<X>, value: X): void;
  /** Time and timers. Timers need a keyed stream. */
  timerService(): TimerService;
}

/**
 * A low-level function over each record (Flink's `ProcessFunction`): it may
 * emit any number of records, write side outputs and read the record's
 * timestamp. Timers and keyed state need a `KeyedStream` (see
 * {@linkcode KeyedProcessFunction}).
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { OutputTag } from "./output_tag.ts";
 *
 * // Readings above 35 degrees go to a side output, the others on.
 * type Reading = { id: string; t: number };
 * const tooHot = new OutputTag<Reading>("too-hot");
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const normal: string[] = [];
 * const hot: Reading[] = [];
 * const checked = env.fromCollection<Reading>([{ id: "sensor_1", t: 35.8 }, { id: "sensor_2", t: 32.4 }])
 *   .process<string>({
 *     processElement(r, ctx, out) {
 *       if (r.t > 35) ctx.output(tooHot, r);
 *       else out.collect(`${r.id} ${r.t}`);
 *     },
 *   });
 * checked.sinkTo({ kind: "simple", invoke: (line) => { normal.push(line); } });
 * checked.getSideOutput(tooHot).sinkTo({ kind: "simple", invoke: (r) => { hot.push(r); } });
 * await env.execute("process function");
 * assert.deepEqual(normal, ["sensor_2 32.4"]);
 * assert.deepEqual(hot, [{ id: "sensor_1", t: 35.8 }]);
 * ```
 */
export interface ProcessFunction<I, O> extends FunctionHooks {
  /** Processes one record; emit with `out`, or to a side output with `ctx.output`. */
  processElement(value: I, ctx: ProcessContext, out: Collector<O>): void;
}

/** What a {@linkcode KeyedProcessFunction} gets: a {@linkcode ProcessContext} plus the key. */
export interface KeyedProcessContext<K> extends ProcessContext {
  /** The key of the record (or timer) being processed. */
  getCurrentKey(): K;
}

/** What `onTimer` gets. */
export interface OnTimerContext<K> extends KeyedProcessContext<K> {
  /** Which clock fired the timer. */
  timeDomain(): "event-time" | "processing-time";
}

/**
 * A process function over a `KeyedStream`, with keyed state and per-key timers
 * (Flink's `KeyedProcessFunction`, made by `keyed.process(fn)`). Get keyed
 * state in `open(ctx)`; it is scoped to the key of the record or timer being
 * processed. A timer fires `onTimer` once per (key, time).
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { WatermarkStrategy } from "../time/watermark.ts";
 * import { type ValueState, ValueStateDescriptor } from "./state.ts";
 * import type { Collector, KeyedProcessContext, KeyedProcessFunction, OnTimerContext, RuntimeContext } from "./functions.ts";
 *
 * // Counts each sensor's readings of the first 10 s; an event-time timer reports the count.
 * type Reading = { id: string; ts: number; t: number };
 * class CountFirst10s implements KeyedProcessFunction<string, Reading, string> {
 *   private count!: ValueState<number>;
 *   open(ctx: RuntimeContext): void {
 *     this.count = ctx.getState(new ValueStateDescriptor<number>("count", { defaultValue: 0 }));
 *   }
 *   processElement(r: Reading, ctx: KeyedProcessContext<string>, _out: Collector<string>): void {
 *     if (r.ts >= 10_000) return;
 *     this.count.update((this.count.value() ?? 0) + 1);
 *     ctx.timerService().registerEventTimeTimer(10_000); // once per key and time
 *   }
 *   onTimer(ts: number, ctx: OnTimerContext<string>, out: Collector<string>): void {
 *     out.collect(`${ctx.getCurrentKey()}: ${this.count.value()} readings before ${ts} ms`);
 *   }
 * }
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const lines: string[] = [];
 * env.fromCollection<Reading>([
 *   { id: "sensor_1", ts: 1_000, t: 35.8 },
 *   { id: "sensor_2", ts: 2_000, t: 15.4 },
 *   { id: "sensor_1", ts: 6_000, t: 32.4 },
 *   { id: "sensor_1", ts: 12_000, t: 36.1 },
 * ])
 *   .assignTimestampsAndWatermarks(
 *     WatermarkStrategy.forMonotonousTimestamps<Reading>().withTimestampAssigner((r) => r.ts),
 *   )
 *   .keyBy((r) => r.id)
 *   .process(new CountFirst10s())
 *   .uid("count-first-10s")
 *   .sinkTo({ kind: "simple", invoke: (line) => { lines.push(line); } });
 * await env.execute("keyed process function");
 * assert.deepEqual(lines.sort(), [
 *   "sensor_1: 2 readings before 10000 ms",
 *   "sensor_2: 1 readings before 10000 ms",
 * ]);
 * ```
 */
export interface KeyedProcessFunction<K, I, O> extends FunctionHooks {
  /** Processes one record of the current key. */
  processElement(value: I, ctx: KeyedProcessContext<K>, out: Collector<O>): void;
  /** Called when a timer registered for the current key fires, at `timestamp` ms. */
  onTimer?(timestamp: number, ctx: OnTimerContext<K>, out: Collector<O>): void;
}

/**
 * Transforms each record of two connected inputs into one record (Flink's
 * `CoMapFunction`): `map1` for input 1, `map2` for input 2. An object is
 * copied per subtask, as every function (see the module docs).
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import type { CoMapFunction } from "./functions.ts";
 *
 * // Clicks and buys as one stream of [user, action] pairs.
 * type Click = { user: string; page: string };
 * type Buy = { user: string; item: string };
 * const toAction: CoMapFunction<Click, Buy, [string, string]> = {
 *   map1: (c) => [c.user, `click ${c.page}`],
 *   map2: (b) => [b.user, `buy ${b.item}`],
 * };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const actions: [string, string][] = [];
 * env.fromCollection<Click>([{ user: "a", page: "/tea" }])
 *   .connect(env.fromCollection<Buy>([{ user: "a", item: "tea" }]))
 *   .map(toAction)
 *   .sinkTo({ kind: "simple", invoke: (a) => { actions.push(a); } });
 * await env.execute("co-map function");
 * assert.deepEqual(actions.sort(), [["a", "buy tea"], ["a", "click /tea"]]);
 * ```
 */
export interface CoMapFunction<IN1, IN2, O> extends FunctionHooks {
  /** Maps a record of input 1. */
  map1(value: IN1): O;
  /** Maps a record of input 2. */
  map2(value: IN2): O;
}

/**
 * Transforms each record of two connected inputs into zero or more records
 * (Flink's `CoFlatMapFunction`).
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import type { CoFlatMapFunction } from "./functions.ts";
 *
 * // Sensor ids out of single readings and out of batches of readings.
 * type Reading = { id: string; t: number };
 * const ids: CoFlatMapFunction<Reading, Reading[], string> = {
 *   flatMap1(r, out) { out.collect(r.id); },
 *   flatMap2(batch, out) { for (const r of batch) out.collect(r.id); },
 * };
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const seen: string[] = [];
 * env.fromCollection<Reading>([{ id: "sensor_1", t: 35.8 }])
 *   .connect(env.fromCollection<Reading[]>([[{ id: "sensor_2", t: 15.4 }, { id: "sensor_3", t: 6.7 }], []]))
 *   .flatMap(ids)
 *   .sinkTo({ kind: "simple", invoke: (id) => { seen.push(id); } });
 * await env.execute("co-flat-map function");
 * assert.deepEqual(seen.sort(), ["sensor_1", "sensor_2", "sensor_3"]);
 * ```
 */
export interface CoFlatMapFunction<IN1, IN2, O> extends FunctionHooks {
  /** Processes a record of input 1. */
  flatMap1(value: IN1, out: Collector<O>): void;
  /** Processes a record of input 2. */
  flatMap2(value: IN2, out: Collector<O>): void;
}

/**
 * A low-level function over two connected inputs (Flink's
 * `CoProcessFunction`): `processElement1` gets input 1's records,
 * `processElement2` input 2's, one at a time on the subtask's mailbox loop
 * (never concurrently). The context gives the record's timestamp, side
 * outputs (`ctx.output(tag, value)`) and the timer service; timers (and
 * `onTimer`) need keyed inputs (`connect(...).keyBy(k1, k2)`), otherwise
 * registering one throws. The watermark is the minimum over both inputs
 * (idle inputs excluded, as in Flink).
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { OutputTag } from "./output_tag.ts";
 *
 * // One stream of user actions out of clicks and buys; big buys also go to a side output.
 * type Click = { user: string; page: string };
 * type Buy = { user: string; item: string; price: number };
 * const bigBuys = new OutputTag<Buy>("big-buys");
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const clicks = env.fromCollection<Click>([{ user: "a", page: "/tea" }, { user: "b", page: "/jam" }]);
 * const buys = env.fromCollection<Buy>([{ user: "a", item: "tea", price: 120 }]);
 * const actions: string[] = [];
 * const big: Buy[] = [];
 * const merged = clicks.connect(buys).process<string>({
 *   processElement1(click, _ctx, out) { out.collect(`${click.user} clicked ${click.page}`); },
 *   processElement2(buy, ctx, out) {
 *     if (buy.price >= 100) ctx.output(bigBuys, buy);
 *     out.collect(`${buy.user} bought ${buy.item}`);
 *   },
 * });
 * merged.sinkTo({ kind: "simple", invoke: (line) => { actions.push(line); } });
 * merged.getSideOutput(bigBuys).sinkTo({ kind: "simple", invoke: (b) => { big.push(b); } });
 * await env.execute("co-process function");
 * // The order between the two inputs is not defined: compare sorted.
 * assert.deepEqual(actions.sort(), ["a bought tea", "a clicked /tea", "b clicked /jam"]);
 * assert.deepEqual(big, [{ user: "a", item: "tea", price: 120 }]);
 * ```
 */
export interface CoProcessFunction<IN1, IN2, O> extends FunctionHooks {
  /** Processes a record of input 1. */
  processElement1(value: IN1, ctx: ProcessContext, out: Collector<O>): void;
  /** Processes a record of input 2. */
  processElement2(value: IN2, ctx: ProcessContext, out: Collector<O>): void;
  /** Called when a timer fires (keyed inputs only), at `timestamp` ms. */
  onTimer?(timestamp: number, ctx: OnTimerContext<never>, out: Collector<O>): void;
}

/**
 * A process function over two inputs keyed by the same kind of key
 * (Flink's `KeyedCoProcessFunction`, made by
 * `a.connect(b).keyBy(k1, k2).process(fn)`): records of both inputs with
 * equal keys reach the same subtask and share that key's keyed state
 * (`open(ctx)` → `ctx.getState(...)`) and timers; `ctx.getCurrentKey()`
 * gives the key in both `processElement*` and `onTimer`.
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { type ListState, ListStateDescriptor, type ValueState, ValueStateDescriptor } from "./state.ts";
 * import type { Collector, KeyedCoProcessFunction, KeyedProcessContext, RuntimeContext } from "./functions.ts";
 *
 * // Enriches each order with its customer's name; an order that comes first waits in keyed state,
 * // so the result is the same whichever input is read first.
 * type Customer = { id: string; name: string };
 * type Order = { customer: string; item: string };
 * class Enrich implements KeyedCoProcessFunction<string, Customer, Order, string> {
 *   private name!: ValueState<string>;
 *   private waiting!: ListState<Order>;
 *   open(ctx: RuntimeContext): void {
 *     this.name = ctx.getState(new ValueStateDescriptor<string>("name"));
 *     this.waiting = ctx.getListState(new ListStateDescriptor<Order>("waiting"));
 *   }
 *   processElement1(c: Customer, _ctx: KeyedProcessContext<string>, out: Collector<string>): void {
 *     this.name.update(c.name);
 *     for (const o of this.waiting.get()) out.collect(`${c.name} ordered ${o.item}`);
 *     this.waiting.clear();
 *   }
 *   processElement2(o: Order, _ctx: KeyedProcessContext<string>, out: Collector<string>): void {
 *     const name = this.name.value();
 *     if (name === undefined) this.waiting.add(o);
 *     else out.collect(`${name} ordered ${o.item}`);
 *   }
 * }
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const customers = env.fromCollection<Customer>([{ id: "c1", name: "Ann" }, { id: "c2", name: "Bo" }]);
 * const orders = env.fromCollection<Order>([{ customer: "c1", item: "tea" }, { customer: "c2", item: "jam" }]);
 * const lines: string[] = [];
 * customers.connect(orders)
 *   .keyBy((c) => c.id, (o) => o.customer)
 *   .process(new Enrich())
 *   .uid("enrich-orders")
 *   .sinkTo({ kind: "simple", invoke: (line) => { lines.push(line); } });
 * await env.execute("keyed co-process function");
 * assert.deepEqual(lines.sort(), ["Ann ordered tea", "Bo ordered jam"]);
 * ```
 */
export interface KeyedCoProcessFunction<K, IN1, IN2, O> extends FunctionHooks {
  /** Processes a record of input 1 under its key. */
  processElement1(value: IN1, ctx: KeyedProcessContext<K>, out: Collector<O>): void;
  /** Processes a record of input 2 under its key. */
  processElement2(value: IN2, ctx: KeyedProcessContext<K>, out: Collector<O>): void;
  /** Called when a timer registered for the current key fires, at `timestamp` ms. */
  onTimer?(timestamp: number, ctx: OnTimerContext<K>, out: Collector<O>): void;
}
