import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { compareValues, createAggregate } from "./aggregates.ts";
import type { OverAggregateSpec } from "./over_aggregate.ts";
import type { AggregateCall } from "./plan.ts";
import { decideRetractOver, type OverEntry } from "./retract_over_aggregate.ts";
import { applyChange, formatRow, type Row, type SqlValue } from "./row.ts";
import type { OverFrame } from "./sql_ast.ts";
import { TYPES } from "./types.ts";

/** Rows are `[key, rowtime ms, v]`; the calls aggregate `v` (NULL allowed). */
const v = { evaluate: (f: readonly SqlValue[]) => f[2] ?? null, type: TYPES.BIGINT, text: "v" };
const CALLS: AggregateCall[] = (["COUNT", "SUM", "AVG", "MIN", "MAX"] as const).map((fn) => ({
  spec: { fn, distinct: false, integral: true },
  arg: v,
  text: `${fn}(v)`,
}));

function batchValues(frame: readonly (number | null)[]): SqlValue[] {
  const nn = frame.filter((x): x is number => x !== null);
  const sum = nn.reduce((a, b) => a + b, 0);
  return [
    nn.length,
    nn.length === 0 ? null : sum,
    nn.length === 0 ? null : Math.trunc(sum / nn.length),
    nn.length === 0 ? null : Math.min(...nn),
    nn.length === 0 ? null : Math.max(...nn),
  ];
}

/** The batch OVER query over the live rows: per key, sorted by rowtime, peers by their fields. */
function batch(frame: OverFrame, live: readonly SqlValue[][]): Map<string, number> {
  const table = new Map<string, number>();
  for (const key of new Set(live.map((r) => r[0]))) {
    const sorted = live.filter((r) => r[0] === key).sort((a, b) =>
      (a[1] as number) - (b[1] as number) ||
      a.map((x, i) => compareValues(x, b[i] ?? null)).find((c) => c !== 0) || 0
    );
    sorted.forEach((row, i) => {
      const t = row[1] as number;
      const inFrame = sorted.filter((other, j) => {
        if (frame.unit === "ROWS") {
          return j <= i && (frame.preceding === null || j >= i - frame.preceding);
        }
        const u = other[1] as number;
        return u <= t && (frame.preceding === null || u >= t - frame.preceding);
      });
      applyChange(table, {
        kind: "INSERT",
        fields: [...row, ...batchValues(inFrame.map((r) => r[2] as number | null))],
      });
    });
  }
  return table;
}

type Op =
  | { op: "insert"; key: string; ts: number; v: number | null }
  | { op: "delete" | "update"; index: number; ts: number; v: number | null };

const operation: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant("insert" as const),
    key: fc.constantFrom("a", "b"),
    ts: fc.integer({ min: 0, max: 8 }),
    v: fc.option(fc.integer({ min: -5, max: 5 }), { nil: null }),
  }),
  fc.record({
    op: fc.constantFrom("delete" as const, "update" as const),
    index: fc.nat(),
    ts: fc.integer({ min: 0, max: 8 }),
    v: fc.option(fc.integer({ min: -5, max: 5 }), { nil: null }),
  }),
);

const frames = fc.oneof(
  fc.record({
    unit: fc.constantFrom("ROWS" as const, "RANGE" as const),
    preceding: fc.integer({ min: 0, max: 3 }),
  }),
  fc.record({
    unit: fc.constantFrom("ROWS" as const, "RANGE" as const),
    preceding: fc.constant(null),
  }),
);

function run(frame: OverFrame, changes: readonly Row[]): Row[] {
  const spec: OverAggregateSpec = { rowtimeIndex: 1, rowtimeName: "ts", frame, calls: CALLS };
  const aggregates = CALLS.map((c) => createAggregate(c.spec));
  const state = new Map<string, OverEntry[]>();
  const out: Row[] = [];
  for (const row of changes) {
    const key = row.fields[0] as string;
    const decision = decideRetractOver(
      spec,
      aggregates,
      state.get(key),
      row,
      CALLS.map(() => row.fields[2] ?? null),
    );
    if (decision.entries === null) state.delete(key);
    else state.set(key, decision.entries);
    out.push(...decision.emit);
  }
  return out;
}

Deno.test("OVER over an updating input: after every change, its changelog folded equals the batch OVER aggregate of the rows so far", () => {
  fc.assert(
    fc.property(frames, fc.array(operation, { maxLength: 40 }), (frame, ops) => {
      const live: SqlValue[][] = [];
      const changes: Row[] = [];
      for (const o of ops) {
        if (o.op === "insert") {
          live.push([o.key, o.ts, o.v]);
          changes.push({ kind: "INSERT", fields: [o.key, o.ts, o.v] });
        } else if (live.length > 0) {
          const [old] = live.splice(o.index % live.length, 1);
          changes.push({ kind: o.op === "delete" ? "DELETE" : "UPDATE_BEFORE", fields: old! });
          if (o.op === "update") {
            const next = [old![0]!, o.ts, o.v];
            live.push(next);
            changes.push({ kind: "UPDATE_AFTER", fields: next });
          }
        }
      }
      // every prefix: the fold of the output so far is the batch over the rows so far
      const table = new Map<string, number>();
      const liveSoFar: SqlValue[][] = [];
      const out = run(frame, changes);
      let emitted = 0;
      for (let i = 0; i < changes.length; i++) {
        const change = changes[i]!;
        if (change.kind === "INSERT" || change.kind === "UPDATE_AFTER") {
          liveSoFar.push([...change.fields]);
        } else {
          const at = liveSoFar.findIndex((r) =>
            JSON.stringify(r) === JSON.stringify(change.fields)
          );
          liveSoFar.splice(at, 1);
        }
        const step = run(frame, changes.slice(0, i + 1));
        for (const r of step.slice(emitted)) applyChange(table, r);
        emitted = step.length;
        if (change.kind === "UPDATE_BEFORE") continue; // between the -U and its +U
        assert.deepEqual(table, batch(frame, liveSoFar));
      }
      assert.equal(emitted, out.length);
    }),
    { numRuns: 200 },
  );
});

Deno.test("OVER ROWS BETWEEN 1 PRECEDING over updates: removing a row updates the result of the row after it", () => {
  const out = run({ unit: "ROWS", preceding: 1 }, [
    { kind: "INSERT", fields: ["k", 1, 10] },
    { kind: "INSERT", fields: ["k", 3, 30] },
    { kind: "INSERT", fields: ["k", 2, 20] }, // late: between the two
    { kind: "DELETE", fields: ["k", 1, 10] },
  ]);
  assert.deepEqual(out.map(formatRow), [
    "+I(k,1,10,1,10,10,10,10)",
    "+I(k,3,30,2,40,20,10,30)",
    "+I(k,2,20,2,30,15,10,20)",
    "-U(k,3,30,2,40,20,10,30)",
    "+U(k,3,30,2,50,25,20,30)",
    "-D(k,1,10,1,10,10,10,10)",
    "-U(k,2,20,2,30,15,10,20)",
    "+U(k,2,20,1,20,20,20,20)",
  ]);
});

Deno.test("OVER over updates refuses a retraction of a row its partition does not hold, naming it", () => {
  assert.throws(
    () => run({ unit: "ROWS", preceding: 1 }, [{ kind: "DELETE", fields: ["k", 1, 10] }]),
    /OverAggregate got -D\(k,1,10\), which its partition does not hold/,
  );
});
