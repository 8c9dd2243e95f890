/**
 * The functions of the broadcast state pattern (Flink's
 * `BroadcastProcessFunction` and `KeyedBroadcastProcessFunction`) and the
 * broadcast state they read and write.
 *
 * ## The pattern
 *
 * A low-volume control stream (rules, thresholds, a dictionary) is
 * broadcast with `control.broadcast(descriptor)`: every subtask of the
 * connected operator receives every control record, in
 * `processBroadcastElement`, and stores what it needs in broadcast state,
 * a map per descriptor that is the same on every subtask. The data stream,
 * keyed or not, is processed in `processElement`, which may only **read**
 * broadcast state: a write there would make the subtasks' copies differ.
 *
 * ## Invariants (as in Flink)
 *
 * - Every subtask must change its broadcast state the same way for the same
 *   control record: `processBroadcastElement` must be deterministic and
 *   depend on nothing but the record and broadcast state.
 * - Control records from several broadcasting subtasks may interleave
 *   differently on different subtasks; give the control stream parallelism
 *   1 when the order between control records matters.
 * - The order between a control record and data records is not defined
 *   (two inputs race). Use event time and timers when it matters: the
 *   operator's watermark is the minimum over both inputs, so a timer at `t`
 *   fires only after every control record up to `t` arrived.
 * - Broadcast state is operator state: every subtask checkpoints its copy,
 *   and a restore at any parallelism gives each subtask one of the copies
 *   (Flink's `BroadcastState` redistribution).
 *
 * @module
 */

import type { Collector, FunctionHooks, TimerService, Timestamp } from "./functions.ts";
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

/**
 * Broadcast state as the element side sees it (Flink's
 * `ReadOnlyBroadcastState`): a map of user keys (strings, numbers or
 * booleans) to values. Its write methods throw.
 */
export interface ReadOnlyBroadcastState<K, V> {
  /** The value under `key`, or `undefined`. */
  get(key: K): V | undefined;
  /** Whether `key` has a value. */
  contains(key: K): boolean;
  /** The entries, in insertion order (a copy). */
  entries(): [K, V][];
  /** The keys, in insertion order (a copy). */
  keys(): K[];
  /** The number of entries. */
  readonly size: number;
}

/**
 * Broadcast state as the broadcast side sees it (Flink's `BroadcastState`):
 * readable and writable. Values must be MessagePack-encodable (they are
 * checkpointed) and must not be changed after `put`; put a new value.
 */
export interface BroadcastState<K, V> extends ReadOnlyBroadcastState<K, V> {
  /** Sets `key` to `value`. @throws {TypeError} when `value` is `undefined`. */
  put(key: K, value: V): void;
  /** Sets every entry of `entries`. */
  putAll(entries: Iterable<[K, V]>): void;
  /** Removes `key`. */
  remove(key: K): void;
  /** Removes every entry. */
  clear(): void;
}

/** What `processElement` of a {@linkcode BroadcastProcessFunction} gets (Flink's `ReadOnlyContext`). */
export interface BroadcastReadOnlyContext {
  /** The record's event timestamp in ms, or `undefined`. */
  timestamp(): Timestamp;
  /** Emits `value` to the side output named by `tag`. */
  output<X>(tag: OutputTag<X>, value: X): void;
  /** The current processing time (ms, the job's clock). */
  currentProcessingTime(): number;
  /** The operator's current watermark (ms; `-Infinity` before the first): the minimum over both inputs. */
  currentWatermark(): number;
  /**
   * The broadcast state named by `descriptor`, read-only.
   * @throws {Error} when `descriptor` was not given to `broadcast(...)`.
   */
  getBroadcastState<K, V>(descriptor: MapStateDescriptor<K, V>): ReadOnlyBroadcastState<K, V>;
}

/** What `processBroadcastElement` gets (Flink's `Context` of the broadcast functions). */
export interface BroadcastContext extends Omit<BroadcastReadOnlyContext, "getBroadcastState"> {
  /**
   * The broadcast state named by `descriptor`, writable.
   * @throws {Error} when `descriptor` was not given to `broadcast(...)`.
   */
  getBroadcastState<K, V>(descriptor: MapStateDescriptor<K, V>): BroadcastState<K, V>;
}

