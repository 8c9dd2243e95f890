/**
 * SQL jobs upserting a GROUP BY with HAVING into MariaDB and PostgreSQL
 * through the `mariadb` and `postgres` table connectors (exactly-once: XA
 * and prepared transactions), with a failure injected after a completed
 * checkpoint. The query's groups grow out of the HAVING filter, so the sink
 * gets upserts (`+I`, `-U`/`+U` pairs) and deletes (a `-U` whose `+U` the
 * filter dropped); the final database table must equal the batch query
 * over all the input. Unique table names, dropped afterwards.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  PlanningError,
  RestartStrategies,
  StreamExecutionEnvironment,
  StreamTableEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";
import { TABLE_CONNECTOR_FACTORIES } from "../connectors/table.ts";
import { rows, sql, uniqueName } from "../connectors/mariadb/_test_kit.ts";
import { withTempDir } from "./_job_kit.ts";
import { startPostgresServer } from "./_postgres_server.ts";
import postgres from "npm:postgres@3.4.9";

type Order = [string, number];

/** 150 orders over 9 customers, amounts 1–9. */
const ORDERS: Order[] = Array.from({ length: 150 }, (_, i) => [
  `c${(i * 4) % 9}`,
  ((i * 7) % 9) + 1,
]);

const LIMIT = 60;

/** The batch query: per customer with SUM(amount) < LIMIT, its count and total. */
function batch(): [string, number, number][] {
  const groups = new Map<string, [number, number]>();
  for (const [c, a] of ORDERS) {
    const g = groups.get(c) ?? [0, 0];
    groups.set(c, [g[0] + 1, g[1] + a]);
  }
  return [...groups].filter(([, [, total]]) => total < LIMIT)
    .map(([c, [n, total]]): [string, number, number] => [c, n, total])
    .sort((a, b) => a[0] < b[0] ? -1 : 1);
}

/**
 * Runs `CREATE TABLE totals (customer, n, total, PRIMARY KEY (customer) NOT
 * ENFORCED) WITH (options)` and `INSERT INTO totals SELECT ... GROUP BY
 * customer HAVING ...` over the orders, failing once after order 60 (after
 * a completed checkpoint covering the first 50).
 * @returns the job's restarts.
 */
async function runJob(options: Record<string, string>, parallelism: number): Promise<number> {
  const withClause = Object.entries(options).map(([k, v]) => `'${k}' = '${v}'`).join(", ");
  return await withTempDir(async (directory) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(parallelism)
      .enableCheckpointing(30, { directory })
      .setRestartStrategy(RestartStrategies.fixedDelay(2, 0));
    const items: TestItem<Order>[] = [
      ...ORDERS.slice(0, 50),
      TestSource.awaitCheckpoint(),
      ...ORDERS.slice(50, 60),
      TestSource.fail("induced failure after order 60"),
      ...ORDERS.slice(60),
    ];
    const orders = env.fromSource(TestSource.of(items), WatermarkStrategy.noWatermarks(), "orders")
      .uid("orders").setParallelism(1);
    const tEnv = StreamTableEnvironment.create(env, { connectors: TABLE_CONNECTOR_FACTORIES });
    tEnv.createTemporaryView("orders", orders, [
      { name: "customer", type: "VARCHAR" },
      { name: "amount", type: "INT" },
    ]);
    await tEnv.executeSql(
      `CREATE TABLE totals (customer STRING, n BIGINT, total BIGINT,
         PRIMARY KEY (customer) NOT ENFORCED) WITH (${withClause})`,
    );
    const result = await tEnv.executeSql(
      `INSERT INTO totals SELECT customer, COUNT(*) AS n, SUM(amount) AS total
       FROM orders GROUP BY customer HAVING SUM(amount) < ${LIMIT}`,
    );
    return result.jobResult!.restarts;
  });
}

Deno.test({
  name:
    "a database table without PRIMARY KEY is append-only: an updating INSERT is refused, naming the GroupAggregate",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    const tEnv = StreamTableEnvironment.create(env, { connectors: TABLE_CONNECTOR_FACTORIES });
    tEnv.createTemporaryView("orders", env.fromCollection([["c1", 1]]), [
      { name: "customer", type: "VARCHAR" },
      { name: "amount", type: "INT" },
    ]);
    for (const connector of ["mariadb", "postgres"]) {
      await tEnv.executeSql(
        `CREATE TABLE log_${connector} (customer STRING, total BIGINT) WITH ('connector' = '${connector}',
           'database' = 'test', 'username' = 'root')`,
      );
      await assert.rejects(
        () =>
          tEnv.executeSql(
            `INSERT INTO log_${connector} SELECT customer, SUM(amount) FROM orders GROUP BY customer`,
          ),
        (e: unknown) =>
          e instanceof PlanningError &&
          new RegExp(
            `table log_${connector} \\(connector '${connector}'\\) doesn't support consuming update changes which is produced by node GroupAggregate`,
          ).test(e.message),
      );
    }
  },
});

Deno.test({
  name:
    "a SQL GROUP BY with HAVING upserts into MariaDB exactly-once across a failure: the table equals the batch query",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const table = uniqueName("sql_totals");
    await sql(
      `CREATE TABLE \`${table}\` (customer VARCHAR(16) PRIMARY KEY, n BIGINT NOT NULL, ` +
        `total BIGINT NOT NULL) ENGINE=InnoDB`,
    );
    try {
      const restarts = await runJob({
        connector: "mariadb",
        url: "jdbc:mariadb://127.0.0.1:3306/test",
        "table-name": table,
        username: "root",
        "sink.buffer-flush.max-rows": "4",
        "sink.xid-prefix": table,
      }, 2);
      assert.equal(restarts, 1, "the induced failure restarted the job once");
      const got = (await rows(table, "customer")).map((r) => [r.customer, r.n, r.total]);
      assert.deepEqual(got, batch());
      assert.ok(batch().length < 9, "some groups left the HAVING filter (deletes happened)");
    } finally {
      await sql(`DROP TABLE IF EXISTS \`${table}\``);
    }
  },
});

Deno.test({
  name:
    "a SQL GROUP BY with HAVING upserts into PostgreSQL exactly-once across a failure: the table equals the batch query",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const server = await startPostgresServer();
    const db = postgres(server.url, { max: 1, onnotice: () => {} });
    try {
      const table = uniqueName("sql_totals");
      await db.unsafe(
        `CREATE TABLE "${table}" (customer TEXT PRIMARY KEY, n BIGINT NOT NULL, total BIGINT NOT NULL)`,
      );
      const restarts = await runJob({
        connector: "postgres",
        url: `jdbc:postgresql://127.0.0.1:${server.port}/postgres`,
        "table-name": table,
        username: "postgres",
        "sink.buffer-flush.max-rows": "4",
      }, 2);
      assert.equal(restarts, 1, "the induced failure restarted the job once");
      const got = await db.unsafe(`SELECT customer, n, total FROM "${table}" ORDER BY customer`);
      assert.deepEqual(got.map((r) => [r.customer, Number(r.n), Number(r.total)]), batch());
      const prepared = await db.unsafe("SELECT gid FROM pg_prepared_xacts");
      assert.deepEqual([...prepared], [], "no prepared transaction is left");
    } finally {
      await db.end();
      await server.stop();
    }
  },
});
