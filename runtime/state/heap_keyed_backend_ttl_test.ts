import assert from "node:assert/strict";
import { ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor } from "../api/state.ts";
import type { KeyedStateSnapshot } from "./heap_keyed_backend.ts";
import { backend } from "./_heap_backend_test_kit.ts";

/** A clock the test moves by hand. */
function fakeClock(start = 1_000): { now: number; clock: () => number } {
  const c = { now: start, clock: () => c.now };
  return c;
}

/** A state's snapshot entries as rows: `[key, value]`, or `[key, value, timestamp]` with TTL. */
function rows(snap: KeyedStateSnapshot, name: string): unknown[][] {
  return snap.states[name]!.keyGroups.flatMap((g) =>
    g.keys.map((key, i) => g.timestamps ? [key, g.values[i], g.timestamps[i]] : [key, g.values[i]])
  );
}

Deno.test("TTL ValueState", async (t) => {
  await t.step("an entry expires ttlMs after its last write", () => {
    const c = fakeClock();
    const b = backend({ clock: c.clock });
    const v = b.getValueState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100 } }));
    b.setCurrentKey("k");
    v.update(1);
    c.now += 99;
    assert.equal(v.value(), 1);
    v.update(2);
    c.now += 99;
    assert.equal(v.value(), 2);
    c.now += 1;
    assert.equal(v.value(), undefined);
    assert.equal(b.numKeys("v"), 0);
  });

  await t.step("reads refresh the lifetime with OnReadAndWrite", () => {
    const c = fakeClock();
    const b = backend({ clock: c.clock });
    const v = b.getValueState(
      new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100, updateType: "OnReadAndWrite" } }),
    );
    b.setCurrentKey("k");
    v.update(1);
    for (let i = 0; i < 5; i++) {
      c.now += 90;
      assert.equal(v.value(), 1);
    }
    c.now += 100;
    assert.equal(v.value(), undefined);
  });

  await t.step("an expired entry returns the default value", () => {
    const c = fakeClock();
    const b = backend({ clock: c.clock });
    const v = b.getValueState(
      new ValueStateDescriptor<number>("v", { defaultValue: -1, ttl: { ttlMs: 10 } }),
    );
    b.setCurrentKey("k");
    v.update(5);
    c.now += 10;
    assert.equal(v.value(), -1);
  });

  await t.step("snapshot() leaves out and removes expired entries", () => {
    const c = fakeClock();
    const b = backend({ clock: c.clock });
    const v = b.getValueState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100 } }));
    b.setCurrentKey("old");
    v.update(1);
    c.now += 60;
    b.setCurrentKey("young");
    v.update(2);
    c.now += 50;
    assert.equal(b.numKeys("v"), 2);
    const snap = b.snapshotCanonical();
    assert.equal(b.numKeys("v"), 1);
    assert.deepEqual(rows(snap, "v"), [["young", 2, 1_060]]);
    assert.deepEqual([...b.keys("v")], ["young"]);
  });

  await t.step("a restored entry keeps its last-access time", () => {
    const c = fakeClock();
    const b = backend({ clock: c.clock });
    const ttl = { ttlMs: 100 };
    b.getValueState(new ValueStateDescriptor<number>("v", { ttl }));
    const v = b.getValueState(new ValueStateDescriptor<number>("v", { ttl }));
    b.setCurrentKey("k");
    v.update(1);
    c.now += 50;
    const restored = backend({ clock: c.clock });
    restored.restoreCanonical([b.snapshotCanonical()]);
    const v2 = restored.getValueState(new ValueStateDescriptor<number>("v", { ttl }));
    restored.setCurrentKey("k");
    assert.equal(v2.value(), 1);
    c.now += 50;
    assert.equal(v2.value(), undefined);
  });

  await t.step("enabling a TTL on restored state starts lifetimes at the restore", () => {
    const c = fakeClock();
    const b = backend({ clock: c.clock });
    const v = b.getValueState(new ValueStateDescriptor<number>("v"));
    b.setCurrentKey("k");
    v.update(1);
    const snap = b.snapshotCanonical();
    c.now += 1_000;
    const restored = backend({ clock: c.clock });
    restored.restoreCanonical([snap]);
    const v2 = restored.getValueState(
      new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 10 } }),
    );
    restored.setCurrentKey("k");
    assert.equal(v2.value(), 1);
    c.now += 10;
    assert.equal(v2.value(), undefined);
  });

  await t.step("disabling a TTL on restored state keeps the values", () => {
    const c = fakeClock();
    const b = backend({ clock: c.clock });
    const v = b.getValueState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 10 } }));
    b.setCurrentKey("k");
    v.update(1);
    const restored = backend({ clock: c.clock });
    restored.restoreCanonical([b.snapshotCanonical()]);
    const v2 = restored.getValueState(new ValueStateDescriptor<number>("v"));
    c.now += 1_000;
    restored.setCurrentKey("k");
    assert.equal(v2.value(), 1);
    assert.deepEqual(restored.snapshotCanonical().states["v"]!.ttl, false);
  });
});

Deno.test("TTL ListState expires each element on its own", () => {
  const c = fakeClock();
  const b = backend({ clock: c.clock });
  const list = b.getListState(new ListStateDescriptor<string>("l", { ttl: { ttlMs: 100 } }));
  b.setCurrentKey("k");
  list.add("a");
  c.now += 50;
  list.addAll(["b", "c"]);
  assert.deepEqual(list.get(), ["a", "b", "c"]);
  c.now += 50;
  assert.deepEqual(list.get(), ["b", "c"]);
  const snap = b.snapshotCanonical();
  assert.deepEqual(rows(snap, "l"), [
    ["k", ["b", "c"], [1_050, 1_050]],
  ]);
  c.now += 50;
  assert.deepEqual(list.get(), []);
  assert.equal(b.numKeys("l"), 0);
  const restored = backend({ clock: fakeClock(1_100).clock });
  restored.restoreCanonical([snap]);
  const list2 = restored.getListState(
    new ListStateDescriptor<string>("l", { ttl: { ttlMs: 100 } }),
  );
  restored.setCurrentKey("k");
  assert.deepEqual(list2.get(), ["b", "c"]);
  list.update(["x"]);
  assert.deepEqual(list.get(), ["x"]);
});

Deno.test("TTL MapState expires each entry on its own", () => {
  const c = fakeClock();
  const b = backend({ clock: c.clock });
  const map = b.getMapState(new MapStateDescriptor<string, number>("m", { ttl: { ttlMs: 100 } }));
  b.setCurrentKey("k");
  map.put("old", 1);
  c.now += 50;
  map.put("young", 2);
  c.now += 50;
  assert.equal(map.get("old"), undefined);
  assert.ok(!map.contains("old"));
  assert.equal(map.get("young"), 2);
  assert.deepEqual(map.entries(), [["young", 2]]);
  const snap = b.snapshotCanonical();
  assert.deepEqual(rows(snap, "m"), [
    ["k", [["young"], [2]], [1_050]],
  ]);
  c.now += 50;
  assert.ok(map.isEmpty());
  assert.deepEqual(map.keys(), []);
  assert.equal(b.numKeys("m"), 0);
});
