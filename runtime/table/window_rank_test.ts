import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { compareBySortKeys } from "./rank.ts";
import { applyChange, formatRow, type Row, type SqlValue } from "./row.ts";
import { WindowRankFunction, type WindowRankSpec } from "./window_rank.ts";
import { OperatorTestHarness } from "../task/operators/_operator_test_harness.ts";
import { KeyedProcessOperator } from "../task/operators/transform_operators.ts";
import type { KeyedProcessFunction } from "../api/functions.ts";

/** Rows are `[window_start, window_end, item, price]`: tumbling windows of 10 ms, partitioned by window. */
function open(spec: WindowRankSpec) {
  return OperatorTestHarness.open((env, output) =>
    new KeyedProcessOperator({
      uid: "window-rank",
      name: "WindowRank",
      fn: new WindowRankFunction(spec) as unknown as KeyedProcessFunction<never, unknown, unknown>,
      env,
      output,
      keySelector: (r) => JSON.stringify((r as Row).fields.slice(0, 2)),
    })
  ).then((h) => ({ h, fn: (h.operator as unknown as { fn: WindowRankFunction }).fn }));
}

type Event = { row: [number, string, number] } | { advance: number };

Deno.test("WindowRank: each window's output, once the watermark passes its end, is the batch Top-N of its on-time rows", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 3 }),
      fc.integer({ min: 0, max: 3 }),
      fc.boolean(),
      fc.array(
        fc.oneof(
          {
            weight: 4,
            arbitrary: fc.record({
              row: fc.tuple(
                fc.integer({ min: 0, max: 50 }),
                fc.constantFrom("x", "y", "z"),
                fc.integer({ min: 0, max: 5 }),
              ),
            }),
          },
          { weight: 1, arbitrary: fc.record({ advance: fc.integer({ min: 0, max: 12 }) }) },
        ),
        { maxLength: 60 },
      ),
      async (rankStart, length, outputRankNumber, events: Event[]) => {
        const spec: WindowRankSpec = {
          sortKeys: [{ index: 3, descending: true }],
          rankStart,
          rankEnd: rankStart + length,
          outputRankNumber,
          windowEndIndex: 1,
        };
        const { h, fn } = await open(spec);
        let watermark = -1;
        let late = 0;
        const onTime: SqlValue[][] = [];
        const warn = console.warn;
        console.warn = () => {};
        try {
          for (const e of events) {
            if ("advance" in e) {
              watermark += e.advance;
              h.processWatermark(watermark);
              continue;
            }
            const start = e.row[0] - (e.row[0] % 10);
            const fields: SqlValue[] = [start, start + 10, e.row[1], e.row[2]];
            if (start + 9 <= watermark) late++;
            else onTime.push(fields);
            h.processElement({ kind: "INSERT", fields }, e.row[0]);
          }
          h.processWatermark(Number.MAX_SAFE_INTEGER);
        } finally {
          console.warn = warn;
        }
        const expected = new Map<string, number>();
        for (const w of new Set(onTime.map((r) => r[0]))) {
          onTime.filter((r) => r[0] === w).sort((a, b) => compareBySortKeys(spec.sortKeys, a, b))
            .slice(spec.rankStart - 1, spec.rankEnd)
            .forEach((r, i) =>
              applyChange(expected, {
                kind: "INSERT",
                fields: outputRankNumber ? [...r, rankStart + i] : r,
              })
            );
        }
        const table = new Map<string, number>();
        for (const r of h.values() as Row[]) {
          assert.equal(r.kind, "INSERT");
          applyChange(table, r);
        }
        assert.deepEqual(table, expected);
        assert.equal(fn.numLateRecordsDropped, late);
        await h.close();
      },
    ),
    { numRuns: 150 },
  );
});

Deno.test("WindowRank emits a window's Top-2 with rank numbers only when the watermark passes window_end - 1", async () => {
  const { h } = await open({
    sortKeys: [{ index: 3, descending: true }],
    rankStart: 1,
    rankEnd: 2,
    outputRankNumber: true,
    windowEndIndex: 1,
  });
  const ws = "2024-01-01 00:00:00";
  const we = "2024-01-01 00:00:10";
  for (const [item, price] of [["a", 3], ["b", 9], ["c", 5]] as const) {
    h.processElement({ kind: "INSERT", fields: [ws, we, item, price] }, undefined);
  }
  const end = Date.UTC(2024, 0, 1, 0, 0, 10);
  h.processWatermark(end - 2);
  assert.deepEqual(h.values(), []);
  h.processWatermark(end - 1);
  assert.deepEqual((h.values() as Row[]).map(formatRow), [
    `+I(${ws},${we},b,9,1)`,
    `+I(${ws},${we},c,5,2)`,
  ]);
  await h.close();
});
