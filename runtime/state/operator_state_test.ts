import assert from "node:assert/strict";
import { decode, encode } from "../actor/codec.ts";
import { ListStateDescriptor } from "../api/state.ts";
import {
  DefaultOperatorStateStore,
  type OperatorStateSnapshot,
  redistributeOperatorState,
} from "./operator_state.ts";

const offsets = new ListStateDescriptor<number>("offsets");
const config = new ListStateDescriptor<string>("config");

Deno.test("the seed example's operator ListState counts 1 2 3 4 5", () => {
  const store = new DefaultOperatorStateStore();
  const count = store.getListState(new ListStateDescriptor<number>("count"));
  const out: number[] = [];
  for (let i = 0; i < 5; i++) {
    const n = (count.get()[0] ?? 0) + 1;
    count.update([n]);
    out.push(n);
  }
  assert.deepEqual(out, [1, 2, 3, 4, 5]);
});

Deno.test("list states add, replace and clear; snapshot() copies them", () => {
  const store = new DefaultOperatorStateStore();
  assert.ok(!store.isRestored);
  const split = store.getListState(offsets);
  const union = store.getUnionListState(config);
  split.add(1);
  split.addAll([2, 3]);
  union.update(["a"]);
  const snap = store.snapshot();
  assert.deepEqual(snap, {
    offsets: { mode: "split", items: [1, 2, 3] },
    config: { mode: "union", items: ["a"] },
  });
  split.add(4);
  union.clear();
  assert.deepEqual(snap["offsets"]!.items, [1, 2, 3]);
  assert.deepEqual(snap["config"]!.items, ["a"]);
  assert.deepEqual(split.get(), [1, 2, 3, 4]);
  assert.deepEqual(union.get(), []);
  assert.throws(() => split.add(undefined as unknown as number), TypeError);
});

Deno.test("getting a name twice returns the same object; the other mode throws", () => {
  const store = new DefaultOperatorStateStore();
  const a = store.getListState(offsets);
  assert.equal(store.getListState(offsets), a);
  assert.throws(
    () => store.getUnionListState(new ListStateDescriptor<number>("offsets")),
    /'offsets' is registered with getListState \(split redistribution\): cannot get it with getUnionListState/,
  );
  assert.throws(
    () => store.getListState(new ListStateDescriptor<number>("t", { ttl: { ttlMs: 5 } })),
    /cannot have a TTL/,
  );
});

Deno.test("a restored store hands back its lists and keeps unregistered ones", () => {
  const restored: OperatorStateSnapshot = {
    offsets: { mode: "split", items: [5, 6] },
    config: { mode: "union", items: ["x"] },
  };
  const store = new DefaultOperatorStateStore(restored);
  assert.ok(store.isRestored);
  assert.ok(new DefaultOperatorStateStore({}).isRestored);
  const list = store.getListState(offsets);
  assert.deepEqual(list.get(), [5, 6]);
  list.add(7);
  assert.deepEqual(restored["offsets"]!.items, [5, 6], "the restored snapshot is not changed");
  assert.deepEqual(store.snapshot(), {
    offsets: { mode: "split", items: [5, 6, 7] },
    config: { mode: "union", items: ["x"] },
  });
  assert.throws(
    () => store.getListState(new ListStateDescriptor<string>("config")),
    /'config' is restored with getUnionListState/,
  );
});

Deno.test("a snapshot survives a MessagePack round trip", () => {
  const store = new DefaultOperatorStateStore();
  store.getListState(offsets).update([1, 2]);
  store.getUnionListState(config).add("c");
  const decoded = decode(encode(store.snapshot())) as OperatorStateSnapshot;
  assert.deepEqual(new DefaultOperatorStateStore(decoded).snapshot(), store.snapshot());
});

