import assert from "node:assert/strict";
import { OperatorTestHarness } from "./_operator_test_harness.ts";
import { operatorRestore } from "./_snapshot_kit.ts";
import {
  BroadcastProcessOperator,
  KeyedBroadcastProcessOperator,
} from "./broadcast_process_operators.ts";
import type {
  BroadcastProcessFunction,
  KeyedBroadcastProcessFunction,
} from "../../api/broadcast_functions.ts";
import { MapStateDescriptor, ValueStateDescriptor } from "../../api/state.ts";
import type { Key } from "../../state/key_group.ts";
import { redistributeOperatorState } from "../../state/operator_state.ts";
import type { OperatorEnvironment, Output } from "./operator.ts";

const LIMITS = new MapStateDescriptor<string, number>("limits");

function options(env: OperatorEnvironment, output: Output) {
  return {
    uid: "bc",
    name: "Broadcast",
    env,
    output,
    keySelector: undefined,
    keySelector2: undefined,
    descriptors: [LIMITS as MapStateDescriptor<unknown, unknown>],
  };
}

/** Emits readings above their sensor's limit; limits arrive broadcast. */
const aboveLimit: BroadcastProcessFunction<[string, number], [string, number], string> = {
  processElement([id, t], ctx, out) {
    const limit = ctx.getBroadcastState(LIMITS).get(id);
    if (limit === undefined) out.collect(`${id} ${t}: no limit`);
    else if (t > limit) out.collect(`${id} ${t} > ${limit}`);
  },
  processBroadcastElement([id, limit], ctx, out) {
    ctx.getBroadcastState(LIMITS).put(id, limit);
    out.collect(`limit ${id}=${limit} (${ctx.getBroadcastState(LIMITS).size} known)`);
  },
};

function openPlain(restore?: Parameters<typeof OperatorTestHarness.open>[1]) {
  return OperatorTestHarness.open((env, output) =>
    new BroadcastProcessOperator({
      ...options(env, output),
      fn: aboveLimit as BroadcastProcessFunction<unknown, unknown, unknown>,
    }), restore);
}

Deno.test("BroadcastProcessOperator reads on the element side what the broadcast side wrote", async () => {
  const h = await openPlain();
  h.operator.processElement1(["s1", 40], 1);
  h.operator.processElement2(["s1", 30], 2);
  h.operator.processElement1(["s1", 20], 3);
  h.operator.processElement1(["s1", 35], 4);
  h.operator.processElement2(["s2", 10], 5);
  h.operator.processElement2(["s1", 36], 6);
  h.operator.processElement1(["s1", 35], 7);
  h.operator.processElement1(["s2", 11], 8);
  assert.deepEqual(h.values(), [
    "s1 40: no limit",
    "limit s1=30 (1 known)",
    "s1 35 > 30",
    "limit s2=10 (2 known)",
    "limit s1=36 (2 known)",
    "s2 11 > 10",
  ]);
  await h.close();
});

Deno.test("broadcast state is read-only on the element side: every write throws, naming state and operator", async () => {
  const writes: Record<string, (s: Record<string, (...a: unknown[]) => void>) => void> = {
    put: (s) => s.put!("s1", 1),
    putAll: (s) => s.putAll!([["s1", 1]]),
    remove: (s) => s.remove!("s1"),
    clear: (s) => s.clear!(),
  };
  for (const [method, write] of Object.entries(writes)) {
    const fn: BroadcastProcessFunction<string, string, string> = {
      processElement(_v, ctx) {
        write(
          ctx.getBroadcastState(LIMITS) as unknown as Record<string, (...a: unknown[]) => void>,
        );
      },
      processBroadcastElement() {},
    };
    const h = await OperatorTestHarness.open((env, output) =>
      new BroadcastProcessOperator({
        ...options(env, output),
        fn: fn as BroadcastProcessFunction<unknown, unknown, unknown>,
      })
    );
    assert.throws(
      () => h.operator.processElement1("x", undefined),
      new RegExp(
        `Broadcast state 'limits' is read-only in processElement .* operator 'Broadcast' \\(uid bc\\).*: ${method}\\(\\) is allowed only in processBroadcastElement`,
      ),
    );
    await h.close();
  }
  const unknown: BroadcastProcessFunction<string, string, string> = {
    processElement(_v, ctx) {
      ctx.getBroadcastState(new MapStateDescriptor<string, number>("other"));
    },
    processBroadcastElement() {},
  };
  const h = await OperatorTestHarness.open((env, output) =>
    new BroadcastProcessOperator({
      ...options(env, output),
      fn: unknown as BroadcastProcessFunction<unknown, unknown, unknown>,
    })
  );
  assert.throws(
    () => h.operator.processElement1("x", undefined),
    /No broadcast state 'other' on operator 'Broadcast'.*declared are \['limits'\]/,
  );
  await h.close();
});

