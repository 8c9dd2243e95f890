import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import {
  checkRankRange,
  compareBySortKeys,
  decideRank,
  RankFunction,
  type RankSpec,
} from "./rank.ts";
import { applyChange, formatRow, type Row, type SqlValue } from "./row.ts";
import { OperatorTestHarness } from "../task/operators/_operator_test_harness.ts";
import { KeyedProcessOperator } from "../task/operators/transform_operators.ts";
import type { KeyedProcessFunction } from "../api/functions.ts";

/** Rows are `[partition, score (NULL allowed), id]`; ORDER BY score DESC, id ASC or score ASC alone. */
const SORTS = [
  [{ index: 1, descending: true }, { index: 2, descending: false }],
  [{ index: 1, descending: false }],
];

type Op = { op: "insert"; p: string; score: number | null; id: number } | {
  op: "delete" | "update";
  index: number;
  score: number | null;
};

const operation: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant("insert" as const),
    p: fc.constantFrom("a", "b"),
    score: fc.option(fc.integer({ min: 0, max: 6 }), { nil: null }),
    id: fc.integer({ min: 0, max: 3 }),
  }),
  fc.record({
    op: fc.constantFrom("delete" as const, "update" as const),
    index: fc.nat(),
    score: fc.option(fc.integer({ min: 0, max: 6 }), { nil: null }),
  }),
);

/** The input changelog and the final rows in arrival order (an updated row arrives anew). */
function script(ops: readonly Op[], appendOnly: boolean) {
  const live: SqlValue[][] = [];
  const changes: Row[] = [];
  for (const o of ops) {
    if (o.op === "insert") {
      live.push([o.p, o.score, o.id]);
      changes.push({ kind: "INSERT", fields: [o.p, o.score, o.id] });
    } else if (!appendOnly && live.length > 0) {
      const [old] = live.splice(o.index % live.length, 1);
      changes.push({ kind: o.op === "delete" ? "DELETE" : "UPDATE_BEFORE", fields: old! });
      if (o.op === "update") {
        const next = [old![0]!, o.score, old![2]!];
        live.push(next);
        changes.push({ kind: "UPDATE_AFTER", fields: next });
      }
    }
  }
  return { live, changes };
}

/** The batch Top-N: per partition, rows stably sorted (ties in arrival order), ranks start..end. */
function batch(spec: RankSpec, live: readonly SqlValue[][]): Map<string, number> {
  const table = new Map<string, number>();
  for (const p of new Set(live.map((r) => r[0]))) {
    const sorted = live.filter((r) => r[0] === p).sort((a, b) =>
      compareBySortKeys(spec.sortKeys, a, b)
    );
    sorted.slice(spec.rankStart - 1, spec.rankEnd).forEach((r, i) =>
      applyChange(table, {
        kind: "INSERT",
        fields: spec.outputRankNumber ? [...r, spec.rankStart + i] : r,
      })
    );
  }
  return table;
}

function continuous(spec: RankSpec, changes: readonly Row[]): Row[] {
  const state = new Map<string, SqlValue[][]>();
  const out: Row[] = [];
  for (const row of changes) {
    const p = row.fields[0] as string;
    const decision = decideRank(spec, state.get(p), row);
    if (decision.rows === null) state.delete(p);
    else state.set(p, decision.rows);
    out.push(...decision.emit);
  }
  return out;
}

const specs = fc.record({
  sortKeys: fc.constantFrom(...SORTS),
  rankStart: fc.integer({ min: 1, max: 3 }),
  length: fc.integer({ min: 0, max: 3 }),
  outputRankNumber: fc.boolean(),
});

for (const appendOnly of [true, false]) {
  Deno.test(`Top-N over ${appendOnly ? "append-only" : "updating"} input: its changelog folded equals the batch Top-N per partition over the final input`, () => {
    fc.assert(
      fc.property(specs, fc.array(operation, { maxLength: 50 }), (s, ops) => {
        const spec: RankSpec = {
          sortKeys: s.sortKeys,
          rankStart: s.rankStart,
          rankEnd: s.rankStart + s.length,
          outputRankNumber: s.outputRankNumber,
          appendOnlyInput: appendOnly,
          generateUpdateBefore: true,
        };
        const { live, changes } = script(ops, appendOnly);
        const table = new Map<string, number>();
        const out = continuous(spec, changes);
        for (const change of out) applyChange(table, change);
        assert.deepEqual(table, batch(spec, live));
        // upsert mode: the same changes without the -U rows
        const upsert = continuous({ ...spec, generateUpdateBefore: false }, changes);
        assert.deepEqual(upsert, out.filter((r) => r.kind !== "UPDATE_BEFORE"));
      }),
      { numRuns: 400 },
    );
  });
}

