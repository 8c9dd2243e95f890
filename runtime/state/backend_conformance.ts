/**
 * The behavioural suite every {@linkcode KeyedStateBackend} must pass, run by
 * each implementation's test file (one suite, several implementations, as
 * Hono's `common.case.test.ts` and `runtime/checkpoint/storage_conformance.ts`):
 *
 * ```ts ignore
 * import { keyedStateBackendConformanceSuite } from "./backend_conformance.ts";
 * import { HeapKeyedStateBackend } from "./heap_keyed_backend.ts";
 *
 * keyedStateBackendConformanceSuite("HeapKeyedStateBackend", (options) =>
 *   new HeapKeyedStateBackend(options));
 * ```
 *
 * It checks, through the interface only:
 *
 * - every state kind (value, list, map, reducing, aggregating with an
 *   accumulator changed in place), registration conflicts, writes before a
 *   current key;
 * - namespaces: isolation, `mergeNamespaces`, `keys(name, namespace)`,
 *   `keysAndNamespaces`;
 * - TTL in processing time and in event time (fake clocks; boundaries,
 *   `OnReadAndWrite`, per list element and per map entry, nothing expires
 *   before event time starts), and that expired entries are neither listed
 *   nor restored;
 * - `keys`, `numKeys`, `numEntries`, `stateNames`; key-group range checks of
 *   `setCurrentKey`;
 * - snapshot → write → restore round trips through a fake
 *   {@linkcode StateWriter} (the bytes a backend writes are all a restore
 *   gets), the handles' kind, uid, key-group range and `shared` flag, and
 *   restore errors (another max parallelism, corrupt bytes) naming the handle;
 * - restore at another parallelism (2 → 3 subtasks), every key kept exactly
 *   once;
 * - snapshot isolation (the module `_conformance_isolation.ts`): writes,
 *   deletes, re-inserts, list and map mutation, accumulator mutation, TTL
 *   refreshes and new namespaces after `snapshot()` never reach what
 *   `write()` writes, with several snapshots in flight, one discarded, and
 *   writes made while `write()` runs;
 * - a fast-check property (`_conformance_property.ts`): random operation
 *   sequences read the same as a model `Map`, and snapshots taken at random
 *   points (written while the operations go on) restore to the model at
 *   that point.
 *
 * Each test makes its backends through the factory and disposes them at its
 * end; none depends on timing.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor } from "../api/state.ts";
import type { KeyedStateBackend } from "./keyed_state_backend.ts";
import { assignToKeyGroup, type Key, KeyGroupRange } from "./key_group.ts";
import { VOID_NAMESPACE } from "./internal_state.ts";
import {
  allStates,
  type ConformanceContext,
  dump,
  type KeyedStateBackendFactory,
  MAX_PARALLELISM,
  populate,
  rangesOf,
  type RegisterTest,
  someKeys,
  UID,
  withContext,
} from "./_conformance_kit.ts";
import { DEFAULT_ISOLATION_KEYS, registerIsolationTests } from "./_conformance_isolation.ts";
import { registerPropertyTests } from "./_conformance_property.ts";

export type {
  KeyedStateBackendFactory,
  KeyedStateBackendFactoryOptions,
} from "./_conformance_kit.ts";

/** Options of {@linkcode keyedStateBackendConformanceSuite}. */
export interface KeyedStateBackendConformanceOptions {
  /** Operation sequences the fast-check property draws (fast-check's `numRuns`); default 100. */
  readonly propertyRuns?: number;
  /**
   * Keys of the isolation test "writes made while write() runs" (an integer
   * ≥ 100); default 20 000. Each key holds an entry in each of the five
   * states (a map's of weight 3 in a cache counted by entries), so a backend
   * with a cache sees evictions in that test while the key count is well
   * above its cache's bound; a backend whose every miss costs a disk read
   * may pass a smaller count that still exceeds its cache and still spans
   * several snapshot chunks, to keep CI time in check.
   */
  readonly isolationKeys?: number;
}

