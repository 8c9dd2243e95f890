import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import {
  decideDeduplicate,
  DeduplicateFunction,
  deduplicateIsAppendOnly,
  type DeduplicateSpec,
} from "./deduplicate.ts";
import { applyChange, formatRow, type Row, type SqlValue } from "./row.ts";
import { OperatorTestHarness } from "../task/operators/_operator_test_harness.ts";
import { KeyedProcessOperator } from "../task/operators/transform_operators.ts";
import type { KeyedProcessFunction } from "../api/functions.ts";

/** Input rows: `[key, rowtime ms, value]`. */
const rows = fc.array(
  fc.tuple(fc.constantFrom("a", "b", "c"), fc.integer({ min: 0, max: 20 }), fc.integer()),
  { maxLength: 60 },
);

function continuous(spec: DeduplicateSpec, input: readonly SqlValue[][]): Row[] {
  const kept = new Map<string, readonly SqlValue[]>();
  const out: Row[] = [];
  for (const fields of input) {
    const key = fields[0] as string;
    const decision = decideDeduplicate(spec, kept.get(key), { kind: "INSERT", fields });
    if (decision.keep !== undefined) kept.set(key, decision.keep);
    out.push(...decision.emit);
  }
  return out;
}

/** The batch query: per key the first/last row by arrival or by rowtime (ties: first/last arrival). */
function batch(spec: DeduplicateSpec, input: readonly SqlValue[][]): Map<string, number> {
  const chosen = new Map<string, readonly SqlValue[]>();
  for (const fields of input) {
    const key = fields[0] as string;
    const old = chosen.get(key);
    const t = fields[1] as number;
    if (old === undefined) chosen.set(key, fields);
    else if (
      spec.rowtimeIndex === null
        ? spec.keepLastRow
        : spec.keepLastRow
        ? t >= (old[1] as number)
        : t < (old[1] as number)
    ) {
      chosen.set(key, fields);
    }
  }
  const table = new Map<string, number>();
  for (const fields of chosen.values()) applyChange(table, { kind: "INSERT", fields });
  return table;
}

const SPECS: [string, DeduplicateSpec][] = [
  ["processing-time keep-first", {
    keepLastRow: false,
    rowtimeIndex: null,
    generateUpdateBefore: true,
  }],
  ["processing-time keep-last", {
    keepLastRow: true,
    rowtimeIndex: null,
    generateUpdateBefore: true,
  }],
  ["event-time keep-first", {
    keepLastRow: false,
    rowtimeIndex: 1,
    rowtimeName: "ts",
    generateUpdateBefore: true,
  }],
  ["event-time keep-last", {
    keepLastRow: true,
    rowtimeIndex: 1,
    rowtimeName: "ts",
    generateUpdateBefore: true,
  }],
];

for (const [name, spec] of SPECS) {
  Deno.test(`Deduplicate ${name}: its changelog folded equals the batch first/last row per key`, () => {
    fc.assert(
      fc.property(rows, (input) => {
        const table = new Map<string, number>();
        const out = continuous(spec, input);
        for (const change of out) applyChange(table, change);
        assert.deepEqual(table, batch(spec, input));
        if (deduplicateIsAppendOnly(spec)) assert.ok(out.every((r) => r.kind === "INSERT"));
      }),
      { numRuns: 300 },
    );
  });
}

Deno.test("Deduplicate keep-last in upsert mode emits +U without -U", () => {
  const spec: DeduplicateSpec = {
    keepLastRow: true,
    rowtimeIndex: null,
    generateUpdateBefore: false,
  };
  const out = continuous(spec, [["a", 1, 1], ["a", 2, 2]]);
  assert.deepEqual(out.map(formatRow), ["+I(a,1,1)", "+U(a,2,2)"]);
});

Deno.test("Deduplicate event-time keep-first replaces the kept row with an earlier out-of-order row", () => {
  const spec: DeduplicateSpec = {
    keepLastRow: false,
    rowtimeIndex: 1,
    rowtimeName: "ts",
    generateUpdateBefore: true,
  };
  const out = continuous(spec, [
    ["a", "2024-01-01 00:00:05", 1],
    ["a", "2024-01-01 00:00:07", 2],
    ["a", "2024-01-01 00:00:03", 3],
    ["a", "2024-01-01 00:00:03", 4],
  ]);
  assert.deepEqual(out.map(formatRow), [
    "+I(a,2024-01-01 00:00:05,1)",
    "-U(a,2024-01-01 00:00:05,1)",
    "+U(a,2024-01-01 00:00:03,3)",
  ]);
});

Deno.test("Deduplicate refuses an updating row and a rowtime that is not a time, naming them", () => {
  const spec: DeduplicateSpec = {
    keepLastRow: true,
    rowtimeIndex: 1,
    rowtimeName: "ts",
    generateUpdateBefore: true,
  };
  assert.throws(
    () => decideDeduplicate(spec, undefined, { kind: "DELETE", fields: ["a", 1] }),
    /Deduplicate consumes only inserts, got -D\(a,1\)/,
  );
  assert.throws(
    () => decideDeduplicate(spec, ["a", 1], { kind: "INSERT", fields: ["a", "noon"] }),
    /time attribute 'ts' needs a TIMESTAMP or epoch milliseconds: current value is "noon"/,
  );
});

Deno.test("Deduplicate with idle state retention forgets a key not written for the TTL and emits its next row again", async () => {
  const h = await OperatorTestHarness.open((env, output) =>
    new KeyedProcessOperator({
      uid: "dedup",
      name: "Deduplicate",
      fn: new DeduplicateFunction(
        { keepLastRow: false, rowtimeIndex: null, generateUpdateBefore: true },
        1_000,
      ) as unknown as KeyedProcessFunction<never, unknown, unknown>,
      env,
      output,
      keySelector: (r) => String((r as Row).fields[0]),
    })
  );
  const row = (k: string, v: number): Row => ({ kind: "INSERT", fields: [k, v] });
  h.processElement(row("a", 1), undefined);
  h.setProcessingTime(999);
  h.processElement(row("a", 2), undefined); // kept row still alive: a duplicate
  h.setProcessingTime(1_000); // a was written at 0: expired now
  h.processElement(row("a", 3), undefined);
  h.processElement(row("b", 4), undefined);
  assert.deepEqual((h.values() as Row[]).map(formatRow), ["+I(a,1)", "+I(a,3)", "+I(b,4)"]);
  await h.close();
});
