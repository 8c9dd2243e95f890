/**
 * A MariaDB sink job whose statement cannot succeed (a missing table or
 * column, a syntax error, a duplicate key a replay would hit again) fails
 * once, at attempt 0, naming the table, under the default restart
 * strategy (fixed delay, unlimited): `connectors/mariadb/errors.ts`.
 *
 * @module
 */

import { mariaDbUpsertSink, mariaDbXaSink } from "../connectors/mariadb/mod.ts";
import { sql, TEST_CONNECTION, uniqueName } from "../connectors/mariadb/_test_kit.ts";
import { type Sink, StreamExecutionEnvironment } from "../mod.ts";
import { withTempDir } from "./_job_kit.ts";
import { assertFailsOnce, guardRestarts } from "./_permanent_kit.ts";

interface Row {
  readonly id: number;
  readonly name: string;
}

const ROWS: Row[] = Array.from({ length: 20 }, (_, id) => ({ id, name: `n${id}` }));

/** Runs ROWS into `sink` with checkpointing on and the default restart strategy. */
function runInto(sink: Sink<Row>, jobName: string, parts: string[]): Promise<string> {
  return withTempDir((checkpoints) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(1)
      .enableCheckpointing(50, { directory: checkpoints });
    env.fromCollection(ROWS).sinkTo(guardRestarts(sink)).uid("out");
    return assertFailsOnce(env, jobName, parts);
  });
}

/** A table `(id INT PRIMARY KEY, name VARCHAR(32))` dropped after `body`. */
async function withTable(body: (table: string) => Promise<void>): Promise<void> {
  const table = uniqueName("perm");
  await sql(`CREATE TABLE \`${table}\` (id INT PRIMARY KEY, name VARCHAR(32)) ENGINE=InnoDB`);
  try {
    await body(table);
  } finally {
    await sql(`DROP TABLE IF EXISTS \`${table}\``);
  }
}

function xaSink(statement: string, deliveryGuarantee: "exactly-once" | "at-least-once") {
  const prefix = uniqueName("pp");
  return mariaDbXaSink<Row>({
    connection: TEST_CONNECTION,
    sql: statement,
    parameters: (r) => [r.id, r.name],
    deliveryGuarantee,
    xidPrefix: prefix,
    commitLogTable: `${prefix}_log`,
  });
}

async function dropLog(): Promise<void> {
  const tables = await sql(
    "SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'pp\\_%'",
  ) as { t: string }[];
  for (const { t } of tables) await sql(`DROP TABLE IF EXISTS \`${t}\``);
}

Deno.test("an XA sink job writing into a table that does not exist fails once, naming the table", async () => {
  const table = uniqueName("missing");
  try {
    await runInto(
      xaSink(`INSERT INTO \`${table}\` (id, name) VALUES (?, ?)`, "exactly-once"),
      "xa missing table",
      [table, "1146", "ER_NO_SUCH_TABLE"],
    );
  } finally {
    await dropLog();
  }
});

Deno.test("an at-least-once XA sink job writing into a column that does not exist fails once, naming the column", async () => {
  await withTable(async (table) => {
    await runInto(
      xaSink(`INSERT INTO \`${table}\` (id, nope) VALUES (?, ?)`, "at-least-once"),
      "xa missing column",
      [table, "nope", "1054"],
    );
  });
});

Deno.test("an XA sink job whose statement has a syntax error fails once, naming the table", async () => {
  await withTable(async (table) => {
    try {
      await runInto(
        xaSink(
          `INSERT INTO \`${table}\` (id, name) VALUES (?, ?) ON DUPLICATE KEY UPDAT`,
          "exactly-once",
        ),
        "xa syntax error",
        [table, "1064", "ER_PARSE_ERROR"],
      );
    } finally {
      await dropLog();
    }
  });
});

Deno.test("an XA sink job re-run into a table that holds its keys fails once, naming table and key", async () => {
  await withTable(async (table) => {
    await sql(`INSERT INTO \`${table}\` (id, name) VALUES (3, 'earlier run')`);
    try {
      await runInto(
        xaSink(`INSERT INTO \`${table}\` (id, name) VALUES (?, ?)`, "exactly-once"),
        "xa duplicate key",
        [table, "1062", "Duplicate entry '3' for key 'PRIMARY'"],
      );
    } finally {
      await dropLog();
    }
  });
});

Deno.test("an upsert sink job into a table that does not exist fails once, naming the table", async () => {
  const table = uniqueName("missing");
  await runInto(
    mariaDbUpsertSink<Row>({
      connection: TEST_CONNECTION,
      table,
      columns: ["id", "name"],
      keyColumns: ["id"],
      values: (r) => [r.id, r.name],
    }),
    "upsert missing table",
    [table, "does not exist"],
  );
});

Deno.test("an upsert sink job writing a column that does not exist fails once, naming the column", async () => {
  await withTable(async (table) => {
    await runInto(
      mariaDbUpsertSink<Row>({
        connection: TEST_CONNECTION,
        table,
        columns: ["id", "nope"],
        keyColumns: ["id"],
        values: (r) => [r.id, r.name],
      }),
      "upsert missing column",
      [table, "nope", "1054"],
    );
  });
});
