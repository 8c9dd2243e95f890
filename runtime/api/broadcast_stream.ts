/**
 * The broadcast state pattern's streams (Flink's `BroadcastStream` and
 * `BroadcastConnectedStream`): `control.broadcast(descriptor, ...)` sends
 * every control record to every subtask of the operator it is connected to
 * and declares the broadcast states that operator keeps;
 * `data.connect(broadcastStream).process(fn)` adds that operator, a
 * `KeyedBroadcastProcessFunction` when `data` is a `KeyedStream`, a
 * `BroadcastProcessFunction` otherwise (see `broadcast_functions.ts`).
 *
 * @example
 * ```ts
 * import "../cluster/default_executor.ts"; // registers the executor; mod.ts does this
 * import assert from "node:assert/strict";
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { type ListState, ListStateDescriptor, MapStateDescriptor } from "./state.ts";
 * import type { Collector, RuntimeContext } from "./functions.ts";
 * import type {
 *   KeyedBroadcastContext,
 *   KeyedBroadcastProcessFunction,
 *   KeyedBroadcastReadOnlyContext,
 * } from "./broadcast_functions.ts";
 *
 * // Per-sensor thresholds, broadcast. A reading that arrives before its sensor's threshold
 * // waits in keyed state; the threshold then visits the waiting readings with
 * // applyToKeyedState. Each reading is judged once, whichever input comes first.
 * type Reading = { id: string; t: number };
 * const thresholds = new MapStateDescriptor<string, number>("thresholds");
 * const waitingDescriptor = new ListStateDescriptor<Reading>("waiting");
 * const judge = (r: Reading, limit: number, out: Collector<string>) => {
 *   if (r.t > limit) out.collect(`${r.id} ${r.t} > ${limit}`);
 * };
 * class Alerts implements KeyedBroadcastProcessFunction<string, Reading, [string, number], string> {
 *   private waiting!: ListState<Reading>;
 *   open(ctx: RuntimeContext): void {
 *     this.waiting = ctx.getListState(waitingDescriptor);
 *   }
 *   processElement(r: Reading, ctx: KeyedBroadcastReadOnlyContext<string>, out: Collector<string>): void {
 *     const limit = ctx.getBroadcastState(thresholds).get(r.id);
 *     if (limit === undefined) this.waiting.add(r);
 *     else judge(r, limit, out);
 *   }
 *   processBroadcastElement([id, limit]: [string, number], ctx: KeyedBroadcastContext<string>, out: Collector<string>): void {
 *     ctx.getBroadcastState(thresholds).put(id, limit);
 *     ctx.applyToKeyedState(waitingDescriptor, (key, waiting) => {
 *       if (key !== id) return;
 *       for (const r of waiting.get()) judge(r, limit, out);
 *       waiting.clear();
 *     });
 *   }
 * }
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const rules = env.fromCollection<[string, number]>([["sensor_1", 30], ["sensor_2", 20]]).broadcast(thresholds);
 * const alerts: string[] = [];
 * env.fromCollection<Reading>([{ id: "sensor_1", t: 35.8 }, { id: "sensor_2", t: 15.4 }, { id: "sensor_2", t: 21.5 }])
 *   .keyBy((r) => r.id)
 *   .connect(rules)
 *   .process(new Alerts())
 *   .uid("alerts")
 *   .sinkTo({ kind: "simple", invoke: (line) => { alerts.push(line); } });
 * await env.execute("broadcast stream");
 * assert.deepEqual(alerts.sort(), ["sensor_1 35.8 > 30", "sensor_2 21.5 > 20"]);
 * ```
 *
 * @module
 */

import type {
  BroadcastProcessFunction,
  KeyedBroadcastProcessFunction,
} from "./broadcast_functions.ts";
import type { MapStateDescriptor } from "./state.ts";
import type { SingleOutputStreamOperator, StreamInput } from "./datastream.ts";
import { checkMethods, keySelectorOf, type TwoInputTransform } from "./connected_streams.ts";
import type { Key } from "../state/key_group.ts";

/**
 * Checks the descriptors given to `broadcast(...)`.
 * @throws {TypeError} for none, one that is not a `MapStateDescriptor`, or two with one name.
 */