/**
 * Registers the conformance tests (`Deno.test`, named "<name> ...") for one
 * {@linkcode KeyedStateBackend} implementation.
 *
 * @param name the implementation's name in test names, e.g. `"HeapKeyedStateBackend"`.
 * @param factory makes a fresh, empty backend for the options given; may be async.
 * @param options how many runs the property draws, and how many keys the
 *   isolation test with writes during `write()` uses.
 * @throws {RangeError} when `options.isolationKeys` is not an integer ≥ 100.
 */
export function keyedStateBackendConformanceSuite(
  name: string,
  factory: KeyedStateBackendFactory,
  options: KeyedStateBackendConformanceOptions = {},
): void {
  const test = (what: string, fn: (c: ConformanceContext) => Promise<void>) =>
    Deno.test(`${name} ${what}`, () => withContext(factory, fn));
  registerBasicTests(test);
  registerTtlTests(test);
  registerSnapshotTests(test);
  const isolationKeys = options.isolationKeys ?? DEFAULT_ISOLATION_KEYS;
  if (!Number.isInteger(isolationKeys) || isolationKeys < 100) {
    throw new RangeError(
      `keyedStateBackendConformanceSuite option 'isolationKeys' must be an integer ≥ 100: current value is ${isolationKeys}`,
    );
  }
  registerIsolationTests(test, isolationKeys);
  registerPropertyTests(test, options.propertyRuns ?? 100);
}

/** A key whose key group (of max parallelism 128) is outside `range`. */
function keyOutside(range: KeyGroupRange): string {
  for (let i = 0;; i++) {
    const kg = assignToKeyGroup(`out${i}`, MAX_PARALLELISM);
    if (kg < range.startKeyGroup || kg > range.endKeyGroup) return `out${i}`;
  }
}

function sorted(keys: Iterable<Key>): string[] {
  return Array.from(keys, (k) => JSON.stringify(k)).sort();
}

// ---------------------------------------------------------------------------
// State kinds, namespaces, listing, key groups

