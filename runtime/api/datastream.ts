/**
 * The DataStream API: typed handles over the StreamGraph that the
 * {@linkcode StreamExecutionEnvironment} builds (Flink's `DataStream`,
 * `SingleOutputStreamOperator`, `KeyedStream`; `DataStreamSink` is in
 * `data_stream_sink.ts`, re-exported here).
 *
 * Every method adds nodes and edges to the graph and returns a new handle;
 * nothing runs until `env.execute()`.
 *
 * ## Records are immutable after they are emitted
 *
 * A record returned by a `map`, emitted through a `Collector` or by a
 * source is handed to the next function as it is wherever no encoding is
 * needed: on chained edges, and on every network edge (`keyBy`,
 * `rebalance`, `broadcast`...) between subtasks of one thread (all of local
 * mode; one job's subtasks on one slot in cluster mode), which pass records
 * by reference (DESIGN.md §15; Flink's object reuse, on by default here). So no function may change a record it emitted or
 * received; build a new one. `env.disableObjectReuse()` encodes every
 * network edge instead, as edges between threads always do.
 *
 * @module
 */

import type {
  AggregateFunction,
  FilterFunction,
  FlatMapFunction,
  KeyedProcessFunction,
  MapFunction,
  ProcessFunction,
  ReduceFunction,
} from "./functions.ts";
import type { OutputTag } from "./output_tag.ts";
import { checkSink, type Sink } from "./sink.ts";
import type {
  KeySelector,
  OperatorSpec,
  Partitioner,
  StreamGraph,
  StreamNode,
} from "../graph/stream_graph.ts";
import type { Key } from "../state/key_group.ts";
import { PrintSink, type PrintSinkOptions } from "./print_sink.ts";
import { AggregatingStateDescriptor } from "./state.ts";
import { type AggregationField, comparableAggregator } from "./comparable_aggregator.ts";
import type { WatermarkStrategy } from "../time/watermark.ts";
import { AllWindowedStream, WindowedStream } from "./windowed_stream.ts";
import type { WindowAssigner } from "../time/windows/window_assigner.ts";
import type { GlobalWindow, Window } from "../time/windows/window.ts";
import { GlobalWindows } from "../time/windows/global_windows.ts";
import { CountTrigger, PurgingTrigger } from "../time/windows/triggers.ts";
import { CountEvictor } from "../time/windows/evictors.ts";
import {
  addTwoInputNode,
  ConnectedStreams,
  type TwoInputRequest,
  type TwoInputTransform,
} from "./connected_streams.ts";
import { BroadcastConnectedStream, BroadcastStream } from "./broadcast_stream.ts";
import type { MapStateDescriptor } from "./state.ts";
import { JoinedStreams } from "./joined_streams.ts";
import { IntervalJoin } from "./interval_join.ts";
import { CoGroupedStreams } from "./co_grouped_streams.ts";
import { DataStreamSink } from "./data_stream_sink.ts";
import { checkedMaxParallelism, checkedParallelism, checkedUid } from "./operator_settings.ts";

export { DataStreamSink } from "./data_stream_sink.ts";

/** One input of a stream-to-be: a node's (side) output, and how it is partitioned. */
export interface StreamInput {
  /** The producing node. */
  readonly node: number;
  /** The side output tag id, or `undefined` for the main output. */
  readonly sideOutput: string | undefined;
  /** The partitioner, or `undefined` for the default. */
  readonly partitioner: Partitioner | undefined;
  /** For hash partitioning. */
  readonly keySelector: KeySelector | undefined;
}

/** The part of the environment a stream needs. */
export interface StreamGraphOwner {
  /** The graph under construction. */
  readonly streamGraph: StreamGraph;
}

/** A stream of records of type `T`. */
export class DataStream<T> {
  /** The environment's graph holder. */
  protected readonly owner: StreamGraphOwner;
  /** Where this stream's records come from. */
  readonly inputs: readonly StreamInput[];

