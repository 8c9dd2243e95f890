/**
 * Two streams connected into one two-input operator (Flink's
 * `ConnectedStreams`): `a.connect(b)` gives a {@linkcode ConnectedStreams},
 * whose `map`, `flatMap` and `process` add an operator that sees both
 * inputs, each through its own method (`map1`/`map2`,
 * `processElement1`/`processElement2`). The two inputs may have different
 * types and different upstream parallelism.
 *
 * `keyBy(k1, k2)` partitions both inputs by key: records with equal keys
 * (by `k1` on input 1, `k2` on input 2) reach the same subtask, and the
 * operator's keyed state and timers are shared by both inputs
 * (`KeyedCoProcessFunction`). Connecting two `KeyedStream`s does the same.
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 *
 * // Readings in Celsius and in Fahrenheit, as one stream of Celsius lines.
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const celsius = env.fromCollection([{ id: "sensor_1", c: 35 }]);
 * const fahrenheit = env.fromCollection([{ sensor: "sensor_2", f: 59 }]);
 * const lines: string[] = [];
 * celsius.connect(fahrenheit)
 *   .map({
 *     map1: (r) => `${r.id} ${r.c} C`,
 *     map2: (r) => `${r.sensor} ${(r.f - 32) * 5 / 9} C`,
 *   })
 *   .sinkTo({ kind: "simple", invoke: (line) => { lines.push(line); } });
 * await env.execute("connected streams");
 * // The order between the two inputs is not defined: compare sorted.
 * assert.deepEqual(lines.sort(), ["sensor_1 35 C", "sensor_2 15 C"]);
 * ```
 *
 * ## Guarantees
 *
 * The operator's barriers are aligned over the channels of both inputs
 * (exactly-once), and its watermark is the minimum over both inputs, idle
 * channels excluded. The order between records of the two inputs is not
 * defined; within one input channel it is kept.
 *
 * @module
 */

import type {
  CoFlatMapFunction,
  CoMapFunction,
  CoProcessFunction,
  KeyedCoProcessFunction,
} from "./functions.ts";
import type {
  KeySelector,
  StreamGraph,
  StreamNode,
  TwoInputOperatorSpec,
} from "../graph/stream_graph.ts";
import type { Key } from "../state/key_group.ts";
import type { SingleOutputStreamOperator, StreamInput } from "./datastream.ts";

/** What a two-input operator is made of: its spec, name and both inputs' streams. */
export interface TwoInputRequest {
  /** What the operator does. */
  readonly spec: TwoInputOperatorSpec;
  /** Its default display name. */
  readonly name: string;
  /** Where input 1's records come from. */
  readonly inputs1: readonly StreamInput[];
  /** Where input 2's records come from. */
  readonly inputs2: readonly StreamInput[];
}

/** Adds a two-input operator to the graph and wraps it; given by `DataStream.connect`. */
export type TwoInputTransform = <O>(request: TwoInputRequest) => SingleOutputStreamOperator<O>;

/**
 * The one key selector every input of `inputs` is hash-partitioned by, or
 * `undefined` when none is keyed.
 * @throws {TypeError} when the inputs mix keys (or keyed and not keyed).
 */
export function keySelectorOf(
  inputs: readonly StreamInput[],
  what: string,
): KeySelector | undefined {
  const selectors = new Set(
    inputs.map((i) => i.partitioner === "hash" ? i.keySelector : undefined),
  );
  if (selectors.size > 1) {
    throw new TypeError(
      `${what} is partitioned by different key selectors (or keyed and not keyed): ` +
        `key it after the union, with one key selector`,
    );
  }
  return [...selectors][0];
}

/**
 * Adds the node of a two-input operator and its input edges (numbered 1 and
 * 2) to `graph`; sets its key selectors from the inputs' partitioning.
 * @throws {TypeError} as {@linkcode keySelectorOf}.
 */
export function addTwoInputNode(graph: StreamGraph, request: TwoInputRequest): StreamNode {
  const k1 = keySelectorOf(request.inputs1, `Input 1 of '${request.name}'`);
  const k2 = keySelectorOf(request.inputs2, `Input 2 of '${request.name}'`);
  const node = graph.addNode(request.spec, request.name);
  node.keySelector = k1;
  node.keySelector2 = k2;
  for (const [typeNumber, inputs] of [[1, request.inputs1], [2, request.inputs2]] as const) {
    for (const input of inputs) {
      graph.addEdge({
        source: input.node,
        target: node.id,
        partitioner: input.partitioner,
        keySelector: input.keySelector,
        sideOutput: input.sideOutput,
        typeNumber,
      });
    }
  }
  return node;
}

/**
 * Two streams connected for one two-input operator (see the module docs).
 * Made by `DataStream.connect`.
 */
export class ConnectedStreams<IN1, IN2> {
  /** Where input 1's records come from. */
  readonly inputs1: readonly StreamInput[];
  /** Where input 2's records come from. */
  readonly inputs2: readonly StreamInput[];
  /** Adds the operator (given by the stream API). */
  protected readonly transform: TwoInputTransform;

  /** @internal Use `DataStream.connect`. */
  constructor(
    inputs1: readonly StreamInput[],
    inputs2: readonly StreamInput[],
    transform: TwoInputTransform,
  ) {
    this.inputs1 = inputs1;
    this.inputs2 = inputs2;
    this.transform = transform;
  }

  /** Whether both inputs are keyed (each by one key selector). */
  get isKeyed(): boolean {
    return keySelectorOf(this.inputs1, "Input 1") !== undefined &&
      keySelectorOf(this.inputs2, "Input 2") !== undefined;
  }

