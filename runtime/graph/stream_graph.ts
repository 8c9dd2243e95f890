/**
 * The StreamGraph: the logical dataflow the DataStream API builds, one node
 * per operator and one edge per connection, before chaining (Flink's
 * `StreamGraph`). {@linkcode buildJobGraph} turns it into the JobGraph that
 * runs.
 *
 * ## Invariants
 *
 * - Node ids are dense, in creation order; a node's inputs are created
 *   before it, so creation order is a topological order.
 * - An edge's partitioner is `undefined` until the JobGraph is built, which
 *   resolves it to `forward` (equal parallelism) or `rebalance` (otherwise),
 *   as Flink does.
 *
 * @module
 */

import type {
  AggregateFunction,
  CoFlatMapFunction,
  CoMapFunction,
  CoProcessFunction,
  FilterFunction,
  FlatMapFunction,
  KeyedCoProcessFunction,
  KeyedProcessFunction,
  MapFunction,
  ProcessFunction,
  ReduceFunction,
} from "../api/functions.ts";
import type {
  BroadcastProcessFunction,
  KeyedBroadcastProcessFunction,
} from "../api/broadcast_functions.ts";
import type { MapStateDescriptor } from "../api/state.ts";
import type { Sink } from "../api/sink.ts";
import type { IntervalJoinOperatorSpec } from "../api/interval_join.ts";
import type { WindowOperatorSpec } from "../api/windowed_stream.ts";
import type { Source, SourceSplit } from "../api/source.ts";
import type { WatermarkStrategy } from "../time/watermark.ts";
import type { Key } from "../state/key_group.ts";

/** How records travel along an edge to the target's subtasks (Flink's partitioners). */
export type Partitioner = "forward" | "rebalance" | "hash" | "broadcast" | "rescale";

/** Extracts a record's key. */
export type KeySelector<T = unknown, K extends Key = Key> = (value: T) => K;

/** What an operator does; the task instantiates operators from it per subtask. */
export type OperatorSpec =
  | {
    readonly kind: "source";
    readonly source: Source<unknown, SourceSplit>;
    readonly watermarkStrategy: WatermarkStrategy<unknown>;
  }
  | { readonly kind: "map"; readonly fn: MapFunction<unknown, unknown> }
  | { readonly kind: "filter"; readonly fn: FilterFunction<unknown> }
  | { readonly kind: "flatMap"; readonly fn: FlatMapFunction<unknown, unknown> }
  | { readonly kind: "process"; readonly fn: ProcessFunction<unknown, unknown> }
  | {
    readonly kind: "keyedProcess";
    readonly fn: KeyedProcessFunction<Key, unknown, unknown>;
  }
  | { readonly kind: "reduce"; readonly fn: ReduceFunction<unknown> }
  | {
    /** `KeyedStream.aggregate(fn)`: each key's running `AggregateFunction` result. */
    readonly kind: "aggregate";
    readonly fn: AggregateFunction<unknown, unknown, unknown>;
  }
  | {
    /** `assignTimestampsAndWatermarks(strategy)`: `fn` is the strategy. */
    readonly kind: "timestampsAndWatermarks";
    readonly fn: WatermarkStrategy<unknown>;
  }
  | { readonly kind: "window"; readonly window: WindowOperatorSpec }
  | { readonly kind: "sink"; readonly sink: Sink<unknown> }
  | TwoInputOperatorSpec;

/**
 * What a two-input operator does (Flink's `TwoInputStreamOperator`): its
 * input edges carry `typeNumber` 1 or 2 and its records go to
 * `processElement1` or `processElement2`. `ConnectedStreams` makes the
 * `co*` kinds, `BroadcastConnectedStream` the `*broadcastProcess` kinds,
 * whose `descriptors` name the broadcast states (input 2 is broadcast).
 */
