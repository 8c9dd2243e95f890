/**
 * The one-input transformation operators: map, filter, flatMap, process,
 * keyed process, reduce and aggregate. Each calls its user function per record; on a
 * keyed input the current key is set first (by `OneInputUdfOperator`), so
 * keyed state and timers work in all of them, as in Flink.
 *
 * @module
 */

import { functionMetrics } from "./function_metrics.ts";
import type {
  AggregateFunction,
  Collector,
  FilterFunction,
  FlatMapFunction,
  KeyedProcessFunction,
  MapFunction,
  OnTimerContext,
  ProcessFunction,
  ReduceFunction,
} from "../../api/functions.ts";
import {
  type AggregatingState,
  AggregatingStateDescriptor,
  type ValueState,
  ValueStateDescriptor,
} from "../../api/state.ts";
import type { Key } from "../../state/key_group.ts";
import { OneInputUdfOperator } from "./udf_operator.ts";

/** Calls `map` per record. */
export class MapOperator extends OneInputUdfOperator<MapFunction<unknown, unknown>> {
  #call!: (value: unknown) => unknown;
  override async open(): Promise<void> {
    const fn = this.fn;
    this.#call = typeof fn === "function" ? fn : (v) => fn.map(v);
    await super.open();
  }
  protected processRecord(value: unknown, timestamp: number | undefined): void {
    this.output.collect(this.#call(value), timestamp);
  }
}

/** Calls `filter` per record. */
export class FilterOperator extends OneInputUdfOperator<FilterFunction<unknown>> {
  #call!: (value: unknown) => boolean;
  override async open(): Promise<void> {
    const fn = this.fn;
    this.#call = typeof fn === "function" ? fn : (v) => fn.filter(v);
    await super.open();
  }
  protected processRecord(value: unknown, timestamp: number | undefined): void {
    if (this.#call(value)) this.output.collect(value, timestamp);
  }
}

/** Calls `flatMap` per record. */
export class FlatMapOperator extends OneInputUdfOperator<FlatMapFunction<unknown, unknown>> {
  #call!: (value: unknown, out: Collector<unknown>) => void;
  #out: Collector<unknown> = this.collector();
  override async open(): Promise<void> {
    const fn = this.fn;
    this.#call = typeof fn === "function" ? fn : (v, out) => fn.flatMap(v, out);
    await super.open();
  }
  protected processRecord(value: unknown, timestamp: number | undefined): void {
    this.currentTimestamp = timestamp;
    this.#call(value, this.#out);
  }
}

/** Calls a `ProcessFunction` per record. */
export class ProcessOperator extends OneInputUdfOperator<ProcessFunction<unknown, unknown>> {
  #ctx = this.processContext();
  #out = this.collector();
  protected processRecord(value: unknown, timestamp: number | undefined): void {
    this.currentTimestamp = timestamp;
    this.fn.processElement(value, this.#ctx, this.#out);
  }
}

/** Calls a `KeyedProcessFunction` per record and per timer. */
export class KeyedProcessOperator
  extends OneInputUdfOperator<KeyedProcessFunction<Key, unknown, unknown>> {
  #domain: "event-time" | "processing-time" = "event-time";
  #ctx: OnTimerContext<Key> = this.processContext(() => this.#domain);
  #out = this.collector();
  /** The function's own counters (`function_metrics.ts`); none for most functions. */
  metrics(): Readonly<Record<string, number>> {
    return functionMetrics(this.fn)?.() ?? {};
  }
  protected processRecord(value: unknown, timestamp: number | undefined): void {
    this.currentTimestamp = timestamp;
    this.fn.processElement(value, this.#ctx, this.#out);
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
    this.fn.onTimer(timestamp, this.#ctx, this.#out);
  }
}

/** Emits each key's running reduction (Flink's `StreamGroupedReduceOperator`). */
export class ReduceOperator extends OneInputUdfOperator<ReduceFunction<unknown>> {
  #call!: (acc: unknown, value: unknown) => unknown;
  #state!: ValueState<unknown>;
  override async open(): Promise<void> {
    const fn = this.fn;
    this.#call = typeof fn === "function" ? fn : (a, v) => fn.reduce(a, v);
    this.#state = this.keyed!.getValueState(new ValueStateDescriptor<unknown>("_reduce"));
    await super.open();
  }
  protected processRecord(value: unknown, timestamp: number | undefined): void {
    const acc = this.#state.value();
    const next = acc === undefined ? value : this.#call(acc, value);
    this.#state.update(next);
    this.output.collect(next, timestamp);
  }
}

/**
 * Emits, for every record, `getResult` of its key's running accumulator
 * (`KeyedStream.aggregate`; Flink's `StreamGroupedReduceOperator` with an
 * `AggregateFunction` in place of the reduce function). The accumulator is
 * keyed `AggregatingState` named `_aggregate`.
 */
export class AggregateOperator
  extends OneInputUdfOperator<AggregateFunction<unknown, unknown, unknown>> {
  #state!: AggregatingState<unknown, unknown>;
  override async open(): Promise<void> {
    this.#state = this.keyed!.getAggregatingState(
      new AggregatingStateDescriptor("_aggregate", this.fn),
    );
    await super.open();
  }
  protected processRecord(value: unknown, timestamp: number | undefined): void {
    this.#state.add(value);
    this.output.collect(this.#state.get(), timestamp);
  }
}