  /**
   * Partitions both inputs by key (Flink's `ConnectedStreams.keyBy`): input
   * 1 by `key1`, input 2 by `key2`; both must return keys of one key space
   * (equal keys meet on one subtask).
   */
  keyBy<K extends Key>(
    key1: (value: IN1) => K,
    key2: (value: IN2) => K,
  ): KeyedConnectedStreams<IN1, IN2, K> {
    const hash = (inputs: readonly StreamInput[], keySelector: KeySelector) =>
      inputs.map((i) => ({ ...i, partitioner: "hash" as const, keySelector }));
    return new KeyedConnectedStreams<IN1, IN2, K>(
      hash(this.inputs1, key1 as KeySelector),
      hash(this.inputs2, key2 as KeySelector),
      this.transform,
    );
  }

  /** Checks that both inputs are keyed or neither. @throws {TypeError} otherwise. */
  #checkKeyed(name: string): void {
    const k1 = keySelectorOf(this.inputs1, `Input 1 of '${name}'`);
    const k2 = keySelectorOf(this.inputs2, `Input 2 of '${name}'`);
    if ((k1 === undefined) !== (k2 === undefined)) {
      throw new TypeError(
        `'${name}': input ${k1 === undefined ? 2 : 1} is keyed and input ${
          k1 === undefined ? 1 : 2
        } is not; key both (connect(...).keyBy(k1, k2)) or neither`,
      );
    }
  }

  #add<O>(spec: TwoInputOperatorSpec, name: string): SingleOutputStreamOperator<O> {
    this.#checkKeyed(name);
    return this.transform<O>({ spec, name, inputs1: this.inputs1, inputs2: this.inputs2 });
  }

  /**
   * Applies a {@linkcode CoMapFunction}: one record out per record in, by
   * `map1` for input 1 and `map2` for input 2.
   * @throws {TypeError} when `fn` lacks `map1` or `map2`, or one input is keyed and the other not.
   */
  map<O>(fn: CoMapFunction<IN1, IN2, O>): SingleOutputStreamOperator<O> {
    checkMethods(fn, ["map1", "map2"], "CoMapFunction");
    return this.#add<O>(
      { kind: "coMap", fn: fn as CoMapFunction<unknown, unknown, unknown> },
      "Co-Map",
    );
  }

  /**
   * Applies a {@linkcode CoFlatMapFunction}: zero or more records out per
   * record in.
   * @throws {TypeError} when `fn` lacks `flatMap1` or `flatMap2`, or one input is keyed and the other not.
   */
  flatMap<O>(fn: CoFlatMapFunction<IN1, IN2, O>): SingleOutputStreamOperator<O> {
    checkMethods(fn, ["flatMap1", "flatMap2"], "CoFlatMapFunction");
    return this.#add<O>(
      { kind: "coFlatMap", fn: fn as CoFlatMapFunction<unknown, unknown, unknown> },
      "Co-Flat Map",
    );
  }

  /**
   * Applies a {@linkcode CoProcessFunction} (side outputs through
   * `ctx.output`; timers only when both inputs are keyed). On keyed inputs
   * this is the keyed co-process operator, as
   * {@linkcode KeyedConnectedStreams.process}.
   * @throws {TypeError} when `fn` lacks `processElement1` or
   *   `processElement2`, has `onTimer` on inputs that are not keyed, or one
   *   input is keyed and the other not.
   */
  process<O>(fn: CoProcessFunction<IN1, IN2, O>): SingleOutputStreamOperator<O> {
    checkMethods(fn, ["processElement1", "processElement2"], "CoProcessFunction");
    if (this.isKeyed) {
      return this.#add<O>({
        kind: "keyedCoProcess",
        fn: fn as unknown as KeyedCoProcessFunction<Key, unknown, unknown, unknown>,
      }, "KeyedCoProcess");
    }
    if (typeof (fn as { onTimer?: unknown }).onTimer === "function") {
      throw new TypeError(
        `A CoProcessFunction with onTimer needs keyed inputs: timers are per key; use connect(...).keyBy(k1, k2)`,
      );
    }
    return this.#add<O>(
      { kind: "coProcess", fn: fn as CoProcessFunction<unknown, unknown, unknown> },
      "Co-Process",
    );
  }
}

/**
 * Connected streams whose inputs are both keyed (Flink's keyed
 * `ConnectedStreams`), made by `ConnectedStreams.keyBy(k1, k2)`.
 */
export class KeyedConnectedStreams<IN1, IN2, K extends Key> extends ConnectedStreams<IN1, IN2> {
  /**
   * Applies a {@linkcode KeyedCoProcessFunction}: both inputs share the
   * key's keyed state and timers; `ctx.getCurrentKey()` gives the key in
   * `processElement1`, `processElement2` and `onTimer`. Set a `uid`: the
   * operator is stateful.
   * @throws {TypeError} when `fn` lacks `processElement1` or `processElement2`.
   */
  override process<O>(fn: KeyedCoProcessFunction<K, IN1, IN2, O>): SingleOutputStreamOperator<O> {
    return super.process(fn as CoProcessFunction<IN1, IN2, O>);
  }
}

/**
 * Checks that `fn` is an object with the methods `names`.
 * @throws {TypeError} naming the first missing one.
 */
export function checkMethods(fn: unknown, names: readonly string[], kind: string): void {
  for (const name of names) {
    if (
      typeof fn !== "object" || fn === null ||
      typeof (fn as Record<string, unknown>)[name] !== "function"
    ) {
      throw new TypeError(
        `A ${kind} needs a method '${name}': current value is ${
          typeof fn === "object" && fn !== null
            ? `an object with [${Object.keys(fn).join(", ")}]`
            : typeof fn
        }`,
      );
    }
  }
}
