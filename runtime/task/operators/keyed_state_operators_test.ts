/**
 * Keyed operators driven by hand, without a task: the `AggregateOperator`
 * behind `KeyedStream.aggregate`, the runtime context's reducing and
 * aggregating state, and event-time TTL on the operator's own watermark
 * (records and watermarks are fed in order, as the input gate would).
 *
 * @module
 */

import assert from "node:assert/strict";
import type {
  AggregateFunction,
  Collector,
  KeyedProcessContext,
  KeyedProcessFunction,
  RuntimeContext,
} from "../../api/functions.ts";
import {
  AggregatingStateDescriptor,
  ReducingStateDescriptor,
  type ValueState,
  ValueStateDescriptor,
} from "../../api/state.ts";
import type { OperatorRestore } from "./operator.ts";
import { OperatorTestHarness } from "./_operator_test_harness.ts";
import { AggregateOperator, KeyedProcessOperator } from "./transform_operators.ts";

interface Reading {
  readonly id: string;
  readonly t: number;
}

const average: AggregateFunction<Reading, { sum: number; count: number }, string> = {
  createAccumulator: () => ({ sum: 0, count: 0 }),
  add: (r, acc) => {
    acc.sum += r.t; // in place, as Flink users write it
    acc.count++;
    return acc;
  },
  getResult: (acc) => `${acc.sum / acc.count}`,
  merge: (a, b) => ({ sum: a.sum + b.sum, count: a.count + b.count }),
};

function aggregateOperator(restore?: OperatorRestore) {
  return OperatorTestHarness.open((env, output) =>
    new AggregateOperator({
      uid: "avg",
      name: "Aggregate",
      fn: average as AggregateFunction<unknown, unknown, unknown>,
      env,
      output,
      keySelector: (r) => (r as Reading).id,
    }), restore === undefined ? {} : { restore });
}

Deno.test("the aggregate operator emits each key's running result, with the record's timestamp", async () => {
  const h = await aggregateOperator();
  h.processElement({ id: "a", t: 2 }, 100);
  h.processElement({ id: "b", t: 10 }, 101);
  h.processElement({ id: "a", t: 4 }, undefined);
  assert.deepEqual(h.records, [
    { value: "2", timestamp: 100 },
    { value: "10", timestamp: 101 },
    { value: "3", timestamp: undefined },
  ]);
});

Deno.test("the aggregate operator's accumulators are checkpointed and restored", async () => {
  const h = await aggregateOperator();
  h.processElement({ id: "a", t: 2 }, undefined);
  const snapshot = await h.snapshot();
  h.processElement({ id: "a", t: 100 }, undefined); // after the checkpoint: lost on restore
  const restored = await aggregateOperator(OperatorTestHarness.restoreFrom([snapshot]));
  restored.processElement({ id: "a", t: 4 }, undefined);
  assert.deepEqual(restored.values(), ["3"]);
});

/**
 * Remembers each sensor's last temperature in ValueState with an event-time
 * TTL of 1000 ms, and a sum in reducing and a count in aggregating state;
 * emits `[id, previous, sum, count]` per reading.
 */
class LastReading implements KeyedProcessFunction<string, Reading, unknown[]> {
  private last!: ValueState<number>;
  private sum!: ReturnType<RuntimeContext["getReducingState"]>;
  private count!: ReturnType<RuntimeContext["getAggregatingState"]>;
  open(ctx: RuntimeContext): void {
    const ttl = { ttlMs: 1_000, timeCharacteristic: "EventTime" } as const;
    this.last = ctx.getState(new ValueStateDescriptor<number>("last", { ttl }));
    this.sum = ctx.getReducingState(
      new ReducingStateDescriptor<number>("sum", (a, b) => a + b, { ttl }),
    );
    this.count = ctx.getAggregatingState(
      new AggregatingStateDescriptor("count", {
        createAccumulator: () => 0,
        add: (_: number, acc: number) => acc + 1,
        getResult: (acc: number) => acc,
        merge: (a: number, b: number) => a + b,
      }),
    );
  }
  processElement(r: Reading, ctx: KeyedProcessContext<string>, out: Collector<unknown[]>): void {
    const previous = this.last.value();
    this.last.update(r.t);
    this.sum.add(r.t);
    this.count.add(r.t);
    out.collect([ctx.getCurrentKey(), previous ?? null, this.sum.get(), this.count.get()]);
  }
}

Deno.test("event-time TTL state expires on the operator's watermark, not on processing time", async () => {
  const h = await OperatorTestHarness.open((env, output) =>
    new KeyedProcessOperator({
      uid: "last",
      name: "LastReading",
      fn: new LastReading() as unknown as KeyedProcessFunction<never, unknown, unknown>,
      env,
      output,
      keySelector: (r) => (r as Reading).id,
    })
  );
  h.processElement({ id: "s1", t: 1 }, 50); // before any watermark
  h.processWatermark(500); // event time starts: the first reading counts as written at 500
  h.processElement({ id: "s1", t: 2 }, 600);
  h.setProcessingTime(1_000_000);
  h.processWatermark(1_499);
  h.processElement({ id: "s1", t: 3 }, 1_550);
  h.processWatermark(2_499);
  h.processElement({ id: "s1", t: 4 }, 2_700);
  assert.deepEqual(h.values(), [
    ["s1", null, 1, 1],
    ["s1", 1, 3, 2],
    ["s1", 2, 6, 3], // last written at watermark 500, alive at 1499
    ["s1", null, 4, 4], // last written at watermark 1499, expired at 2499 (the count has no TTL)
  ]);
  assert.deepEqual(h.watermarks, [500, 1_499, 2_499]);
});

Deno.test("reducing and aggregating state need a keyed stream, naming the operator", async () => {
  const opening: [string, (ctx: RuntimeContext) => void][] = [
    [
      "ReducingState",
      (ctx) => ctx.getReducingState(new ReducingStateDescriptor<number>("r", Math.max)),
    ],
    [
      "AggregatingState",
      (ctx) => ctx.getAggregatingState(new AggregatingStateDescriptor("a", average)),
    ],
  ];
  for (const [kind, open] of opening) {
    const opened = OperatorTestHarness.open((env, output) =>
      new KeyedProcessOperator({
        uid: "unkeyed",
        name: "Unkeyed",
        fn: { open, processElement: () => {} },
        env,
        output,
        keySelector: undefined,
      })
    );
    await assert.rejects(
      () => opened,
      new RegExp(
        `Keyed ${kind} needs a keyed stream: apply operator 'Unkeyed' \\(uid unkeyed\\) subtask 0/1 of job 'operator test harness' after keyBy\\(\\)`,
      ),
    );
  }
});
