import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { type AggregateName, compareValues, createAggregate } from "./aggregates.ts";

const NAMES: AggregateName[] = ["COUNT", "COUNT_STAR", "SUM", "AVG", "MIN", "MAX"];

Deno.test("every aggregate: accumulating a bag then retracting a sub-bag gives the value of the rest", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...NAMES),
      fc.boolean(),
      fc.array(fc.option(fc.integer({ min: -20, max: 20 }), { nil: null }), { maxLength: 40 }),
      fc.array(fc.boolean(), { maxLength: 40 }),
      (fn, distinct, values, drop) => {
        const spec = { fn, distinct: distinct && fn === "COUNT", integral: true };
        const agg = createAggregate(spec);
        const acc = agg.createAccumulator();
        for (const v of values) agg.accumulate(acc, v);
        const kept = values.filter((_, i) => !drop[i]);
        values.forEach((v, i) => {
          if (drop[i]) agg.retract(acc, v);
        });
        const fresh = createAggregate(spec);
        const expected = fresh.createAccumulator();
        for (const v of kept) fresh.accumulate(expected, v);
        assert.deepEqual(agg.getValue(acc), fresh.getValue(expected));
        assert.deepEqual(
          acc,
          expected,
          "the accumulator itself is the same as one built from the rest",
        );
      },
    ),
    { numRuns: 1000 },
  );
});

Deno.test("MIN and MAX find the next value when the current one is retracted", () => {
  const min = createAggregate({ fn: "MIN", distinct: false, integral: true });
  const acc = min.createAccumulator();
  for (const v of [4, 1, 1, 7]) min.accumulate(acc, v);
  min.retract(acc, 1);
  assert.equal(min.getValue(acc), 1, "one 1 is left");
  min.retract(acc, 1);
  assert.equal(min.getValue(acc), 4);
  min.retract(acc, 4);
  min.retract(acc, 7);
  assert.equal(min.getValue(acc), null, "MIN of nothing is NULL");
  assert.throws(() => min.retract(acc, 9), /MIN retracts 9, which it never accumulated/);
});

Deno.test("SQL NULL handling: COUNT(x) skips NULL, COUNT(*) does not, SUM/AVG of only NULLs is NULL", () => {
  const make = (fn: AggregateName) => createAggregate({ fn, distinct: false, integral: true });
  for (
    const [fn, expected] of [["COUNT", 0], ["COUNT_STAR", 2], ["SUM", null], ["AVG", null]] as const
  ) {
    const agg = make(fn);
    const acc = agg.createAccumulator();
    agg.accumulate(acc, null);
    agg.accumulate(acc, null);
    assert.equal(agg.getValue(acc), expected, fn);
  }
});

Deno.test("AVG truncates toward zero over integers and not over doubles, as Flink's AVG", () => {
  const ints = createAggregate({ fn: "AVG", distinct: false, integral: true });
  const doubles = createAggregate({ fn: "AVG", distinct: false, integral: false });
  const a = ints.createAccumulator();
  const b = doubles.createAccumulator();
  for (const v of [-1, -2]) {
    ints.accumulate(a, v);
    doubles.accumulate(b, v);
  }
  assert.equal(ints.getValue(a), -1);
  assert.equal(doubles.getValue(b), -1.5);
});

Deno.test("compareValues orders NULL first, numbers by value, strings by code unit", () => {
  assert.ok(compareValues(null, -1) < 0);
  assert.ok(compareValues(2, 10) < 0);
  assert.ok(compareValues("B", "a") < 0);
  assert.equal(compareValues("x", "x"), 0);
  assert.throws(
    () => createAggregate({ fn: "SUM", distinct: true, integral: true }),
    /DISTINCT is supported only in COUNT/,
  );
});

Deno.test("MIN and MAX over an append-only input keep one pair and equal the retracting versions", () => {
  const value = fc.oneof(
    fc.constant(null),
    fc.integer({ min: -5, max: 5 }),
    fc.string({ maxLength: 2 }),
  );
  fc.assert(
    fc.property(fc.array(value, { maxLength: 30 }), fc.constantFrom("MIN", "MAX"), (values, fn) => {
      const spec = { fn: fn as AggregateName, distinct: false, integral: false };
      const lean = createAggregate({ ...spec, appendOnly: true });
      const full = createAggregate(spec);
      const a = lean.createAccumulator();
      const b = full.createAccumulator();
      for (const v of values) {
        lean.accumulate(a, v);
        full.accumulate(b, v);
        assert.deepEqual(lean.getValue(a), full.getValue(b));
        assert.ok(a.length <= 1, `kept ${a.length} pairs`);
      }
    }),
  );
});

Deno.test("MIN and MAX over an append-only input refuse a retraction, naming it", () => {
  const max = createAggregate({ fn: "MAX", distinct: false, integral: true, appendOnly: true });
  const acc = max.createAccumulator();
  max.accumulate(acc, 4);
  assert.throws(() => max.retract(acc, 4), /MAX over an append-only input got a retraction of 4/);
});

Deno.test("MAX over an append-only input continues a retracting MAX's accumulator (an older checkpoint)", () => {
  const full = createAggregate({ fn: "MAX", distinct: false, integral: true });
  const acc = full.createAccumulator();
  for (const v of [3, 9, 1]) full.accumulate(acc, v);
  const lean = createAggregate({ fn: "MAX", distinct: false, integral: true, appendOnly: true });
  assert.equal(lean.getValue(acc), 9);
  lean.accumulate(acc, 5);
  assert.equal(lean.getValue(acc), 9);
  lean.accumulate(acc, 12);
  assert.equal(lean.getValue(acc), 12);
});
