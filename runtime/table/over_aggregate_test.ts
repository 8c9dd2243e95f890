import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { OverAggregateFunction, type OverAggregateSpec } from "./over_aggregate.ts";
import type { AggregateCall } from "./plan.ts";
import { applyChange, formatRow, type Row, type SqlValue } from "./row.ts";
import type { OverFrame } from "./sql_ast.ts";
import { TYPES } from "./types.ts";
import { OperatorTestHarness } from "../task/operators/_operator_test_harness.ts";
import { KeyedProcessOperator } from "../task/operators/transform_operators.ts";
import type { KeyedProcessFunction } from "../api/functions.ts";

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

/** The batch OVER query: per key, rows sorted by rowtime (ties by arrival), each with its frame's aggregates. */
function batch(frame: OverFrame, rows: readonly SqlValue[][]): Map<string, number> {
  const table = new Map<string, number>();
  for (const key of new Set(rows.map((r) => r[0]))) {
    const sorted = rows.filter((r) => r[0] === key).sort((a, b) =>
      (a[1] as number) - (b[1] as number)
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

function open(frame: OverFrame, ttl = 0) {
  const spec: OverAggregateSpec = { rowtimeIndex: 1, rowtimeName: "ts", frame, calls: CALLS };
  return OperatorTestHarness.open((env, output) =>
    new KeyedProcessOperator({
      uid: "over",
      name: "OverAggregate",
      fn: new OverAggregateFunction(spec, ttl) as unknown as KeyedProcessFunction<
        never,
        unknown,
        unknown
      >,
      env,
      output,
      keySelector: (r) => String((r as Row).fields[0]),
    })
  ).then((h) => ({
    h,
    // the operator runs its own copy of the function
    fn: (h.operator as unknown as { fn: OverAggregateFunction }).fn,
  }));
}

type Event = { row: [string, number, number | null] } | { advance: number };

const events = fc.array(
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        row: fc.tuple(
          fc.constantFrom("a", "b"),
          fc.integer({ min: 1, max: 8 }),
          fc.option(fc.integer({ min: -9, max: 9 }), { nil: null }),
        ),
      }),
    },
    { weight: 1, arbitrary: fc.record({ advance: fc.integer({ min: 0, max: 4 }) }) },
  ),
  { maxLength: 50 },
);

const frames = fc.oneof(
  fc.record({
    unit: fc.constantFrom("ROWS" as const, "RANGE" as const),
    preceding: fc.integer({ min: 0, max: 4 }),
  }),
  fc.record({
    unit: fc.constantFrom("ROWS" as const, "RANGE" as const),
    preceding: fc.constant(null),
  }),
);

Deno.test("OverAggregate: rows arriving out of order, with watermarks between them, give the batch OVER aggregate of every row", async () => {
  await fc.assert(
    fc.asyncProperty(frames, events, async (frame, evs) => {
      const { h, fn } = await open(frame);
      let watermark = 0;
      const input: SqlValue[][] = [];
      for (const e of evs) {
        if ("advance" in e) {
          watermark += e.advance;
          h.processWatermark(watermark);
        } else {
          // rowtimes after the watermark: never late
          const row: SqlValue[] = [e.row[0], watermark + e.row[1], e.row[2]];
          input.push(row);
          h.processElement({ kind: "INSERT", fields: row }, row[1] as number);
        }
      }
      h.processWatermark(Number.MAX_SAFE_INTEGER);
      const table = new Map<string, number>();
      for (const r of h.values() as Row[]) {
        assert.equal(r.kind, "INSERT");
        applyChange(table, r);
      }
      assert.deepEqual(table, batch(frame, input));
      assert.equal(fn.numLateRecordsDropped, 0);
      await h.close();
    }),
    { numRuns: 150 },
  );
});

Deno.test("OverAggregate ROWS BETWEEN 1 PRECEDING emits rows in rowtime order once the watermark passes them", async () => {
  const { h } = await open({ unit: "ROWS", preceding: 1 });
  const row = (ts: number, value: number): Row => ({ kind: "INSERT", fields: ["k", ts, value] });
  h.processElement(row(3, 30), 3);
  h.processElement(row(1, 10), 1);
  h.processElement(row(2, 20), 2);
  assert.deepEqual(h.values(), []);
  h.processWatermark(2);
  h.processWatermark(3);
  assert.deepEqual((h.values() as Row[]).map(formatRow), [
    "+I(k,1,10,1,10,10,10,10)",
    "+I(k,2,20,2,30,15,10,20)",
    "+I(k,3,30,2,50,25,20,30)",
  ]);
  await h.close();
});

Deno.test("OverAggregate drops a row whose rowtime its partition already processed and counts it", async () => {
  const { h, fn } = await open({ unit: "RANGE", preceding: null });
  const warn = console.warn;
  const warnings: string[] = [];
  console.warn = (message: string) => warnings.push(message);
  try {
    h.processElement({ kind: "INSERT", fields: ["k", 5, 1] }, 5);
    h.processWatermark(5);
    h.processElement({ kind: "INSERT", fields: ["k", 5, 2] }, 5);
    h.processElement({ kind: "INSERT", fields: ["k", 4, 3] }, 4);
    h.processElement({ kind: "INSERT", fields: ["j", 4, 4] }, 4); // another partition: on time
    h.processWatermark(6);
  } finally {
    console.warn = warn;
  }
  assert.deepEqual((h.values() as Row[]).map(formatRow), [
    "+I(k,5,1,1,1,1,1,1)",
    "+I(j,4,4,1,4,4,4,4)",
  ]);
  assert.equal(fn.numLateRecordsDropped, 2);
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0]!,
    /OverAggregate: dropped late row \+I\(k,5,2\) \(rowtime 5 ms is not after 5 ms/,
  );
  await h.close();
});

Deno.test("OverAggregate refuses an updating row and a NULL rowtime, naming the row", async () => {
  const { h } = await open({ unit: "ROWS", preceding: 2 });
  assert.throws(
    () => h.processElement({ kind: "UPDATE_AFTER", fields: ["k", 1, 1] }, 1),
    /OverAggregate failed on \+U\(k,1,1\): OverAggregate consumes only inserts/,
  );
  assert.throws(
    () => h.processElement({ kind: "INSERT", fields: ["k", null, 1] }, 1),
    /time attribute 'ts' needs a TIMESTAMP or epoch milliseconds: current value is null/,
  );
  await h.close();
});

Deno.test("OverAggregate with idle state retention keeps pending rows past the TTL and starts a new frame after the history expired", async () => {
  const { h } = await open({ unit: "ROWS", preceding: null }, 1_000);
  const row = (ts: number, value: number): Row => ({ kind: "INSERT", fields: ["k", ts, value] });
  h.processElement(row(1, 10), 1);
  h.processWatermark(1); // history written at processing time 0
  h.processElement(row(2, 20), 2);
  h.setProcessingTime(5_000); // the pending row at 2 is older than the TTL, the history expired
  h.processWatermark(2);
  assert.deepEqual((h.values() as Row[]).map(formatRow), [
    "+I(k,1,10,1,10,10,10,10)",
    "+I(k,2,20,1,20,20,20,20)", // a new frame: the history expired, the pending row was kept
  ]);
  await h.close();
});