/**
 * Connects a non-keyed stream with a broadcast stream (Flink's
 * `BroadcastProcessFunction`, made by `stream.connect(control.broadcast(d))
 * .process(fn)`). No keyed state and no timers, so a record cannot wait for
 * a control record: it meets whatever broadcast state has arrived (the two
 * inputs race). When the result must not depend on that race, key the data
 * stream and use {@linkcode KeyedBroadcastProcessFunction}, whose example
 * waits for event time.
 *
 * @example
 * ```ts
 * import type { BroadcastProcessFunction } from "./broadcast_functions.ts";
 * import { MapStateDescriptor } from "./state.ts";
 * // A best-effort lookup: an id that comes before its name is emitted as unknown.
 * const names = new MapStateDescriptor<string, string>("names");
 * const enrich: BroadcastProcessFunction<string, [string, string], string> = {
 *   processElement(id, ctx, out) {
 *     out.collect(`${id}: ${ctx.getBroadcastState(names).get(id) ?? "unknown"}`);
 *   },
 *   processBroadcastElement([id, name], ctx) {
 *     ctx.getBroadcastState(names).put(id, name);
 *   },
 * };
 * ```
 */
export interface BroadcastProcessFunction<IN1, IN2, O> extends FunctionHooks {
  /** Processes a record of the non-broadcast input; broadcast state is read-only here. */
  processElement(value: IN1, ctx: BroadcastReadOnlyContext, out: Collector<O>): void;
  /** Processes a broadcast record; broadcast state is writable here. */
  processBroadcastElement(value: IN2, ctx: BroadcastContext, out: Collector<O>): void;
}

/**
 * Applied by `applyToKeyedState` to every key with a value in a keyed state
 * (Flink's `KeyedStateFunction`): `state` is scoped to `key`.
 */
export type KeyedStateFunction<K, S> = (key: K, state: S) => void;

/** What `processElement` of a {@linkcode KeyedBroadcastProcessFunction} gets. */
export interface KeyedBroadcastReadOnlyContext<K> extends BroadcastReadOnlyContext {
  /** The key of the record being processed. */
  getCurrentKey(): K;
  /** Time and per-key timers. */
  timerService(): TimerService;
}

/** What `onTimer` of a {@linkcode KeyedBroadcastProcessFunction} gets. */
export interface KeyedBroadcastOnTimerContext<K> extends KeyedBroadcastReadOnlyContext<K> {
  /** Which clock fired the timer. */
  timeDomain(): "event-time" | "processing-time";
}

/** A keyed state descriptor that `applyToKeyedState` takes. */
export type KeyedStateDescriptor =
  | ValueStateDescriptor<unknown>
  | ListStateDescriptor<unknown>
  | MapStateDescriptor<unknown, unknown>
  | ReducingStateDescriptor<unknown>
  | AggregatingStateDescriptor<unknown, unknown, unknown>;

/** The keyed state a descriptor declares. */
export type KeyedStateOf<D> = D extends ValueStateDescriptor<infer T> ? ValueState<T>
  : D extends ListStateDescriptor<infer T> ? ListState<T>
  : D extends MapStateDescriptor<infer UK, infer UV> ? MapState<UK, UV>
  : D extends ReducingStateDescriptor<infer T> ? ReducingState<T>
  : D extends AggregatingStateDescriptor<infer IN, infer _ACC, infer OUT>
    ? AggregatingState<IN, OUT>
  : never;

/** What `processBroadcastElement` of a {@linkcode KeyedBroadcastProcessFunction} gets. */
export interface KeyedBroadcastContext<K> extends BroadcastContext {
  /**
   * Calls `fn(key, state)` for every key of this subtask that has a value
   * in the keyed state of `descriptor` (Flink's `applyToKeyedState`), in
   * no particular order; `fn` may read, change or clear the state.
   * @throws whatever `fn` throws.
   */
  applyToKeyedState<D extends KeyedStateDescriptor>(
    descriptor: D,
    fn: KeyedStateFunction<K, KeyedStateOf<D>>,
  ): void;
}

