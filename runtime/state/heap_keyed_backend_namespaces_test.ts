/**
 * Conformance of {@linkcode HeapKeyedStateBackend}'s state namespaces
 * (`internal_state.ts`): every kind of state keeps (key, namespace) entries
 * apart, list/reducing/aggregating states merge namespaces as Flink does,
 * and snapshots of format version 2 carry every namespace through a
 * restore at another parallelism. The last test is property-style: random
 * operations against a plain reference model, from a printed seed.
 *
 * @module
 */

import assert from "node:assert/strict";
import { decode, encode } from "../actor/codec.ts";
import type { AggregateFunction } from "../api/functions.ts";
import {
  AggregatingStateDescriptor,
  ListStateDescriptor,
  MapStateDescriptor,
  ReducingStateDescriptor,
  ValueStateDescriptor,
} from "../api/state.ts";
import { HeapKeyedStateBackend, type KeyedStateSnapshot } from "./heap_keyed_backend.ts";
import { VOID_NAMESPACE } from "./internal_state.ts";
import {
  assignToKeyGroup,
  computeKeyGroupRangeForOperatorIndex,
  type Key,
  KeyGroupRange,
} from "./key_group.ts";
import { mulberry32 } from "../../tests/_job_kit.ts";

const ALL = new KeyGroupRange(0, 127);

function backend(range: KeyGroupRange = ALL): HeapKeyedStateBackend {
  return new HeapKeyedStateBackend({ keyGroupRange: range, maxParallelism: 128 });
}

/** Average of integers, shown as "sum/count"; `add` and `merge` change the accumulator in place. */
const average: AggregateFunction<number, { sum: number; count: number }, string> = {
  createAccumulator: () => ({ sum: 0, count: 0 }),
  add: (x, acc) => {
    acc.sum += x;
    acc.count += 1;
    return acc;
  },
  getResult: (acc) => `${acc.sum}/${acc.count}`,
  merge: (a, b) => {
    a.sum += b.sum;
    a.count += b.count;
    return a;
  },
};

/** The five kinds of state of these tests, on one backend. */
function states(b: HeapKeyedStateBackend) {
  return {
    value: b.getValueState(new ValueStateDescriptor<string>("value")),
    list: b.getListState(new ListStateDescriptor<string>("list")),
    map: b.getMapState(new MapStateDescriptor<string, number>("map")),
    reducing: b.getReducingState(
      new ReducingStateDescriptor<string>("reducing", (a, x) => `${a}+${x}`),
    ),
    aggregating: b.getAggregatingState(new AggregatingStateDescriptor("aggregating", average)),
  };
}

Deno.test("every kind of state keeps each namespace of a key apart from the default one", () => {
  const b = backend();
  const s = states(b);
  b.setCurrentKey("k");
  s.value.update("void");
  s.list.add("void");
  s.map.put("m", 0);
  s.reducing.add("void");
  s.aggregating.add(1);
  for (const state of Object.values(s)) state.setCurrentNamespace("w1");
  assert.equal(s.value.value(), undefined);
  assert.deepEqual(s.list.get(), []);
  assert.ok(s.map.isEmpty());
  assert.equal(s.reducing.get(), undefined);
  assert.equal(s.aggregating.get(), undefined);
  s.value.update("w1");
  s.list.add("w1");
  s.map.put("m", 1);
  s.reducing.add("w1");
  s.aggregating.add(5);
  s.aggregating.add(7);
  b.setCurrentKey("other");
  assert.equal(s.value.value(), undefined, "a namespace is per key");
  b.setCurrentKey("k");
  assert.deepEqual(
    [s.value.value(), s.list.get(), s.map.get("m"), s.reducing.get(), s.aggregating.get()],
    ["w1", ["w1"], 1, "w1", "12/2"],
  );
  for (const state of Object.values(s)) state.setCurrentNamespace(VOID_NAMESPACE);
  assert.deepEqual(
    [s.value.value(), s.list.get(), s.map.get("m"), s.reducing.get(), s.aggregating.get()],
    ["void", ["void"], 0, "void", "1/1"],
  );
  assert.equal(b.numKeys("value"), 1, "numKeys counts the default namespace");
  assert.equal(b.numEntries(), 10);
});

