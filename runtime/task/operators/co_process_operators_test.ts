import assert from "node:assert/strict";
import { OperatorTestHarness } from "./_operator_test_harness.ts";
import { CoFlatMapOperator, CoMapOperator, CoProcessOperator } from "./co_process_operators.ts";
import type {
  CoFlatMapFunction,
  CoMapFunction,
  CoProcessFunction,
  KeyedCoProcessFunction,
  RuntimeContext,
} from "../../api/functions.ts";
import { OutputTag } from "../../api/output_tag.ts";
import { type ValueState, ValueStateDescriptor } from "../../api/state.ts";
import type { Key } from "../../state/key_group.ts";
import type { KeySelector } from "../../graph/stream_graph.ts";
import type { OperatorEnvironment, Output, StreamOperator } from "./operator.ts";

function common(env: OperatorEnvironment, output: Output, keys?: [KeySelector, KeySelector]) {
  return {
    uid: "co",
    name: "Co",
    env,
    output,
    keySelector: keys?.[0],
    keySelector2: keys?.[1],
  };
}

Deno.test("CoMapOperator maps input 1 with map1 and input 2 with map2, keeping timestamps", async () => {
  const fn: CoMapFunction<number, string, string> = {
    map1: (n) => `n${n}`,
    map2: (s) => `s${s}`,
  };
  const h = await OperatorTestHarness.open((env, output) =>
    new CoMapOperator({
      ...common(env, output),
      fn: fn as CoMapFunction<unknown, unknown, unknown>,
    })
  );
  h.operator.processElement1(1, 10);
  h.operator.processElement2("a", undefined);
  h.operator.processElement1(2, 20);
  assert.deepEqual(h.records, [
    { value: "n1", timestamp: 10 },
    { value: "sa", timestamp: undefined },
    { value: "n2", timestamp: 20 },
  ]);
  assert.throws(
    () => (h.operator as StreamOperator).processElement(1, undefined),
    /two-input operator: a record arrived without an input number/,
  );
  await h.close();
});

Deno.test("CoFlatMapOperator emits zero or more records per input record", async () => {
  const fn: CoFlatMapFunction<number, string, string> = {
    flatMap1(n, out) {
      for (let i = 0; i < n; i++) out.collect(`n${i}`);
    },
    flatMap2(s, out) {
      for (const c of s) out.collect(c);
    },
  };
  const h = await OperatorTestHarness.open((env, output) =>
    new CoFlatMapOperator({
      ...common(env, output),
      fn: fn as CoFlatMapFunction<unknown, unknown, unknown>,
    })
  );
  h.operator.processElement1(2, 5);
  h.operator.processElement2("xy", 6);
  h.operator.processElement1(0, 7);
  assert.deepEqual(h.values(), ["n0", "n1", "x", "y"]);
  assert.deepEqual(h.records.map((r) => r.timestamp), [5, 5, 6, 6]);
  await h.close();
});

Deno.test("a non-keyed CoProcessOperator has side outputs and refuses timers and keyed state", async () => {
  const small = new OutputTag<number>("small");
  const fn: CoProcessFunction<number, number, string> = {
    processElement1(n, ctx, out) {
      if (n < 10) ctx.output(small, n);
      else out.collect(`one:${n}@${ctx.timestamp()}`);
    },
    processElement2(n, ctx, out) {
      out.collect(`two:${n}`);
      if (n === 0) ctx.timerService().registerEventTimeTimer(5);
    },
  };
  const h = await OperatorTestHarness.open((env, output) =>
    new CoProcessOperator({
      ...common(env, output),
      fn: fn as CoProcessFunction<unknown, unknown, unknown>,
    })
  );
  h.operator.processElement1(3, 1);
  h.operator.processElement1(30, 2);
  h.operator.processElement2(7, 3);
  assert.deepEqual(h.values(), ["one:30@2", "two:7"]);
  assert.deepEqual(h.side.get("small")?.map((r) => r.value), [3]);
  assert.throws(() => h.operator.processElement2(0, 4), /Timers need a keyed stream/);
  await h.close();
});

/** Joins names (input 1) with orders (input 2) of one customer; counts the orders at a timer. */
class NameOrders
  implements KeyedCoProcessFunction<string, [string, string], [string, number], string> {
  private name!: ValueState<string>;
  private orders!: ValueState<number>;
  open(ctx: RuntimeContext): void {
    this.name = ctx.getState(new ValueStateDescriptor<string>("name"));
    this.orders = ctx.getState(new ValueStateDescriptor<number>("orders"));
  }
  processElement1(
    [, name]: [string, string],
    ctx: Parameters<KeyedCoProcessFunction<string, unknown, unknown, string>["processElement1"]>[1],
    out: { collect(v: string): void },
  ): void {
    this.name.update(name);
    out.collect(`${ctx.getCurrentKey()} is ${name}, ${this.orders.value() ?? 0} orders before`);
    ctx.timerService().registerEventTimeTimer(100 + ctx.timestamp()!);
  }
  processElement2(
    [, amount]: [string, number],
    ctx: Parameters<KeyedCoProcessFunction<string, unknown, unknown, string>["processElement2"]>[1],
    out: { collect(v: string): void },
  ): void {
    this.orders.update((this.orders.value() ?? 0) + 1);
    out.collect(`${ctx.getCurrentKey()} ordered ${amount} (${this.name.value() ?? "?"})`);
  }
  onTimer(
    timestamp: number,
    ctx: Parameters<
      NonNullable<KeyedCoProcessFunction<string, unknown, unknown, string>["onTimer"]>
    >[1],
    out: { collect(v: string): void },
  ): void {
    out.collect(
      `${ctx.getCurrentKey()} at ${timestamp} (${ctx.timeDomain()}): ${this.orders.value()} orders`,
    );
  }
}

Deno.test("a keyed CoProcessOperator shares keyed state and timers between its inputs", async () => {
  const k1: KeySelector = (v) => (v as [string, string])[0];
  const k2: KeySelector = (v) => (v as [string, number])[0];
  const open = (restore?: ReturnType<typeof OperatorTestHarness.restoreFrom>) =>
    OperatorTestHarness.open((env, output) =>
      new CoProcessOperator({
        ...common(env, output, [k1, k2]),
        fn: new NameOrders() as unknown as KeyedCoProcessFunction<Key, unknown, unknown, unknown>,
      }), restore ? { restore } : {});
  const h = await open();
  h.operator.processElement2(["c1", 5], 1);
  h.operator.processElement1(["c1", "Ann"], 2);
  h.operator.processElement2(["c1", 7], 3);
  h.operator.processElement1(["c2", "Bob"], 4);
  const snapshot = await h.snapshot(1);
  h.operator.processElement2(["c2", 1], 5);
  await h.close();
  assert.deepEqual(h.values(), [
    "c1 ordered 5 (?)",
    "c1 is Ann, 1 orders before",
    "c1 ordered 7 (Ann)",
    "c2 is Bob, 0 orders before",
    "c2 ordered 1 (Bob)",
  ]);

  // Restored from checkpoint 1: c2's order after it is gone, both timers are back.
  const restored = await open(OperatorTestHarness.restoreFrom([snapshot]));
  restored.operator.processElement2(["c2", 9], 6);
  restored.processWatermark(200);
  assert.deepEqual(restored.values(), [
    "c2 ordered 9 (Bob)",
    "c1 at 102 (event-time): 2 orders",
    "c2 at 104 (event-time): 1 orders",
  ]);
  assert.deepEqual(restored.watermarks, [200]);
  await restored.close();
});
