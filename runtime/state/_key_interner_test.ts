import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { KeyInterner, MIN_SWEEP_SIZE, tupleHash } from "./_key_interner.ts";
import type { KeyPart } from "./key_group.ts";
import { HeapKeyedStateBackend } from "./heap_keyed_backend.ts";
import { KeyGroupRange } from "./key_group.ts";
import { ValueStateDescriptor } from "../api/state.ts";

/** SameValueZero over tuples: the key equality of key groups and snapshots. */
function sameKey(a: readonly KeyPart[], b: readonly KeyPart[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i] || (x !== x && b[i] !== b[i]));
}

const part = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom(0, -0, NaN, 0.5, -0.5, 1e300, Infinity),
  fc.constantFrom("", "a", "b", "\u0000", "\u0000(", "ab"),
  fc.boolean(),
  fc.constantFrom(0n, 1n, -1n, 2n ** 40n),
);

Deno.test("equal tuples share one identity and different tuples never do", () => {
  fc.assert(
    fc.property(fc.array(fc.array(part, { maxLength: 3 }), { maxLength: 30 }), (tuples) => {
      const interner = new KeyInterner();
      const ids = tuples.map((t) => interner.intern(t));
      for (let i = 0; i < tuples.length; i++) {
        assert.ok(sameKey(ids[i]!, tuples[i]!), "an identity equals its key");
        assert.ok(!ids[i]!.some((x) => Object.is(x, -0)), "no -0 in a canonical tuple");
        for (let j = 0; j < i; j++) {
          assert.equal(ids[i] === ids[j], sameKey(tuples[i]!, tuples[j]!));
        }
      }
    }),
  );
});

Deno.test("tuples whose hashes collide keep distinct identities", () => {
  // "Aa" and "BB" collide in a 31-polynomial string hash (as in Java's String.hashCode).
  const [a, b] = ["Aa", "BB"];
  assert.equal(tupleHash([7, a]), tupleHash([7, b]));
  const interner = new KeyInterner();
  const third = interner.intern([7, b]);
  const first = interner.intern([7, a]);
  const second = interner.intern([7, b]);
  assert.equal(second, third);
  assert.notEqual(first, second);
  assert.equal(interner.intern([7, a]), first);
  assert.equal(interner.size, 2);
});

Deno.test("an identity is a copy: changing the caller's array does not change it", () => {
  const interner = new KeyInterner();
  const key: KeyPart[] = ["user", 1];
  const id = interner.intern(key);
  key[1] = 2;
  assert.deepEqual(id, ["user", 1]);
  assert.notEqual(interner.intern(key), id);
  assert.equal(interner.intern(["user", 1]), id);
});

Deno.test("a key that is not a primitive or a tuple of primitives is rejected with its position", () => {
  const interner = new KeyInterner();
  assert.throws(() => interner.identity(["a", { x: 1 }] as never), /element 1 is an object/);
  assert.throws(() => interner.identity(null as never), /current value is null/);
  assert.throws(() => interner.identity(undefined as never), /current value is undefined/);
  assert.equal(interner.identity(-0), 0);
  assert.equal(interner.identity("\u0000x"), "\u0000x");
});

Deno.test("a sweep keeps the identities the tables hold and drops the others", () => {
  const interner = new KeyInterner();
  const live = interner.intern(["live", 1]);
  interner.intern(["dead", 2]);
  interner.sweep((keep) => {
    keep(live);
    keep("primitive");
    keep(live);
  });
  assert.equal(interner.size, 1);
  assert.equal(interner.intern(["live", 1]), live);
  assert.equal(interner.size, 1);
});

Deno.test("composite-keyed state survives interner sweeps while keys come and go", () => {
  const backend = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
  });
  const state = backend.getValueState(new ValueStateDescriptor<number>("v"));
  const n = 3 * MIN_SWEEP_SIZE;
  for (let i = 0; i < n; i++) {
    backend.setCurrentKey([i, "k"]);
    state.update(i);
  }
  // Remove the even keys, then read many keys never written (each interned, then dropped).
  for (let i = 0; i < n; i += 2) {
    backend.setCurrentKey([i, "k"]);
    state.clear();
  }
  for (let i = 0; i < 4 * n; i++) {
    backend.setCurrentKey([-1 - i, "absent"]);
    assert.equal(state.value(), undefined);
  }
  for (let i = 0; i < n; i++) {
    backend.setCurrentKey([i, "k"]);
    assert.equal(state.value(), i % 2 === 1 ? i : undefined, `key [${i}, "k"]`);
  }
  assert.equal(backend.numKeys("v"), n / 2);
  const restored = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
  });
  restored.restoreCanonical([structuredClone(backend.snapshotCanonical())]);
  const again = restored.getValueState(new ValueStateDescriptor<number>("v"));
  for (let i = 1; i < n; i += 2) {
    restored.setCurrentKey([i, "k"]);
    assert.equal(again.value(), i);
  }
  assert.deepEqual(
    [...restored.keys("v")].map((k) => JSON.stringify(k)).sort(),
    [...backend.keys("v")].map((k) => JSON.stringify(k)).sort(),
  );
});

Deno.test("a tuple and the string that encoded it before interning stay two keys across a restore", () => {
  const backend = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
  });
  const state = backend.getValueState(new ValueStateDescriptor<string>("v"));
  // "\u0000(s1:a" is how stateKeyOf encoded ["a"]; "\u0000x" is a NUL-prefixed string key.
  const keys = [["a"], "\u0000(s1:a", "\u0000x", [-0, NaN], [0, NaN]] as const;
  for (const [i, key] of keys.entries()) {
    backend.setCurrentKey(key);
    state.update(`value ${i}`);
  }
  const restored = new HeapKeyedStateBackend({
    keyGroupRange: new KeyGroupRange(0, 127),
    maxParallelism: 128,
  });
  restored.restoreCanonical([structuredClone(backend.snapshotCanonical())]);
  const again = restored.getValueState(new ValueStateDescriptor<string>("v"));
  const expected = ["value 0", "value 1", "value 2", "value 4", "value 4"]; // [-0, NaN] is [0, NaN]
  for (const [i, key] of keys.entries()) {
    restored.setCurrentKey(key);
    assert.equal(again.value(), expected[i], `key ${JSON.stringify(key)}`);
  }
  assert.equal(restored.numKeys("v"), 4);
});