Deno.test("the namespace is per state object, not per backend", () => {
  const b = backend();
  const a = b.getValueState(new ValueStateDescriptor<number>("a"));
  const c = b.getValueState(new ValueStateDescriptor<number>("c"));
  b.setCurrentKey(1);
  a.setCurrentNamespace("w");
  a.update(1);
  c.update(2);
  assert.deepEqual([...b.keys("a", "w")], [1]);
  assert.deepEqual([...b.keys("a")], []);
  assert.deepEqual([...b.keys("c")], [1]);
});

Deno.test("setCurrentNamespace() rejects a namespace that is not a string, naming the state", () => {
  const b = backend();
  const list = b.getListState(new ListStateDescriptor<number>("window-contents"));
  assert.throws(
    () => list.setCurrentNamespace(42 as unknown as string),
    /Keyed state 'window-contents' needs a string namespace: current value is 42 \(number\)/,
  );
});

Deno.test("clearing each kind of state in a namespace removes its entries", () => {
  const b = backend();
  const s = states(b);
  b.setCurrentKey("k");
  for (const state of Object.values(s)) state.setCurrentNamespace("w");
  s.value.update("x");
  s.list.add("x");
  s.map.put("m", 1);
  s.reducing.add("x");
  s.aggregating.add(1);
  assert.equal(b.numEntries(), 5);
  s.value.update(undefined);
  s.list.update([]);
  s.map.remove("m");
  s.reducing.clear();
  s.aggregating.clear();
  assert.equal(b.numEntries(), 0);
  assert.deepEqual(b.snapshotCanonical().states["list"]!.keyGroups, []);
});

Deno.test("mergeNamespaces() of list state appends the sources, in order, to the target", () => {
  const b = backend();
  const list = b.getListState(new ListStateDescriptor<string>("list"));
  b.setCurrentKey("k");
  for (const [ns, items] of [["t", ["t1"]], ["a", ["a1", "a2"]], ["b", ["b1"]]] as const) {
    list.setCurrentNamespace(ns);
    list.addAll(items);
  }
  list.mergeNamespaces("t", ["b", "missing", "a"]);
  list.setCurrentNamespace("t");
  assert.deepEqual(list.get(), ["t1", "b1", "a1", "a2"]);
  assert.deepEqual([...b.keysAndNamespaces("list")], [["k", "t"]]);
  b.setCurrentKey("other");
  assert.deepEqual(list.get(), [], "another key's target is untouched");
});

Deno.test("mergeNamespaces() reduces sources first, then into the target, as Flink does", () => {
  const b = backend();
  const r = b.getReducingState(new ReducingStateDescriptor<string>("r", (a, x) => `(${a}+${x})`));
  b.setCurrentKey("k");
  for (const ns of ["t", "a", "b"]) {
    r.setCurrentNamespace(ns);
    r.add(ns);
  }
  r.mergeNamespaces("t", ["a", "b"]);
  r.setCurrentNamespace("t");
  assert.equal(r.get(), "(t+(a+b))");
  r.setCurrentNamespace("a");
  assert.equal(r.get(), undefined);
});

Deno.test("mergeNamespaces() accepts the target among the sources", () => {
  const b = backend();
  const r = b.getReducingState(new ReducingStateDescriptor<string>("r", (a, x) => `(${a}+${x})`));
  const agg = b.getAggregatingState(new AggregatingStateDescriptor("agg", average));
  b.setCurrentKey("k");
  for (const [ns, x] of [["w1", 1], ["w2", 2], ["w3", 3]] as const) {
    r.setCurrentNamespace(ns);
    r.add(ns);
    agg.setCurrentNamespace(ns);
    agg.add(x);
  }
  r.mergeNamespaces("w2", ["w1", "w2", "w3"]);
  agg.mergeNamespaces("w2", ["w1", "w2", "w3"]);
  r.setCurrentNamespace("w2");
  agg.setCurrentNamespace("w2");
  assert.equal(r.get(), "((w1+w2)+w3)");
  assert.equal(agg.get(), "6/3");
  assert.deepEqual([...b.keysAndNamespaces("agg")], [["k", "w2"]]);
});

