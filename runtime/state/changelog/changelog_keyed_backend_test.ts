/**
 * Tests of {@linkcode ChangelogKeyedStateBackend} beyond the conformance
 * suite: what each checkpoint uploads and refers to, materialization, restore
 * from any retained checkpoint (a fast-check property against a model),
 * rescale 2 -> 3, savepoints into the bare heap backend, and faults (a failed
 * segment or materialization write, damaged blobs).
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ValueStateDescriptor,
} from "../../api/state.ts";
import { HeapKeyedStateBackend } from "../heap_keyed_backend.ts";
import { type Key, KeyGroupRange } from "../key_group.ts";
import type { StateHandle, StateWriter } from "../../checkpoint/snapshot_contract.ts";
import { FakeClock, MemoryBlobStore, MUTATING_SUM, rangesOf } from "../_conformance_kit.ts";
import { fuzzRuns } from "../../../tests/_fuzz.ts";
import { ChangelogKeyedStateBackend } from "./changelog_keyed_backend.ts";
import type { MaterializationOptions } from "./materialization_policy.ts";

const MAX_P = 128;
const ALL = new KeyGroupRange(0, MAX_P - 1);
const UID = "op";

function changelog(
  clock: FakeClock,
  materialization: Partial<MaterializationOptions>,
  range: KeyGroupRange = ALL,
  decisions: string[] = [],
): ChangelogKeyedStateBackend {
  return new ChangelogKeyedStateBackend({
    inner: new HeapKeyedStateBackend({ keyGroupRange: range, maxParallelism: MAX_P }),
    materialization,
    clock: clock.read,
    onDecision: (_id, d) => decisions.push(d.action),
  });
}

const NEVER = { intervalMs: Infinity, maxChangelogRatio: Infinity } as const;

function values(backend: ChangelogKeyedStateBackend | HeapKeyedStateBackend, keys: Key[]) {
  const v = backend.getValueState(new ValueStateDescriptor<number>("v"));
  return keys.map((k) => {
    backend.setCurrentKey(k);
    return v.value();
  });
}

async function checkpoint(
  store: MemoryBlobStore,
  backend: ChangelogKeyedStateBackend,
  id: number,
): Promise<StateHandle[]> {
  return await backend.snapshot(id, "checkpoint", UID).write(store.writer(id, "checkpoint"));
}

Deno.test("a checkpoint after a few changes uploads one small segment and refers to the rest", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const decisions: string[] = [];
  const b = changelog(clock, { intervalMs: 60_000, minChangelogBytes: 0 }, ALL, decisions);
  const v = b.getValueState(new ValueStateDescriptor<string>("v"));
  for (let i = 0; i < 10_000; i++) {
    b.setCurrentKey(i);
    v.update("x".repeat(50));
  }
  const first = await checkpoint(store, b, 1); // the changelog outgrew the empty base: materialize
  assert.deepEqual(decisions, ["materialize"]);
  assert.equal(first.length, 1);
  assert.equal(first[0]!.kind, "keyed");
  assert.equal(first[0]!.shared, true);
  assert.ok(first[0]!.bytes > 500_000, `materialization is ${first[0]!.bytes} bytes`);
  for (let i = 0; i < 100; i++) {
    b.setCurrentKey(i);
    v.update("y");
  }
  const second = await checkpoint(store, b, 2);
  assert.deepEqual(decisions, ["materialize", "append"]);
  assert.deepEqual(second.map((h) => h.kind), ["keyed", "keyed-incremental"]);
  assert.equal(second[0]!.path, first[0]!.path);
  assert.ok(second[1]!.bytes < 3_000, `segment is ${second[1]!.bytes} bytes`);
  assert.ok(second.every((h) => h.shared && h.keyGroupRange?.[1] === MAX_P - 1));
  const third = await checkpoint(store, b, 3); // nothing changed: the same handles, nothing written
  assert.deepEqual(third.map((h) => h.path), second.map((h) => h.path));
  assert.equal(store.paths().length, 2);
  await b.dispose();
});

Deno.test("materialization by interval drops older segments from later checkpoints", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const b = changelog(clock, { intervalMs: 1000, maxChangelogRatio: Infinity });
  const v = b.getValueState(new ValueStateDescriptor<number>("v"));
  const write = (id: number) => {
    b.setCurrentKey(id % 7);
    v.update(id);
  };
  write(1);
  const h1 = await checkpoint(store, b, 1);
  write(2);
  const h2 = await checkpoint(store, b, 2);
  assert.deepEqual(h1.map((h) => h.kind), ["keyed-incremental"]);
  assert.deepEqual(h2.map((h) => h.kind), ["keyed-incremental", "keyed-incremental"]);
  clock.now = 1000;
  write(3);
  const h3 = await checkpoint(store, b, 3);
  assert.deepEqual(h3.map((h) => h.kind), ["keyed"]);
  write(4);
  const h4 = await checkpoint(store, b, 4);
  assert.deepEqual(h4.map((h) => h.kind), ["keyed", "keyed-incremental"]);
  assert.ok(!h4.some((h) => h1.concat(h2).some((old) => old.path === h.path)));
  for (
    const [handles, expected] of [[h2, [undefined, 1, 2, undefined, undefined]], [h4, [
      undefined,
      1,
      2,
      3,
      4,
    ]]] as const
  ) {
    const r = changelog(clock, NEVER);
    await r.restore(handles, store.read);
    assert.deepEqual(values(r, [0, 1, 2, 3, 4]), expected);
    await r.dispose();
  }
  await b.dispose();
});

Deno.test("a materialization written while a later snapshot was captured is not adopted (chaos_incremental_test, seed 1610634379)", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const b = changelog(clock, { intervalMs: 1000, maxChangelogRatio: Infinity });
  const v = b.getValueState(new ValueStateDescriptor<number>("v"));
  b.setCurrentKey("a");
  v.update(1);
  await checkpoint(store, b, 1);
  clock.now = 1000;
  v.update(2);
  const materializing = b.snapshot(2, "checkpoint", UID); // materializes
  b.setCurrentKey("b");
  v.update(3);
  // Checkpoint 3's snapshot is captured before 2's write ended (concurrent
  // checkpoints, or 2 aborted while its write ran): it cannot refer to 2's
  // materialization, so the shared state registry may release it with 2.
  const third = b.snapshot(3, "checkpoint", UID);
  const h2 = await materializing.write(store.writer(2, "checkpoint"));
  assert.deepEqual(h2.map((h) => h.kind), ["keyed"]);
  const h3 = await third.write(store.writer(3, "checkpoint"));
  v.update(4);
  const h4 = await checkpoint(store, b, 4);
  for (const later of [h3, h4]) {
    assert.ok(!later.some((h) => h.path === h2[0]!.path), "2's materialization is not reused");
    const r = changelog(clock, NEVER);
    await r.restore(later, store.read);
    assert.deepEqual(values(r, ["a", "b"]), later === h3 ? [2, 3] : [2, 4]);
    await r.dispose();
  }
  await b.dispose();
});

Deno.test("a segment whose write failed is written by the next checkpoint", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const b = changelog(clock, NEVER);
  const v = b.getValueState(new ValueStateDescriptor<number>("v"));
  b.setCurrentKey("a");
  v.update(1);
  const failing: StateWriter = {
    ...store.writer(1, "checkpoint"),
    checkpointId: 1,
    type: "checkpoint",
    cancelled: false,
    writePrivate: () => Promise.reject(new Error("unexpected private write")),
    writeShared: () => Promise.reject(new Error("storage is down")),
  };
  await assert.rejects(b.snapshot(1, "checkpoint", UID).write(failing), /storage is down/);
  b.setCurrentKey("b");
  v.update(2);
  const handles = await checkpoint(store, b, 2);
  assert.equal(handles.length, 2);
  const r = changelog(clock, NEVER);
  await r.restore(handles, store.read);
  assert.deepEqual(values(r, ["a", "b"]), [1, 2]);
  await Promise.all([b.dispose(), r.dispose()]);
});

Deno.test("a failed materialization leaves the previous chain in use", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const decisions: string[] = [];
  const b = changelog(clock, { intervalMs: 1000, maxChangelogRatio: Infinity }, ALL, decisions);
  const v = b.getValueState(new ValueStateDescriptor<number>("v"));
  b.setCurrentKey("a");
  v.update(1);
  await checkpoint(store, b, 1);
  clock.now = 1000;
  b.setCurrentKey("b");
  v.update(2);
  const writer = store.writer(2, "checkpoint");
  const failing: StateWriter = {
    checkpointId: 2,
    type: "checkpoint",
    cancelled: false,
    writePrivate: (...a) => writer.writePrivate(...a),
    writeShared: (name) =>
      name.startsWith("materialization")
        ? Promise.reject(new Error("disk full"))
        : Promise.reject(new Error(`unexpected ${name}`)),
  };
  const materializing = b.snapshot(2, "checkpoint", UID);
  b.setCurrentKey("c");
  v.update(3);
  const during = b.snapshot(3, "checkpoint", UID); // taken while the materialization is in flight
  await assert.rejects(materializing.write(failing), /disk full/);
  const h3 = await during.write(store.writer(3, "checkpoint"));
  assert.deepEqual(decisions, ["append", "materialize", "append"]);
  assert.ok(h3.every((h) => h.kind === "keyed-incremental"));
  const r = changelog(clock, NEVER);
  await r.restore(h3, store.read);
  assert.deepEqual(values(r, ["a", "b", "c"]), [1, 2, 3]);
  await Promise.all([b.dispose(), r.dispose()]);
});

Deno.test("a restore of the same key groups keeps referring to the chain; a rescale materializes", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const b = changelog(clock, NEVER);
  const v = b.getValueState(new ValueStateDescriptor<number>("v"));
  b.setCurrentKey("a");
  v.update(1);
  const h1 = await checkpoint(store, b, 1);
  const decisions: string[] = [];
  const same = changelog(clock, NEVER, ALL, decisions);
  await same.restore(h1, store.read);
  const h2 = await checkpoint(store, same, 2);
  assert.deepEqual(h2.map((h) => h.path), h1.map((h) => h.path));
  const [left] = rangesOf(MAX_P, 2);
  const half = changelog(clock, NEVER, left, decisions);
  await half.restore(h1, store.read);
  const h3 = await checkpoint(store, half, 3);
  assert.deepEqual(decisions, ["append", "materialize"]);
  assert.deepEqual(h3.map((h) => [h.kind, h.keyGroupRange]), [["keyed", [0, 63]]]);
  await Promise.all([b.dispose(), same.dispose(), half.dispose()]);
});

Deno.test("switching incremental checkpoints on: a full heap checkpoint restores, and the first checkpoint materializes", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const heap = new HeapKeyedStateBackend({ keyGroupRange: ALL, maxParallelism: MAX_P });
  const v = heap.getValueState(new ValueStateDescriptor<number>("v"));
  heap.setCurrentKey("a");
  v.update(1);
  const full = await heap.snapshot(1, "checkpoint", UID).write(store.writer(1, "checkpoint"));
  assert.deepEqual(full.map((h) => [h.kind, h.shared]), [["keyed", false]]);
  const decisions: string[] = [];
  const b = changelog(clock, NEVER, ALL, decisions);
  await b.restore(full, store.read);
  assert.deepEqual(values(b, ["a"]), [1]);
  // The private blob goes with checkpoint 1: the changelog cannot build on it.
  const h2 = await checkpoint(store, b, 2);
  assert.deepEqual(decisions, ["materialize"]);
  assert.deepEqual(h2.map((h) => [h.kind, h.shared]), [["keyed", true]]);
  await Promise.all([heap.dispose(), b.dispose()]);
});

Deno.test("rescale 2 -> 3 from segments and materializations keeps every key once", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const keys = Array.from({ length: 2000 }, (_, i) => `key-${i}`);
  const old = rangesOf(MAX_P, 2).map((range, i) =>
    changelog(clock, i === 0 ? { intervalMs: 0 } : NEVER, range)
  );
  const handles: StateHandle[] = [];
  for (let round = 0; round < 3; round++) {
    for (const k of keys) {
      const b = old.find((b) => b.keyGroupRange.contains(assign(k)))!;
      b.setCurrentKey(k);
      const v = b.getValueState(new ValueStateDescriptor<number>("v"));
      const l = b.getListState(new ListStateDescriptor<number>("l"));
      v.update(round);
      l.add(round);
    }
    handles.length = 0;
    for (const b of old) handles.push(...await checkpoint(store, b, round + 1));
  }
  assert.ok(
    handles.some((h) => h.kind === "keyed") && handles.some((h) => h.kind === "keyed-incremental"),
  );
  const seen = new Map<Key, number>();
  for (const range of rangesOf(MAX_P, 3)) {
    const r = changelog(clock, NEVER, range);
    await r.restore(handles, store.read);
    const v = r.getValueState(new ValueStateDescriptor<number>("v"));
    const l = r.getListState(new ListStateDescriptor<number>("l"));
    for (const k of r.keys("v")) {
      r.setCurrentKey(k);
      seen.set(k, (seen.get(k) ?? 0) + 1);
      assert.equal(v.value(), 2);
      assert.deepEqual([...l.get()], [0, 1, 2]);
    }
    await r.dispose();
  }
  assert.equal(seen.size, keys.length);
  assert.ok([...seen.values()].every((n) => n === 1));
  await Promise.all(old.map((b) => b.dispose()));
});

function assign(key: string): number {
  const probe = new HeapKeyedStateBackend({ keyGroupRange: ALL, maxParallelism: MAX_P });
  probe.setCurrentKey(key);
  return probe.currentKeyGroup;
}

Deno.test("a savepoint is the inner canonical snapshot: private, and restorable by the bare heap backend", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const b = changelog(clock, NEVER);
  const v = b.getValueState(new ValueStateDescriptor<number>("v"));
  const m = b.getMapState(new MapStateDescriptor<string, number>("m"));
  const agg = b.getAggregatingState(new AggregatingStateDescriptor("agg", MUTATING_SUM));
  b.setCurrentKey("a");
  v.update(1);
  m.put("x", 1);
  agg.add(5);
  await checkpoint(store, b, 1);
  agg.add(6);
  m.remove("x");
  m.put("y", 2);
  const handles = await b.snapshot(2, "savepoint", UID).write(store.writer(2, "savepoint"));
  assert.deepEqual(handles.map((h) => [h.kind, h.shared]), [["keyed", false]]);
  const heap = new HeapKeyedStateBackend({ keyGroupRange: ALL, maxParallelism: MAX_P });
  await heap.restore(handles, store.read);
  heap.setCurrentKey("a");
  assert.equal(heap.getValueState(new ValueStateDescriptor<number>("v")).value(), 1);
  assert.deepEqual(heap.getMapState(new MapStateDescriptor<string, number>("m")).entries(), [[
    "y",
    2,
  ]]);
  assert.equal(
    heap.getAggregatingState(new AggregatingStateDescriptor("agg", MUTATING_SUM)).get(),
    11,
  );
  // The savepoint consumed nothing: the next checkpoint still carries the changes since checkpoint 1.
  const h3 = await checkpoint(store, b, 3);
  const r = changelog(clock, NEVER);
  await r.restore(h3, store.read);
  r.setCurrentKey("a");
  assert.deepEqual(r.getMapState(new MapStateDescriptor<string, number>("m")).entries(), [[
    "y",
    2,
  ]]);
  assert.equal(
    r.getAggregatingState(new AggregatingStateDescriptor("agg", MUTATING_SUM)).get(),
    11,
  );
  await Promise.all([b.dispose(), heap.dispose(), r.dispose()]);
});

Deno.test("the bare heap backend refuses a changelog checkpoint, naming the segment", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const b = changelog(clock, NEVER);
  b.getValueState(new ValueStateDescriptor<number>("v"));
  b.setCurrentKey("a");
  b.getValueState(new ValueStateDescriptor<number>("v")).update(1);
  const handles = await checkpoint(store, b, 1);
  const heap = new HeapKeyedStateBackend({ keyGroupRange: ALL, maxParallelism: MAX_P });
  await assert.rejects(heap.restore(handles, store.read), new RegExp(handles[0]!.path));
  await Promise.all([b.dispose(), heap.dispose()]);
});

Deno.test("restore refuses damaged segments, another max parallelism and foreign kinds, naming the handle", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const b = changelog(clock, NEVER);
  b.setCurrentKey("a");
  b.getValueState(new ValueStateDescriptor<number>("v")).update(1);
  const [segment] = await checkpoint(store, b, 1);
  const fresh = () => changelog(clock, NEVER);
  await assert.rejects(
    fresh().restore([{ ...segment!, kind: "timers" }], store.read),
    /'shared\/.*changelog-op-.*' .* current value is 'timers'/,
  );
  const other = new ChangelogKeyedStateBackend({
    inner: new HeapKeyedStateBackend({
      keyGroupRange: new KeyGroupRange(0, 255),
      maxParallelism: 256,
    }),
  });
  await assert.rejects(
    other.restore([segment!], store.read),
    /max parallelism 128, restoring with 256/,
  );
  store.corrupt(segment!.path, new Uint8Array([0xc1, 2, 3]));
  await assert.rejects(fresh().restore([segment!], store.read), /bytes do not decode/);
  store.corrupt(segment!.path, new Uint8Array([0x90])); // an empty array: valid MessagePack
  await assert.rejects(fresh().restore([segment!], store.read), /not a changelog segment/);
  await b.dispose();
});

Deno.test("window merges of aggregating and list state survive a changelog round trip", async () => {
  const clock = new FakeClock(0);
  const store = new MemoryBlobStore();
  const b = changelog(clock, NEVER);
  const agg = b.getAggregatingState(new AggregatingStateDescriptor("agg", MUTATING_SUM));
  const list = b.getListState(new ListStateDescriptor<number>("list"));
  b.setCurrentKey("k");
  for (const [ns, x] of [["w1", 1], ["w2", 2], ["w3", 4]] as const) {
    agg.setCurrentNamespace(ns);
    agg.add(x);
    list.setCurrentNamespace(ns);
    list.add(x);
  }
  await checkpoint(store, b, 1);
  agg.mergeNamespaces("w1", ["w1", "w2"]);
  list.mergeNamespaces("w1", ["w1", "w2"]);
  agg.mergeNamespaces("w9", ["w3"]); // into an empty target
  agg.mergeNamespaces("w8", ["nothing"]); // nothing to merge: no entry appears
  const handles = await checkpoint(store, b, 2);
  const r = changelog(clock, NEVER);
  await r.restore(handles, store.read);
  const ragg = r.getAggregatingState(new AggregatingStateDescriptor("agg", MUTATING_SUM));
  const rlist = r.getListState(new ListStateDescriptor<number>("list"));
  r.setCurrentKey("k");
  assert.deepEqual([...r.keysAndNamespaces("agg")].map(([, ns]) => ns).sort(), ["w1", "w9"]);
  ragg.setCurrentNamespace("w1");
  assert.equal(ragg.get(), 3);
  ragg.setCurrentNamespace("w9");
  assert.equal(ragg.get(), 4);
  rlist.setCurrentNamespace("w1");
  assert.deepEqual([...rlist.get()], [1, 2]);
  await Promise.all([b.dispose(), r.dispose()]);
});

type Op =
  | { op: "put"; key: number; value: number }
  | { op: "clear"; key: number }
  | { op: "add"; key: number; value: number }
  | { op: "mput"; key: number; uk: string; value: number }
  | { op: "mremove"; key: number; uk: string }
  | { op: "tick"; ms: number }
  | { op: "checkpoint" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("put" as const), key: fc.nat(5), value: fc.integer() }),
  fc.record({ op: fc.constant("clear" as const), key: fc.nat(5) }),
  fc.record({ op: fc.constant("add" as const), key: fc.nat(5), value: fc.nat(9) }),
  fc.record({
    op: fc.constant("mput" as const),
    key: fc.nat(5),
    uk: fc.constantFrom("a", "b", "c"),
    value: fc.nat(),
  }),
  fc.record({
    op: fc.constant("mremove" as const),
    key: fc.nat(5),
    uk: fc.constantFrom("a", "b"),
  }),
  fc.record({ op: fc.constant("tick" as const), ms: fc.nat(600) }),
  fc.constant({ op: "checkpoint" as const }),
);

interface Model {
  v: Map<number, number>;
  l: Map<number, number[]>;
  m: Map<number, Map<string, number>>;
}

function copyModel(m: Model): Model {
  return {
    v: new Map(m.v),
    l: new Map([...m.l].map(([k, xs]) => [k, [...xs]])),
    m: new Map([...m.m].map(([k, mm]) => [k, new Map(mm)])),
  };
}

Deno.test("restore from any retained checkpoint gives the exact state at that checkpoint (property)", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(opArb, { minLength: 10, maxLength: 120, size: "max" }),
      fc.record({
        intervalMs: fc.constantFrom(500, 2000, Infinity),
        ratio: fc.constantFrom(0.5, 2),
      }),
      async (ops, policy) => {
        const clock = new FakeClock(0);
        const store = new MemoryBlobStore();
        const b = changelog(clock, {
          intervalMs: policy.intervalMs,
          maxChangelogRatio: policy.ratio,
          minChangelogBytes: 0,
        });
        const v = b.getValueState(new ValueStateDescriptor<number>("v"));
        const l = b.getListState(new ListStateDescriptor<number>("l"));
        const m = b.getMapState(new MapStateDescriptor<string, number>("m"));
        const model: Model = { v: new Map(), l: new Map(), m: new Map() };
        const retained: { handles: StateHandle[]; model: Model }[] = [];
        let id = 0;
        for (const o of [...ops, { op: "checkpoint" } as const]) {
          if (o.op === "tick") clock.now += o.ms;
          else if (o.op === "checkpoint") {
            id++;
            retained.push({ handles: await checkpoint(store, b, id), model: copyModel(model) });
          } else {
            b.setCurrentKey(o.key);
            if (o.op === "put") {
              v.update(o.value);
              model.v.set(o.key, o.value);
            } else if (o.op === "clear") {
              v.clear();
              l.clear();
              m.clear();
              model.v.delete(o.key);
              model.l.delete(o.key);
              model.m.delete(o.key);
            } else if (o.op === "add") {
              l.add(o.value);
              model.l.set(o.key, [...model.l.get(o.key) ?? [], o.value]);
            } else if (o.op === "mput") {
              m.put(o.uk, o.value);
              const mm = model.m.get(o.key) ?? new Map();
              model.m.set(o.key, mm.set(o.uk, o.value));
            } else {
              m.remove(o.uk);
              model.m.get(o.key)?.delete(o.uk);
              if (model.m.get(o.key)?.size === 0) model.m.delete(o.key);
            }
          }
        }
        for (const { handles, model: expected } of retained) {
          const r = changelog(clock, NEVER);
          await r.restore(handles, store.read);
          const rv = r.getValueState(new ValueStateDescriptor<number>("v"));
          const rl = r.getListState(new ListStateDescriptor<number>("l"));
          const rm = r.getMapState(new MapStateDescriptor<string, number>("m"));
          for (let k = 0; k <= 5; k++) {
            r.setCurrentKey(k);
            assert.equal(rv.value(), expected.v.get(k));
            assert.deepEqual([...rl.get()], expected.l.get(k) ?? []);
            assert.deepEqual(
              new Map(rm.entries()),
              expected.m.get(k) ?? new Map(),
            );
          }
          await r.dispose();
        }
        await b.dispose();
      },
    ),
    { numRuns: fuzzRuns(60) },
  );
});
