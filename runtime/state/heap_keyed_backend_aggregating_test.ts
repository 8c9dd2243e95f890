/**
 * Conformance of {@linkcode HeapKeyedStateBackend}'s Reducing and
 * Aggregating state: Flink's semantics of `add`/`get`/`clear`, their
 * descriptors' checks, snapshot and restore of the two kinds, TTL, and the
 * copy-on-write that keeps a snapshot intact when user functions change
 * accumulators in place.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { AggregateFunction } from "../api/functions.ts";
import {
  AggregatingStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "../api/state.ts";
import {
  HeapKeyedStateBackend,
  type HeapKeyedStateBackendOptions,
  type KeyedStateSnapshot,
} from "./heap_keyed_backend.ts";
import { assignToKeyGroup, KeyGroupRange } from "./key_group.ts";

function backend(options: Partial<HeapKeyedStateBackendOptions> = {}): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
    ...options,
  });
}

interface Acc {
  sum: number;
  count: number;
}

/** An average whose `add` and `merge` change the accumulator in place, as Flink users write them. */
const inPlaceAverage: AggregateFunction<number, Acc, number> = {
  createAccumulator: () => ({ sum: 0, count: 0 }),
  add: (x, acc) => {
    acc.sum += x;
    acc.count++;
    return acc;
  },
  getResult: (acc) => acc.sum / acc.count,
  merge: (a, b) => {
    a.sum += b.sum;
    a.count += b.count;
    return a;
  },
};

Deno.test("ReducingState stores the first value and reduces later ones into it", () => {
  const b = backend();
  const calls: [number, number][] = [];
  const max = b.getReducingState(
    new ReducingStateDescriptor<number>("max", (a, x) => {
      calls.push([a, x]);
      return Math.max(a, x);
    }),
  );
  b.setCurrentKey("sensor_1");
  assert.equal(max.get(), undefined);
  max.add(35.8);
  assert.deepEqual(calls, [], "the first value is stored as it is");
  max.add(42.4);
  max.add(32.4);
  assert.equal(max.get(), 42.4);
  assert.deepEqual(calls, [[35.8, 42.4], [42.4, 32.4]]);
  b.setCurrentKey("sensor_7");
  assert.equal(max.get(), undefined);
  b.setCurrentKey("sensor_1");
  max.clear();
  assert.equal(max.get(), undefined);
  assert.equal(b.numKeys("max"), 0);
});

Deno.test("ReducingState accepts a ReduceFunction object", () => {
  const b = backend();
  const sum = b.getReducingState(
    new ReducingStateDescriptor<number>("sum", { reduce: (a: number, x: number) => a + x }),
  );
  b.setCurrentKey(1);
  for (const x of [1, 2, 3]) sum.add(x);
  assert.equal(sum.get(), 6);
});

Deno.test("AggregatingState creates an accumulator on the first add and reads getResult", () => {
  const b = backend();
  let created = 0;
  const avg = b.getAggregatingState(
    new AggregatingStateDescriptor("avg", {
      ...inPlaceAverage,
      createAccumulator: () => {
        created++;
        return { sum: 0, count: 0 };
      },
    }),
  );
  b.setCurrentKey("k");
  assert.equal(avg.get(), undefined);
  avg.add(2);
  avg.add(4);
  assert.equal(avg.get(), 3);
  assert.equal(created, 1);
  avg.clear();
  avg.add(10);
  assert.equal(avg.get(), 10);
  assert.equal(created, 2);
});

Deno.test("adding undefined, or a function returning undefined, throws naming the state", () => {
  const b = backend();
  const r = b.getReducingState(new ReducingStateDescriptor<number>("r", () => undefined!));
  const a = b.getAggregatingState(
    new AggregatingStateDescriptor("a", { ...inPlaceAverage, add: () => undefined! }),
  );
  b.setCurrentKey("k");
  assert.throws(() => r.add(undefined!), /Keyed state 'r' cannot add undefined/);
  r.add(1);
  assert.throws(() => r.add(2), /keyed state 'r' returned undefined from add/);
  assert.equal(r.get(), 1, "a failed add leaves the value");
  assert.throws(() => a.add(1), /keyed state 'a' returned undefined from add/);
  assert.equal(b.numKeys("a"), 0);
});

