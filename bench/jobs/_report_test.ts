/**
 * Unit tests of the keyed-sum job's checksum: the expected checksum of its
 * sinks, computed without the engine, and that a lost or duplicated record
 * changes it.
 *
 * @module
 */

import assert from "node:assert/strict";
import { addToChecksum, expectedUpdateChecksum } from "./_report.ts";

/** The checksum of `updates` by BigInt arithmetic (no rounding anywhere). */
function exact(updates: readonly number[]): number {
  return Number(updates.reduce((c, u) => c + BigInt(u), 0n) % (1n << 32n));
}

/** The running sums a keyed sum emits for `records` (key `i % keys`). */
function runningSums(records: readonly number[], keys: number): number[] {
  const sums = new Map<number, number>();
  return records.map((i) => {
    const s = (sums.get(i % keys) ?? 0) + i;
    sums.set(i % keys, s);
    return s;
  });
}

Deno.test("expectedUpdateChecksum() is the sum mod 2^32 of every running sum the job emits", () => {
  const records = Array.from({ length: 5000 }, (_, i) => i);
  assert.equal(expectedUpdateChecksum(5000, 7), exact(runningSums(records, 7)));
  // Large running sums wrap mod 2^32 exactly.
  assert.equal(addToChecksum(2 ** 32 - 1, 2 ** 40 + 3), 2);
});

Deno.test("expectedUpdateChecksum() changes when a record is lost or duplicated", () => {
  const records = Array.from({ length: 1000 }, (_, i) => i);
  const expected = expectedUpdateChecksum(1000, 10);
  const lost = records.filter((i) => i !== 500);
  const duplicated = [...records.slice(0, 501), 500, ...records.slice(501)];
  const checksum = (rs: number[]) => runningSums(rs, 10).reduce(addToChecksum, 0);
  assert.equal(checksum(records), expected);
  assert.notEqual(checksum(lost), expected);
  assert.notEqual(checksum(duplicated), expected);
});
