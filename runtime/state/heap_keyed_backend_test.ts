import assert from "node:assert/strict";
import { decode, encode } from "../actor/codec.ts";
import { ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor } from "../api/state.ts";
import { HeapKeyedStateBackend, type KeyedStateSnapshot } from "./heap_keyed_backend.ts";
import { ALL, backend } from "./_heap_backend_test_kit.ts";
import {
  assignToKeyGroup,
  computeKeyGroupRangeForOperatorIndex,
  type Key,
  KeyGroupRange,
} from "./key_group.ts";

function sortKeys(keys: Iterable<Key>): string[] {
  return [...keys].map((k) => JSON.stringify(k, (_, v) => typeof v === "bigint" ? `${v}n` : v))
    .sort();
}

Deno.test("ValueState reads and writes the current key's value", () => {
  const b = backend();
  const last = b.getValueState(new ValueStateDescriptor<number>("last"));
  b.setCurrentKey("sensor_1");
  assert.equal(last.value(), undefined);
  last.update(35.8);
  b.setCurrentKey("sensor_7");
  last.update(6.7);
  b.setCurrentKey("sensor_1");
  assert.equal(last.value(), 35.8);
  last.clear();
  assert.equal(last.value(), undefined);
  b.setCurrentKey("sensor_7");
  assert.equal(last.value(), 6.7);
  last.update(undefined);
  assert.equal(last.value(), undefined);
  assert.equal(b.numKeys("last"), 0);
});

Deno.test("ValueState returns the descriptor's default for a key without a value", () => {
  const b = backend();
  const count = b.getValueState(new ValueStateDescriptor("count", { defaultValue: 0 }));
  b.setCurrentKey(42);
  assert.equal(count.value(), 0);
  count.update(count.value()! + 1);
  assert.equal(count.value(), 1);
});

Deno.test("the seed example's temperature-jump alert gives exactly its three alerts", () => {
  const input = `sensor_1,1547718199,35.8
sensor_1,1547718199,32.4
sensor_1,1547718199,42.4
sensor_10,1547718205,52.6
sensor_10,1547718205,22.5
sensor_7,1547718202,6.7
sensor_7,1547718202,9.9
sensor_1,1547718207,36.3
sensor_7,1547718202,19.9
sensor_7,1547718202,30`;
  const b = backend();
  const last = b.getValueState(new ValueStateDescriptor<number>("last-temperature"));
  const alerts: string[] = [];
  for (const line of input.split("\n")) {
    const [id, , t] = line.split(",");
    const current = Number(t);
    b.setCurrentKey(id!);
    const previous = last.value();
    if (previous !== undefined && Math.abs(current - previous) >= 10) {
      alerts.push(`(${id},${previous},${current})`);
    }
    last.update(current);
  }
  assert.deepEqual(alerts, ["(sensor_1,32.4,42.4)", "(sensor_10,52.6,22.5)", "(sensor_7,19.9,30)"]);
});

Deno.test("setCurrentKey() exposes the current key and its key group", () => {
  const b = backend();
  assert.equal(b.currentKey, undefined);
  assert.equal(b.currentKeyGroup, -1);
  b.setCurrentKey(["Mary", 2024]);
  assert.deepEqual(b.currentKey, ["Mary", 2024]);
  assert.equal(b.currentKeyGroup, assignToKeyGroup(["Mary", 2024], 128));
});

Deno.test("setCurrentKey() rejects a key outside the range, naming key, group and range", () => {
  const b = backend({ keyGroupRange: new KeyGroupRange(0, 63) });
  const outside = ["a", "b", "c", "d", "e", "f"].find((k) => assignToKeyGroup(k, 128) > 63)!;
  const group = assignToKeyGroup(outside, 128);
  assert.throws(
    () => b.setCurrentKey(outside),
    new RegExp(`Key "${outside}" belongs to key group ${group}, outside .* range \\[0, 63\\]`),
  );
});

Deno.test("writing state before any setCurrentKey() throws", () => {
  const b = backend();
  const v = b.getValueState(new ValueStateDescriptor<number>("v"));
  assert.equal(v.value(), undefined);
  assert.throws(() => v.update(1), /Cannot write keyed state 'v' before setCurrentKey\(\)/);
});

