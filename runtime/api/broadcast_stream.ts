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
 * import { StreamExecutionEnvironment } from "./environment.ts";
 * import { MapStateDescriptor } from "./state.ts";
 * const env = StreamExecutionEnvironment.getExecutionEnvironment();
 * const thresholds = new MapStateDescriptor<string, number>("thresholds");
 * const rules = env.fromCollection([["s1", 30] as [string, number]]).broadcast(thresholds);
 * env.fromCollection([{ id: "s1", t: 31 }])
 *   .keyBy((r) => r.id)
 *   .connect(rules)
 *   .process({
 *     processElement(r, ctx, out) {
 *       const limit = ctx.getBroadcastState(thresholds).get(r.id);
 *       if (limit !== undefined && r.t > limit) out.collect(`${r.id} above ${limit}`);
 *     },
 *     processBroadcastElement([id, limit], ctx) {
 *       ctx.getBroadcastState(thresholds).put(id, limit);
 *     },
 *   })
 *   .uid("alerts");
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
