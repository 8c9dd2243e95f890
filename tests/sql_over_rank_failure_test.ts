/**
 * Top-N, deduplication and OVER jobs under an injected failure: each query
 * runs over bids from a source that fails once after a completed
 * checkpoint and restarts from it. Their state (sorted rows, kept rows,
 * buffered rows with their event-time timers, OVER frames) is keyed state
 * and timers, so the committed changelog (exactly-once `CollectingSink`)
 * must equal the failure-free run's: in order at parallelism 1, folded to
 * the same table at parallelism 2.
 *
 * @module
 */

import assert from "node:assert/strict";
import { formatRow, type Row, type SqlValue } from "../mod.ts";
import { type PlanNode, planQuery } from "../runtime/table/plan.ts";
import type { Expr, OrderItem, SelectItem, SelectQuery } from "../runtime/table/sql_ast.ts";
import { translatePlan } from "../runtime/table/translate.ts";
import { runChangelogJob } from "./_sql_job_kit.ts";
import {
  asc,
  BIDS_CONTEXT,
  col,
  desc,
  fold,
  item,
  over as overWithFrame,
  select,
  star,
  subquery,
  table,
} from "./_sql_over_rank_kit.ts";

/** An OVER call; aggregates over `ROWS BETWEEN 2 PRECEDING AND CURRENT ROW`. */
const over = (fn: string, args: Expr[], partitionBy: Expr[], orderBy: OrderItem[]): Expr =>
  overWithFrame(
    fn,
    args,
    partitionBy,
    orderBy,
    fn === "ROW_NUMBER" ? null : { unit: "ROWS", preceding: 2 },
  );
const BIDS = table("bids");
/** `SELECT * FROM (SELECT *, ROW_NUMBER() OVER (...) AS rn FROM bids) WHERE rn <= n`, `rn` selected or not. */
function topN(
  partitionBy: Expr[],
  orderBy: OrderItem[],
  n: number,
  outer: SelectItem[],
): SelectQuery {
  return select({
    items: outer,
    from: subquery(
      select({
        items: [star, item(over("ROW_NUMBER", [], partitionBy, orderBy), "rn")],
        from: BIDS,
      }),
      "q",
    ),
    where: { k: "binary", op: "<=", left: col("rn"), right: { k: "literal", value: n } },
  });
}

/** 120 bids over 5 auctions and 4 bidders; rowtimes ascend (so no row is ever late). */
const BID_ROWS: SqlValue[][] = Array.from({ length: 120 }, (_, i) => [
  (i * 3) % 5,
  (i * 7) % 23,
  `b${(i * 5) % 4}`,
  i * 10,
]);

const QUERIES: [string, SelectQuery][] = [
  [
    "a Top-3 per auction with the rank number",
    topN([col("auction")], [desc(col("price")), asc(col("ts"))], 3, [{ k: "star" }]),
  ],
  [
    "a keep-last row-time deduplication per bidder",
    topN([col("bidder")], [desc(col("ts"))], 1, [item(col("bidder")), item(col("price"))]),
  ],
  [
    "SUM OVER the last 3 rows per auction",
    select({
      items: [
        item(col("auction")),
        item(col("ts")),
        item(over("SUM", [col("price")], [col("auction")], [asc(col("ts"))]), "s"),
      ],
      from: BIDS,
    }),
  ],
  [
    "AVG OVER the last 3 rows per bidder of the Top-1 bid per auction (updating OVER input)",
    select({
      items: [
        item(col("bidder")),
        item(over("AVG", [col("price")], [col("bidder")], [asc(col("ts"))]), "a"),
      ],
      from: subquery(
        topN([col("auction")], [desc(col("price")), asc(col("ts"))], 1, [
          item(col("bidder")),
          item(col("price")),
          item(col("ts")),
        ]),
        "w",
      ),
    }),
  ],
];

/** Runs `plan`; with `fail`, a checkpoint after bid 50 and a failure 20 bids later. */
async function run(plan: PlanNode, parallelism: number, fail: boolean) {
  return await runChangelogJob({
    name: `over and rank under failure p${parallelism}`,
    parallelism,
    source: "bids",
    records: BID_ROWS.map((fields): Row => ({ kind: "INSERT", fields })),
    failure: fail ? { checkpointAfter: 50, failAfter: 70, what: "bid" } : undefined,
    changelog: (_env, source) => translatePlan(plan, () => source, "q"),
  });
}

for (const [name, query] of QUERIES) {
  Deno.test({
    name:
      `${name}: after a failure and a restart from a checkpoint, the committed changelog is the failure-free run's`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const plan = planQuery(query, BIDS_CONTEXT);
      const clean = await run(plan, 1, false);
      const failed = await run(plan, 1, true);
      assert.equal(failed.restarts, 1, "the induced failure restarted the job once");
      assert.deepEqual(failed.rows.map(formatRow), clean.rows.map(formatRow));
      const parallel = await run(plan, 2, true);
      assert.equal(parallel.restarts, 1);
      assert.deepEqual(fold(parallel.rows), fold(clean.rows));
      assert.ok(clean.rows.length > 0);
    },
  });
}