Deno.test("Top-3 with the rank number moves rows down one rank at a time as -U/+U pairs", () => {
  const spec: RankSpec = {
    sortKeys: [{ index: 1, descending: true }],
    rankStart: 1,
    rankEnd: 3,
    outputRankNumber: true,
    appendOnlyInput: true,
    generateUpdateBefore: true,
  };
  const out = continuous(
    spec,
    [10, 30, 20, 5, 40].map((v) => ({ kind: "INSERT", fields: ["p", v] })),
  );
  assert.deepEqual(out.map(formatRow), [
    "+I(p,10,1)",
    "-U(p,10,1)",
    "+U(p,30,1)",
    "+I(p,10,2)",
    "-U(p,10,2)",
    "+U(p,20,2)",
    "+I(p,10,3)",
    "-U(p,30,1)",
    "+U(p,40,1)",
    "-U(p,20,2)",
    "+U(p,30,2)",
    "-U(p,10,3)",
    "+U(p,20,3)",
  ]);
});

Deno.test("Top-2 without the rank number emits only the rows that enter and leave", () => {
  const spec: RankSpec = {
    sortKeys: [{ index: 1, descending: true }],
    rankStart: 1,
    rankEnd: 2,
    outputRankNumber: false,
    appendOnlyInput: false,
    generateUpdateBefore: true,
  };
  const out = continuous(spec, [
    { kind: "INSERT", fields: ["p", 10] },
    { kind: "INSERT", fields: ["p", 20] },
    { kind: "INSERT", fields: ["p", 30] },
    { kind: "INSERT", fields: ["p", 5] },
    { kind: "DELETE", fields: ["p", 30] },
  ]);
  assert.deepEqual(out.map(formatRow), [
    "+I(p,10)",
    "+I(p,20)",
    "-D(p,10)",
    "+I(p,30)",
    "-D(p,30)",
    "+I(p,10)",
  ]);
});

Deno.test("Top-N refuses a retraction of a row it never held, unless state may have expired", () => {
  const spec: RankSpec = {
    sortKeys: [{ index: 1, descending: true }],
    rankStart: 1,
    rankEnd: 2,
    outputRankNumber: false,
    appendOnlyInput: false,
    generateUpdateBefore: true,
  };
  assert.throws(
    () => decideRank(spec, [["p", 1]], { kind: "DELETE", fields: ["p", 2] }),
    /Top-N got -D\(p,2\), which its partition does not hold/,
  );
  assert.deepEqual(
    decideRank(spec, [["p", 1]], { kind: "DELETE", fields: ["p", 2] }, true).emit,
    [],
  );
  assert.throws(
    () =>
      decideRank({ ...spec, appendOnlyInput: true }, undefined, {
        kind: "UPDATE_AFTER",
        fields: ["p", 2],
      }),
    /an append-only Top-N got \+U\(p,2\)/,
  );
});

Deno.test("checkRankRange names a bad range", () => {
  assert.throws(
    () => checkRankRange(0, 3),
    /first rank must be an integer >= 1: current value is 0/,
  );
  assert.throws(
    () => checkRankRange(3, 2),
    /last rank must be an integer >= its first rank 3: current value is 2/,
  );
});

Deno.test("RankFunction keeps each partition's rows in keyed state through a checkpoint and restore", async () => {
  const spec: RankSpec = {
    sortKeys: [{ index: 1, descending: true }],
    rankStart: 1,
    rankEnd: 1,
    outputRankNumber: false,
    appendOnlyInput: false,
    generateUpdateBefore: true,
  };
  const make = (restore?: ReturnType<typeof OperatorTestHarness.restoreFrom>) =>
    OperatorTestHarness.open((env, output) =>
      new KeyedProcessOperator({
        uid: "rank",
        name: "Rank",
        fn: new RankFunction(spec) as unknown as KeyedProcessFunction<never, unknown, unknown>,
        env,
        output,
        keySelector: (r) => String((r as Row).fields[0]),
      }), restore === undefined ? {} : { restore });
  const h = await make();
  h.processElement({ kind: "INSERT", fields: ["p", 1] }, undefined);
  h.processElement({ kind: "INSERT", fields: ["p", 2] }, undefined);
  const snapshot = await h.snapshot(1);
  await h.close();
  const restored = await make(OperatorTestHarness.restoreFrom([snapshot]));
  restored.processElement({ kind: "DELETE", fields: ["p", 2] }, undefined);
  assert.deepEqual((restored.values() as Row[]).map(formatRow), ["-D(p,2)", "+I(p,1)"]);
  await restored.close();
});