Deno.test("the descriptors reject a missing function, naming what is missing", () => {
  assert.throws(
    () => new ReducingStateDescriptor<number>("r", 42 as never),
    /Reducing state 'r' needs a reduce function or an object with a reduce\(\) method: current value is 42/,
  );
  assert.throws(
    () =>
      new AggregatingStateDescriptor("a", {
        createAccumulator: () => 0,
        add: (x: number, acc: number) => acc + x,
      } as never),
    /Aggregating state 'a' needs an AggregateFunction with getResult\(\), merge\(\)/,
  );
  assert.throws(() => new ReducingStateDescriptor<number>("", (a) => a), /non-empty name/);
});

Deno.test("a name registered as one kind cannot be registered as reducing or aggregating", () => {
  const b = backend();
  b.getValueState(new ValueStateDescriptor<number>("x"));
  assert.throws(
    () => b.getReducingState(new ReducingStateDescriptor<number>("x", (a, c) => a + c)),
    /Keyed state 'x' is already registered as value state: cannot register it as reducing state/,
  );
  b.getReducingState(new ReducingStateDescriptor<number>("r", (a, c) => a + c));
  assert.throws(
    () => b.getAggregatingState(new AggregatingStateDescriptor("r", inPlaceAverage)),
    /already registered as reducing state: cannot register it as aggregating state/,
  );
});

Deno.test("reducing and aggregating state snapshot as their kinds and restore", () => {
  const b = backend();
  const sum = b.getReducingState(new ReducingStateDescriptor<number>("sum", (a, x) => a + x));
  const avg = b.getAggregatingState(new AggregatingStateDescriptor("avg", inPlaceAverage));
  b.setCurrentKey("a");
  sum.add(1);
  sum.add(2);
  avg.add(4);
  avg.add(8);
  const g = assignToKeyGroup("a", 128);
  const snap = b.snapshotCanonical();
  assert.deepEqual(snap.states, {
    sum: { kind: "reducing", ttl: false, keyGroups: [{ keyGroup: g, keys: ["a"], values: [3] }] },
    avg: {
      kind: "aggregating",
      ttl: false,
      keyGroups: [{ keyGroup: g, keys: ["a"], values: [{ sum: 12, count: 2 }] }],
    },
  });
  const restored = backend();
  restored.restoreCanonical([structuredClone(snap)]);
  const sum2 = restored.getReducingState(
    new ReducingStateDescriptor<number>("sum", (a, x) => a + x),
  );
  const avg2 = restored.getAggregatingState(new AggregatingStateDescriptor("avg", inPlaceAverage));
  restored.setCurrentKey("a");
  sum2.add(10);
  avg2.add(0);
  assert.equal(sum2.get(), 13);
  assert.equal(avg2.get(), 4);

  const asValue = backend();
  asValue.getValueState(new ValueStateDescriptor<number>("sum"));
  assert.throws(
    () => asValue.restoreCanonical([snap]),
    /Cannot restore keyed state 'sum' as reducing state: it is already registered as value state/,
  );
  const restoredOnly = backend();
  restoredOnly.restoreCanonical([snap]);
  assert.throws(
    () => restoredOnly.getValueState(new ValueStateDescriptor<number>("avg")),
    /'avg' is already restored as aggregating state: cannot register it as value state/,
  );
});

Deno.test("a snapshot keeps its accumulators when add() and merge() later change them in place", () => {
  const b = backend();
  const avg = b.getAggregatingState(new AggregatingStateDescriptor("avg", inPlaceAverage));
  const ttlAvg = b.getAggregatingState(
    new AggregatingStateDescriptor("ttl-avg", inPlaceAverage, { ttl: { ttlMs: 1e9 } }),
  );
  const list = b.getReducingState(
    new ReducingStateDescriptor<number[]>("all", (a, x) => {
      a.push(...x);
      return a;
    }),
  );
  b.setCurrentKey("k");
  for (const state of [avg, ttlAvg]) {
    state.add(1);
    state.setCurrentNamespace("w");
    state.add(2);
    state.setCurrentNamespace("");
  }
  list.add([1]);
  const snap = b.snapshotCanonical();
  const before = structuredClone(snap);
  avg.add(5);
  ttlAvg.add(5);
  list.add([2]);
  avg.mergeNamespaces("", ["w"]);
  ttlAvg.mergeNamespaces("", ["w"]);
  assert.deepEqual(snap, before, "the snapshot is what it was when taken");
  assert.equal(avg.get(), 8 / 3);
  assert.equal(ttlAvg.get(), 8 / 3);
  assert.deepEqual(list.get(), [1, 2]);

  const restored = backend();
  const restoredFrom = structuredClone(snap);
  restored.restoreCanonical([restoredFrom]);
  const avg2 = restored.getAggregatingState(new AggregatingStateDescriptor("avg", inPlaceAverage));
  restored.setCurrentKey("k");
  avg2.add(100);
  assert.deepEqual(restoredFrom, before, "a restore does not change the snapshot it read");
  assert.equal(avg2.get(), 50.5);
});

