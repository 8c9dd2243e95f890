/**
 * A GROUP BY with user-defined functions under an injected failure: the
 * aggregate function's accumulators (plain objects with arrays) are keyed
 * state, checkpointed and restored through the state codec, so the
 * changelog committed after a restart equals the failure-free run's.
 *
 * @module
 */

import assert from "node:assert/strict";
import { aggregateFunction, type Row, scalarFunction, StreamTableEnvironment } from "../mod.ts";
import { applyChange } from "../runtime/table/row.ts";
import { fold, runChangelogJob } from "./_sql_job_kit.ts";

type Order = [string, number, string];

/** 90 orders over 5 customers: amounts 1–9, and one of 4 products. */
const ORDERS: Order[] = Array.from({ length: 90 }, (_, i) => [
  `c${(i * 3) % 5}`,
  ((i * 7) % 9) + 1,
  `p${(i * 5) % 4}`,
]);

/**
 * The products a customer bought with their totals, as text sorted by
 * product (the rows of a key can arrive in either order at parallelism 2:
 * the WHERE runs on two subtasks before the keyBy).
 */
const basket = aggregateFunction<{ products: string[]; totals: number[] }>({
  arguments: ["STRING", "BIGINT"],
  result: "STRING",
  createAccumulator: () => ({ products: [], totals: [] }),
  accumulate(acc, product, amount) {
    const i = acc.products.indexOf(String(product));
    if (i === -1) {
      acc.products.push(String(product));
      acc.totals.push(Number(amount));
    } else acc.totals[i]! += Number(amount);
  },
  retract(acc, product, amount) {
    const i = acc.products.indexOf(String(product));
    acc.totals[i]! -= Number(amount);
  },
  getValue: (acc) =>
    acc.products.map((p, i) => `${p}:${acc.totals[i]}`).filter((e) => !e.endsWith(":0")).sort()
      .join(" "),
});

const QUERY = "SELECT customer, BASKET(product, amount) AS b, COUNT(*) AS n " +
  "FROM orders WHERE NOT_TINY(amount) GROUP BY customer";

async function run(fail: boolean): Promise<{ rows: Row[]; restarts: number }> {
  return await runChangelogJob({
    name: `sql udf failure test${fail ? " with a failure" : ""}`,
    parallelism: 2,
    source: "orders",
    records: ORDERS,
    failure: fail ? { checkpointAfter: 30, failAfter: 45, what: "order" } : undefined,
    changelog: (env, orders) => {
      const tEnv = StreamTableEnvironment.create(env);
      tEnv.createTemporarySystemFunction("basket", basket);
      tEnv.createTemporarySystemFunction(
        "not_tiny",
        scalarFunction({
          arguments: ["BIGINT"],
          result: "BOOLEAN",
          eval: (x) => x === null ? null : Number(x) > 1,
        }),
      );
      tEnv.createTemporaryView("orders", orders, [
        { name: "customer", type: "VARCHAR" },
        { name: "amount", type: "INT" },
        { name: "product", type: "VARCHAR" },
      ]);
      return tEnv.toChangelogStream(tEnv.sqlQuery(QUERY));
    },
  });
}

/** The batch query over all orders. */
function batch(): Map<string, number> {
  const table = new Map<string, number>();
  for (const c of new Set(ORDERS.map((o) => o[0]))) {
    const mine = ORDERS.filter((o) => o[0] === c && o[1] > 1);
    if (mine.length === 0) continue;
    const products: string[] = [];
    const totals: number[] = [];
    for (const [, amount, product] of mine) {
      const i = products.indexOf(product);
      if (i === -1) {
        products.push(product);
        totals.push(amount);
      } else totals[i]! += amount;
    }
    applyChange(table, {
      kind: "INSERT",
      fields: [c, products.map((p, i) => `${p}:${totals[i]}`).sort().join(" "), mine.length],
    });
  }
  return table;
}

Deno.test({
  name:
    "a GROUP BY with a UDAF commits the failure-free changelog after a failure and a restore of its accumulators",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const clean = await run(false);
    const failed = await run(true);
    assert.equal(clean.restarts, 0);
    assert.equal(failed.restarts, 1, "the induced failure restarted the job once");
    assert.deepEqual(fold(clean.rows), batch());
    const table = fold(failed.rows);
    assert.deepEqual(table, batch());
  },
});