function registerBasicTests(test: RegisterTest): void {
  test("value state: update, default, clear, update(undefined) clears", async (c) => {
    const b = await c.make();
    const v = b.getValueState(new ValueStateDescriptor<number>("v", { defaultValue: 7 }));
    b.setCurrentKey("a");
    assert.equal(v.value(), 7);
    v.update(1);
    b.setCurrentKey("b");
    assert.equal(v.value(), 7);
    v.update(2);
    b.setCurrentKey("a");
    assert.equal(v.value(), 1);
    v.clear();
    assert.equal(v.value(), 7);
    b.setCurrentKey("b");
    v.update(undefined);
    assert.equal(v.value(), 7);
    assert.equal(b.numKeys("v"), 0);
  });

  test("list state: add, addAll, update, get, clear", async (c) => {
    const b = await c.make();
    const l = b.getListState(new ListStateDescriptor<string>("l"));
    b.setCurrentKey(["t", 1]);
    assert.deepEqual([...l.get()], []);
    l.add("x");
    l.addAll(["y", "z"]);
    assert.deepEqual([...l.get()], ["x", "y", "z"]);
    l.update(["q"]);
    assert.deepEqual([...l.get()], ["q"]);
    l.update([]);
    assert.deepEqual([...l.get()], []);
    assert.equal(b.numKeys("l"), 0);
    l.add("r");
    l.clear();
    assert.deepEqual([...l.get()], []);
    assert.throws(() => l.add(undefined as unknown as string), TypeError);
  });

  test("map state: put, putAll, get, remove, contains, entries, keys, values, isEmpty", async (c) => {
    const b = await c.make();
    const m = b.getMapState(new MapStateDescriptor<number, string>("m"));
    b.setCurrentKey(42);
    assert.equal(m.isEmpty(), true);
    m.put(1, "a");
    m.putAll([[2, "b"], [3, "c"]]);
    assert.equal(m.get(2), "b");
    assert.equal(m.contains(3), true);
    m.remove(3);
    assert.equal(m.contains(3), false);
    assert.deepEqual(m.entries().sort(), [[1, "a"], [2, "b"]]);
    assert.deepEqual(m.keys().sort(), [1, 2]);
    assert.deepEqual(m.values().sort(), ["a", "b"]);
    m.remove(1);
    m.remove(2);
    assert.equal(m.isEmpty(), true);
    assert.equal(b.numKeys("m"), 0);
    m.put(5, "e");
    m.clear();
    assert.equal(m.isEmpty(), true);
    assert.throws(() => m.put(1, undefined as unknown as string), TypeError);
  });

  test("reducing and aggregating state fold added values; clear empties", async (c) => {
    const b = await c.make();
    const { reducing, aggregating } = allStates(b);
    b.setCurrentKey("a");
    assert.equal(reducing.get(), undefined);
    assert.equal(aggregating.get(), undefined);
    for (const x of [1, 2, 3]) {
      reducing.add(x);
      aggregating.add(x * 10);
    }
    assert.equal(reducing.get(), 6);
    assert.equal(aggregating.get(), 60);
    b.setCurrentKey("b");
    aggregating.add(1);
    assert.equal(aggregating.get(), 1);
    b.setCurrentKey("a");
    assert.equal(aggregating.get(), 60);
    reducing.clear();
    aggregating.clear();
    assert.equal(reducing.get(), undefined);
    assert.equal(aggregating.get(), undefined);
  });

  test("a name registered as one kind cannot be registered as another; the same registration reads the same entries", async (c) => {
    const b = await c.make();
    const v = b.getValueState(new ValueStateDescriptor<number>("s"));
    b.setCurrentKey("a");
    v.update(3);
    assert.equal(b.getValueState(new ValueStateDescriptor<number>("s")).value(), 3);
    assert.throws(() => b.getListState(new ListStateDescriptor<number>("s")), Error);
    assert.throws(
      () => b.getValueState(new ValueStateDescriptor<number>("s", { ttl: { ttlMs: 10 } })),
      Error,
    );
    assert.deepEqual(b.stateNames(), ["s"]);
  });

  test("writing before setCurrentKey throws; reading gives the default", async (c) => {
    const b = await c.make();
    const v = b.getValueState(new ValueStateDescriptor<number>("v", { defaultValue: 0 }));
    assert.equal(b.currentKey, undefined);
    assert.equal(b.currentKeyGroup, -1);
    assert.equal(v.value(), 0);
    assert.throws(() => v.update(1), Error);
  });

  test("setCurrentKey refuses a key outside the key-group range and a key of an unsupported type", async (c) => {
    const range = new KeyGroupRange(0, 63);
    const b = await c.make(range);
    assert.equal(b.keyGroupRange.startKeyGroup, 0);
    assert.equal(b.keyGroupRange.endKeyGroup, 63);
    assert.equal(b.maxParallelism, MAX_PARALLELISM);
    const outside = keyOutside(range);
    assert.throws(() => b.setCurrentKey(outside), (e: Error) => {
      assert.ok(e instanceof RangeError, String(e));
      assert.match(e.message, new RegExp(outside));
      return true;
    });
    assert.throws(() => b.setCurrentKey({} as unknown as Key), TypeError);
    for (let i = 0;; i++) {
      if (assignToKeyGroup(`in${i}`, MAX_PARALLELISM) > 63) continue;
      b.setCurrentKey(`in${i}`);
      assert.equal(b.currentKey, `in${i}`);
      assert.equal(b.currentKeyGroup, assignToKeyGroup(`in${i}`, MAX_PARALLELISM));
      break;
    }
  });

  test("keys, numKeys, numEntries and stateNames list what is stored", async (c) => {
    const b = await c.make();
    const keys = someKeys(30);
    populate(b, keys);
    populate(b, keys.slice(0, 10), "w1");
    assert.deepEqual(b.stateNames().sort(), ["aggregating", "list", "map", "reducing", "value"]);
    assert.deepEqual(sorted(b.keys("value")), sorted(keys));
    assert.deepEqual(sorted(b.keys("list", "w1")), sorted(keys.slice(0, 10)));
    assert.deepEqual(sorted(b.keys("map", "nowhere")), []);
    assert.equal(b.numKeys("value"), 30);
    assert.equal(b.numEntries(), 5 * 40);
    const pairs = Array.from(b.keysAndNamespaces("reducing"), ([k, ns]) => JSON.stringify([k, ns]));
    assert.deepEqual(
      pairs.sort(),
      [
        ...keys.map((k) => JSON.stringify([k, VOID_NAMESPACE])),
        ...keys.slice(0, 10).map((k) => JSON.stringify([k, "w1"])),
      ].sort(),
    );
    assert.throws(() => b.keys("missing"), Error);
    assert.throws(() => b.keysAndNamespaces("missing"), Error);
  });

  test("namespaces are isolated per state object and merge into a target", async (c) => {
    const b = await c.make();
    const s = allStates(b);
    b.setCurrentKey("a");
    s.list.setCurrentNamespace("w1");
    s.list.add(1);
    s.list.setCurrentNamespace("w2");
    s.list.add(2);
    s.list.add(3);
    s.list.setCurrentNamespace(VOID_NAMESPACE);
    assert.deepEqual([...s.list.get()], []);
    s.list.mergeNamespaces("w3", ["w1", "w2"]);
    s.list.setCurrentNamespace("w3");
    assert.deepEqual([...s.list.get()], [1, 2, 3]);
    s.list.setCurrentNamespace("w1");
    assert.deepEqual([...s.list.get()], []);
    for (const [ns, x] of [["w1", 1], ["w2", 2], ["w3", 4]] as const) {
      s.reducing.setCurrentNamespace(ns);
      s.reducing.add(x);
      s.aggregating.setCurrentNamespace(ns);
      s.aggregating.add(x);
    }
    s.reducing.mergeNamespaces("w3", ["w1", "w2"]);
    s.aggregating.mergeNamespaces("w3", ["w1", "w2"]);
    s.reducing.setCurrentNamespace("w3");
    s.aggregating.setCurrentNamespace("w3");
    assert.equal(s.reducing.get(), 7);
    assert.equal(s.aggregating.get(), 7);
    assert.deepEqual(sorted(b.keys("reducing", "w1")), []);
    assert.throws(() => s.value.setCurrentNamespace(1 as unknown as string), TypeError);
  });
}

