import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { explainPlan } from "./plan.ts";
import { formatRow, type Row } from "./row.ts";
import { WindowJoinFunction } from "./window_join.ts";
import { OperatorTestHarness } from "../task/operators/_operator_test_harness.ts";
import { CoProcessOperator } from "../task/operators/co_process_operators.ts";
import type { KeyedCoProcessFunction } from "../api/functions.ts";
import type { Key } from "../state/key_group.ts";
import { TYPES } from "./types.ts";
import {
  agg,
  and,
  bin,
  col,
  eq,
  item,
  join,
  runQuery,
  seconds,
  select,
  star,
  table,
  type TestTable,
  tvf,
  watermarkFor,
} from "./_sql_test_kit.ts";
import type { TableRef } from "./sql_ast.ts";

const COLUMNS = [
  { name: "k", type: TYPES.BIGINT },
  { name: "ts", type: TYPES.TIMESTAMP },
  { name: "v", type: TYPES.STRING },
];
const events = (rows: [number, string, string][]): TestTable => ({
  columns: COLUMNS,
  rows: rows.map(([k, s, v]) => [k, `2026-01-01 00:00:${s}`, v]),
  watermark: watermarkFor("ts"),
});

Deno.test("an interval join pairs rows whose rowtimes are within the bounds, append-only", async () => {
  // l.ts BETWEEN r.ts - 2 s AND r.ts + 1 s
  const on = and(eq(col("k", "l"), col("k", "r")), {
    k: "between",
    expr: col("ts", "l"),
    low: bin("-", col("ts", "r"), seconds(2)),
    high: bin("+", col("ts", "r"), seconds(1)),
    negated: false,
  });
  const { plan, rows } = await runQuery(
    select(join("INNER", table("a", "l"), table("b", "r"), on), [
      item(col("v", "l"), "lv"),
      item(col("v", "r"), "rv"),
    ]),
    {
      a: events([[1, "10", "a10"], [1, "20", "a20"], [2, "10", "x"]]),
      b: events([[1, "09", "b09"], [1, "11", "b11"], [1, "12", "b12"], [1, "13", "b13"], [
        3,
        "10",
        "y",
      ]]),
    },
  );
  assert.equal(plan.mode, "append");
  assert.match(
    explainPlan(plan),
    /IntervalJoin\(joinType=\[InnerJoin\], windowBounds=\[isRowTime=true, leftLowerBound=-2000, leftUpperBound=1000, leftTimeIndex=1, rightTimeIndex=1\]/,
  );
  assert.deepEqual(rows.map(formatRow).sort(), ["+I(a10,b09)", "+I(a10,b11)", "+I(a10,b12)"]);
});

const windowed = (name: string): TableRef => tvf("TUMBLE", table(name), "ts", [10_000]);

Deno.test("a window join joins rows of the same window and key when the window closes", async () => {
  const on = and(
    and(eq(col("k", "l"), col("k", "r")), eq(col("window_start", "l"), col("window_start", "r"))),
    eq(col("window_end", "l"), col("window_end", "r")),
  );
  const left: TableRef = { ...windowed("a"), alias: "l" } as TableRef;
  const right: TableRef = { ...windowed("b"), alias: "r" } as TableRef;
  const query = select(join("FULL", left, right, on), [
    item(col("v", "l"), "lv"),
    item(col("v", "r"), "rv"),
    item(col("window_start", "l"), "ws"),
  ]);
  const { plan, rows } = await runQuery(query, {
    a: events([[1, "01", "a1"], [2, "02", "a2"], [1, "15", "a15"]]),
    b: events([[1, "05", "b5"], [1, "12", "b12"], [3, "03", "b3"]]),
  });
  assert.equal(plan.mode, "append");
  assert.match(
    explainPlan(plan),
    /WindowJoin\(leftWindow=\[TUMBLE\(win_start=\[window_start\], win_end=\[window_end\], size=\[10 s\]\)\], rightWindow=\[TUMBLE\(win_start=\[window_start\], win_end=\[window_end\], size=\[10 s\]\)\], joinType=\[FullOuterJoin\]/,
  );
  assert.deepEqual(rows.map(formatRow).sort(), [
    "+I(a1,b5,2026-01-01 00:00:00.000)",
    "+I(a15,b12,2026-01-01 00:00:10.000)",
    "+I(a2,null,2026-01-01 00:00:00.000)",
    "+I(null,b3,null)",
  ]);
});

Deno.test("a window join of two window aggregations joins their results per window", async () => {
  const counts = (name: string, alias: string): TableRef => ({
    k: "subquery",
    alias,
    at: 0,
    query: select(windowed(name), [
      item(col("k")),
      item(agg("COUNT_STAR", null), "n"),
      item(col("window_start")),
      item(col("window_end")),
    ], { groupBy: [col("k"), col("window_start"), col("window_end")] }),
  });
  const on = and(
    and(eq(col("k", "l"), col("k", "r")), eq(col("window_start", "l"), col("window_start", "r"))),
    eq(col("window_end", "l"), col("window_end", "r")),
  );
  const { plan, rows } = await runQuery(
    select(join("INNER", counts("a", "l"), counts("b", "r"), on), [star]),
    {
      a: events([[1, "01", "x"], [1, "02", "y"], [2, "03", "z"]]),
      b: events([[1, "04", "p"], [2, "05", "q"], [2, "06", "r"], [2, "16", "s"]]),
    },
  );
  assert.match(explainPlan(plan), /WindowJoin\(/);
  assert.deepEqual(plan.columns.map((c) => c.name), [
    "k",
    "n",
    "window_start",
    "window_end",
    "k0",
    "n0",
    "window_start0",
    "window_end0",
  ]);
  const w = "2026-01-01 00:00:00.000,2026-01-01 00:00:10.000";
  assert.deepEqual(rows.map(formatRow).sort(), [`+I(1,2,${w},1,1,${w})`, `+I(2,1,${w},2,2,${w})`]);
});

Deno.test("Nexmark q5's shape: a window aggregation over a window aggregation, window-joined to it", async () => {
  const hop = (): TableRef => tvf("HOP", table("bid"), "ts", [2_000, 4_000]);
  const auctionBids = select(hop(), [
    item(col("k"), "auction"),
    item(agg("COUNT_STAR", null), "num"),
    item(col("window_start"), "starttime"),
    item(col("window_end"), "endtime"),
  ], { groupBy: [col("k"), col("window_start"), col("window_end")] });
  const maxBids = select(
    { k: "subquery", query: auctionBids, alias: "CountBids", at: 0 },
    [
      item(agg("MAX", col("num", "CountBids")), "maxn"),
      item(col("starttime", "CountBids")),
      item(col("endtime", "CountBids")),
    ],
    { groupBy: [col("starttime", "CountBids"), col("endtime", "CountBids")] },
  );
  const on = and(
    and(
      eq(col("starttime", "AuctionBids"), col("starttime", "MaxBids")),
      eq(col("endtime", "AuctionBids"), col("endtime", "MaxBids")),
    ),
    bin(">=", col("num", "AuctionBids"), col("maxn", "MaxBids")),
  );
  const query = select(
    join(
      "INNER",
      { k: "subquery", query: auctionBids, alias: "AuctionBids", at: 0 },
      { k: "subquery", query: maxBids, alias: "MaxBids", at: 0 },
      on,
    ),
    [
      item(col("auction", "AuctionBids")),
      item(col("num", "AuctionBids")),
      item(col("starttime", "AuctionBids")),
    ],
  );
  const { plan, rows } = await runQuery(query, {
    bid: events([[1, "01", ""], [1, "02", ""], [2, "03", ""], [2, "05", ""], [2, "05", ""]]),
  }, 2);
  const text = explainPlan(plan);
  assert.equal(plan.mode, "append");
  assert.match(
    text,
    /WindowJoin\(leftWindow=\[HOP\(win_start=\[starttime\], win_end=\[endtime\], size=\[4 s\], slide=\[2 s\]\)\]/,
  );
  assert.match(
    text,
    /WindowAggregate\(groupBy=\[\], window=\[HOP\(win_start=\[starttime\], win_end=\[endtime\], size=\[4 s\], slide=\[2 s\]\)\], select=\[start\('w\$\) AS starttime, end\('w\$\) AS endtime, MAX\(CountBids.num\) AS maxn\]/,
  );
  const t = (s: number) => `2026-01-01 00:00:0${s}.000`;
  // windows [-2,2): a1 x1; [0,4): a1 x2, a2 x1; [2,6): a1 x1, a2 x3; [4,8): a2 x2
  assert.deepEqual(rows.map(formatRow).sort(), [
    `+I(1,1,2025-12-31 23:59:58.000)`,
    `+I(1,2,${t(0)})`,
    `+I(2,2,${t(4)})`,
    `+I(2,3,${t(2)})`,
  ]);
});

Deno.test("an inner or outer interval join equals the batch join of the rows within the bounds", async () => {
  // Strictly increasing rowtimes per side: with WATERMARK FOR ts AS ts a
  // second row at the watermark's time is late (Flink SQL's strictly
  // ascending watermark), and would join only what is not yet cleaned up.
  const side = fc.uniqueArray(
    fc.tuple(fc.constantFrom<number | null>(1, 2, null), fc.integer({ min: 0, max: 12 })),
    { maxLength: 12, selector: (row) => row[1] },
  ).map((rows) =>
    rows.sort((a, b) => a[1] - b[1]).map(([k, s], i): [number | null, string, string] => [
      k,
      String(s).padStart(2, "0"),
      `v${i}`,
    ])
  );
  await fc.assert(
    fc.asyncProperty(
      side,
      side,
      fc.integer({ min: -3, max: 3 }),
      fc.nat({ max: 4 }),
      fc.constantFrom("INNER", "LEFT", "RIGHT", "FULL"),
      async (l, r, lower, width, kind) => {
        const upper = lower + width;
        const on = and(eq(col("k", "l"), col("k", "r")), {
          k: "between",
          expr: col("ts", "l"),
          low: bin("+", col("ts", "r"), seconds(lower)),
          high: bin("+", col("ts", "r"), seconds(upper)),
          negated: false,
        });
        const { plan, rows } = await runQuery(
          select(join(kind, table("a", "l"), table("b", "r"), on), [
            item(col("v", "l"), "lv"),
            item(col("v", "r"), "rv"),
          ]),
          {
            a: events(l as [number, string, string][]),
            b: events(r as [number, string, string][]),
          },
          2,
        );
        assert.equal(plan.op === "Calc" ? plan.input.op : plan.op, "IntervalJoin");
        assert.equal(plan.mode, "append");
        const want: string[] = [];
        const rightHit = new Set<string>();
        for (const [lk, ls, lv] of l) {
          let hit = false;
          for (const [rk, rs, rv] of r) {
            const d = Number(ls) - Number(rs);
            if (lk !== null && lk === rk && d >= lower && d <= upper) {
              want.push(`+I(${lv},${rv})`);
              hit = true;
              rightHit.add(rv);
            }
          }
          if (!hit && (kind === "LEFT" || kind === "FULL")) want.push(`+I(${lv},null)`);
        }
        if (kind === "RIGHT" || kind === "FULL") {
          for (const [, , rv] of r) if (!rightHit.has(rv)) want.push(`+I(null,${rv})`);
        }
        assert.deepEqual(rows.map(formatRow).sort(), want.sort());
      },
    ),
    { numRuns: 30 },
  );
});

Deno.test("a row of a window the watermark passed is dropped and counted in the operator's numLateRecordsDropped", async () => {
  const shape = {
    joinType: "InnerJoin" as const,
    filter: null,
    leftArity: 2,
    rightArity: 2,
    leftWindowEnd: 1,
    rightWindowEnd: 1,
  };
  const h = await OperatorTestHarness.open((env, output) =>
    new CoProcessOperator({
      uid: "window-join",
      name: "WindowJoin",
      fn: new WindowJoinFunction(shape, "WindowJoin") as unknown as KeyedCoProcessFunction<
        Key,
        unknown,
        unknown,
        unknown
      >,
      env,
      output,
      keySelector: (r) => JSON.stringify([(r as Row).fields[0]]),
      keySelector2: (r) => JSON.stringify([(r as Row).fields[0]]),
    })
  );
  const end = "1970-01-01 00:00:10.000";
  const row = (k: string): Row => ({ kind: "INSERT", fields: [k, end] });
  h.operator.processElement1(row("a"), undefined);
  h.operator.processElement2(row("a"), undefined);
  h.processWatermark(9_999); // the window [0, 10 s) is complete
  assert.deepEqual((h.values() as Row[]).map(formatRow), [`+I(a,${end},a,${end})`]);
  h.operator.processElement2(row("a"), undefined); // late: dropped
  assert.equal(h.values().length, 1);
  assert.deepEqual(h.operator.metrics(), { numLateRecordsDropped: 1 });
  await h.close();
});