export function checkBroadcastDescriptors(
  descriptors: readonly MapStateDescriptor<unknown, unknown>[],
): void {
  if (descriptors.length === 0) {
    throw new TypeError(
      `broadcast(...descriptors) of the broadcast state pattern needs at least one MapStateDescriptor`,
    );
  }
  const names = new Set<string>();
  for (const [i, d] of descriptors.entries()) {
    if (typeof d !== "object" || d === null || (d as { kind?: unknown }).kind !== "map") {
      throw new TypeError(
        `broadcast(...): descriptor ${i} must be a MapStateDescriptor: current kind is ${
          JSON.stringify((d as { kind?: unknown } | null)?.kind)
        }`,
      );
    }
    if (names.has(d.name)) {
      throw new TypeError(`broadcast(...): two descriptors are named '${d.name}'`);
    }
    names.add(d.name);
  }
}

/**
 * A stream broadcast to every subtask of the operator it is connected to,
 * with the broadcast states that operator keeps (Flink's `BroadcastStream`).
 * Made by `DataStream.broadcast(descriptor, ...)`; only `connect` consumes it.
 */
export class BroadcastStream<T> {
  /** Where its records come from, each partitioned `broadcast`. */
  readonly inputs: readonly StreamInput[];
  /** The broadcast states declared. */
  readonly descriptors: readonly MapStateDescriptor<unknown, unknown>[];
  declare private readonly _type: T;

  /** @internal Use `DataStream.broadcast(descriptor, ...)`. */
  constructor(
    inputs: readonly StreamInput[],
    descriptors: readonly MapStateDescriptor<unknown, unknown>[],
  ) {
    checkBroadcastDescriptors(descriptors);
    this.inputs = inputs.map((i) => ({
      ...i,
      partitioner: "broadcast" as const,
      keySelector: undefined,
    }));
    this.descriptors = descriptors;
  }
}

/**
 * A data stream connected with a {@linkcode BroadcastStream} (Flink's
 * `BroadcastConnectedStream`); `K` is the data stream's key type, `never`
 * when it is not keyed.
 */
export class BroadcastConnectedStream<IN1, IN2, K extends Key = never> {
  /** Where the data stream's records come from. */
  readonly inputs1: readonly StreamInput[];
  /** The broadcast stream. */
  readonly broadcastStream: BroadcastStream<IN2>;
  readonly #transform: TwoInputTransform;

  /** @internal Use `DataStream.connect(broadcastStream)`. */
  constructor(
    inputs1: readonly StreamInput[],
    broadcastStream: BroadcastStream<IN2>,
    transform: TwoInputTransform,
  ) {
    this.inputs1 = inputs1;
    this.broadcastStream = broadcastStream;
    this.#transform = transform;
  }

  /**
   * Adds the broadcast operator: a `KeyedBroadcastProcessFunction` on a
   * keyed data stream (keyed state, timers, `applyToKeyedState`), a
   * `BroadcastProcessFunction` otherwise. Set a `uid`: broadcast state is
   * checkpointed under it.
   * @throws {TypeError} when `fn` lacks `processElement` or
   *   `processBroadcastElement`, or has `onTimer` on a data stream that is
   *   not keyed.
   */
  process<O>(
    fn: [K] extends [never] ? BroadcastProcessFunction<IN1, IN2, O>
      : KeyedBroadcastProcessFunction<K, IN1, IN2, O>,
  ): SingleOutputStreamOperator<O> {
    checkMethods(fn, ["processElement", "processBroadcastElement"], "broadcast process function");
    const keyed = keySelectorOf(this.inputs1, "The data stream of a broadcast connection") !==
      undefined;
    const common = {
      inputs1: this.inputs1,
      inputs2: this.broadcastStream.inputs,
    };
    const descriptors = this.broadcastStream.descriptors;
    if (keyed) {
      return this.#transform<O>({
        ...common,
        name: "Co-Process-Broadcast-Keyed",
        spec: {
          kind: "keyedBroadcastProcess",
          fn: fn as unknown as KeyedBroadcastProcessFunction<Key, unknown, unknown, unknown>,
          descriptors,
        },
      });
    }
    if (typeof (fn as { onTimer?: unknown }).onTimer === "function") {
      throw new TypeError(
        `A broadcast process function with onTimer needs a keyed data stream: timers are per key; keyBy() it before connect()`,
      );
    }
    return this.#transform<O>({
      ...common,
      name: "Co-Process-Broadcast",
      spec: {
        kind: "broadcastProcess",
        fn: fn as unknown as BroadcastProcessFunction<unknown, unknown, unknown>,
        descriptors,
      },
    });
  }
}
