/**
 * Copy-on-write snapshots of {@linkcode HeapKeyedStateBackend}
 * (`_heap_cow.ts`): the blob `write()` builds in slices is the canonical
 * snapshot; whole-table changes while a snapshot is in flight (event time
 * starting, a TTL enabled at registration) do not reach it; aborted,
 * cancelled and failed writes release the capture.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "../api/state.ts";
import { HeapKeyedStateBackend } from "./heap_keyed_backend.ts";
import { KeyGroupRange } from "./key_group.ts";
import { decode, encode } from "../actor/codec.ts";
import { yieldToEventLoop } from "../actor/async.ts";
import { FakeClock, MemoryBlobStore, MUTATING_SUM } from "./_conformance_kit.ts";
import type { SnapshotResult } from "../checkpoint/snapshot_contract.ts";

const RANGE = new KeyGroupRange(0, 127);

function backend(clock = new FakeClock(1000), watermark = new FakeClock(-Infinity)) {
  return new HeapKeyedStateBackend({
    keyGroupRange: RANGE,
    maxParallelism: 128,
    clock: clock.read,
    eventTimeClock: watermark.read,
  });
}

async function blobOf(result: SnapshotResult, store = new MemoryBlobStore()): Promise<unknown> {
  const handles = await result.write(store.writer(1, "checkpoint"));
  assert.equal(handles.length, 1);
  return decode(await store.read(handles[0]!));
}

Deno.test("the copy-on-write blob decodes to exactly what snapshotCanonical() captures", async () => {
  const clock = new FakeClock(1000);
  const b = backend(clock);
  const ttl = { ttlMs: 100 };
  const s = {
    value: b.getValueState(new ValueStateDescriptor<number>("value")),
    list: b.getListState(new ListStateDescriptor<string>("list")),
    map: b.getMapState(new MapStateDescriptor<string, number>("map")),
    reducing: b.getReducingState(new ReducingStateDescriptor<number>("reducing", (x, y) => x + y)),
    aggregating: b.getAggregatingState(new AggregatingStateDescriptor("aggregating", MUTATING_SUM)),
    ttlValue: b.getValueState(new ValueStateDescriptor<number>("ttl-value", { ttl })),
    ttlList: b.getListState(new ListStateDescriptor<number>("ttl-list", { ttl })),
    ttlMap: b.getMapState(new MapStateDescriptor<string, number>("ttl-map", { ttl })),
  };
  for (let i = 0; i < 3000; i++) {
    b.setCurrentKey(i % 4 === 0 ? ["k", i] : `k${i}`);
    clock.now = 1000 + (i % 150); // some TTL entries expire before the snapshot
    s.value.update(i);
    s.list.add(`e${i}`);
    s.map.put("a", i);
    s.reducing.add(i);
    s.aggregating.add(i);
    s.ttlValue.update(i);
    s.ttlList.add(i);
    s.ttlMap.put("x", i);
    if (i % 7 === 0) {
      for (const state of Object.values(s)) state.setCurrentNamespace(`w${i % 3}`);
      s.value.update(-i - 1);
      s.list.add("n");
      s.ttlList.add(i);
      for (const state of Object.values(s)) state.setCurrentNamespace("");
    }
  }
  clock.now = 1200;
  const blob = await blobOf(b.snapshot(1, "checkpoint", "op"));
  assert.deepEqual(blob, b.snapshotCanonical());
});

Deno.test("write() yields to the event loop while it copies 200k entries", async () => {
  const b = backend();
  const v = b.getValueState(new ValueStateDescriptor<number>("v"));
  for (let i = 0; i < 200_000; i++) {
    b.setCurrentKey(i);
    v.update(i);
  }
  const result = b.snapshot(1, "checkpoint", "op");
  let ticks = 0;
  let done = false;
  const writing = blobOf(result).finally(() => done = true);
  while (!done) {
    ticks++;
    await yieldToEventLoop();
  }
  await writing;
  assert.ok(ticks > 1, `the event loop turned ${ticks} time(s) while write() ran`);
});

Deno.test("event time starting while a snapshot is in flight does not restamp the snapshot's cells", async () => {
  const watermark = new FakeClock(-Infinity);
  const b = backend(new FakeClock(0), watermark);
  const ttl = { ttlMs: 100, timeCharacteristic: "EventTime" } as const;
  const v = b.getValueState(new ValueStateDescriptor<number>("v", { ttl }));
  for (let i = 0; i < 100; i++) {
    b.setCurrentKey(i);
    v.update(i); // accessed before event time started: -Infinity
  }
  const before = b.snapshotCanonical();
  const result = b.snapshot(1, "checkpoint", "op");
  watermark.now = 5000;
  b.setCurrentKey(1);
  assert.equal(v.value(), 1); // starts event time: every cell is stamped 5000
  const blob = (await blobOf(result)) as typeof before;
  assert.deepEqual(blob, before);
  assert.ok(blob.states["v"]!.keyGroups.every((g) => g.timestamps!.every((t) => t === -Infinity)));
});

Deno.test("a TTL enabled at registration while a snapshot is in flight does not reach the snapshot", async () => {
  const old = backend();
  const v = old.getValueState(new ValueStateDescriptor<number>("v"));
  for (let i = 0; i < 50; i++) {
    old.setCurrentKey(i);
    v.update(i);
  }
  const restored = backend();
  restored.restoreCanonical([old.snapshotCanonical()]);
  const before = restored.snapshotCanonical();
  const result = restored.snapshot(1, "checkpoint", "op");
  restored.getValueState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 10 } }));
  assert.deepEqual(await blobOf(result), before);
});

Deno.test("a discarded, a cancelled and a failed snapshot release their capture", async () => {
  const b = backend();
  const v = b.getValueState(new ValueStateDescriptor<unknown>("v"));
  for (let i = 0; i < 20_000; i++) {
    b.setCurrentKey(i);
    v.update(i);
  }
  const discarded = b.snapshot(1, "checkpoint", "op");
  discarded.discard!();
  await assert.rejects(() => blobOf(discarded), /discarded/);

  const store = new MemoryBlobStore();
  const writer = store.writer(2, "checkpoint");
  const cancelled = b.snapshot(2, "checkpoint", "op");
  const writing = cancelled.write(writer);
  writer.cancelled = true;
  assert.deepEqual(await writing, []);
  assert.deepEqual(store.paths(), []);

  b.setCurrentKey(3);
  v.update(Symbol("not encodable"));
  const failing = b.snapshot(3, "checkpoint", "op");
  await assert.rejects(() => blobOf(failing), /encode/i);
  v.update(3);

  // Nothing of the three is left registered: the next snapshot is the live state.
  b.setCurrentKey(4);
  v.update(-4);
  const blob = await blobOf(b.snapshot(4, "checkpoint", "op"));
  assert.deepEqual(blob, b.snapshotCanonical());
});

const key = (i: number) => i % 3 === 0 ? ["t", i] : i;

Deno.test("a snapshot keeps the capture's keys when keys are created, touched again, removed and re-added before their key group is copied", async () => {
  const b = backend();
  const value = b.getValueState(new ValueStateDescriptor<number>("value"));
  const list = b.getListState(new ListStateDescriptor<number>("list"));
  for (let i = 0; i < 2000; i++) {
    b.setCurrentKey(key(i));
    value.update(i);
    list.add(i);
  }
  const expected = b.snapshotCanonical();
  const result = b.snapshot(1, "checkpoint", "op");
  for (let i = 2000; i < 3000; i++) {
    b.setCurrentKey(key(i)); // created after the capture ...
    value.update(i);
    value.update(i + 1); // ... and touched again: saved as if old, must not be written
    list.add(i);
    list.add(i + 1);
  }
  for (let i = 0; i < 2000; i += 7) {
    b.setCurrentKey(key(i));
    value.clear(); // removes a key of the capture: its key group's key list is taken first
    list.add(-1); // a list of the capture changed in place
    if (i % 2 === 0) value.update(-i); // re-added after the keys created since
  }
  for (let i = 2000; i < 3000; i += 5) {
    b.setCurrentKey(key(i));
    value.clear(); // removes a key created after the capture
    list.clear();
  }
  assert.deepEqual(await blobOf(result), decode(encode(expected)));
  // The live state kept every change.
  b.setCurrentKey(key(14));
  assert.equal(value.value(), -14);
  b.setCurrentKey(key(2001));
  assert.equal(value.value(), 2002);
  b.setCurrentKey(key(2005));
  assert.equal(value.value(), undefined);
});

Deno.test("a key group with more entries than the stack has room for arguments snapshots (nexmark q11: 'Maximum call stack size exceeded')", async () => {
  const b = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 0),
    maxParallelism: 1,
  });
  const value = b.getValueState(new ValueStateDescriptor<number>("value"));
  const keys = 300_000; // all in key group 0: one column of 300 000 parts
  for (let i = 0; i < keys; i++) {
    b.setCurrentKey(i);
    value.update(i);
  }
  const store = new MemoryBlobStore();
  const handles = await b.snapshot(1, "checkpoint", "op").write(store.writer(1, "checkpoint"));
  const restored = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 0),
    maxParallelism: 1,
  });
  await restored.restore(handles, store.read);
  const again = restored.getValueState(new ValueStateDescriptor<number>("value"));
  for (const i of [0, 1, keys / 2, keys - 1]) {
    restored.setCurrentKey(i);
    assert.equal(again.value(), i);
  }
  await b.dispose();
  await restored.dispose();
});
