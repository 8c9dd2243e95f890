/**
 * The operators of `ConnectedStreams`: co-map, co-flatMap and co-process
 * (Flink's `CoStreamMap`, `CoStreamFlatMap`, `CoProcessOperator` and
 * `KeyedCoProcessOperator`). Each calls the user function's method for the
 * record's input. On keyed inputs (`connect(...).keyBy(k1, k2)`) the
 * current key is set first, from the input's own key selector, so keyed
 * state and timers are shared by both inputs; `onTimer` runs under the
 * timer's key.
 *
 * @module
 */

import { functionMetrics } from "./function_metrics.ts";
import type {
  CoFlatMapFunction,
  Collector,
  CoMapFunction,
  CoProcessFunction,
  KeyedCoProcessFunction,
  OnTimerContext,
} from "../../api/functions.ts";
import type { Key } from "../../state/key_group.ts";
import { TwoInputUdfOperator } from "./two_input_operator.ts";

/** Calls `map1`/`map2` per record (Flink's `CoStreamMap`). */
export class CoMapOperator extends TwoInputUdfOperator<CoMapFunction<unknown, unknown, unknown>> {
  processElement1(value: unknown, timestamp: number | undefined, keyGroup?: number, key?: unknown) {
    if (this.keySelector) this.setKeyOf(value, keyGroup, key);
    this.output.collect(this.fn.map1(value), timestamp);
  }
  processElement2(value: unknown, timestamp: number | undefined, keyGroup?: number, key?: unknown) {
    if (this.keySelector2) this.setKeyOf2(value, keyGroup, key);
    this.output.collect(this.fn.map2(value), timestamp);
  }
}

/** Calls `flatMap1`/`flatMap2` per record (Flink's `CoStreamFlatMap`). */
export class CoFlatMapOperator
  extends TwoInputUdfOperator<CoFlatMapFunction<unknown, unknown, unknown>> {
  #out: Collector<unknown> = this.collector();
  processElement1(value: unknown, timestamp: number | undefined, keyGroup?: number, key?: unknown) {
    if (this.keySelector) this.setKeyOf(value, keyGroup, key);
    this.currentTimestamp = timestamp;
    this.fn.flatMap1(value, this.#out);
  }
  processElement2(value: unknown, timestamp: number | undefined, keyGroup?: number, key?: unknown) {
    if (this.keySelector2) this.setKeyOf2(value, keyGroup, key);
    this.currentTimestamp = timestamp;
    this.fn.flatMap2(value, this.#out);
  }
}

/**
 * Calls a `CoProcessFunction` or `KeyedCoProcessFunction` per record and
 * per timer (Flink's `CoProcessOperator` and `KeyedCoProcessOperator`):
 * keyed when the operator has key selectors, and only then with timers.
 */
export class CoProcessOperator extends TwoInputUdfOperator<
  | CoProcessFunction<unknown, unknown, unknown>
  | KeyedCoProcessFunction<Key, unknown, unknown, unknown>
> {
  #domain: "event-time" | "processing-time" = "event-time";
  #ctx: OnTimerContext<Key> = this.processContext(() => this.#domain);
  #out = this.collector();
  /** The function's own counters (`function_metrics.ts`); none for most functions. */
  metrics(): Readonly<Record<string, number>> {
    return functionMetrics(this.fn)?.() ?? {};
  }
  processElement1(value: unknown, timestamp: number | undefined, keyGroup?: number, key?: unknown) {
    if (this.keySelector) this.setKeyOf(value, keyGroup, key);
    this.currentTimestamp = timestamp;
    this.fn.processElement1(value, this.#ctx as OnTimerContext<never>, this.#out);
  }
  processElement2(value: unknown, timestamp: number | undefined, keyGroup?: number, key?: unknown) {
    if (this.keySelector2) this.setKeyOf2(value, keyGroup, key);
    this.currentTimestamp = timestamp;
    this.fn.processElement2(value, this.#ctx as OnTimerContext<never>, this.#out);
  }
  protected override fireTimer(
    key: Key,
    timestamp: number,
    domain: "event-time" | "processing-time",
  ): void {
    if (!this.fn.onTimer) return;
    this.setKey(key);
    this.#domain = domain;
    this.currentTimestamp = domain === "event-time" ? timestamp : undefined;
    this.fn.onTimer(timestamp, this.#ctx as OnTimerContext<never>, this.#out);
  }
}