Deno.test("a state named __proto__ is an own property of the snapshot", () => {
  const store = new DefaultOperatorStateStore();
  store.getListState(new ListStateDescriptor<number>("__proto__")).add(1);
  const snap = store.snapshot();
  assert.ok(Object.hasOwn(snap, "__proto__"));
  assert.deepEqual(Object.keys(snap), ["__proto__"]);
  const again = new DefaultOperatorStateStore(snap);
  assert.deepEqual(again.getListState(new ListStateDescriptor<number>("__proto__")).get(), [1]);
});

/** Old subtasks' snapshots: split lists of uneven lengths and one union list each. */
function oldSnapshots(): OperatorStateSnapshot[] {
  return [
    { offsets: { mode: "split", items: [1, 2, 3] }, config: { mode: "union", items: ["a"] } },
    { offsets: { mode: "split", items: [4] }, config: { mode: "union", items: ["b"] } },
    { offsets: { mode: "split", items: [] }, config: { mode: "union", items: ["c", "d"] } },
  ];
}

Deno.test("at the same parallelism each subtask gets exactly its own split list back", () => {
  const old = oldSnapshots();
  for (let i = 0; i < 3; i++) {
    const mine = redistributeOperatorState(old, 3, i);
    assert.deepEqual(mine["offsets"], old[i]!["offsets"]);
    assert.deepEqual(mine["config"], { mode: "union", items: ["a", "b", "c", "d"] });
  }
});

Deno.test("scaling out splits the concatenated lists into contiguous even shares", () => {
  const old = oldSnapshots();
  const shares = [0, 1, 2, 3, 4].map((i) => redistributeOperatorState(old, 5, i)["offsets"]!.items);
  assert.deepEqual(shares, [[1], [2], [3], [4], []]);
  const two = [0, 1].map((i) => redistributeOperatorState(old, 2, i)["offsets"]!.items);
  assert.deepEqual(two, [[1, 2], [3, 4]]);
});

Deno.test("a split list of n items over p subtasks gives every item to exactly one subtask", () => {
  const items = Array.from({ length: 23 }, (_, i) => i);
  const old: OperatorStateSnapshot[] = [
    { s: { mode: "split", items: items.slice(0, 10) } },
    { s: { mode: "split", items: items.slice(10) } },
  ];
  for (const p of [1, 3, 4, 7, 23, 30]) {
    const shares = Array.from({ length: p }, (_, i) => redistributeOperatorState(old, p, i)["s"]!);
    assert.deepEqual(shares.flatMap((s) => s.items), items, `p=${p}`);
    const sizes = shares.map((s) => s.items.length);
    assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `p=${p}: ${sizes}`);
  }
});

Deno.test("union lists go whole to every subtask at any parallelism", () => {
  const old = oldSnapshots();
  for (const p of [1, 2, 4]) {
    for (let i = 0; i < p; i++) {
      assert.deepEqual(redistributeOperatorState(old, p, i)["config"]!.items, ["a", "b", "c", "d"]);
    }
  }
});

Deno.test("redistributeOperatorState() does not alias or change its inputs", () => {
  const old = oldSnapshots();
  const copy = structuredClone(old);
  const mine = redistributeOperatorState(old, 3, 0);
  (mine["offsets"]!.items as number[]).push(99);
  (redistributeOperatorState(old, 1, 0)["config"]!.items as string[]).push("z");
  assert.deepEqual(old, copy);
});

Deno.test("redistributeOperatorState() rejects bad arguments and mixed modes", () => {
  assert.throws(
    () => redistributeOperatorState([], 0, 0),
    /'newParallelism' must be an integer >= 1: current value is 0/,
  );
  assert.throws(
    () => redistributeOperatorState([], 2, 2),
    /'newIndex' must be an integer in \[0, 1\]: current value is 2/,
  );
  assert.throws(
    () =>
      redistributeOperatorState(
        [
          { x: { mode: "split", items: [] } },
          { x: { mode: "union", items: [] } },
        ],
        2,
        0,
      ),
    /'x' is split in one old subtask's snapshot and union in another/,
  );
  assert.deepEqual(redistributeOperatorState([], 2, 1), {});
});