Deno.test("mergeNamespaces() merges aggregating state's accumulators with merge()", () => {
  const b = backend();
  const agg = b.getAggregatingState(new AggregatingStateDescriptor("agg", average));
  b.setCurrentKey("k");
  agg.setCurrentNamespace("0:10");
  agg.add(2);
  agg.add(4);
  agg.setCurrentNamespace("5:15");
  agg.add(9);
  agg.mergeNamespaces("0:15", ["0:10", "5:15"]);
  agg.setCurrentNamespace("0:15");
  assert.equal(agg.get(), "15/3");
  agg.mergeNamespaces("0:15", ["nothing-here"]);
  assert.equal(agg.get(), "15/3", "merging only empty sources changes nothing");
  assert.equal(b.numEntries(), 1);
});

Deno.test("keys(state, namespace) and keysAndNamespaces() list the live entries", () => {
  const b = backend();
  const v = b.getValueState(new ValueStateDescriptor<number>("v"));
  for (const key of ["a", "b", ["c", 1]] as Key[]) {
    b.setCurrentKey(key);
    v.setCurrentNamespace(VOID_NAMESPACE);
    v.update(0);
    v.setCurrentNamespace(`w-${JSON.stringify(key)}`);
    v.update(1);
  }
  v.setCurrentNamespace("shared");
  v.update(2);
  assert.deepEqual([...b.keys("v", "shared")], [["c", 1]]);
  const pairs = [...b.keysAndNamespaces("v")].map((p) => JSON.stringify(p)).sort();
  assert.deepEqual(pairs, [
    '["a",""]',
    '["a","w-\\"a\\""]',
    '["b",""]',
    '["b","w-\\"b\\""]',
    '[["c",1],""]',
    '[["c",1],"shared"]',
    '[["c",1],"w-[\\"c\\",1]"]',
  ]);
});

Deno.test("snapshot() writes version 2 with each key group's namespaces column-wise", () => {
  const b = backend();
  const r = b.getReducingState(new ReducingStateDescriptor<number>("sum", (a, x) => a + x));
  b.setCurrentKey("a");
  r.add(1);
  r.setCurrentNamespace("0:1000");
  r.add(7);
  b.setCurrentKey("c");
  r.add(1);
  const ga = assignToKeyGroup("a", 128);
  const gc = assignToKeyGroup("c", 128);
  const groups = ga === gc
    ? [{
      keyGroup: ga,
      keys: ["a"],
      values: [1],
      namespaces: [{ namespace: "0:1000", keys: ["a", "c"], values: [7, 1] }],
    }]
    : [
      {
        keyGroup: ga,
        keys: ["a"],
        values: [1],
        namespaces: [{ namespace: "0:1000", keys: ["a"], values: [7] }],
      },
      {
        keyGroup: gc,
        keys: [],
        values: [],
        namespaces: [{ namespace: "0:1000", keys: ["c"], values: [1] }],
      },
    ].sort((x, y) => x.keyGroup - y.keyGroup);
  assert.deepEqual(b.snapshotCanonical(), {
    version: 2,
    maxParallelism: 128,
    keyGroupRange: [0, 127],
    states: { sum: { kind: "reducing", ttl: false, keyGroups: groups } },
  });
});

Deno.test("a version 1 snapshot (no namespaces) restores into the default namespace", () => {
  const g = assignToKeyGroup("sensor_1", 128);
  const v1: KeyedStateSnapshot = {
    version: 1,
    maxParallelism: 128,
    keyGroupRange: [0, 127],
    states: {
      last: {
        kind: "value",
        ttl: false,
        keyGroups: [{ keyGroup: g, keys: ["sensor_1"], values: [35.8] }],
      },
      log: {
        kind: "list",
        ttl: true,
        keyGroups: [{ keyGroup: g, keys: ["sensor_1"], values: [["x"]], timestamps: [[5]] }],
      },
    },
  };
  const b = new HeapKeyedStateBackend({
    keyGroupRange: ALL,
    maxParallelism: 128,
    clock: () => 10,
  });
  b.restoreCanonical([v1]);
  const last = b.getValueState(new ValueStateDescriptor<number>("last"));
  const log = b.getListState(new ListStateDescriptor<string>("log", { ttl: { ttlMs: 6 } }));
  b.setCurrentKey("sensor_1");
  assert.equal(last.value(), 35.8);
  assert.deepEqual(log.get(), ["x"], "a version 1 TTL is processing time, times kept");
  assert.deepEqual(b.snapshotCanonical().states["log"], {
    kind: "list",
    ttl: true,
    ttlTimeCharacteristic: "ProcessingTime",
    keyGroups: [{ keyGroup: g, keys: ["sensor_1"], values: [["x"]], timestamps: [[5]] }],
  });
});