// ---------------------------------------------------------------------------
// TTL

function registerTtlTests(test: RegisterTest): void {
  test("processing-time TTL expires entries at last access + ttlMs; OnReadAndWrite restarts the lifetime", async (c) => {
    const b = await c.make();
    const create = b.getValueState(new ValueStateDescriptor<string>("c", { ttl: { ttlMs: 100 } }));
    const read = b.getValueState(
      new ValueStateDescriptor<string>("r", { ttl: { ttlMs: 100, updateType: "OnReadAndWrite" } }),
    );
    b.setCurrentKey("a");
    create.update("x");
    read.update("y");
    c.clock.now = 1099;
    assert.equal(create.value(), "x");
    assert.equal(read.value(), "y"); // restarts r's lifetime at 1099
    c.clock.now = 1100;
    assert.equal(create.value(), undefined);
    assert.equal(read.value(), "y");
    c.clock.now = 1199;
    assert.deepEqual(sorted(b.keys("r")), ['"a"']);
    c.clock.now = 1299;
    assert.deepEqual(sorted(b.keys("r")), []);
    assert.equal(read.value(), undefined);
  });

  test("TTL list elements and map entries expire one by one", async (c) => {
    const b = await c.make();
    const l = b.getListState(new ListStateDescriptor<number>("l", { ttl: { ttlMs: 100 } }));
    const m = b.getMapState(new MapStateDescriptor<string, number>("m", { ttl: { ttlMs: 100 } }));
    b.setCurrentKey("a");
    l.add(1);
    m.put("old", 1);
    c.clock.now = 1050;
    l.add(2);
    m.put("new", 2);
    c.clock.now = 1100;
    assert.deepEqual([...l.get()], [2]);
    assert.deepEqual(m.entries(), [["new", 2]]);
    assert.equal(m.contains("old"), false);
    c.clock.now = 1150;
    assert.deepEqual([...l.get()], []);
    assert.equal(m.isEmpty(), true);
  });

  test("event-time TTL: nothing expires before the first watermark; then entries expire by the watermark", async (c) => {
    const b = await c.make();
    const ttl = { ttlMs: 100, timeCharacteristic: "EventTime" } as const;
    const v = b.getValueState(new ValueStateDescriptor<string>("v", { ttl }));
    b.setCurrentKey("early");
    v.update("e");
    c.clock.now = 1e12; // processing time means nothing here
    assert.equal(v.value(), "e");
    c.watermark.now = 5000; // event time starts: "early" counts as accessed at 5000
    assert.equal(v.value(), "e");
    b.setCurrentKey("late");
    v.update("l");
    c.watermark.now = 5099;
    assert.equal(v.value(), "l");
    b.setCurrentKey("early");
    assert.equal(v.value(), "e");
    c.watermark.now = 5100;
    assert.equal(v.value(), undefined);
    b.setCurrentKey("late");
    assert.equal(v.value(), undefined);
  });

  test("expired entries are not snapshotted: a restore does not bring them back", async (c) => {
    const b = await c.make();
    const v = b.getValueState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100 } }));
    const l = b.getListState(new ListStateDescriptor<number>("l", { ttl: { ttlMs: 100 } }));
    b.setCurrentKey("old");
    v.update(1);
    l.add(1);
    c.clock.now = 1060;
    b.setCurrentKey("new");
    v.update(2);
    l.add(2);
    c.clock.now = 1120;
    const handles = await c.snapshotHandles(b, 1);
    c.clock.now = 1000; // a restore must not resurrect what had expired at the snapshot
    const r = await c.restored(handles);
    const rv = r.getValueState(new ValueStateDescriptor<number>("v", { ttl: { ttlMs: 100 } }));
    const rl = r.getListState(new ListStateDescriptor<number>("l", { ttl: { ttlMs: 100 } }));
    r.setCurrentKey("old");
    assert.equal(rv.value(), undefined);
    assert.deepEqual([...rl.get()], []);
    c.clock.now = 1150;
    r.setCurrentKey("new");
    assert.equal(rv.value(), 2); // last access 1060 kept
    assert.deepEqual([...rl.get()], [2]);
    c.clock.now = 1160;
    assert.equal(rv.value(), undefined);
  });
}

