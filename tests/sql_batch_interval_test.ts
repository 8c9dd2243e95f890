/**
 * The at-least-once and no-guarantee modes of the MariaDB XA sink and the
 * PostgreSQL prepared sink write their rows while a job without
 * checkpointing runs (Flink's `JdbcExecutionOptions.batchIntervalMs`,
 * `connectors/_sql/batch_interval.ts`): a source emits 50 rows (far below a
 * batch of 1000) and then pauses on a `ManualClock` that only the test
 * moves, with checkpointing off, so neither a barrier nor the end of input
 * can send them; the table must still hold all 50 before the test lets the
 * source end. (The source is bounded so that the test can end the job; an
 * unbounded one behaves the same until its end, which it never reaches.)
 *
 * @module
 */

import assert from "node:assert/strict";
import postgres from "npm:postgres@3.4.9";
import { mariaDbXaSink } from "../connectors/mariadb/mod.ts";
import { sql as mariaSql, TEST_CONNECTION, uniqueName } from "../connectors/mariadb/_test_kit.ts";
import { PostgresPreparedSink } from "../connectors/postgres/mod.ts";
import { type Sink, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { ManualClock, TestSource } from "../testing.ts";
import { waitUntil } from "./_wait.ts";

const PG_URL = "postgres://postgres@127.0.0.1:5432/postgres";

interface Row {
  readonly id: number;
  readonly name: string;
}

const ROWS: Row[] = Array.from({ length: 50 }, (_, id) => ({ id, name: `n${id}` }));

/**
 * Runs the paused job into `sink` and waits until `count()` is 50
 * while the source is paused; then lets the source end and awaits the job.
 */
async function assertWrittenWhilePaused(
  sink: Sink<Row>,
  count: () => Promise<number>,
  jobName: string,
): Promise<void> {
  const clock = new ManualClock();
  const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(1)
    .setClock(clock);
  env.fromSource(
    TestSource.of<Row>([...ROWS, TestSource.pause(1000)], { bounded: true }),
    WatermarkStrategy.noWatermarks(),
    "rows",
  ).uid("rows").sinkTo(sink).uid("out");
  const job = env.execute(jobName);
  let seen = 0;
  try {
    await waitUntil(async () => (seen = await count()) === 50, {
      timeoutMs: 30_000,
      pollMs: 50,
      missing: () => `${jobName}: ${seen} of 50 rows in the table while the source is paused`,
    });
  } finally {
    clock.advance(1000); // the source ends: the job finishes either way
    await job;
  }
  assert.equal(await count(), 50);
}

for (const deliveryGuarantee of ["at-least-once", "none"] as const) {
  Deno.test(`${deliveryGuarantee === "none" ? "a" : "an"} ${deliveryGuarantee} MariaDB XA sink writes its rows without checkpointing while the source is idle`, async () => {
    const table = uniqueName("interval");
    await mariaSql(
      `CREATE TABLE \`${table}\` (id INT PRIMARY KEY, name VARCHAR(32)) ENGINE=InnoDB`,
    );
    try {
      await assertWrittenWhilePaused(
        mariaDbXaSink<Row>({
          connection: TEST_CONNECTION,
          sql: `INSERT INTO \`${table}\` (id, name) VALUES (?, ?)`,
          parameters: (r) => [r.id, r.name],
          deliveryGuarantee,
        }),
        async () => {
          const rows = await mariaSql(`SELECT COUNT(*) AS n FROM \`${table}\``) as { n: bigint }[];
          return Number(rows[0]!.n);
        },
        `mariadb interval ${deliveryGuarantee}`,
      );
    } finally {
      await mariaSql(`DROP TABLE IF EXISTS \`${table}\``);
    }
  });

  Deno.test(`${deliveryGuarantee === "none" ? "a" : "an"} ${deliveryGuarantee} PostgreSQL prepared sink writes its rows without checkpointing while the source is idle`, async () => {
    const table = uniqueName("interval");
    const sql = postgres(PG_URL, { max: 1, onnotice: () => {} });
    await sql.unsafe(`CREATE TABLE ${table} (id INT PRIMARY KEY, name TEXT)`);
    try {
      await assertWrittenWhilePaused(
        new PostgresPreparedSink<Row>({
          url: PG_URL,
          table,
          columns: ["id", "name"],
          values: (r) => [r.id, r.name],
          gidPrefix: table,
          deliveryGuarantee,
        }),
        async () => Number((await sql.unsafe(`SELECT COUNT(*) AS n FROM ${table}`))[0]!.n),
        `postgres interval ${deliveryGuarantee}`,
      );
    } finally {
      await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
      await sql.end();
    }
  });
}
