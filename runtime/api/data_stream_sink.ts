/**
 * The handle of a sink in the StreamGraph (Flink's `DataStreamSink`), which
 * `DataStream.sinkTo` (`datastream.ts`) returns: the sink's node, whose uid, name,
 * parallelism and chaining can still be set.
 *
 * @module
 */

import type { StreamNode } from "../graph/stream_graph.ts";
import { checkedParallelism, checkedUid } from "./operator_settings.ts";

/** The handle of a sink, whose properties can still be set (made by `DataStream.sinkTo` (`datastream.ts`)). */
export class DataStreamSink<T> {
  /** The sink's graph node. */
  readonly node: StreamNode;
  declare private readonly _type: T;

  /** @internal */
  constructor(node: StreamNode) {
    this.node = node;
  }

  /**
   * Sets the sink's stable id (see `SingleOutputStreamOperator.uid`).
   * @throws {TypeError} when `uid` is empty.
   */
  uid(uid: string): this {
    this.node.uid = checkedUid(uid);
    return this;
  }

  /** Sets the display name. */
  name(name: string): this {
    this.node.name = name;
    return this;
  }

  /**
   * Sets the number of parallel sink subtasks.
   * @throws {RangeError} unless `parallelism` is a positive integer.
   */
  setParallelism(parallelism: number): this {
    this.node.parallelism = checkedParallelism(parallelism);
    return this;
  }

  /** Keeps the sink out of any operator chain. */
  disableChaining(): this {
    this.node.chainable = false;
    return this;
  }
}
