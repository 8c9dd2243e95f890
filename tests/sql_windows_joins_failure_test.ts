/**
 * A SQL job with event time, a window aggregation and a regular outer
 * join with retraction, under an injected failure: the table is made from
 * a stream that fails once after a completed checkpoint and restarts from
 * it. Its committed changelog (through the exactly-once `CollectingSink`),
 * applied to an empty table, equals the failure-free run's and the batch
 * query over the whole input.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type Row, StreamTableEnvironment } from "../mod.ts";
import { applyChange } from "../runtime/table/row.ts";
import { fold, runChangelogJob } from "./_sql_job_kit.ts";

type Order = [string, number, number];

/** 90 orders over 5 customers, one a second (epoch ms), amounts 1-9. */
const ORDERS: Order[] = Array.from({ length: 90 }, (_, i) => [
  `c${(i * 3) % 5}`,
  ((i * 7) % 9) + 1,
  i * 1000,
]);

const QUERY = `SELECT w.customer, w.window_start, w.total, t.n
FROM (
  SELECT customer, window_start, SUM(amount) AS total
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY customer, window_start, window_end
) w
LEFT JOIN (SELECT customer AS c, COUNT(*) AS n FROM orders WHERE amount > 3 GROUP BY customer) t
ON w.customer = t.c`;

/** Each order with the same customer's orders 1 to 3 seconds before it (a LEFT interval self-join). */
const INTERVAL_QUERY = `SELECT o.customer, o.amount, p.amount AS before
FROM orders o LEFT JOIN orders p
ON o.customer = p.customer AND p.ts BETWEEN o.ts - INTERVAL '3' SECOND AND o.ts - INTERVAL '1' SECOND`;

/** Per 10 s window, each customer's total beside its count of orders over 3 (a window join of two window aggregations). */
const WINDOW_JOIN_QUERY = `SELECT t.customer, t.window_start, t.total, b.big
FROM (
  SELECT customer, window_start, window_end, SUM(amount) AS total
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY customer, window_start, window_end
) t
JOIN (
  SELECT customer, window_start, window_end, COUNT(*) AS big
  FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  WHERE amount > 3
  GROUP BY customer, window_start, window_end
) b
ON t.customer = b.customer AND t.window_start = b.window_start AND t.window_end = b.window_end`;

async function run(
  parallelism: number,
  fail: boolean,
  query = QUERY,
): Promise<{ rows: Row[]; restarts: number }> {
  return await runChangelogJob({
    name: `sql windows joins failure p${parallelism}${fail ? " with a failure" : ""}`,
    parallelism,
    source: "orders",
    records: ORDERS,
    failure: fail ? { checkpointAfter: 35, failAfter: 48, what: "order" } : undefined,
    changelog: (env, orders) => {
      const tEnv = StreamTableEnvironment.create(env);
      tEnv.createTemporaryView("orders", orders, [
        { name: "customer", type: "VARCHAR" },
        { name: "amount", type: "INT" },
        { name: "ts", type: "BIGINT" },
      ], { watermark: { column: "ts", emit: "on-event" } });
      return tEnv.toChangelogStream(tEnv.sqlQuery(query));
    },
  });
}

/** The batch query over all orders. */
function batch(): Map<string, number> {
  const table = new Map<string, number>();
  const sums = new Map<string, number>();
  for (const [customer, amount, ts] of ORDERS) {
    const key = JSON.stringify([customer, Math.floor(ts / 10_000) * 10_000]);
    sums.set(key, (sums.get(key) ?? 0) + amount);
  }
  for (const [key, total] of sums) {
    const [customer, start] = JSON.parse(key) as [string, number];
    const n = ORDERS.filter((o) => o[0] === customer && o[1] > 3).length;
    const text = new Date(start).toISOString().replace("T", " ").replace("Z", "");
    applyChange(table, { kind: "INSERT", fields: [customer, text, total, n === 0 ? null : n] });
  }
  return table;
}

for (const parallelism of [1, 2]) {
  Deno.test({
    name:
      `a window aggregation LEFT JOINed to an updating GROUP BY at parallelism ${parallelism} commits what a failure-free run commits`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const clean = await run(parallelism, false);
      const failed = await run(parallelism, true);
      assert.equal(clean.restarts, 0);
      assert.equal(failed.restarts, 1, "the induced failure restarted the job once");
      assert.deepEqual(fold(failed.rows), fold(clean.rows));
      assert.deepEqual(fold(failed.rows), batch(), "the changelog folds to the batch query");
      assert.ok(clean.rows.some((r) => r.kind === "DELETE"), "the outer join retracted rows");
    },
  });
}

const windowText = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace("Z", "");

function batchInterval(): Map<string, number> {
  const table = new Map<string, number>();
  for (const [c, amount, ts] of ORDERS) {
    const before = ORDERS.filter((p) => p[0] === c && p[2] >= ts - 3000 && p[2] <= ts - 1000);
    if (before.length === 0) applyChange(table, { kind: "INSERT", fields: [c, amount, null] });
    for (const p of before) applyChange(table, { kind: "INSERT", fields: [c, amount, p[1]] });
  }
  return table;
}

function batchWindowJoin(): Map<string, number> {
  const table = new Map<string, number>();
  const groups = new Map<string, Order[]>();
  for (const o of ORDERS) {
    const key = JSON.stringify([o[0], Math.floor(o[2] / 10_000) * 10_000]);
    groups.set(key, [...(groups.get(key) ?? []), o]);
  }
  for (const [key, orders] of groups) {
    const [c, start] = JSON.parse(key) as [string, number];
    const big = orders.filter((o) => o[1] > 3).length;
    if (big === 0) continue;
    const total = orders.reduce((a, o) => a + o[1], 0);
    applyChange(table, { kind: "INSERT", fields: [c, windowText(start), total, big] });
  }
  return table;
}

for (
  const [name, query, batchOf] of [
    ["a LEFT interval self-join", INTERVAL_QUERY, batchInterval],
    ["a window join of two window aggregations", WINDOW_JOIN_QUERY, batchWindowJoin],
  ] as const
) {
  Deno.test({
    name: `${name} at parallelism 2 commits what a failure-free run commits, append-only`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const clean = await run(2, false, query);
      const failed = await run(2, true, query);
      assert.equal(failed.restarts, 1, "the induced failure restarted the job once");
      assert.ok(failed.rows.every((r) => r.kind === "INSERT"), "append-only");
      assert.deepEqual(fold(failed.rows), fold(clean.rows));
      assert.deepEqual(fold(failed.rows), batchOf(), "the changelog folds to the batch query");
    },
  });
}
