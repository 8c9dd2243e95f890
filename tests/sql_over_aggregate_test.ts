/**
 * OVER aggregations through the planner and whole jobs (`plan_over.ts`):
 * ROWS frames per partition in rowtime order, an OVER over an updating
 * Top-1 (Nexmark q6's shape), the OVER and ROW_NUMBER shapes Flink refuses,
 * and `t.*` in an OVER query's SELECT list.
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
  topN,
} from "./_sql_over_rank_kit.ts";

// --- OVER aggregations ----------------------------------------------------------

Deno.test({
  name:
    "SUM and COUNT(*) OVER ROWS BETWEEN 1 PRECEDING: each bid with its auction's last two prices, in rowtime order",
  ...JOB,
  async fn() {
    const rows1 = { unit: "ROWS", preceding: 1 } as const;
    const query = select({
      items: [
        item(col("auction")),
        item(col("price")),
        item(col("ts")),
        item(over("SUM", [col("price")], [col("auction")], [asc(col("ts"))], rows1), "s"),
        item(over("COUNT", [], [col("auction")], [asc(col("ts"))], rows1), "n"),
      ],
      from: table("bids"),
      where: bin(">=", col("price"), lit(0)),
    });
    const plan = planQuery(query, BIDS_CONTEXT);
    assert.equal(plan.mode, "append");
    assert.match(
      explainPlan(plan),
      /OverAggregate\(partitionBy=\[auction\], orderBy=\[ts ASC\], window=\[ROWS BETWEEN 1 PRECEDING AND CURRENT ROW\], select=\[auction, price, bidder, ts, SUM\(price\) AS w0\$o0, COUNT\(\*\) AS w0\$o1\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const expected: SqlValue[][] = [];
        for (const a of new Set(rows.map((r) => r[0]))) {
          const sorted = rows.filter((r) => r[0] === a).sort((x, y) => x[3] - y[3]);
          sorted.forEach((r, i) => {
            const frame = sorted.slice(Math.max(0, i - 1), i + 1);
            expected.push([r[0], r[1], r[3], frame.reduce((s, f) => s + f[1], 0), frame.length]);
          });
        }
        assert.deepEqual(fold(await run(plan, rows)), tableOf(expected));
      }),
      { numRuns: 15 },
    );
  },
});

Deno.test({
  name:
    "Nexmark q6's shape, beyond Flink: AVG OVER the last 3 rows per bidder over the updating Top-1 bid per auction folds to the batch query",
  ...JOB,
  async fn() {
    // SELECT bidder, price, ts, AVG(price) OVER (PARTITION BY bidder ORDER BY ts
    //   ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS a
    // FROM (SELECT bidder, price, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction
    //   ORDER BY price DESC, bidder ASC, ts ASC) AS rn FROM bids) WHERE rn <= 1) AS q
    const top = topN(
      [item(col("bidder")), item(col("price")), item(col("ts"))],
      [col("auction")],
      [desc(col("price")), asc(col("bidder")), asc(col("ts"))],
      bin("<=", col("rn"), lit(1)),
    );
    const query = select({
      items: [
        item(col("bidder")),
        item(col("price")),
        item(col("ts")),
        item(
          over("AVG", [col("price")], [col("bidder")], [asc(col("ts"))], {
            unit: "ROWS",
            preceding: 2,
          }),
          "a",
        ),
      ],
      from: subquery(top, "q"),
    });
    const plan = planQuery(query, BIDS_CONTEXT);
    assert.equal(plan.mode, "retract");
    assert.match(
      explainPlan(plan),
      /OverAggregate\(partitionBy=\[bidder\], orderBy=\[ts ASC\], window=\[ROWS BETWEEN 2 PRECEDING AND CURRENT ROW\], select=\[bidder, price, ts, AVG\(price\) AS w0\$o0\], changelogMode=\[I,UB,UA,D\]\)\n.*Exchange\(distribution=\[hash\[bidder\]\], changelogMode=\[I,UB,UA,D\]\)\n.*\n.*Rank\(strategy=\[AppendFastStrategy\]/,
    );
    await fc.assert(
      fc.asyncProperty(bids, async (rows) => {
        const best = new Map<number, [number, number, string, number]>();
        for (const r of rows) {
          const b = best.get(r[0]);
          if (
            b === undefined || r[1] > b[1] ||
            (r[1] === b[1] && (r[2] < b[2] || (r[2] === b[2] && r[3] < b[3])))
          ) best.set(r[0], r);
        }
        const expected: SqlValue[][] = [];
        for (const bidder of new Set([...best.values()].map((r) => r[2]))) {
          const sorted = [...best.values()].filter((r) => r[2] === bidder).sort((x, y) =>
            x[3] - y[3]
          );
          sorted.forEach((r, i) => {
            const frame = sorted.slice(Math.max(0, i - 2), i + 1).map((f) => f[1]);
            const avg = Math.trunc(frame.reduce((s, x) => s + x, 0) / frame.length);
            expected.push([r[2], r[1], r[3], avg]);
          });
        }
        assert.deepEqual(fold(await run(plan, rows)), tableOf(expected));
      }),
      { numRuns: 15 },
    );
  },
});

Deno.test("OVER and ROW_NUMBER shapes Flink refuses are refused with what to write instead", () => {
  const refused = (query: SelectQuery, message: RegExp) =>
    assert.throws(
      () => planQuery(query, BIDS_CONTEXT),
      (e: unknown) => e instanceof PlanningError && message.test(e.message),
    );
  refused(
    select({
      items: [item(over("SUM", [col("price")], [], [asc(col("price"))]), "s")],
      from: table("bids"),
    }),
    /an OVER window must ORDER BY a rowtime attribute \(a column with WATERMARK FOR\), got price/,
  );
  refused(
    select({
      items: [item(over("SUM", [col("price")], [], [desc(col("ts"))]), "s")],
      from: table("bids"),
    }),
    /an OVER window must ORDER BY one time attribute ascending, got ORDER BY ts DESC/,
  );
  refused(
    topN([star], [col("auction")], [desc(col("price"))], bin(">", col("price"), lit(1))),
    /ROW_NUMBER needs an upper bound on its result rn in the outer WHERE \(e.g. rn <= 10\)/,
  );
  refused(
    select({
      items: [star],
      from: subquery(select({
        items: [star, item(over("RANK", [], [], [desc(col("price"))]), "r")],
        from: table("bids"),
      })),
      where: bin("<=", col("r"), lit(3)),
    }),
    /RANK\(\) is not supported yet; use ROW_NUMBER\(\)/,
  );
  refused(
    select({
      items: [item(over("ROW_NUMBER", [], [], [desc(col("price"))]), "r")],
      from: table("bids"),
    }),
    /ROW_NUMBER\(\) OVER is supported only in a Top-N/,
  );
});

Deno.test("an OVER query's SELECT list takes t.* of its FROM table, and refuses t.* of a table it does not read", () => {
  const window = over("COUNT", [], [col("auction")], [asc(col("ts"))]);
  const plan = planQuery(
    select({
      items: [{ k: "star", table: "b" }, item(window, "n")],
      from: { k: "table", name: "bids", alias: "b", at: 0 },
    }),
    BIDS_CONTEXT,
  );
  assert.deepEqual(plan.columns.map((c) => c.name), ["auction", "price", "bidder", "ts", "n"]);
  assert.throws(
    () =>
      planQuery(
        select({ items: [{ k: "star", table: "x" }, item(window, "n")], from: table("bids") }),
        BIDS_CONTEXT,
      ),
    /x\.\* names no table of the FROM clause/,
  );
});