Deno.test("restore() rejects namespaces in version 1, kinds version 1 lacks, and bad namespaces", () => {
  const g = assignToKeyGroup("a", 128);
  const snap = (version: 1 | 2, state: Record<string, unknown>): KeyedStateSnapshot => ({
    version,
    maxParallelism: 128,
    keyGroupRange: [0, 127],
    states: { s: state as never },
  });
  const ns = [{ namespace: "w", keys: ["a"], values: [1] }];
  assert.throws(
    () =>
      backend().restoreCanonical([
        snap(1, {
          kind: "value",
          ttl: false,
          keyGroups: [{ keyGroup: g, keys: [], values: [], namespaces: ns }],
        }),
      ]),
    new RegExp(`keyed state 's', key group ${g}: a version 1 snapshot has no namespaces`),
  );
  assert.throws(
    () => backend().restoreCanonical([snap(1, { kind: "reducing", ttl: false, keyGroups: [] })]),
    /Cannot restore keyed state 's': unknown kind for a version 1 snapshot, current value is "reducing"/,
  );
  assert.throws(
    () => backend().restoreCanonical([snap(2, { kind: "window", ttl: false, keyGroups: [] })]),
    /unknown kind for a version 2 snapshot, current value is "window"/,
  );
  assert.throws(
    () =>
      backend().restoreCanonical([
        snap(2, {
          kind: "value",
          ttl: false,
          keyGroups: [{
            keyGroup: g,
            keys: [],
            values: [],
            namespaces: [{ namespace: "", keys: [], values: [] }],
          }],
        }),
      ]),
    new RegExp(`key group ${g}: a namespace must be a non-empty string, current value is ""`),
  );
  assert.throws(
    () =>
      backend().restoreCanonical([
        snap(2, {
          kind: "list",
          ttl: false,
          keyGroups: [{
            keyGroup: g,
            keys: [],
            values: [],
            namespaces: [{ namespace: "w", keys: ["a"], values: [[]] }],
          }],
        }),
      ]),
    new RegExp(`key group ${g}, namespace "w": a list must be a non-empty array`),
  );
  assert.throws(
    () => backend().restoreCanonical([{ ...snap(2, {}), version: 3 as 2 }]),
    /unsupported version \(this backend reads 1 and 2\), current value is 3/,
  );
});

// ---------------------------------------------------------------------------
// Property: a random history against a reference model, across rescaling restores

const KEYS: readonly Key[] = ["a", "b", 3, ["t", 1], "\u0000odd", 12n, true];
const NAMESPACES = [VOID_NAMESPACE, "w1", "w2", "0:1000"];
type Kind = "value" | "list" | "map" | "reducing" | "aggregating";
const KIND_NAMES: readonly Kind[] = ["value", "list", "map", "reducing", "aggregating"];

/** What the model holds per (kind, key, namespace): the value, list, map entries, reduced string, [sum, count]. */
type Model = Map<string, unknown>;

function cell(kind: Kind, key: Key, ns: string): string {
  return JSON.stringify([
    kind,
    String(typeof key === "bigint" ? `${key}n` : JSON.stringify(key)),
    ns,
  ]);
}

/** Reads one (kind, key, namespace) from the backend in the model's shape, `undefined` for none. */
function readBack(s: ReturnType<typeof states>, kind: Kind): unknown {
  switch (kind) {
    case "value":
      return s.value.value();
    case "list": {
      const l = s.list.get();
      return l.length === 0 ? undefined : [...l];
    }
    case "map":
      return s.map.isEmpty() ? undefined : s.map.entries().sort();
    case "reducing":
      return s.reducing.get();
    case "aggregating":
      return s.aggregating.get();
  }
}

