/**
 * SQL jobs under an injected failure: a continuous GROUP BY (COUNT,
 * COUNT(DISTINCT), SUM, MIN, MAX, with HAVING and a CASE projection) over a
 * table made from a stream that fails once after a completed checkpoint,
 * then restarts from it. The committed changelog (through the
 * exactly-once `CollectingSink`) must equal the failure-free run's, and,
 * applied to an empty table, the batch GROUP BY over the whole input.
 *
 * @module
 */

import assert from "node:assert/strict";
import { formatRow, type Row, StreamTableEnvironment } from "../mod.ts";
import { applyChange } from "../runtime/table/row.ts";
import { fold, runChangelogJob } from "./_sql_job_kit.ts";

type Order = [string, number, string];

/** 120 orders over 7 customers: amounts 1–9, and one of 4 products. */
const ORDERS: Order[] = Array.from({ length: 120 }, (_, i) => [
  `c${(i * 5) % 7}`,
  ((i * 7) % 9) + 1,
  `p${(i * 3) % 4}`,
]);

const QUERY =
  `SELECT customer, COUNT(*) AS n, COUNT(DISTINCT product) AS products, SUM(amount) AS total,
  MIN(amount) AS low, MAX(amount) AS high,
  CASE WHEN SUM(amount) >= 100 THEN 'gold' ELSE 'plain' END AS tier
FROM orders GROUP BY customer HAVING COUNT(*) >= 2`;

/** Runs the query at `parallelism`; with `fail`, a checkpoint after order 40 and a failure 10 orders later. */
async function run(parallelism: number, fail: boolean): Promise<{ rows: Row[]; restarts: number }> {
  return await runChangelogJob({
    name: `sql failure test p${parallelism}${fail ? " with a failure" : ""}`,
    parallelism,
    source: "orders",
    records: ORDERS,
    failure: fail ? { checkpointAfter: 40, failAfter: 50, what: "order" } : undefined,
    changelog: (env, orders) => {
      const tEnv = StreamTableEnvironment.create(env);
      tEnv.createTemporaryView("orders", orders, [
        { name: "customer", type: "VARCHAR" },
        { name: "amount", type: "INT" },
        { name: "product", type: "VARCHAR" },
      ]);
      return tEnv.toChangelogStream(tEnv.sqlQuery(QUERY));
    },
  });
}

/** The batch query over all orders, as a multiset of rows. */
function batch(): Map<string, number> {
  const table = new Map<string, number>();
  const customers = [...new Set(ORDERS.map((o) => o[0]))];
  for (const c of customers) {
    const mine = ORDERS.filter((o) => o[0] === c);
    if (mine.length < 2) continue;
    const amounts = mine.map((o) => o[1]);
    const total = amounts.reduce((a, b) => a + b, 0);
    applyChange(table, {
      kind: "INSERT",
      fields: [
        c,
        mine.length,
        new Set(mine.map((o) => o[2])).size,
        total,
        Math.min(...amounts),
        Math.max(...amounts),
        total >= 100 ? "gold" : "plain",
      ],
    });
  }
  return table;
}

for (const parallelism of [1, 2]) {
  Deno.test({
    name:
      `a SQL GROUP BY at parallelism ${parallelism} commits the failure-free changelog after a failure and a restart from a checkpoint`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const clean = await run(parallelism, false);
      const failed = await run(parallelism, true);
      assert.equal(clean.restarts, 0);
      assert.equal(failed.restarts, 1, "the induced failure restarted the job once");
      const lines = (rows: Row[]) => rows.map(formatRow);
      if (parallelism === 1) {
        assert.deepEqual(lines(failed.rows), lines(clean.rows), "the same changelog, in order");
      } else {
        const byKey = (rows: Row[]) => {
          const m = new Map<string, string[]>();
          for (const r of rows) {
            m.set(String(r.fields[0]), [...(m.get(String(r.fields[0])) ?? []), formatRow(r)]);
          }
          return m;
        };
        assert.deepEqual(
          byKey(failed.rows),
          byKey(clean.rows),
          "the same changelog per customer, in order",
        );
      }
      assert.deepEqual(
        fold(failed.rows),
        batch(),
        "the changelog applied to an empty table is the batch result",
      );
      assert.ok(
        clean.rows.some((r) => r.kind === "UPDATE_BEFORE"),
        "the query updated its results",
      );
    },
  });
}