Deno.test("registering a name twice returns the same state object", () => {
  const b = backend();
  const a = b.getValueState(new ValueStateDescriptor<number>("x"));
  assert.equal(b.getValueState(new ValueStateDescriptor<number>("x")), a);
  const l = b.getListState(new ListStateDescriptor<number>("l"));
  assert.equal(b.getListState(new ListStateDescriptor<number>("l")), l);
  const m = b.getMapState(new MapStateDescriptor<string, number>("m"));
  assert.equal(b.getMapState(new MapStateDescriptor<string, number>("m")), m);
});

Deno.test("registering a name with another kind or TTL throws", () => {
  const b = backend();
  b.getValueState(new ValueStateDescriptor<number>("x"));
  assert.throws(
    () => b.getListState(new ListStateDescriptor<number>("x")),
    /Keyed state 'x' is already registered as value state: cannot register it as list state/,
  );
  assert.throws(
    () => b.getValueState(new ValueStateDescriptor<number>("x", { ttl: { ttlMs: 5 } })),
    /already registered with no TTL: cannot register it with TTL 5 ms/,
  );
  assert.throws(
    () => b.getValueState(new ValueStateDescriptor<number>("y", { ttl: { ttlMs: 0 } })),
    /'ttlMs' that is a finite number > 0: current value is 0/,
  );
});

Deno.test("ListState appends, replaces and clears the current key's list", () => {
  const b = backend();
  const list = b.getListState(new ListStateDescriptor<string>("events"));
  b.setCurrentKey(1);
  assert.deepEqual(list.get(), []);
  list.add("a");
  list.addAll(["b", "c"]);
  assert.deepEqual(list.get(), ["a", "b", "c"]);
  b.setCurrentKey(2);
  list.addAll([]);
  assert.equal(b.numKeys("events"), 1);
  list.update(["z"]);
  b.setCurrentKey(1);
  list.update(list.get().filter((x) => x !== "b"));
  assert.deepEqual(list.get(), ["a", "c"]);
  list.update([]);
  assert.deepEqual(list.get(), []);
  assert.equal(b.numKeys("events"), 1);
  b.setCurrentKey(2);
  assert.deepEqual(list.get(), ["z"]);
  list.clear();
  assert.equal(b.numKeys("events"), 0);
  assert.throws(() => list.add(undefined as unknown as string), TypeError);
});

Deno.test("MapState puts, gets and removes entries of the current key's map", () => {
  const b = backend();
  const map = b.getMapState(new MapStateDescriptor<string, number>("counts"));
  b.setCurrentKey("u1");
  assert.ok(map.isEmpty());
  map.put("home", 1);
  map.putAll([["cart", 2], ["home", 3]]);
  assert.equal(map.get("home"), 3);
  assert.ok(map.contains("cart"));
  assert.ok(!map.contains("prod"));
  assert.deepEqual(map.entries(), [["home", 3], ["cart", 2]]);
  assert.deepEqual(map.keys(), ["home", "cart"]);
  assert.deepEqual(map.values(), [3, 2]);
  b.setCurrentKey("u2");
  assert.ok(map.isEmpty());
  assert.equal(map.get("home"), undefined);
  b.setCurrentKey("u1");
  map.remove("home");
  map.remove("cart");
  assert.ok(map.isEmpty());
  assert.equal(b.numKeys("counts"), 0);
  map.put("x", 1);
  map.clear();
  assert.ok(map.isEmpty());
  assert.throws(() => map.put("y", undefined as unknown as number), /cannot hold undefined/);
});

/** Fills value, list and map state for a few keys, tuple keys included. */
function fill(b: HeapKeyedStateBackend): void {
  const value = b.getValueState(new ValueStateDescriptor<number>("sum"));
  const list = b.getListState(new ListStateDescriptor<string>("log"));
  const map = b.getMapState(new MapStateDescriptor<string, number>("pages"));
  const keys: Key[] = ["a", 7, ["Mary", 2024], "\u0000odd", true, 12n];
  keys.forEach((key, i) => {
    b.setCurrentKey(key);
    value.update(i * 10);
    list.addAll([`x${i}`, `y${i}`]);
    map.put("home", i);
    map.put("cart", i + 100);
  });
}

function read(b: HeapKeyedStateBackend, key: Key): unknown[] {
  const value = b.getValueState(new ValueStateDescriptor<number>("sum"));
  const list = b.getListState(new ListStateDescriptor<string>("log"));
  const map = b.getMapState(new MapStateDescriptor<string, number>("pages"));
  b.setCurrentKey(key);
  return [value.value(), list.get(), map.entries()];
}