Deno.test("after a restore 2 -> 3 every subtask has the broadcast state (each from one old copy)", async () => {
  const old = [];
  for (const subtaskIndex of [0, 1]) {
    const h = await openPlain({ subtaskIndex, parallelism: 2 });
    h.operator.processElement2(["s1", 30], undefined);
    h.operator.processElement2(["s2", 10], undefined);
    h.operator.processElement2(["s1", 31], undefined);
    const snap = await h.snapshot(7);
    assert.deepEqual(snap.operator?.["_broadcast/limits"], {
      mode: "union",
      items: [{ entries: [["s1", 31], ["s2", 10]] }],
    });
    old.push(snap.operator!);
    await h.close();
  }
  for (const subtaskIndex of [0, 1, 2]) {
    const share = redistributeOperatorState(old, 3, subtaskIndex);
    const h = await openPlain({
      subtaskIndex,
      parallelism: 3,
      restore: operatorRestore(share, { checkpointId: 7 }),
    });
    h.operator.processElement1(["s1", 32], undefined);
    h.operator.processElement1(["s2", 10], undefined);
    h.operator.processElement1(["s3", 1], undefined);
    assert.deepEqual(h.values(), ["s1 32 > 31", "s3 1: no limit"], `subtask ${subtaskIndex}`);
    // The restored copy is checkpointed again as this subtask's one copy.
    const snap = await h.snapshot(8);
    assert.equal(snap.operator?.["_broadcast/limits"]?.items.length, 1);
    await h.close();
  }
});

/** Counts readings per sensor in keyed state; a broadcast "reset" clears every count through applyToKeyedState. */
const COUNT = new ValueStateDescriptor<number>("count");
const counting: KeyedBroadcastProcessFunction<string, [string, number], string, string> = {
  processElement([id, t], ctx, out) {
    const limit = ctx.getBroadcastState(LIMITS).get(id);
    ctx.timerService().registerEventTimeTimer(t);
    out.collect(`${ctx.getCurrentKey()} ${t} (limit ${limit ?? "none"})`);
  },
  processBroadcastElement(command, ctx, out) {
    if (command.startsWith("limit ")) {
      const [, id, value] = command.split(" ");
      ctx.getBroadcastState(LIMITS).put(id!, Number(value));
      return;
    }
    const seen: string[] = [];
    ctx.applyToKeyedState(COUNT, (key, state) => {
      seen.push(`${key}=${state.value()}`);
      if (command === "reset") state.clear();
      else state.update((state.value() ?? 0) * 10);
    });
    out.collect(`${command}: ${seen.sort().join(",")}`);
  },
  onTimer(timestamp, ctx, out) {
    // Keyed state of the timer's key; read-only broadcast state.
    const count = ctx.getBroadcastState(LIMITS).get(ctx.getCurrentKey()) ?? 0;
    out.collect(`timer ${ctx.getCurrentKey()}@${timestamp} ${ctx.timeDomain()} limit ${count}`);
  },
};

Deno.test("KeyedBroadcastProcessOperator: keyed state, timers and applyToKeyedState over every key", async () => {
  const keyed = {
    ...counting,
    open(this: { count?: unknown }, ctx: { getState: (d: typeof COUNT) => unknown }) {
      this.count = ctx.getState(COUNT);
    },
    processElement(
      this: { count: { value(): number | undefined; update(n: number): void } },
      value: [string, number],
      ctx: Parameters<typeof counting.processElement>[1],
      out: Parameters<typeof counting.processElement>[2],
    ) {
      this.count.update((this.count.value() ?? 0) + 1);
      counting.processElement(value, ctx, out);
    },
  };
  const h = await OperatorTestHarness.open((env, output) =>
    new KeyedBroadcastProcessOperator({
      ...options(env, output),
      keySelector: (v) => (v as [string, number])[0],
      fn: keyed as unknown as KeyedBroadcastProcessFunction<Key, unknown, unknown, unknown>,
    })
  );
  h.operator.processElement1(["a", 1], 1);
  h.operator.processElement2("limit a 5", 2);
  h.operator.processElement1(["a", 2], 2);
  h.operator.processElement1(["b", 3], 3);
  h.operator.processElement2("times10", 4);
  h.operator.processElement2("reset", 5);
  h.operator.processElement1(["b", 4], 6);
  h.operator.processElement2("show", 7);
  h.processWatermark(3);
  assert.deepEqual(h.values(), [
    "a 1 (limit none)",
    "a 2 (limit 5)",
    "b 3 (limit none)",
    "times10: a=2,b=1",
    "reset: a=20,b=10",
    "b 4 (limit none)",
    "show: b=1",
    "timer a@1 event-time limit 5",
    "timer a@2 event-time limit 5",
    "timer b@3 event-time limit 0",
  ]);
  await h.close();
});

Deno.test("KeyedBroadcastProcessOperator refuses timers and the current key on the broadcast side", async () => {
  const fn: KeyedBroadcastProcessFunction<string, string, string, string> = {
    processElement() {},
    processBroadcastElement(_v, ctx) {
      (ctx as unknown as { getCurrentKey(): string }).getCurrentKey();
    },
  };
  const h = await OperatorTestHarness.open((env, output) =>
    new KeyedBroadcastProcessOperator({
      ...options(env, output),
      keySelector: (v) => v as string,
      fn: fn as unknown as KeyedBroadcastProcessFunction<Key, unknown, unknown, unknown>,
    })
  );
  h.operator.processElement1("k", undefined);
  assert.throws(() => h.operator.processElement2("x", undefined), /getCurrentKey/);
  await h.close();
});