  /** @internal Use the environment's `fromSource`/`fromCollection` to make streams. */
  constructor(owner: StreamGraphOwner, inputs: readonly StreamInput[]) {
    this.owner = owner;
    this.inputs = inputs;
  }

  /** Adds an operator consuming this stream. */
  protected transform<O>(spec: OperatorSpec, name: string): SingleOutputStreamOperator<O> {
    const graph = this.owner.streamGraph;
    const node = graph.addNode(spec, name);
    // An operator is keyed when every input is partitioned by one and the
    // same key selector; mixing keyed and unkeyed inputs, or key selectors,
    // would put records on subtasks that do not own their key.
    const selectors = new Set(
      this.inputs.map((i) => (i.partitioner === "hash" ? i.keySelector : undefined)),
    );
    if (selectors.size > 1 && [...selectors].some((s) => s !== undefined)) {
      throw new TypeError(
        `Operator '${name}' gets inputs keyed by different key selectors (or keyed and not keyed): ` +
          `key every input of a union with the same key selector, after the union`,
      );
    }
    const [selector] = selectors;
    if (selector) node.keySelector = selector;
    for (const input of this.inputs) {
      graph.addEdge({
        source: input.node,
        target: node.id,
        partitioner: input.partitioner,
        keySelector: input.keySelector,
        sideOutput: input.sideOutput,
      });
    }
    return new SingleOutputStreamOperator<O>(this.owner, node);
  }

  /** Applies `fn` to every record (Flink's `map`). */
  map<O>(fn: MapFunction<T, O>): SingleOutputStreamOperator<O> {
    return this.transform<O>({ kind: "map", fn: fn as MapFunction<unknown, unknown> }, "Map");
  }

  /** Keeps the records for which `fn` returns true. */
  filter(fn: FilterFunction<T>): SingleOutputStreamOperator<T> {
    return this.transform<T>({ kind: "filter", fn: fn as FilterFunction<unknown> }, "Filter");
  }

  /** Emits zero or more records per record through the collector. */
  flatMap<O>(fn: FlatMapFunction<T, O>): SingleOutputStreamOperator<O> {
    return this.transform<O>(
      { kind: "flatMap", fn: fn as FlatMapFunction<unknown, unknown> },
      "FlatMap",
    );
  }

  /** Applies a {@linkcode ProcessFunction} (side outputs, timestamps). */
  process<O>(fn: ProcessFunction<T, O>): SingleOutputStreamOperator<O> {
    return this.transform<O>(
      { kind: "process", fn: fn as ProcessFunction<unknown, unknown> },
      "Process",
    );
  }

  /**
   * Assigns each record a timestamp and generates watermarks from them, in
   * the middle of a job (Flink's `assignTimestampsAndWatermarks` and its
   * `TimestampsAndWatermarksOperator`): one generator per subtask, periodic
   * watermarks every auto-watermark interval, idleness when the strategy
   * has `withIdleness`. Upstream watermarks are ignored, except the end of
   * input; the operator checkpoints its last watermark as a floor for
   * restores (see `runtime/time/watermark.ts`).
   *
   * @example
   * ```ts
   * import { StreamExecutionEnvironment } from "./environment.ts";
   * import { WatermarkStrategy } from "../time/watermark.ts";
   * const env = StreamExecutionEnvironment.getExecutionEnvironment();
   * env.fromCollection([{ ts: 1_000 }, { ts: 3_000 }])
   *   .assignTimestampsAndWatermarks(
   *     WatermarkStrategy.forMonotonousTimestamps<{ ts: number }>().withTimestampAssigner((r) => r.ts),
   *   );
   * ```
   */
  assignTimestampsAndWatermarks(strategy: WatermarkStrategy<T>): SingleOutputStreamOperator<T> {
    return this.transform<T>(
      { kind: "timestampsAndWatermarks", fn: strategy as WatermarkStrategy<unknown> },
      "Timestamps/Watermarks",
    );
  }