Deno.test("snapshot() gives a plain object grouped by key group, with original keys", () => {
  const b = backend();
  const sum = b.getValueState(new ValueStateDescriptor<number>("sum"));
  const log = b.getListState(new ListStateDescriptor<string>("log"));
  const pages = b.getMapState(new MapStateDescriptor<string, number>("pages"));
  b.setCurrentKey("a");
  sum.update(4);
  log.add("x");
  pages.put("home", 1);
  b.setCurrentKey(["b", 1]);
  sum.update(2);
  const ga = assignToKeyGroup("a", 128);
  const gb = assignToKeyGroup(["b", 1], 128);
  const sumGroups = [
    { keyGroup: ga, keys: ["a"], values: [4] },
    { keyGroup: gb, keys: [["b", 1]], values: [2] },
  ].sort((x, y) => x.keyGroup - y.keyGroup);
  assert.deepEqual(b.snapshotCanonical(), {
    version: 2,
    maxParallelism: 128,
    keyGroupRange: [0, 127],
    states: {
      sum: { kind: "value", ttl: false, keyGroups: sumGroups },
      log: {
        kind: "list",
        ttl: false,
        keyGroups: [{ keyGroup: ga, keys: ["a"], values: [["x"]] }],
      },
      pages: {
        kind: "map",
        ttl: false,
        keyGroups: [{ keyGroup: ga, keys: ["a"], values: [[["home"], [1]]] }],
      },
    },
  });
});

Deno.test("snapshot() then restore() brings back every state of every key", () => {
  const b = backend();
  fill(b);
  const snap = b.snapshotCanonical();
  const restored = backend();
  restored.restoreCanonical([snap]);
  for (const key of ["a", 7, ["Mary", 2024], "\u0000odd", true, 12n] as Key[]) {
    assert.deepEqual(read(restored, key), read(b, key), `key ${String(key)}`);
  }
  assert.deepEqual(sortKeys(restored.keys("sum")), sortKeys(b.keys("sum")));
  assert.equal(restored.numEntries(), 18);
  assert.deepEqual(restored.snapshotCanonical(), snap);
});

Deno.test("a snapshot survives a MessagePack round trip and restores", () => {
  const b = backend();
  const value = b.getValueState(new ValueStateDescriptor<{ n: number }>("obj"));
  const map = b.getMapState(new MapStateDescriptor<string, number[]>("m"));
  for (const key of ["a", 1, ["t", 2]] as Key[]) {
    b.setCurrentKey(key);
    value.update({ n: 1 });
    map.put("k", [1, 2]);
  }
  const decoded = decode(encode(b.snapshotCanonical())) as KeyedStateSnapshot;
  const restored = backend();
  restored.restoreCanonical([decoded]);
  assert.deepEqual(restored.snapshotCanonical(), b.snapshotCanonical());
  const map2 = restored.getMapState(new MapStateDescriptor<string, number[]>("m"));
  restored.setCurrentKey(["t", 2]);
  assert.deepEqual(map2.get("k"), [1, 2]);
});

Deno.test("a snapshot does not change when state changes afterwards", () => {
  const b = backend();
  fill(b);
  const snap = b.snapshotCanonical();
  const copy = structuredClone(snap);
  const value = b.getValueState(new ValueStateDescriptor<number>("sum"));
  const list = b.getListState(new ListStateDescriptor<string>("log"));
  const map = b.getMapState(new MapStateDescriptor<string, number>("pages"));
  b.setCurrentKey("a");
  value.update(999);
  list.add("later");
  map.put("later", 1);
  map.remove("home");
  b.setCurrentKey("new-key");
  value.update(1);
  assert.deepEqual(snap, copy);
});

Deno.test("restore() does not alias the snapshot's containers", () => {
  const b = backend();
  fill(b);
  const snap = b.snapshotCanonical();
  const copy = structuredClone(snap);
  const restored = backend();
  restored.restoreCanonical([snap]);
  const list = restored.getListState(new ListStateDescriptor<string>("log"));
  const map = restored.getMapState(new MapStateDescriptor<string, number>("pages"));
  restored.setCurrentKey("a");
  list.add("more");
  map.put("more", 1);
  assert.deepEqual(snap, copy);
});

