/**
 * Window Top-N (Flink's WindowRank): ROW_NUMBER PARTITION BY window_start,
 * window_end over a window TVF or a window aggregation plans a WindowRank,
 * append-only; jobs over random bids equal the batch Top-N per window.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import type { SqlValue } from "../mod.ts";
import { explainPlan, planQuery } from "../runtime/table/plan.ts";
import type { TableRef } from "../runtime/table/sql_ast.ts";
import { timeAttributeMillis } from "../runtime/table/time_attribute.ts";
import {
  asc,
  bestBids,
  bids,
  BIDS_CONTEXT,
  bin,
  col,
  desc,
  fold,
  item,
  JOB,
  lit,
  over,
  run,
  select,
  star,
  subquery,
  table,
  tableOf,
} from "./_sql_over_rank_kit.ts";

// --- Window Top-N ----------------------------------------------------------------

/** `TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), 10 ms))`. */
const TUMBLE_10: TableRef = {
  k: "windowTvf",
  fn: "TUMBLE",
  input: table("bids"),
  timeColumn: "ts",
  intervals: [10],
  partitionBy: [],
  alias: null,
  at: 0,
};

Deno.test("ROW_NUMBER PARTITION BY window_start, window_end over a window TVF plans a WindowRank, append-only", () => {
  const query = select({
    items: [star],
    from: subquery(select({
      items: [
        item(col("window_start")),
        item(col("window_end")),
        item(col("auction")),
        item(col("price")),
        item(
          over("ROW_NUMBER", [], [col("window_start"), col("window_end")], [desc(col("price"))]),
          "rn",
        ),
      ],
      from: TUMBLE_10,
    })),
    where: bin("<=", col("rn"), lit(3)),
  });
  const plan = planQuery(query, BIDS_CONTEXT);
  assert.equal(plan.mode, "append");
  assert.match(
    explainPlan(plan),
    /WindowRank\(rankType=\[ROW_NUMBER\], rankRange=\[rankStart=1, rankEnd=3\], partitionBy=\[window_start, window_end\], orderBy=\[price DESC\]/,
  );
  assert.deepEqual(plan.columns.map((c) => c.name), [
    "window_start",
    "window_end",
    "auction",
    "price",
    "rn",
  ]);
});

Deno.test("ROW_NUMBER PARTITION BY window_start, window_end plans a WindowRank when the subquery does not select window_end", () => {
  // Flink's StreamPhysicalWindowRankRule looks at the PARTITION BY, not at
  // the SELECT list: a Rank here would emit -U/+U and never free a window.
  const query = select({
    items: [star],
    from: subquery(select({
      items: [
        item(col("window_start")),
        item(col("auction")),
        item(col("price")),
        item(
          over("ROW_NUMBER", [], [col("window_start"), col("window_end")], [desc(col("price"))]),
          "rn",
        ),
      ],
      from: TUMBLE_10,
    })),
    where: bin("<=", col("rn"), lit(2)),
  });
  const plan = planQuery(query, BIDS_CONTEXT);
  assert.equal(plan.mode, "append");
  const text = explainPlan(plan);
  assert.match(
    text,
    /WindowRank\(rankType=\[ROW_NUMBER\], rankRange=\[rankStart=1, rankEnd=2\], partitionBy=\[window_start, window_end\], orderBy=\[price DESC\]/,
  );
  assert.doesNotMatch(text, /\bRank\(/);
  assert.deepEqual(plan.columns.map((c) => c.name), ["window_start", "auction", "price", "rn"]);
});

Deno.test("a Top-N per window over a window aggregation plans a WindowRank over the WindowAggregate", () => {
  const counts = select({
    items: [
      item(col("window_start")),
      item(col("window_end")),
      item(col("auction")),
      item({ k: "aggregate", fn: "COUNT_STAR", distinct: false, arg: null }, "cnt"),
    ],
    from: TUMBLE_10,
    groupBy: [col("window_start"), col("window_end"), col("auction")],
  });
  const query = select({
    items: [item(col("window_start")), item(col("auction")), item(col("cnt"))],
    from: subquery(select({
      items: [
        star,
        item(
          over("ROW_NUMBER", [], [col("window_start"), col("window_end")], [desc(col("cnt"))]),
          "rn",
        ),
      ],
      from: subquery(counts, "c"),
    })),
    where: bin("<=", col("rn"), lit(1)),
  });
  const plan = planQuery(query, BIDS_CONTEXT);
  assert.equal(plan.mode, "append");
  assert.match(
    explainPlan(plan),
    /WindowRank\(.*\n.*Exchange\(distribution=\[hash\[window_start, window_end\]\].*\n.*WindowAggregate/,
  );
});

Deno.test({
  name:
    "a window Top-2 per 1-second tumbling window runs: each window's best two bids, append-only, equal to the batch Top-2 per window",
  ...JOB,
  async fn() {
    const query = select({
      items: [star],
      from: subquery(select({
        items: [
          item(col("window_start")),
          item(col("window_end")),
          item(col("price")),
          item(col("bidder")),
          item(col("ts")),
          item(
            over("ROW_NUMBER", [], [col("window_start"), col("window_end")], [
              desc(col("price")),
              asc(col("bidder")),
              asc(col("ts")),
            ]),
            "rn",
          ),
        ],
        from: { ...TUMBLE_10, intervals: [1000] },
      })),
      where: bin("<=", col("rn"), lit(2)),
    });
    const plan = planQuery(query, BIDS_CONTEXT);
    assert.equal(plan.mode, "append");
    await fc.assert(
      fc.asyncProperty(bids, async (unsorted) => {
        // in rowtime order: with a watermark of the highest rowtime no row is late
        const rows = [...unsorted].sort((x, y) => x[3] - y[3]);
        const out = await run(plan, rows);
        assert.ok(out.every((r) => r.kind === "INSERT"));
        const expected: SqlValue[][] = bestBids(rows, (r) => Math.floor(r[3] / 1000), 2)
          .map(({ key: w, bid: r, rank }) => [w * 1000, (w + 1) * 1000, r[1], r[2], r[3], rank]);
        const folded = fold(
          out.map((r) => ({
            kind: r.kind,
            fields: [
              timeAttributeMillis(r.fields[0] ?? null, "window_start"),
              timeAttributeMillis(r.fields[1] ?? null, "window_end"),
              ...r.fields.slice(2),
            ],
          })),
        );
        assert.deepEqual(folded, tableOf(expected));
      }),
      { numRuns: 10 },
    );
  },
});

Deno.test({
  name:
    "the hottest auction per 1-second window (a window Top-1 over a window aggregation) runs and equals the batch query",
  ...JOB,
  async fn() {
    const counts = select({
      items: [
        item(col("window_start")),
        item(col("window_end")),
        item(col("auction")),
        item({ k: "aggregate", fn: "COUNT_STAR", distinct: false, arg: null }, "cnt"),
      ],
      from: { ...TUMBLE_10, intervals: [1000] },
      groupBy: [col("window_start"), col("window_end"), col("auction")],
    });
    const query = select({
      items: [item(col("window_end")), item(col("auction")), item(col("cnt"))],
      from: subquery(select({
        items: [
          star,
          item(
            over("ROW_NUMBER", [], [col("window_start"), col("window_end")], [
              desc(col("cnt")),
              asc(col("auction")),
            ]),
            "rn",
          ),
        ],
        from: subquery(counts, "c"),
      })),
      where: bin("<=", col("rn"), lit(1)),
    });
    const plan = planQuery(query, BIDS_CONTEXT);
    await fc.assert(
      fc.asyncProperty(bids, async (unsorted) => {
        const rows = [...unsorted].sort((x, y) => x[3] - y[3]); // no late rows
        const perWindow = new Map<number, Map<number, number>>();
        for (const r of rows) {
          const w = Math.floor(r[3] / 1000);
          const m = perWindow.get(w) ?? new Map<number, number>();
          m.set(r[0], (m.get(r[0]) ?? 0) + 1);
          perWindow.set(w, m);
        }
        const expected: SqlValue[][] = [...perWindow].map(([w, m]) => {
          const [auction, cnt] = [...m].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]!;
          return [(w + 1) * 1000, auction, cnt];
        });
        const out = await run(plan, rows);
        assert.ok(out.every((r) => r.kind === "INSERT"));
        const folded = fold(out.map((r) => ({
          kind: r.kind,
          fields: [timeAttributeMillis(r.fields[0] ?? null, "window_end"), ...r.fields.slice(1)],
        })));
        assert.deepEqual(folded, tableOf(expected));
      }),
      { numRuns: 10 },
    );
  },
});