  /**
   * Partitions the stream by key: records with equal keys go to the same
   * subtask, by key group (see `assignToKeyGroup`).
   *
   * @param selector returns the record's key: a string, number, boolean,
   *   bigint or a tuple of those. It must be deterministic.
   */
  keyBy<K extends Key>(selector: (value: T) => K): KeyedStream<T, K> {
    const keySelector = selector as KeySelector;
    return new KeyedStream<T, K>(
      this.owner,
      this.inputs.map((i) => ({ ...i, partitioner: "hash" as const, keySelector })),
    );
  }

  /** Merges this stream with others of the same type. */
  union(...others: DataStream<T>[]): DataStream<T> {
    return new DataStream<T>(this.owner, [...this.inputs, ...others.flatMap((o) => o.inputs)]);
  }

  #partition(partitioner: Partitioner): DataStream<T> {
    return new DataStream<T>(
      this.owner,
      this.inputs.map((i) => ({ ...i, partitioner, keySelector: undefined })),
    );
  }

  /** Distributes records round-robin over all downstream subtasks. */
  rebalance(): DataStream<T> {
    return this.#partition("rebalance");
  }

  /**
   * Without arguments: sends every record to every downstream subtask
   * (the `broadcast` partitioner). With broadcast state descriptors: the
   * control stream of the broadcast state pattern (Flink's
   * `broadcast(MapStateDescriptor...)`), to `connect` a data stream with;
   * see `runtime/api/broadcast_stream.ts`.
   * @throws {TypeError} when a descriptor is not a `MapStateDescriptor`, or two share a name.
   */
  broadcast(): DataStream<T>;
  /** The control stream of the broadcast state pattern, with its broadcast states (see above). */
  broadcast(
    descriptor: MapStateDescriptor<unknown, unknown>,
    ...more: MapStateDescriptor<unknown, unknown>[]
  ): BroadcastStream<T>;
  broadcast(
    ...descriptors: MapStateDescriptor<unknown, unknown>[]
  ): DataStream<T> | BroadcastStream<T> {
    if (descriptors.length > 0) return new BroadcastStream<T>(this.inputs, descriptors);
    return this.#partition("broadcast");
  }

  /**
   * Connects this stream (input 1) with `other` (input 2) for one
   * two-input operator (Flink's `connect`): with a `DataStream`, a
   * {@linkcode ConnectedStreams} (`map`, `flatMap`, `process`, `keyBy(k1, k2)`);
   * with a `BroadcastStream`, the broadcast state pattern's
   * {@linkcode BroadcastConnectedStream}. See `connected_streams.ts`.
   */
  connect<T2>(other: BroadcastStream<T2>): BroadcastConnectedStream<T, T2>;
  /** Connects with another stream for a co-map, co-flatMap or co-process operator (see above). */
  connect<T2>(other: DataStream<T2>): ConnectedStreams<T, T2>;
  connect<T2>(
    other: DataStream<T2> | BroadcastStream<T2>,
  ): ConnectedStreams<T, T2> | BroadcastConnectedStream<T, T2> {
    if (other instanceof BroadcastStream) {
      return new BroadcastConnectedStream<T, T2>(this.inputs, other, this.twoInputTransform());
    }
    return new ConnectedStreams<T, T2>(this.inputs, other.inputs, this.twoInputTransform());
  }

  /** Adds a two-input operator (for `connect` and the joins). */
  protected twoInputTransform(): TwoInputTransform {
    return <O>(request: TwoInputRequest) =>
      new SingleOutputStreamOperator<O>(
        this.owner,
        addTwoInputNode(this.owner.streamGraph, request),
      );
  }

  /** Sends records to the downstream subtask with the same index (equal parallelism only). */
  forward(): DataStream<T> {
    return this.#partition("forward");
  }

  /** Round-robin over a subset of downstream subtasks, for unequal parallelism without a full shuffle. */
  rescale(): DataStream<T> {
    return this.#partition("rescale");
  }

  /**
   * Writes the stream to `sink` (a `SinkFunction`, `TwoPhaseCommitSink` or
   * `SinkV2`).
   * @throws {TypeError} for a sink that could never run (see `checkSink`),
   *   e.g. a SinkV2 with a committer and no `checkCommittable`.
   */
  sinkTo(sink: Sink<T>): DataStreamSink<T> {
    checkSink(sink, `the sink after node(s) ${this.inputs.map((i) => i.node).join(", ")}`);
    const op = this.transform<never>({ kind: "sink", sink: sink as Sink<unknown> }, "Sink");
    return new DataStreamSink<T>(op.node);
  }

  /**
   * Cuts the whole stream into windows (Flink's `windowAll`). Every
   * record goes to one subtask: the window operator runs at parallelism 1
   * (and max parallelism 1), keyed internally by one constant key.
   *
   * @param assigner e.g. `TumblingEventTimeWindows.of(1_000)`.
   */
  windowAll<W extends Window>(assigner: WindowAssigner<T, W>): AllWindowedStream<T, W> {
    const keyed = this.keyBy(() => 0);
    return new AllWindowedStream<T, W>(
      assigner,
      <O>(spec: OperatorSpec, name: string) =>
        keyed.transform<O>(spec, name).setParallelism(1).setMaxParallelism(1),
    );
  }

  /**
   * Count windows over the whole stream (Flink's `countWindowAll`): with
   * only `size`, tumbling windows of `size` records (global window, purging
   * `CountTrigger`); with `slide`, windows of the last `size` records every
   * `slide` records (`CountTrigger(slide)` and `CountEvictor(size)`).
   * Parallelism 1, as {@linkcode DataStream.windowAll}.
   * @throws {RangeError} unless `size` (and `slide`) are positive integers.
   */
  countWindowAll(size: number, slide?: number): AllWindowedStream<T, GlobalWindow> {
    const windowed = this.windowAll(GlobalWindows.create() as WindowAssigner<T, GlobalWindow>);
    return slide === undefined
      ? windowed.trigger(PurgingTrigger.of(CountTrigger.of(size)))
      : windowed.evictor(CountEvictor.of(size)).trigger(CountTrigger.of(slide));
  }

  /**
   * Starts a window join with `other` (Flink's `DataStream.join`): continue
   * with `where(k1).equalTo(k2).window(assigner).apply(joinFn)`; see
   * `runtime/api/joined_streams.ts`. Every pair of elements of one key and
   * one window is joined (inner join).
   */
  join<T2>(other: DataStream<T2>): JoinedStreams<T, T2> {
    return new JoinedStreams<T, T2>(this, other);
  }

  /**
   * Starts a window coGroup with `other` (Flink's `DataStream.coGroup`):
   * continue with `where(k1).equalTo(k2).window(assigner).apply(coGroupFn)`;
   * see `runtime/api/co_grouped_streams.ts`. The function gets each key's
   * window elements of both inputs, either side possibly empty.
   */
  coGroup<T2>(other: DataStream<T2>): CoGroupedStreams<T, T2> {
    return new CoGroupedStreams<T, T2>(this, other);
  }

  /** Prints each record on stdout (see {@linkcode PrintSink}). */
  print(options: PrintSinkOptions<T> = {}): DataStreamSink<T> {
    const sink = this.sinkTo(new PrintSink<T>(options));
    sink.name("Print to Std. Out");
    return sink;
  }
}

