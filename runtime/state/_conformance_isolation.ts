/**
 * Internal: the snapshot-isolation tests of `backend_conformance.ts`. A
 * snapshot stands for the state at the moment `snapshot()` returned: writes,
 * deletes, re-inserts, list appends, map puts and removes, accumulators
 * changed in place by user functions, TTL refreshes and new namespaces made
 * afterwards (before `write()`, or while it runs) must never reach what
 * `write()` writes; several snapshots may be in flight at once, and
 * discarding one leaves the others and the live state intact.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ValueStateDescriptor } from "../api/state.ts";
import { VOID_NAMESPACE } from "./internal_state.ts";
import type { KeyedStateBackend } from "./keyed_state_backend.ts";
import type { Key } from "./key_group.ts";
import { yieldToEventLoop } from "../actor/async.ts";
import {
  allStates,
  dump,
  populate,
  type RegisterTest,
  someKeys,
  writeSnapshot,
} from "./_conformance_kit.ts";

const NAMESPACES = [VOID_NAMESPACE, "w1", "w2"];

/**
 * Changes every kind of entry of {@linkcode allStates} for `keys`: updates,
 * clears, clears and re-inserts, appends, map puts and removes, in-place
 * accumulator changes, a new namespace. `round` varies the values.
 */
function mutate(backend: KeyedStateBackend, keys: readonly Key[], round: number): void {
  const s = allStates(backend);
  keys.forEach((key, i) => {
    backend.setCurrentKey(key);
    switch ((i + round) % 6) {
      case 0:
        s.value.update(1000 * round + i);
        s.list.add(-round);
        break;
      case 1:
        s.value.clear();
        s.list.clear();
        s.map.clear();
        break;
      case 2: // delete, then re-insert
        s.value.clear();
        s.value.update(-i - 1);
        s.list.clear();
        s.list.add(round);
        s.reducing.clear();
        s.reducing.add(round);
        break;
      case 3:
        s.map.put("x", round);
        s.map.remove(`u${i % 3}`);
        s.map.put(`new${round}`, i);
        break;
      case 4:
        s.aggregating.add(100 * round); // MUTATING_SUM changes the accumulator in place
        s.reducing.add(round);
        break;
      case 5:
        for (const state of Object.values(s)) state.setCurrentNamespace("w2");
        s.value.update(round);
        s.list.add(round);
        s.aggregating.add(round);
        for (const state of Object.values(s)) state.setCurrentNamespace(VOID_NAMESPACE);
        s.list.setCurrentNamespace("w1");
        s.list.mergeNamespaces("w2", ["w1"]);
        s.list.setCurrentNamespace(VOID_NAMESPACE);
        break;
    }
  });
}

/** The default number of keys of the test of writes made while `write()` runs. */
export const DEFAULT_ISOLATION_KEYS = 20_000;

/**
 * Registers the isolation tests.
 *
 * @param writeKeys the number of keys of the test of writes made while
 *   `write()` runs (integer ≥ 100); each round mutates 15% of them, starting
 *   within the first 75%.
 */
export function registerIsolationTests(
  test: RegisterTest,
  writeKeys: number = DEFAULT_ISOLATION_KEYS,
): void {
  test("snapshot isolation: writes after snapshot() do not reach what write() writes", async (c) => {
    const b = await c.make();
    const keys = someKeys(300);
    populate(b, keys);
    populate(b, keys.slice(0, 60), "w1");
    const expected = dump(b, keys, NAMESPACES);
    const result = b.snapshot(1, "checkpoint", "op");
    mutate(b, keys, 1);
    populate(b, someKeys(50, "added"));
    const live = dump(b, keys, NAMESPACES);
    assert.notDeepEqual(live, expected, "the mutations change the live state");
    const handles = await writeSnapshot(c.store, result, 1, "checkpoint");
    const r = await c.restored(handles);
    assert.deepEqual(dump(r, keys, NAMESPACES), expected);
    assert.deepEqual([...r.keys("value")].filter((k) => String(k).startsWith("added")), []);
    assert.deepEqual(dump(b, keys, NAMESPACES), live, "writing leaves the live state as it was");
  });

  test("snapshot isolation: several snapshots in flight, one discarded, written out of order", async (c) => {
    const b = await c.make();
    const keys = someKeys(200);
    populate(b, keys);
    const states: Record<string, unknown>[] = [];
    const results = [];
    for (let round = 1; round <= 3; round++) {
      states.push(dump(b, keys, NAMESPACES));
      results.push(b.snapshot(round, "checkpoint", "op"));
      mutate(b, keys, round);
    }
    results[1]!.discard?.();
    const final = dump(b, keys, NAMESPACES);
    const third = await c.restored(await writeSnapshot(c.store, results[2]!, 3, "checkpoint"));
    const first = await c.restored(await writeSnapshot(c.store, results[0]!, 1, "checkpoint"));
    assert.deepEqual(dump(first, keys, NAMESPACES), states[0]);
    assert.deepEqual(dump(third, keys, NAMESPACES), states[2]);
    assert.deepEqual(dump(b, keys, NAMESPACES), final);
    // The live state still snapshots correctly after all of that.
    const now = await c.restored(await c.snapshotHandles(b, 4));
    assert.deepEqual(dump(now, keys, NAMESPACES), final);
  });

  test("snapshot isolation: writes made while write() runs do not reach it", async (c) => {
    const b = await c.make();
    const keys = someKeys(writeKeys);
    const span = Math.floor(writeKeys * 0.75); // 15 000 of the default 20 000
    const slice = Math.floor(writeKeys * 0.15); // 3000 of the default 20 000
    populate(b, keys);
    const expected = dump(b, keys);
    const result = b.snapshot(1, "checkpoint", "op");
    let done = false;
    const writing = writeSnapshot(c.store, result, 1, "checkpoint").finally(() => done = true);
    let round = 1;
    // Mutate between the write's slices until it finishes (at least once).
    do {
      mutate(b, keys.slice((round * 997) % span, (round * 997) % span + slice), round);
      round++;
      await yieldToEventLoop();
    } while (!done);
    const live = dump(b, keys);
    const r = await c.restored(await writing);
    assert.deepEqual(dump(r, keys), expected);
    const again = await c.restored(await c.snapshotHandles(b, 2));
    assert.deepEqual(dump(again, keys), live);
  });

  test("snapshot isolation: a TTL refresh after snapshot() does not reach it", async (c) => {
    const b = await c.make();
    const ttl = { ttlMs: 100, updateType: "OnReadAndWrite" } as const;
    const v = b.getValueState(new ValueStateDescriptor<number>("t", { ttl }));
    b.setCurrentKey("a");
    v.update(1); // last access 1000
    const result = b.snapshot(1, "checkpoint", "op");
    c.clock.now = 1050;
    assert.equal(v.value(), 1); // refreshed to 1050 in the live state only
    v.update(2);
    const r = await c.restored(await writeSnapshot(c.store, result, 1, "checkpoint"));
    const rv = r.getValueState(new ValueStateDescriptor<number>("t", { ttl }));
    assert.equal(r.numKeys("t"), 1);
    r.setCurrentKey("a");
    c.clock.now = 1100; // the snapshot's last access, 1000, has expired; the live 1050 has not
    assert.equal(rv.value(), undefined);
    const later = b.snapshot(2, "checkpoint", "op");
    const r2 = await c.restored(await writeSnapshot(c.store, later, 2, "checkpoint"));
    const rv2 = r2.getValueState(new ValueStateDescriptor<number>("t", { ttl }));
    r2.setCurrentKey("a");
    c.clock.now = 1120;
    assert.equal(rv2.value(), 2);
  });
}