function checkAll(seed: number, step: string, backends: HeapKeyedStateBackend[], model: Model) {
  let entries = 0;
  for (const b of backends) {
    const s = states(b);
    for (const key of KEYS) {
      if (!b.keyGroupRange.contains(assignToKeyGroup(key, 128))) continue;
      b.setCurrentKey(key);
      for (const ns of NAMESPACES) {
        for (const kind of KIND_NAMES) {
          s[kind].setCurrentNamespace(ns);
          const expected = model.get(cell(kind, key, ns));
          assert.deepEqual(
            readBack(s, kind),
            expected,
            `seed ${seed}, ${step}: ${kind} state of key ${String(key)} in namespace "${ns}"`,
          );
          if (expected !== undefined) entries++;
        }
      }
    }
  }
  assert.equal(
    backends.reduce((n, b) => n + b.numEntries(), 0),
    entries,
    `seed ${seed}, ${step}: the backends hold exactly the model's entries`,
  );
}

/** Snapshots `from`, restores at `parallelism` through MessagePack, returns the new backends. */
function rescale(from: HeapKeyedStateBackend[], parallelism: number): HeapKeyedStateBackend[] {
  const snapshots = from.map((b) => decode(encode(b.snapshotCanonical())) as KeyedStateSnapshot);
  return Array.from({ length: parallelism }, (_, i) => {
    const b = backend(computeKeyGroupRangeForOperatorIndex(128, parallelism, i));
    b.restoreCanonical(snapshots);
    return b;
  });
}

Deno.test("random histories of every kind and namespace match a reference model across rescaling restores", () => {
  for (let seed = 1; seed <= 25; seed++) {
    const random = mulberry32(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const model: Model = new Map();
    let backends = [backend()];
    for (let step = 0; step < 300; step++) {
      const r = random();
      if (r < 0.04) {
        backends = rescale(backends, pick([1, 2, 3, 5]));
        checkAll(seed, `after the restore at step ${step}`, backends, model);
        continue;
      }
      const key = pick(KEYS);
      const ns = pick(NAMESPACES);
      const kind = pick(KIND_NAMES);
      const b = backends.find((x) => x.keyGroupRange.contains(assignToKeyGroup(key, 128)))!;
      const s = states(b);
      b.setCurrentKey(key);
      s[kind].setCurrentNamespace(ns);
      const id = cell(kind, key, ns);
      const x = Math.floor(random() * 10);
      if (r < 0.12) {
        s[kind].clear();
        model.delete(id);
      } else if (r < 0.25 && kind !== "value" && kind !== "map") {
        const target = pick(NAMESPACES);
        const sources = NAMESPACES.filter(() => random() < 0.5);
        s[kind].mergeNamespaces(target, sources);
        let merged: unknown;
        for (const source of sources) {
          const v = model.get(cell(kind, key, source));
          model.delete(cell(kind, key, source));
          if (v !== undefined) merged = merged === undefined ? v : combine(kind, merged, v);
        }
        if (merged !== undefined) {
          const t = model.get(cell(kind, key, target));
          model.set(cell(kind, key, target), t === undefined ? merged : combine(kind, t, merged));
        }
      } else {
        switch (kind) {
          case "value":
            s.value.update(`v${x}`);
            model.set(id, `v${x}`);
            break;
          case "list":
            s.list.add(`e${x}`);
            model.set(id, [...(model.get(id) as string[] ?? []), `e${x}`]);
            break;
          case "map": {
            s.map.put(`m${x % 3}`, x);
            const m = new Map(model.get(id) as [string, number][] ?? []);
            m.set(`m${x % 3}`, x);
            model.set(id, [...m].sort());
            break;
          }
          case "reducing": {
            s.reducing.add(`${x}`);
            const cur = model.get(id) as string | undefined;
            model.set(id, cur === undefined ? `${x}` : `${cur}+${x}`);
            break;
          }
          case "aggregating": {
            s.aggregating.add(x);
            const [sum, count] = (model.get(id) as string ?? "0/0").split("/").map(Number);
            model.set(id, `${sum! + x}/${count! + 1}`);
            break;
          }
        }
      }
    }
    checkAll(seed, "at the end", backends, model);
    checkAll(seed, "after a final restore at parallelism 4", rescale(backends, 4), model);
  }
});

/** The model's merge of two entries of `kind` (`a` first). */
function combine(kind: Kind, a: unknown, b: unknown): unknown {
  switch (kind) {
    case "list":
      return [...(a as string[]), ...(b as string[])];
    case "reducing":
      return `${a}+${b}`;
    default: {
      const [s1, c1] = (a as string).split("/").map(Number);
      const [s2, c2] = (b as string).split("/").map(Number);
      return `${s1! + s2!}/${c1! + c2!}`;
    }
  }
}