/** A stream produced by one operator, whose properties can still be set. */
export class SingleOutputStreamOperator<T> extends DataStream<T> {
  /** The operator's graph node. */
  readonly node: StreamNode;

  /** @internal */
  constructor(owner: StreamGraphOwner, node: StreamNode) {
    super(owner, [{
      node: node.id,
      sideOutput: undefined,
      partitioner: undefined,
      keySelector: undefined,
    }]);
    this.node = node;
  }

  /**
   * Sets the operator's stable id, which identifies its state in checkpoints
   * and savepoints. Set it on every stateful operator.
   * @throws {TypeError} when `uid` is empty.
   */
  uid(uid: string): this {
    this.node.uid = checkedUid(uid);
    return this;
  }

  /** Sets the display name used in logs and metrics. */
  name(name: string): this {
    this.node.name = name;
    return this;
  }

  /**
   * Sets the number of parallel subtasks.
   * @throws {RangeError} unless `parallelism` is a positive integer.
   */
  setParallelism(parallelism: number): this {
    this.node.parallelism = checkedParallelism(parallelism);
    return this;
  }

  /**
   * Sets the number of key groups, the upper bound for rescaling.
   * @throws {RangeError} unless it is an integer in 1..32768.
   */
  setMaxParallelism(maxParallelism: number): this {
    this.node.maxParallelism = checkedMaxParallelism(maxParallelism);
    return this;
  }