/**
 * Connects a keyed stream with a broadcast stream (Flink's
 * `KeyedBroadcastProcessFunction`, made by
 * `keyed.connect(control.broadcast(d)).process(fn)`): `processElement` has
 * keyed state (through `open(ctx)`), per-key timers and read-only broadcast
 * state; `processBroadcastElement` writes broadcast state and may visit
 * every key's keyed state with `applyToKeyedState`.
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { WatermarkStrategy } from "../time/watermark.ts";
 * import { type ListState, ListStateDescriptor, MapStateDescriptor } from "./state.ts";
 * import type { Collector, RuntimeContext } from "./functions.ts";
 * import type {
 *   KeyedBroadcastContext,
 *   KeyedBroadcastOnTimerContext,
 *   KeyedBroadcastProcessFunction,
 *   KeyedBroadcastReadOnlyContext,
 * } from "./broadcast_functions.ts";
 *
 * // Alerts on readings above their sensor's threshold. The thresholds race the readings, so a
 * // reading waits in keyed state for an event-time timer at its timestamp: the watermark is the
 * // minimum over both inputs, so when the timer fires the thresholds before it have arrived.
 * type Reading = { id: string; ts: number; t: number };
 * const thresholds = new MapStateDescriptor<string, number>("thresholds");
 * class Alerts implements KeyedBroadcastProcessFunction<string, Reading, [string, number], string> {
 *   private pending!: ListState<Reading>;
 *   open(ctx: RuntimeContext): void {
 *     this.pending = ctx.getListState(new ListStateDescriptor<Reading>("pending"));
 *   }
 *   processElement(r: Reading, ctx: KeyedBroadcastReadOnlyContext<string>, _out: Collector<string>): void {
 *     this.pending.add(r);
 *     ctx.timerService().registerEventTimeTimer(r.ts);
 *   }
 *   processBroadcastElement([id, limit]: [string, number], ctx: KeyedBroadcastContext<string>): void {
 *     ctx.getBroadcastState(thresholds).put(id, limit);
 *   }
 *   onTimer(ts: number, ctx: KeyedBroadcastOnTimerContext<string>, out: Collector<string>): void {
 *     const limit = ctx.getBroadcastState(thresholds).get(ctx.getCurrentKey()) ?? Infinity;
 *     const due = this.pending.get().filter((r) => r.ts <= ts);
 *     for (const r of due) if (r.t > limit) out.collect(`${r.ts} ${r.id} ${r.t} > ${limit}`);
 *     this.pending.update(this.pending.get().filter((r) => r.ts > ts));
 *   }
 * }
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * // A bounded control stream without watermarks holds event time back until it ends.
 * const rules = env.fromCollection<[string, number]>([["sensor_1", 30], ["sensor_2", 20]])
 *   .broadcast(thresholds);
 * const alerts: string[] = [];
 * env.fromCollection<Reading>([
 *   { id: "sensor_1", ts: 1_000, t: 35.8 },
 *   { id: "sensor_2", ts: 1_000, t: 15.4 },
 *   { id: "sensor_1", ts: 2_000, t: 29.0 },
 *   { id: "sensor_2", ts: 3_000, t: 21.5 },
 * ])
 *   .assignTimestampsAndWatermarks(
 *     WatermarkStrategy.forMonotonousTimestamps<Reading>().withTimestampAssigner((r) => r.ts),
 *   )
 *   .keyBy((r) => r.id)
 *   .connect(rules)
 *   .process(new Alerts())
 *   .uid("threshold-alerts")
 *   .sinkTo({ kind: "simple", invoke: (line) => { alerts.push(line); } });
 * await env.execute("keyed broadcast process function");
 * assert.deepEqual(alerts.sort(), ["1000 sensor_1 35.8 > 30", "3000 sensor_2 21.5 > 20"]);
 * ```
 */
export interface KeyedBroadcastProcessFunction<K, IN1, IN2, O> extends FunctionHooks {
  /** Processes a record of the keyed input under its key. */
  processElement(value: IN1, ctx: KeyedBroadcastReadOnlyContext<K>, out: Collector<O>): void;
  /** Processes a broadcast record (no current key). */
  processBroadcastElement(value: IN2, ctx: KeyedBroadcastContext<K>, out: Collector<O>): void;
  /** Called when a timer registered for the current key fires, at `timestamp` ms. */
  onTimer?(timestamp: number, ctx: KeyedBroadcastOnTimerContext<K>, out: Collector<O>): void;
}