// ---------------------------------------------------------------------------
// Snapshots and restores

function registerSnapshotTests(test: RegisterTest): void {
  for (const type of ["checkpoint", "savepoint"] as const) {
    test(`a ${type} round trip through the writer restores every state, namespace and key`, async (c) => {
      const b = await c.make();
      const keys = someKeys(200);
      populate(b, keys);
      populate(b, keys.slice(50, 80), "w1");
      populate(b, keys.slice(70, 90), "w2");
      const before = dump(b, keys, [VOID_NAMESPACE, "w1", "w2"]);
      const handles = await c.snapshotHandles(b, 7, type);
      assert.ok(handles.length > 0);
      const r = await c.restored(handles);
      assert.deepEqual(dump(r, keys, [VOID_NAMESPACE, "w1", "w2"]), before);
      assert.equal(r.numEntries(), b.numEntries());
      assert.deepEqual(r.stateNames().sort(), b.stateNames().sort());
      // The restored backend keeps working and snapshots again.
      populate(r, ["fresh"]);
      const again = await c.restored(await c.snapshotHandles(r, 8, type));
      assert.deepEqual(dump(again, [...keys, "fresh"]), dump(r, [...keys, "fresh"]));
    });
  }

  test("a savepoint writes private 'keyed' handles of the operator uid within the key-group range", async (c) => {
    const range = new KeyGroupRange(32, 95);
    const b = await c.make(range);
    populate(b, someKeys(300).filter((k) => range.contains(assignToKeyGroup(k, MAX_PARALLELISM))));
    const handles = await c.snapshotHandles(b, 3, "savepoint");
    for (const h of handles) {
      assert.equal(h.kind, "keyed");
      assert.equal(h.shared, false);
      assert.equal(h.uid, UID);
      assert.ok(h.keyGroupRange !== undefined, "a keyed handle has a key-group range");
      assert.ok(h.keyGroupRange[0] >= 32 && h.keyGroupRange[1] <= 95, String(h.keyGroupRange));
      assert.equal(h.bytes > 0, true);
    }
  });

  test("restore at another parallelism (2 to 3 subtasks) keeps every key exactly once", async (c) => {
    const keys = someKeys(600);
    const mineOf = (b: KeyedStateBackend) =>
      keys.filter((k) => b.keyGroupRange.contains(assignToKeyGroup(k, MAX_PARALLELISM)));
    const namespaces = [VOID_NAMESPACE, "w1"];
    const old = await Promise.all(rangesOf(MAX_PARALLELISM, 2).map((r) => c.make(r)));
    for (const b of old) {
      populate(b, mineOf(b));
      populate(b, mineOf(b).slice(0, 20), "w1");
    }
    const expected = Object.assign({}, ...old.map((b) => dump(b, mineOf(b), namespaces)));
    const handles = (await Promise.all(old.map((b, i) => c.snapshotHandles(b, 5 + i)))).flat();
    const next = await Promise.all(rangesOf(MAX_PARALLELISM, 3).map((r) => c.restored(handles, r)));
    const seen = new Map<string, number>();
    for (const b of next) {
      for (const k of b.keys("value")) {
        const s = JSON.stringify(k);
        seen.set(s, (seen.get(s) ?? 0) + 1);
        assert.ok(b.keyGroupRange.contains(assignToKeyGroup(k, MAX_PARALLELISM)));
      }
    }
    assert.equal(seen.size, keys.length);
    assert.ok([...seen.values()].every((n) => n === 1));
    const actual = Object.assign({}, ...next.map((b) => dump(b, mineOf(b), namespaces)));
    assert.deepEqual(actual, expected);
  });

  test("restore refuses a snapshot of another max parallelism and corrupt bytes, naming the handle", async (c) => {
    const other = await c.make(new KeyGroupRange(0, 63), 64);
    populate(other, ["a", "b"]);
    const handles = await c.snapshotHandles(other, 1);
    const fresh = await c.make();
    await assert.rejects(() => fresh.restore(handles, c.store.read), /max parallelism/);
    const b = await c.make();
    populate(b, someKeys(20));
    const good = await c.snapshotHandles(b, 2, "savepoint");
    for (const h of good) c.store.corrupt(h.path, new Uint8Array([0xc1, 0xff, 0x00]));
    const target = await c.make();
    await assert.rejects(
      () => target.restore(good, c.store.read),
      (e: Error) => {
        assert.ok(good.some((h) => e.message.includes(h.path)), e.message);
        return true;
      },
    );
  });

  test("a restored state keeps its entries before it is registered and snapshots them again", async (c) => {
    const b = await c.make();
    populate(b, someKeys(10));
    const r = await c.restored(await c.snapshotHandles(b, 1));
    assert.deepEqual(r.stateNames().sort(), b.stateNames().sort());
    const again = await c.restored(await c.snapshotHandles(r, 2));
    assert.deepEqual(dump(again, someKeys(10)), dump(b, someKeys(10)));
  });
}