export type TwoInputOperatorSpec =
  | { readonly kind: "coMap"; readonly fn: CoMapFunction<unknown, unknown, unknown> }
  | { readonly kind: "coFlatMap"; readonly fn: CoFlatMapFunction<unknown, unknown, unknown> }
  | { readonly kind: "coProcess"; readonly fn: CoProcessFunction<unknown, unknown, unknown> }
  | {
    readonly kind: "keyedCoProcess";
    readonly fn: KeyedCoProcessFunction<Key, unknown, unknown, unknown>;
  }
  | {
    readonly kind: "broadcastProcess";
    readonly fn: BroadcastProcessFunction<unknown, unknown, unknown>;
    readonly descriptors: readonly MapStateDescriptor<unknown, unknown>[];
  }
  | {
    readonly kind: "keyedBroadcastProcess";
    readonly fn: KeyedBroadcastProcessFunction<Key, unknown, unknown, unknown>;
    readonly descriptors: readonly MapStateDescriptor<unknown, unknown>[];
  }
  | IntervalJoinOperatorSpec;

/** The kinds of {@linkcode TwoInputOperatorSpec}. */
export const TWO_INPUT_KINDS: ReadonlySet<OperatorSpec["kind"]> = new Set([
  "coMap",
  "coFlatMap",
  "coProcess",
  "keyedCoProcess",
  "broadcastProcess",
  "keyedBroadcastProcess",
  "intervalJoin",
]);

/** Whether `spec` is a two-input operator's. */
export function isTwoInput(spec: OperatorSpec): spec is TwoInputOperatorSpec {
  return TWO_INPUT_KINDS.has(spec.kind);
}

/** One operator of the logical dataflow. */
export interface StreamNode {
  /** Dense id, in creation order. */
  readonly id: number;
  /** What the operator does. */
  readonly spec: OperatorSpec;
  /** Display name. */
  name: string;
  /** Explicit uid set with `.uid()`, if any. */
  uid: string | undefined;
  /** Explicit parallelism, if set. */
  parallelism: number | undefined;
  /** Explicit max parallelism (number of key groups), if set. */
  maxParallelism: number | undefined;
  /**
   * For operators on a KeyedStream: the key selector of their input (of
   * input 1 for a two-input operator).
   */
  keySelector: KeySelector | undefined;
  /** For a keyed two-input operator: the key selector of input 2. */
  keySelector2: KeySelector | undefined;
  /** Whether this operator may be chained to its input (`disableChaining()` clears it). */
  chainable: boolean;
}

/** A connection between two nodes. */
export interface StreamEdge {
  /** Producing node. */
  readonly source: number;
  /** Consuming node. */
  readonly target: number;
  /** The partitioner; `undefined` = forward if parallelism is equal, else rebalance. */
  readonly partitioner: Partitioner | undefined;
  /** For `hash`: the key selector. */
  readonly keySelector: KeySelector | undefined;
  /** The side output this edge carries (an `OutputTag` id), or `undefined` for the main output. */
  readonly sideOutput: string | undefined;
  /**
   * Which input of the target the edge feeds (Flink's `StreamEdge`
   * `typeNumber`): 1 or 2 for a two-input operator, absent (0) for a
   * one-input operator.
   */
  readonly typeNumber?: 1 | 2 | undefined;
}

/** The logical dataflow of one job. */
export class StreamGraph {
  /** Nodes, indexed by id. */
  readonly nodes: StreamNode[] = [];
  /** Edges, in creation order. */
  readonly edges: StreamEdge[] = [];

  /** Adds a node and returns it. */
  addNode(spec: OperatorSpec, name: string): StreamNode {
    const node: StreamNode = {
      id: this.nodes.length,
      spec,
      name,
      uid: undefined,
      parallelism: undefined,
      maxParallelism: undefined,
      keySelector: undefined,
      keySelector2: undefined,
      chainable: true,
    };
    this.nodes.push(node);
    return node;
  }

  /** Adds an edge. */
  addEdge(edge: StreamEdge): void {
    this.edges.push(edge);
  }

  /** The node with `id`. @throws {RangeError} for an unknown id. */
  node(id: number): StreamNode {
    const node = this.nodes[id];
    if (!node) throw new RangeError(`No stream node with id ${id}`);
    return node;
  }
}
