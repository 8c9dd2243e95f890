import assert from "node:assert/strict";
import { comparableAggregator } from "./comparable_aggregator.ts";

interface Reading {
  readonly id: string;
  readonly seq: number;
  readonly t: number;
}

const readings: Reading[] = [
  { id: "s", seq: 0, t: 35.8 },
  { id: "s", seq: 1, t: 32.4 },
  { id: "s", seq: 2, t: 42.4 },
  { id: "s", seq: 3, t: 32.4 },
  { id: "s", seq: 4, t: 42.4 },
];

/** The running results, as KeyedStream emits them: the first record, then each reduction. */
function running<T>(fn: (a: T, b: T) => T, records: readonly T[]): T[] {
  const out: T[] = [];
  let acc: T | undefined;
  for (const r of records) out.push(acc = acc === undefined ? r : fn(acc, r));
  return out;
}

Deno.test("min() and max() change only the field; the other fields stay the first record's", () => {
  assert.deepEqual(
    running(comparableAggregator<Reading>("min", "t"), readings).map((r) => [r.seq, r.t]),
    [[0, 35.8], [0, 32.4], [0, 32.4], [0, 32.4], [0, 32.4]],
  );
  assert.deepEqual(
    running(comparableAggregator<Reading>("max", "t"), readings).map((r) => [r.seq, r.t]),
    [[0, 35.8], [0, 35.8], [0, 42.4], [0, 42.4], [0, 42.4]],
  );
});

Deno.test("minBy() and maxBy() keep the whole record, the earlier one on a tie", () => {
  assert.deepEqual(
    running(comparableAggregator<Reading>("minBy", "t"), readings).map((r) => r.seq),
    [0, 1, 1, 1, 1],
  );
  assert.deepEqual(
    running(comparableAggregator<Reading>("maxBy", "t"), readings).map((r) => r.seq),
    [0, 0, 2, 2, 2],
  );
});

Deno.test("the records given are never changed and tuples stay tuples", () => {
  const first: [string, number] = ["a", 5];
  const frozen = Object.freeze(first);
  const r = comparableAggregator<readonly [string, number]>("min", 1)(frozen, ["b", 2]);
  assert.deepEqual(r, ["a", 2]);
  assert.ok(Array.isArray(r));
  assert.deepEqual(first, ["a", 5]);
});

Deno.test("strings, bigints and booleans compare; NaN is greater than every number", () => {
  assert.equal(comparableAggregator<{ v: string }>("max", "v")({ v: "b" }, { v: "a" }).v, "b");
  assert.equal(comparableAggregator<{ v: bigint }>("min", "v")({ v: 10n }, { v: 9n }).v, 9n);
  assert.equal(
    comparableAggregator<{ v: boolean }>("maxBy", "v")({ v: false }, { v: true }).v,
    true,
  );
  assert.equal(comparableAggregator<{ v: number }>("min", "v")({ v: NaN }, { v: 1 }).v, 1);
  assert.ok(Number.isNaN(comparableAggregator<{ v: number }>("max", "v")({ v: 1 }, { v: NaN }).v));
});

Deno.test("a missing field, mixed types or a bad field name throw, naming field and value", () => {
  const min = comparableAggregator<Record<string, unknown>>("min", "t");
  assert.throws(
    () => min({ t: 1 }, { x: 2 }),
    /min\("t"\) needs a number, string, bigint or boolean in field "t": current value is undefined in record \{"x":2\}/,
  );
  assert.throws(
    () => min({ t: 1 }, { t: "2" }),
    /min\("t"\) compares values of one type: field "t" holds number 1 in an earlier record, current value is string "2"/,
  );
  assert.throws(
    () => comparableAggregator("maxBy", -1),
    /maxBy\(\) needs a field name or a non-negative index: current value is -1/,
  );
  assert.throws(
    () => comparableAggregator("avg" as "min", "t"),
    /Unknown comparable aggregation .*"avg"/,
  );
});