  /** Keeps this operator out of any operator chain. */
  disableChaining(): this {
    this.node.chainable = false;
    return this;
  }

  /** The side output `tag` of this operator. */
  getSideOutput<X>(tag: OutputTag<X>): DataStream<X> {
    return new DataStream<X>(this.owner, [
      { node: this.node.id, sideOutput: tag.id, partitioner: undefined, keySelector: undefined },
    ]);
  }
}

/**
 * A stream partitioned by key. Operators applied to it have keyed state and,
 * through `process`, per-key timers.
 */
export class KeyedStream<T, K extends Key> extends DataStream<T> {
  /**
   * Connects this keyed stream with `other`: with a `BroadcastStream`, the
   * keyed side of the broadcast state pattern (`KeyedBroadcastProcessFunction`);
   * with another `KeyedStream`, keyed connected streams; see
   * {@linkcode DataStream.connect}.
   */
  override connect<T2>(other: BroadcastStream<T2>): BroadcastConnectedStream<T, T2, K>;
  /** Connects with another stream; keyed when both are keyed (see above). */
  override connect<T2>(other: DataStream<T2>): ConnectedStreams<T, T2>;
  override connect<T2>(
    other: DataStream<T2> | BroadcastStream<T2>,
  ): ConnectedStreams<T, T2> | BroadcastConnectedStream<T, T2, K> {
    if (other instanceof BroadcastStream) {
      return new BroadcastConnectedStream<T, T2, K>(this.inputs, other, this.twoInputTransform());
    }
    return super.connect(other);
  }

  /**
   * Starts an interval join of this keyed stream (left) with `other`
   * (right), on event time (Flink's `KeyedStream.intervalJoin`): continue
   * with `between(lowerMs, upperMs)` and `process(ProcessJoinFunction)`;
   * see `runtime/api/interval_join.ts`. Both streams must be keyed by keys
   * of one kind; pairs of equal keys within the bounds join.
   */
  intervalJoin<T2>(other: KeyedStream<T2, K>): IntervalJoin<T, T2> {
    return new IntervalJoin<T, T2>({
      left: this.inputs,
      right: other.inputs,
      transform: this.twoInputTransform(),
    });
  }

  /** Applies a {@linkcode KeyedProcessFunction}: keyed state, timers, side outputs. */
  override process<O>(
    fn: KeyedProcessFunction<K, T, O> | ProcessFunction<T, O>,
  ): SingleOutputStreamOperator<O> {
    return this.transform<O>({
      kind: "keyedProcess",
      fn: fn as unknown as KeyedProcessFunction<Key, unknown, unknown>,
    }, "KeyedProcess");
  }

  /** Emits, for every record, the running reduction of its key. */
  reduce(fn: ReduceFunction<T>): SingleOutputStreamOperator<T> {
    return this.transform<T>({ kind: "reduce", fn: fn as ReduceFunction<unknown> }, "Reduce");
  }

  /**
   * Cuts each key's records into windows (Flink's `KeyedStream.window`);
   * configure them and apply a window function on the result.
   *
   * @param assigner e.g. `TumblingEventTimeWindows.of(1_000)`,
   *   `SlidingEventTimeWindows.of(10_000, 2_000)`,
   *   `EventTimeSessionWindows.withGap(5_000)` or `GlobalWindows.create()`.
   */
  window<W extends Window>(assigner: WindowAssigner<T, W>): WindowedStream<T, K, W> {
    return new WindowedStream<T, K, W>(
      assigner,
      <O>(spec: OperatorSpec, name: string) => this.transform<O>(spec, name),
    );
  }

