import assert from "node:assert/strict";
import { assignToKeyGroup, type Key, KeyGroupRange } from "./key_group.ts";
import { rehashKeyedSnapshots, rehashTimerSnapshots } from "./rehash.ts";
import type { KeyedStateSnapshot, KeyGroupEntries } from "./keyed_state_snapshot.ts";
import type { TimerServiceSnapshot } from "./timer_service.ts";

/** Asserts that `fn` throws an instance of `cls` whose message contains `text`. */
function assertThrows(fn: () => unknown, cls: new (...a: never[]) => Error, text = ""): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${e}`);
    assert.ok(e.message.includes(text), `"${e.message}" should contain "${text}"`);
    return true;
  });
}

/** Builds a canonical snapshot of `sum` (value) and `win` (reducing, in namespaces) for `keys`. */
function snapshotOf(keys: readonly Key[], maxParallelism: number): KeyedStateSnapshot {
  const groups = new Map<number, Key[]>();
  for (const k of keys) {
    const kg = assignToKeyGroup(k, maxParallelism);
    (groups.get(kg) ?? groups.set(kg, []).get(kg)!).push(k);
  }
  const sorted = [...groups].sort((a, b) => a[0] - b[0]);
  const sum: KeyGroupEntries[] = sorted.map(([keyGroup, ks]) => ({
    keyGroup,
    keys: ks,
    values: ks.map((k) => `sum:${JSON.stringify(k)}`),
    timestamps: ks.map((_, i) => 1000 + i),
  }));
  const win: KeyGroupEntries[] = sorted.map(([keyGroup, ks]) => ({
    keyGroup,
    keys: [],
    values: [],
    namespaces: [{ namespace: "0:1000", keys: ks, values: ks.map((k) => `w:${k}`) }],
  }));
  return {
    version: 2,
    maxParallelism,
    keyGroupRange: [0, maxParallelism - 1],
    states: {
      sum: { kind: "value", ttl: true, ttlTimeCharacteristic: "ProcessingTime", keyGroups: sum },
      win: { kind: "reducing", ttl: false, keyGroups: win },
    },
  };
}

/** Every (state, namespace, key) -> [value, timestamp], checking each entry's key group. */
function entries(snap: KeyedStateSnapshot): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [name, st] of Object.entries(snap.states)) {
    let last = -1;
    for (const g of st.keyGroups) {
      assert(g.keyGroup > last, `key groups of ${name} ascend`);
      last = g.keyGroup;
      g.keys.forEach((k, i) => {
        assert.deepStrictEqual(assignToKeyGroup(k, snap.maxParallelism), g.keyGroup);
        const id = `${name}||${JSON.stringify(k)}`;
        assert(!out.has(id), `${id} appears once`);
        out.set(id, [g.values[i], g.timestamps?.[i]]);
      });
      for (const ns of g.namespaces ?? []) {
        assert(ns.keys.length > 0, "no empty namespace");
        ns.keys.forEach((k, i) => {
          assert.deepStrictEqual(assignToKeyGroup(k, snap.maxParallelism), g.keyGroup);
          out.set(`${name}|${ns.namespace}|${JSON.stringify(k)}`, [ns.values[i], undefined]);
        });
      }
    }
  }
  return out;
}

const KEYS: Key[] = [
  ...Array.from({ length: 500 }, (_, i) => `key-${i}`),
  7,
  -3.5,
  true,
  ["tuple", 1],
];

Deno.test("rehashKeyedSnapshots() moves every entry to its key group under the new max parallelism", () => {
  const old = snapshotOf(KEYS, 128);
  // Split the old snapshot in two subtasks' halves, as a savepoint at parallelism 2 holds it.
  const half = (from: number, to: number): KeyedStateSnapshot => ({
    ...old,
    keyGroupRange: [from, to],
    states: Object.fromEntries(
      Object.entries(old.states).map(([n, st]) => [n, {
        ...st,
        keyGroups: st.keyGroups.filter((g) => g.keyGroup >= from && g.keyGroup <= to),
      }]),
    ),
  });
  const moved = rehashKeyedSnapshots([half(0, 63), half(64, 127)], { maxParallelism: 48 });
  assert.deepStrictEqual(moved.maxParallelism, 48);
  assert.deepStrictEqual(moved.keyGroupRange, [0, 47]);
  assert.deepStrictEqual(moved.states.sum!.ttlTimeCharacteristic, "ProcessingTime");
  const before = entries(old);
  const after = entries(moved);
  assert.deepStrictEqual(after.size, before.size);
  assert.deepStrictEqual(new Map([...after].sort()), new Map([...before].sort()));
});

Deno.test("rehashKeyedSnapshots() round-trips 128 -> 1000 -> 7 -> 128 without losing an entry", () => {
  const old = snapshotOf(KEYS, 128);
  let snap = old;
  for (const mp of [1000, 7, 128]) snap = rehashKeyedSnapshots([snap], { maxParallelism: mp });
  assert.deepStrictEqual(snap.maxParallelism, 128);
  assert.deepStrictEqual(new Map([...entries(snap)].sort()), new Map([...entries(old)].sort()));
});

Deno.test("rehashKeyedSnapshots() keeps only the given key-group range, and the ranges partition the entries", () => {
  const old = snapshotOf(KEYS, 128);
  const parts = [new KeyGroupRange(0, 9), new KeyGroupRange(10, 29), new KeyGroupRange(30, 31)].map(
    (keyGroupRange) => rehashKeyedSnapshots([old], { maxParallelism: 32, keyGroupRange }),
  );
  assert.deepStrictEqual(parts[1]!.keyGroupRange, [10, 29]);
  for (const p of parts) {
    for (const st of Object.values(p.states)) {
      for (const g of st.keyGroups) {
        assert(g.keyGroup >= p.keyGroupRange[0] && g.keyGroup <= p.keyGroupRange[1]);
      }
    }
  }
  const union = new Map(parts.flatMap((p) => [...entries(p)]));
  assert.deepStrictEqual(union.size, entries(old).size);
});

Deno.test("rehashKeyedSnapshots() refuses mixed max parallelisms, conflicting states and bad options", () => {
  const a = snapshotOf(["x"], 128);
  const b = snapshotOf(["y"], 64);
  assertThrows(
    () => rehashKeyedSnapshots([a, b], { maxParallelism: 32 }),
    Error,
    "different max parallelisms [128, 64]",
  );
  const c: KeyedStateSnapshot = {
    ...snapshotOf(["y"], 128),
    states: { sum: { kind: "list", ttl: false, keyGroups: [] } },
  };
  assertThrows(
    () => rehashKeyedSnapshots([a, c], { maxParallelism: 32 }),
    Error,
    "'sum': the snapshots disagree on it (kind value, ttl true (ProcessingTime) vs kind list, ttl false)",
  );
  assertThrows(() => rehashKeyedSnapshots([a], { maxParallelism: 0 }), RangeError);
  assertThrows(
    () => rehashKeyedSnapshots([a], { maxParallelism: 8, keyGroupRange: new KeyGroupRange(0, 8) }),
    RangeError,
    "current value is [0, 8]",
  );
});

Deno.test("rehashTimerSnapshots() regroups timers by their keys and keeps them in firing order", () => {
  const keys = Array.from({ length: 200 }, (_, i) => `k${i}`);
  const group = (mp: number, ts: (i: number) => number) => {
    const byGroup = new Map<number, number[]>();
    keys.forEach((k, i) => {
      const kg = assignToKeyGroup(k, mp);
      (byGroup.get(kg) ?? byGroup.set(kg, []).get(kg)!).push(i);
    });
    return [...byGroup].sort((a, b) => a[0] - b[0]).map(([keyGroup, is]) => ({
      keyGroup,
      keys: is.map((i) => keys[i]!),
      timestamps: is.map(ts),
      namespaces: is.map((i) => (i % 2 === 0 ? "" : `w${i}`)),
    }));
  };
  const old: TimerServiceSnapshot = {
    version: 1,
    eventTime: group(128, (i) => 10_000 - i),
    processingTime: group(128, (i) => i),
  };
  const moved = rehashTimerSnapshots([old], { maxParallelism: 10 });
  for (const domain of [moved.eventTime, moved.processingTime]) {
    const seen = new Set<string>();
    for (const g of domain) {
      g.keys.forEach((k, i) => {
        assert.deepStrictEqual(assignToKeyGroup(k, 10), g.keyGroup);
        seen.add(`${k}|${g.namespaces[i]}|${g.timestamps[i]}`);
        if (i > 0) assert(g.timestamps[i - 1]! <= g.timestamps[i]!, "firing order");
      });
    }
    assert.deepStrictEqual(seen.size, keys.length);
  }
  assert(moved.eventTime.some((g) => g.keys.includes("k3") && g.namespaces.includes("w3")));
  assertThrows(
    () => rehashTimerSnapshots([{ ...old, version: 2 as unknown as 1 }], { maxParallelism: 8 }),
    Error,
    "current value is 2",
  );
});
