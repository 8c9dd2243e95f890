import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { SuppressRestartsError } from "../failure.ts";
import {
  checkDistinctSplitIds,
  newOwnedSplits,
  ownedSplits,
  splitOwner,
} from "./split_assignment.ts";

Deno.test("splitOwner is FNV-1a of the id's UTF-8 bytes modulo the parallelism", () => {
  // FNV-1a 32-bit reference values: "" → 0x811c9dc5, "a" → 0xe40c292c, "foobar" → 0xbf9cf968.
  assert.equal(splitOwner("", 1_000_000_007), 0x811c9dc5 % 1_000_000_007);
  assert.equal(splitOwner("a", 1_000_000_007), 0xe40c292c % 1_000_000_007);
  assert.equal(splitOwner("foobar", 1_000_000_007), 0xbf9cf968 % 1_000_000_007);
  assert.equal(splitOwner("foobar", 7), 0xbf9cf968 % 7);
  // Non-ASCII ids hash their UTF-8 bytes, not UTF-16 code units.
  assert.equal(splitOwner("é", 1_000_000_007), 0x1e9de8c1 % 1_000_000_007);
});

Deno.test("every split is owned by exactly one subtask, at any parallelism", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.string(), { maxLength: 40 }),
      fc.integer({ min: 1, max: 16 }),
      (ids, parallelism) => {
        const splits = ids.map((splitId) => ({ splitId }));
        const owners = new Map<string, number>();
        for (let i = 0; i < parallelism; i++) {
          for (const s of ownedSplits(splits, i, parallelism)) {
            assert.ok(!owners.has(s.splitId), `${s.splitId} owned twice`);
            owners.set(s.splitId, i);
          }
        }
        assert.equal(owners.size, ids.length);
        for (const id of ids) assert.equal(owners.get(id), splitOwner(id, parallelism));
      },
    ),
  );
});

Deno.test("newOwnedSplits gives, over all subtasks, each discovered split not yet known once", () => {
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom("a", "b", "c", "d", "e", "f", "g"), { maxLength: 20 }),
      fc.subarray(["a", "b", "c", "d", "e", "f", "g"]),
      fc.integer({ min: 1, max: 5 }),
      (discoveredIds, knownIds, parallelism) => {
        const discovered = discoveredIds.map((splitId, n) => ({ splitId, n }));
        const known = new Set(knownIds);
        const added = [];
        for (let i = 0; i < parallelism; i++) {
          const mine = newOwnedSplits({ discovered, known, subtaskIndex: i, parallelism });
          for (const s of mine) assert.equal(splitOwner(s.splitId, parallelism), i);
          added.push(...mine);
        }
        const expected = [...new Set(discoveredIds)].filter((id) => !known.has(id)).sort();
        assert.deepEqual(added.map((s) => s.splitId).sort(), expected);
        // The first occurrence of a repeated id wins.
        for (const s of added) {
          assert.equal(s.n, discoveredIds.indexOf(s.splitId));
        }
      },
    ),
  );
});

Deno.test("ownership rejects a parallelism or subtask index out of range, naming the value", () => {
  assert.throws(
    () => splitOwner("a", 0),
    /parallelism that is a positive integer: current value is 0/,
  );
  assert.throws(
    () => ownedSplits([{ splitId: "a" }], 3, 3),
    /subtask index in 0\.\.2: current value is 3/,
  );
});

Deno.test("a split restored twice fails the restore without restarts, naming the split", () => {
  checkDistinctSplitIds([{ splitId: "a" }, { splitId: "b" }], "source 'x'");
  assert.throws(
    () =>
      checkDistinctSplitIds([{ splitId: "a" }, { splitId: "b" }, { splitId: "a" }], "source 'x'"),
    (e: unknown) =>
      e instanceof SuppressRestartsError &&
      e.message ===
        `Cannot restore source 'x': split "a" is in the checkpoint twice (each split must be held by one subtask)`,
  );
});