  /**
   * Count windows per key (Flink's `countWindow`): with only `size`,
   * tumbling windows of `size` records (global window, purging
   * `CountTrigger`); with `slide`, windows of the key's last `size`
   * records every `slide` records (`CountTrigger(slide)` and
   * `CountEvictor(size)`).
   * @throws {RangeError} unless `size` (and `slide`) are positive integers.
   */
  countWindow(size: number, slide?: number): WindowedStream<T, K, GlobalWindow> {
    const windowed = this.window(GlobalWindows.create() as WindowAssigner<T, GlobalWindow>);
    return slide === undefined
      ? windowed.trigger(PurgingTrigger.of(CountTrigger.of(size)))
      : windowed.evictor(CountEvictor.of(size)).trigger(CountTrigger.of(slide));
  }

  /**
   * Emits, for every record, a copy of it whose `field` holds the running sum
   * of `field` for its key (Flink's `sum(field)`).
   * @param field a property name (objects) or an index (arrays/tuples).
   */
  sum(
    field: T extends readonly unknown[] ? number : keyof T & string,
  ): SingleOutputStreamOperator<T> {
    const add = (acc: T, value: T): T => {
      const copy = (Array.isArray(acc) ? [...acc] : { ...acc }) as Record<string | number, unknown>;
      const f = field as string | number;
      copy[f] = (acc as Record<string | number, number>)[f]! +
        (value as Record<string | number, number>)[f]!;
      return copy as T;
    };
    return this.reduce(add).name(`Sum(${String(field)})`);
  }

  /**
   * Emits, for every record, `getResult` of its key's running accumulator:
   * the record is folded in with `add` (the accumulator is created with
   * `createAccumulator` on the key's first record), like `reduce` with an
   * accumulator of its own type. The accumulator is keyed state, so it is
   * checkpointed and restored (also at another parallelism); it must be
   * plain, MessagePack-encodable data. `add` may change it in place.
   *
   * Flink's `KeyedStream` has no `aggregate`; this is its `reduce` with an
   * `AggregateFunction` (the function of windows' `aggregate`) in place of
   * the reduce function. `merge` is not called here.
   *
   * @example
   * ```ts
   * import { StreamExecutionEnvironment } from "./environment.ts";
   * const env = StreamExecutionEnvironment.getExecutionEnvironment();
   * env.fromCollection([{ id: "sensor_1", t: 35.8 }, { id: "sensor_1", t: 32.4 }])
   *   .keyBy((r) => r.id)
   *   .aggregate({
   *     createAccumulator: () => ({ sum: 0, count: 0 }),
   *     add: (r, acc) => ({ sum: acc.sum + r.t, count: acc.count + 1 }),
   *     getResult: (acc) => acc.sum / acc.count,
   *     merge: (a, b) => ({ sum: a.sum + b.sum, count: a.count + b.count }),
   *   })
   *   .uid("average-temperature"); // emits 35.8, then 34.1
   * ```
   * @throws {TypeError} when `fn` lacks one of the four methods.
   */
  aggregate<ACC, OUT>(fn: AggregateFunction<T, ACC, OUT>): SingleOutputStreamOperator<OUT> {
    new AggregatingStateDescriptor("aggregate", fn); // checks the four methods now, not at run time
    return this.transform<OUT>(
      { kind: "aggregate", fn: fn as AggregateFunction<unknown, unknown, unknown> },
      "Aggregate",
    );
  }