Deno.test("restoring 2 subtasks' snapshots over 3 subtasks puts every key in exactly one", () => {
  const keys: Key[] = [];
  for (let i = 0; i < 500; i++) keys.push(i, `k${i}`, [`t${i}`, i]);
  const sumOf = (key: Key) => JSON.stringify(key).length;
  const old = [0, 1].map((i) =>
    backend({ keyGroupRange: computeKeyGroupRangeForOperatorIndex(128, 2, i) })
  );
  for (const key of keys) {
    const owner = old.find((b) => b.keyGroupRange.contains(assignToKeyGroup(key, 128)))!;
    const sum = owner.getValueState(new ValueStateDescriptor<number>("sum"));
    const seen = owner.getListState(new ListStateDescriptor<Key>("seen"));
    owner.setCurrentKey(key);
    sum.update(sumOf(key));
    seen.add(key);
  }
  const snapshots = old.map((b) => b.snapshotCanonical());
  const fresh = [0, 1, 2].map((i) => {
    const b = backend({ keyGroupRange: computeKeyGroupRangeForOperatorIndex(128, 3, i) });
    b.restoreCanonical(snapshots);
    return b;
  });
  const owners = new Map<string, number>();
  fresh.forEach((b, i) => {
    const sum = b.getValueState(new ValueStateDescriptor<number>("sum"));
    const seen = b.getListState(new ListStateDescriptor<Key>("seen"));
    for (const key of b.keys("sum")) {
      const id = JSON.stringify(key);
      assert.ok(!owners.has(id), `${id} restored twice`);
      owners.set(id, i);
      assert.ok(b.keyGroupRange.contains(assignToKeyGroup(key, 128)));
      b.setCurrentKey(key);
      assert.equal(sum.value(), sumOf(key));
      assert.deepEqual(seen.get(), [key]);
    }
  });
  assert.equal(owners.size, keys.length);
  assert.equal(fresh.reduce((n, b) => n + b.numKeys("seen"), 0), keys.length);
});

Deno.test("restore() rejects another max parallelism and a kind that differs", () => {
  const b = backend();
  fill(b);
  const snap = b.snapshotCanonical();
  const other = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 255),
    maxParallelism: 256,
  });
  assert.throws(
    () => other.restoreCanonical([snap]),
    /taken with max parallelism 128 into a backend with max parallelism 256/,
  );
  const registered = backend();
  registered.getListState(new ListStateDescriptor<number>("sum"));
  assert.throws(
    () => registered.restoreCanonical([snap]),
    /Cannot restore keyed state 'sum' as value state: it is already registered as list state/,
  );
  const restored = backend();
  restored.restoreCanonical([snap]);
  assert.throws(
    () => restored.getMapState(new MapStateDescriptor<string, number>("sum")),
    /already restored as value state: cannot register it as map state/,
  );
});

Deno.test("restore() rejects a malformed key group, naming state and key group", () => {
  const snap: KeyedStateSnapshot = {
    version: 1,
    maxParallelism: 128,
    keyGroupRange: [0, 127],
    states: {
      sum: { kind: "value", ttl: false, keyGroups: [{ keyGroup: 5, keys: ["a"], values: [] }] },
    },
  };
  assert.throws(
    () => backend().restoreCanonical([snap]),
    /Malformed snapshot of keyed state 'sum', key group 5: 'keys' and 'values' must be arrays of equal length/,
  );
});

Deno.test("a restored state that is never registered is kept in later snapshots", () => {
  const b = backend();
  fill(b);
  const snap = b.snapshotCanonical();
  const restored = backend();
  restored.restoreCanonical([snap]);
  restored.getValueState(new ValueStateDescriptor<number>("sum"));
  assert.deepEqual(restored.snapshotCanonical().states["pages"], snap.states["pages"]);
  assert.deepEqual(restored.stateNames().sort(), ["log", "pages", "sum"]);
});

Deno.test("keys() lists the keys with a value; an unknown state name throws", () => {
  const b = backend();
  fill(b);
  assert.deepEqual(
    sortKeys(b.keys("pages")),
    sortKeys(["a", 7, ["Mary", 2024], "\u0000odd", true, 12n]),
  );
  assert.equal(b.numKeys("pages"), 6);
  assert.throws(() => b.keys("nope").next(), /No keyed state named 'nope'/);
  assert.throws(() => b.numKeys("nope"), /known states are \["sum","log","pages"\]/);
});

Deno.test("the constructor rejects a range past the max parallelism", () => {
  assert.throws(
    () =>
      new HeapKeyedStateBackend({ keyGroupRange: new KeyGroupRange(0, 128), maxParallelism: 128 }),
    /within \[0, 127\]: current value is \[0, 128\]/,
  );
  assert.throws(
    () => new HeapKeyedStateBackend({ keyGroupRange: ALL, maxParallelism: 0 }),
    /current value is 0/,
  );
});
