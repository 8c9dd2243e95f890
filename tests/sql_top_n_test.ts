/**
 * Top-N, deduplication, ORDER BY ... LIMIT and the temporal sort through the
 * planner and whole jobs: each query is planned (`plan.ts` with
 * `plan_rank.ts`), its plan checked, translated and run over random bids;
 * its changelog, folded, equals the same query computed as a batch over the
 * final input. Also a Top-N for an upsert consumer, keyed by its partition
 * keys and rank number.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import type { SqlValue } from "../mod.ts";
import { PlanningError } from "../runtime/table/changelog_mode.ts";
import { explainPlan, planQuery } from "../runtime/table/plan.ts";
import type { SelectQuery } from "../runtime/table/sql_ast.ts";
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
  run,
  select,
  star,
  table,
  tableOf,
  topN,
} from "./_sql_over_rank_kit.ts";

// --- Top-N --------------------------------------------------------------------

Deno.test({
  name:
    "Top-2 per auction by price with rn: plans a Rank and its changelog folds to the batch Top-2",
  ...JOB,
  async fn() {
    const query = topN(
      [item(col("auction")), item(col("price")), item(col("bidder")), item(col("rn"))],
      [col("auction")],
      // a total order: rows of equal price would rank in arrival order, which a parallel job does not fix
      [desc(col("price")), asc(col("bidder")), asc(col("ts"))],
      bin("<=", col("rn"), lit(2)),
    );
    const plan = planQuery(query, BIDS_CONTEXT);
    assert.equal(plan.mode, "retract");
    assert.match(
      explainPlan(plan),
      /Rank\(strategy=\[AppendFastStrategy\], rankType=\[ROW_NUMBER\], rankRange=\[rankStart=1, rankEnd=2\], partitionBy=\[auction\], orderBy=\[price DESC, bidder ASC, ts ASC\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const expected: SqlValue[][] = bestBids(rows, (r) => r[0], 2)
          .map(({ bid: r, rank }) => [r[0], r[1], r[2], rank]);
        assert.deepEqual(fold(await run(plan, rows)), tableOf(expected));
      }),
      { numRuns: 15 },
    );
  },
});

Deno.test({
  name:
    "Top-N without rn in the output and with rn BETWEEN 2 AND 3: ranks 2..3 without the rank number",
  ...JOB,
  async fn() {
    const query = topN(
      [item(col("auction")), item(col("price"))],
      [col("auction")],
      [desc(col("price")), asc(col("ts"))],
      bin(
        "AND",
        { k: "between", expr: col("rn"), low: lit(2), high: lit(3), negated: false },
        bin(">", col("price"), lit(0)),
      ),
    );
    const plan = planQuery(query, BIDS_CONTEXT);
    assert.match(
      explainPlan(plan),
      /Rank\(strategy=\[AppendFastStrategy\], rankType=\[ROW_NUMBER\], rankRange=\[rankStart=2, rankEnd=3\], partitionBy=\[auction\], orderBy=\[price DESC, ts ASC\], select=\[auction, price, bidder, ts\], changelogMode=\[I,UB,UA,D\]\)\n.*Exchange\(distribution=\[hash\[auction\]\], changelogMode=\[I\]\)\n.*TableSourceScan/,
    );
    assert.match(explainPlan(plan), /where=\[\(price > 0\)\]/);
    const rows = [[1, 5, "a", 1], [1, 9, "b", 2], [1, 7, "c", 3], [1, 8, "d", 4], [2, 1, "e", 5]];
    assert.deepEqual(fold(await run(plan, rows)), tableOf([[1, 8], [1, 7]]));
  },
});

// --- Deduplication -------------------------------------------------------------

Deno.test({
  name:
    "rn = 1 ordered by the rowtime DESC, rn not selected: a row-time Deduplicate keeping each bidder's latest bid",
  ...JOB,
  async fn() {
    const query = topN(
      [item(col("bidder")), item(col("price")), item(col("ts"))],
      [col("bidder")],
      [desc(col("ts"))],
      bin("=", col("rn"), lit(1)),
    );
    const plan = planQuery(query, BIDS_CONTEXT);
    assert.equal(plan.mode, "retract");
    assert.match(
      explainPlan(plan),
      /Deduplicate\(keep=\[LastRow\], key=\[bidder\], order=\[ROWTIME\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const last = new Map<SqlValue, SqlValue[]>();
        for (const r of rows) {
          const old = last.get(r[2]);
          if (old === undefined || r[3] >= (old[2] as number)) last.set(r[2], [r[2], r[1], r[3]]);
        }
        assert.deepEqual(fold(await run(plan, rows)), tableOf([...last.values()]));
      }),
      { numRuns: 15 },
    );
  },
});

Deno.test({
  name:
    "ORDER BY PROCTIME() ASC with rn <= 1: a processing-time keep-first Deduplicate, append-only",
  ...JOB,
  async fn() {
    const query = topN(
      [item(col("bidder")), item(col("price"))],
      [col("bidder")],
      [asc({ k: "call", name: "PROCTIME", args: [] })],
      bin("<=", col("rn"), lit(1)),
    );
    const plan = planQuery(query, BIDS_CONTEXT);
    assert.equal(plan.mode, "append");
    assert.match(
      explainPlan(plan),
      /Deduplicate\(keep=\[FirstRow\], key=\[bidder\], order=\[PROCTIME\]/,
    );
    const rows = [[1, 5, "a", 1], [1, 9, "b", 2], [1, 7, "a", 3]];
    const out = await run(plan, rows, 1); // arrival order is the order: one subtask
    assert.ok(out.every((r) => r.kind === "INSERT"));
    assert.deepEqual(fold(out), tableOf([["a", 5], ["b", 9]]));
  },
});

// --- ORDER BY ... LIMIT --------------------------------------------------------------

Deno.test({
  name:
    "ORDER BY ... LIMIT 3 plans a SortLimit (a Top-3 without partition) whose changelog folds to the batch's best 3; LIMIT 2 alone keeps the first 2 rows, append-only",
  ...JOB,
  async fn() {
    const sorted = select({
      items: [item(col("price")), item(col("bidder")), item(col("ts"))],
      from: table("bids"),
      orderBy: [desc(col("price")), asc(col("bidder")), asc(col("ts"))],
      limit: 3,
    });
    const plan = planQuery(sorted, BIDS_CONTEXT);
    assert.equal(plan.mode, "retract");
    assert.match(
      explainPlan(plan),
      /SortLimit\(orderBy=\[price DESC, bidder ASC, ts ASC\], offset=\[0\], fetch=\[3\], changelogMode=\[I,UB,UA,D\]\)\n.*Exchange\(distribution=\[single\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const best = bestBids(rows, () => "all", 3).map((
          { bid: r },
        ): SqlValue[] => [r[1], r[2], r[3]]);
        assert.deepEqual(fold(await run(plan, rows)), tableOf(best));
      }),
      { numRuns: 10 },
    );
    const first = planQuery(
      select({ items: [item(col("bidder"))], from: table("bids"), limit: 2 }),
      BIDS_CONTEXT,
    );
    assert.equal(first.mode, "append");
    assert.match(explainPlan(first), /Limit\(offset=\[0\], fetch=\[2\], changelogMode=\[I\]\)/);
    const out = await run(first, [[1, 5, "a", 1], [1, 9, "b", 2], [1, 7, "c", 3]], 1);
    assert.deepEqual(out.map((r) => `${r.kind} ${r.fields.join(",")}`), ["INSERT a", "INSERT b"]);
  },
});

Deno.test("ORDER BY without LIMIT, and ORDER BY a column the SELECT list lacks, are refused naming what to write", () => {
  const refused = (query: SelectQuery, message: RegExp) =>
    assert.throws(
      () => planQuery(query, BIDS_CONTEXT),
      (e: unknown) => e instanceof PlanningError && message.test(e.message),
    );
  refused(
    select({ items: [star], from: table("bids"), orderBy: [desc(col("price"))] }),
    /ORDER BY without LIMIT must sort by a rowtime attribute ascending first, over an append-only input \(Flink's temporal sort\), got price DESC; add LIMIT n for a Top-N/,
  );
  refused(
    select({
      items: [item(col("bidder"))],
      from: table("bids"),
      orderBy: [desc(col("price"))],
      limit: 3,
    }),
    /ORDER BY price must name a column of the SELECT list \(columns: bidder\)/,
  );
});

Deno.test({
  name:
    "for an upsert consumer a Top-N emits no -U, keyed by its partition keys and rank number, and folds by that key to the batch Top-2; without the key selected it is refused",
  ...JOB,
  async fn() {
    const query = topN(
      [
        item(col("auction")),
        item(col("price")),
        item(col("bidder")),
        item(col("ts")),
        item(col("rn")),
      ],
      [col("auction")],
      [desc(col("price")), asc(col("bidder")), asc(col("ts"))],
      bin("<=", col("rn"), lit(2)),
    );
    const plan = planQuery(query, BIDS_CONTEXT, { upsert: true });
    assert.equal(plan.mode, "upsert");
    assert.match(explainPlan(plan), /Rank\(.*changelogMode=\[I,UA,D\]\)/);
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const out = await run(plan, rows);
        assert.ok(out.every((r) => r.kind !== "UPDATE_BEFORE"));
        const upserted = new Map<string, SqlValue[]>(); // by (auction, rn)
        for (const r of out) {
          const key = JSON.stringify([r.fields[0], r.fields[4]]);
          if (r.kind === "DELETE") upserted.delete(key);
          else upserted.set(key, [...r.fields]);
        }
        const expected: SqlValue[][] = bestBids(rows, (r) => r[0], 2)
          .map(({ bid, rank }) => [...bid, rank]);
        assert.deepEqual(tableOf([...upserted.values()]), tableOf(expected));
      }),
      { numRuns: 10 },
    );
    const dedup = planQuery(
      topN(
        [item(col("bidder")), item(col("price"))],
        [col("bidder")],
        [desc(col("ts"))],
        bin("=", col("rn"), lit(1)),
      ),
      BIDS_CONTEXT,
      { upsert: true },
    );
    assert.match(explainPlan(dedup), /Deduplicate\(keep=\[LastRow\].*changelogMode=\[I,UA,D\]\)/);
    assert.throws(
      () =>
        planQuery(
          topN(
            [item(col("price"))],
            [col("auction")],
            [desc(col("price"))],
            bin("<=", col("rn"), lit(2)),
          ),
          BIDS_CONTEXT,
          { upsert: true },
        ),
      /upsert mode over Rank needs its upsert key in the SELECT list \(the PARTITION BY columns and the rank number rn\)/,
    );
  },
});

Deno.test({
  name:
    "ORDER BY the rowtime (then price DESC) without LIMIT is a temporal sort: rows leave in that order once the watermark passes them, append-only",
  ...JOB,
  async fn() {
    const plan = planQuery(
      select({
        items: [item(col("ts")), item(col("price"))],
        from: table("bids"),
        orderBy: [asc(col("ts")), desc(col("price"))],
      }),
      BIDS_CONTEXT,
    );
    assert.equal(plan.mode, "append");
    assert.match(
      explainPlan(plan),
      /TemporalSort\(orderBy=\[ts ASC, price DESC\], changelogMode=\[I\]\)/,
    );
    // rowtimes never decrease (with a watermark of the highest rowtime a row arriving after a
    // later one could be late); rows of one rowtime arrive in another order than the price's
    const rows: SqlValue[][] = [
      [1, 5, "a", 10],
      [1, 9, "b", 10],
      [1, 7, "c", 20],
      [2, 8, "d", 20],
      [2, 1, "e", 40],
    ];
    const out = await run(plan, rows);
    assert.deepEqual(out.map((r) => `${r.kind} ${r.fields.join(",")}`), [
      "INSERT 10,9",
      "INSERT 10,5",
      "INSERT 20,8",
      "INSERT 20,7",
      "INSERT 40,1",
    ]);
  },
});
