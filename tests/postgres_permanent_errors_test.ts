/**
 * A PostgreSQL sink job whose statement cannot succeed (an undefined table
 * or column, a syntax error, a unique or not-null violation, a value of the
 * wrong type) fails once, at attempt 0, naming the table, under the
 * default restart strategy (fixed delay, unlimited):
 * `connectors/postgres/sqlstate.ts`. One private server with prepared
 * transactions enabled serves every test.
 *
 * @module
 */

import postgres from "npm:postgres@3.4.9";
import { PostgresPreparedSink, PostgresUpsertSink } from "../connectors/postgres/mod.ts";
import { uniqueName } from "../connectors/postgres/_test_kit.ts";
import { type Sink, StreamExecutionEnvironment } from "../mod.ts";
import { withTempDir } from "./_job_kit.ts";
import { assertFailsOnce, guardRestarts } from "./_permanent_kit.ts";
import { startPostgresServer } from "./_postgres_server.ts";

const server = await startPostgresServer();
globalThis.addEventListener("unload", () => server.stopSync());

interface Row {
  readonly id: number;
  readonly name: string | null;
}

const ROWS: Row[] = Array.from({ length: 20 }, (_, id) => ({ id, name: `n${id}` }));

function runInto(sink: Sink<Row>, jobName: string, parts: string[], rows = ROWS) {
  return withTempDir((checkpoints) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(1)
      .enableCheckpointing(50, { directory: checkpoints });
    env.fromCollection(rows).sinkTo(guardRestarts(sink)).uid("out");
    return assertFailsOnce(env, jobName, parts);
  });
}

/** A table `(id INT PRIMARY KEY, name TEXT NOT NULL)` dropped after `body`. */
async function withTable(body: (table: string) => Promise<void>): Promise<void> {
  const table = uniqueName("perm");
  const sql = postgres(server.url, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`CREATE TABLE ${table} (id INT PRIMARY KEY, name TEXT NOT NULL)`);
    await body(table);
  } finally {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.end();
  }
}

function prepared(
  table: string,
  deliveryGuarantee: "exactly-once" | "at-least-once",
  columns = ["id", "name"],
): PostgresPreparedSink<Row> {
  return new PostgresPreparedSink<Row>({
    url: server.url,
    table,
    columns,
    values: (r) => [r.id, r.name],
    gidPrefix: uniqueName("g"),
    deliveryGuarantee,
  });
}

Deno.test("a prepared sink job into a table that does not exist fails once, naming the table", async () => {
  const table = uniqueName("missing");
  await runInto(prepared(table, "exactly-once"), "pg missing table", [table, "42P01"]);
});

Deno.test("an at-least-once prepared sink job writing a column that does not exist fails once, naming it", async () => {
  await withTable(async (table) => {
    await runInto(prepared(table, "at-least-once", ["id", "nope"]), "pg missing column", [
      table,
      "nope",
      "42703",
    ]);
  });
});

Deno.test("a prepared sink job re-run into a table that holds its keys fails once, naming table and key", async () => {
  await withTable(async (table) => {
    const sql = postgres(server.url, { max: 1, onnotice: () => {} });
    await sql.unsafe(`INSERT INTO ${table} (id, name) VALUES (3, 'earlier run')`);
    await sql.end();
    await runInto(prepared(table, "exactly-once"), "pg duplicate key", [
      table,
      "23505",
      "(id)=(3)",
    ]);
  });
});

Deno.test("a prepared sink job writing a null into a NOT NULL column fails once, naming the column", async () => {
  await withTable(async (table) => {
    await runInto(
      prepared(table, "exactly-once"),
      "pg not null",
      [table, "23502", "name"],
      [{ id: 1, name: "a" }, { id: 2, name: null }],
    );
  });
});

Deno.test("an upsert sink job writing text into an integer column fails once, naming the table", async () => {
  await withTable(async (table) => {
    const sink = new PostgresUpsertSink<Row>({
      url: server.url,
      table,
      columns: ["id", "name"],
      keyColumns: ["id"],
      values: (r) => [`x${r.id}`, r.name],
    });
    await runInto(sink, "pg wrong type", [table, "22P02"]);
  });
});