  /**
   * Emits, for every record, the key's **first** record with `field`
   * replaced by the running minimum of `field` (Flink's `min(field)`: the
   * other fields are not those of the minimal record; use
   * {@linkcode KeyedStream.minBy} for that). The field must hold numbers,
   * strings, bigints or booleans, of one type; see
   * `runtime/api/comparable_aggregator.ts` for the comparison.
   *
   * @example
   * ```ts
   * import { StreamExecutionEnvironment } from "./environment.ts";
   * const env = StreamExecutionEnvironment.getExecutionEnvironment();
   * env.fromCollection([{ id: "s1", seq: 0, t: 35.8 }, { id: "s1", seq: 1, t: 32.4 }])
   *   .keyBy((r) => r.id)
   *   .min("t"); // emits { id: "s1", seq: 0, t: 35.8 }, then { id: "s1", seq: 0, t: 32.4 }
   * ```
   * @param field a property name (objects) or an index (arrays/tuples).
   * @throws {TypeError} when `field` is neither; the job fails with a
   *   `TypeError` naming the record when a record's field is missing, not
   *   comparable or of another type.
   */
  min(field: AggregationField<T>): SingleOutputStreamOperator<T> {
    return this.reduce(comparableAggregator<T>("min", field)).name(`Min(${String(field)})`);
  }

  /**
   * Emits, for every record, the key's **first** record with `field`
   * replaced by the running maximum of `field` (Flink's `max(field)`; see
   * {@linkcode KeyedStream.min} for the details).
   *
   * @example
   * ```ts
   * import { StreamExecutionEnvironment } from "./environment.ts";
   * const env = StreamExecutionEnvironment.getExecutionEnvironment();
   * env.fromCollection([["s1", 0, 32.4], ["s1", 1, 35.8]] as [string, number, number][])
   *   .keyBy((r) => r[0])
   *   .max(2); // emits ["s1", 0, 32.4], then ["s1", 0, 35.8]
   * ```
   * @param field a property name (objects) or an index (arrays/tuples).
   * @throws {TypeError} as {@linkcode KeyedStream.min}.
   */
  max(field: AggregationField<T>): SingleOutputStreamOperator<T> {
    return this.reduce(comparableAggregator<T>("max", field)).name(`Max(${String(field)})`);
  }

  /**
   * Emits, for every record, the key's record with the smallest `field` so
   * far, whole; on a tie the earlier record stays (Flink's `minBy(field)`
   * with its default `first = true`).
   *
   * @example
   * ```ts
   * import { StreamExecutionEnvironment } from "./environment.ts";
   * const env = StreamExecutionEnvironment.getExecutionEnvironment();
   * env.fromCollection([{ id: "s1", seq: 0, t: 35.8 }, { id: "s1", seq: 1, t: 32.4 }])
   *   .keyBy((r) => r.id)
   *   .minBy("t"); // emits { id: "s1", seq: 0, t: 35.8 }, then { id: "s1", seq: 1, t: 32.4 }
   * ```
   * @param field a property name (objects) or an index (arrays/tuples).
   * @throws {TypeError} as {@linkcode KeyedStream.min}.
   */
  minBy(field: AggregationField<T>): SingleOutputStreamOperator<T> {
    return this.reduce(comparableAggregator<T>("minBy", field)).name(`MinBy(${String(field)})`);
  }

  /**
   * Emits, for every record, the key's record with the largest `field` so
   * far, whole; on a tie the earlier record stays (Flink's `maxBy(field)`
   * with its default `first = true`).
   *
   * @example
   * ```ts
   * import { StreamExecutionEnvironment } from "./environment.ts";
   * const env = StreamExecutionEnvironment.getExecutionEnvironment();
   * env.fromCollection([{ id: "s1", seq: 0, t: 35.8 }, { id: "s1", seq: 1, t: 35.8 }])
   *   .keyBy((r) => r.id)
   *   .maxBy("t"); // emits the record with seq 0 twice: the tie keeps the earlier one
   * ```
   * @param field a property name (objects) or an index (arrays/tuples).
   * @throws {TypeError} as {@linkcode KeyedStream.min}.
   */
  maxBy(field: AggregationField<T>): SingleOutputStreamOperator<T> {
    return this.reduce(comparableAggregator<T>("maxBy", field)).name(`MaxBy(${String(field)})`);
  }
}