Deno.test("what get() returned does not change when a later add() changes the accumulator in place", () => {
  const b = backend();
  const push = (a: number[], x: number[]) => {
    a.push(...x);
    return a;
  };
  const all = b.getReducingState(new ReducingStateDescriptor<number[]>("all", push));
  const ttlAll = b.getReducingState(
    new ReducingStateDescriptor<number[]>("ttl-all", push, { ttl: { ttlMs: 1e9 } }),
  );
  const collected = b.getAggregatingState(
    new AggregatingStateDescriptor("collected", {
      createAccumulator: (): number[] => [],
      add: (x: number, acc: number[]) => push(acc, [x]),
      getResult: (acc) => acc,
      merge: push,
    }),
  );
  b.setCurrentKey("k");
  all.add([1]);
  ttlAll.add([1]);
  collected.add(1);
  const read = [all.get(), ttlAll.get(), collected.get()];
  all.add([2]);
  ttlAll.add([2]);
  collected.add(2);
  assert.deepEqual(read, [[1], [1], [1]]);
  assert.deepEqual([all.get(), ttlAll.get(), collected.get()], [[1, 2], [1, 2], [1, 2]]);
});

Deno.test("TTL reducing and aggregating state expire, restart and merge on the backend clock", () => {
  let now = 1_000;
  const b = backend({ clock: () => now });
  const sum = b.getReducingState(
    new ReducingStateDescriptor<number>("sum", (a, x) => a + x, { ttl: { ttlMs: 100 } }),
  );
  const avg = b.getAggregatingState(
    new AggregatingStateDescriptor("avg", inPlaceAverage, {
      ttl: { ttlMs: 100, updateType: "OnReadAndWrite" },
    }),
  );
  b.setCurrentKey("k");
  sum.add(1);
  avg.add(1);
  now += 99;
  sum.add(1);
  assert.equal(sum.get(), 2, "an add restarts the lifetime");
  assert.equal(avg.get(), 1, "a read restarts an OnReadAndWrite lifetime");
  now += 99;
  assert.equal(sum.get(), 2);
  assert.equal(avg.get(), 1);
  now += 100;
  assert.equal(sum.get(), undefined);
  assert.equal(avg.get(), undefined);
  avg.add(6);
  assert.equal(avg.get(), 6, "after expiry an add starts a new accumulator");

  sum.setCurrentNamespace("old");
  sum.add(1000);
  now += 50;
  sum.setCurrentNamespace("young");
  sum.add(1);
  sum.setCurrentNamespace("target");
  sum.add(10);
  now += 50;
  sum.mergeNamespaces("target", ["old", "young"]);
  assert.equal(sum.get(), 11, "the expired source is left out");
  now += 99;
  assert.equal(sum.get(), 11, "the merged value is stamped with the merge time");
  const snap = b.snapshotCanonical();
  assert.deepEqual(snap.states["sum"]!.keyGroups[0]!.namespaces, [
    { namespace: "target", keys: ["k"], values: [11], timestamps: [1_398] },
  ]);
  now += 1;
  assert.equal(sum.get(), undefined);
});

Deno.test("restoring a TTL reducing state snapshot keeps its last-access times", () => {
  let now = 0;
  const descriptor = new ReducingStateDescriptor<number>("sum", (a, x) => a + x, {
    ttl: { ttlMs: 10 },
  });
  const b = backend({ clock: () => now });
  const sum = b.getReducingState(descriptor);
  b.setCurrentKey("k");
  sum.add(5);
  now = 6;
  const restored = backend({ clock: () => now });
  restored.restoreCanonical([b.snapshotCanonical() as KeyedStateSnapshot]);
  const sum2 = restored.getReducingState(descriptor);
  restored.setCurrentKey("k");
  assert.equal(sum2.get(), 5);
  now = 10;
  assert.equal(sum2.get(), undefined);
});
