import assert from "node:assert/strict";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { rows, sql, TEST_CONNECTION, uniqueName, writerContext } from "./_test_kit.ts";
import { mariaDbUpsertSink, UpsertKeyError, upsertSql } from "./upsert_sink.ts";

interface Total {
  readonly account: string;
  readonly total: number;
}

const ctx = { timestamp: undefined };

async function withTable(body: (table: string) => Promise<void>): Promise<void> {
  const table = uniqueName("upsert");
  await sql(
    `CREATE TABLE \`${table}\` (account VARCHAR(16) PRIMARY KEY, total INT NOT NULL, ` +
      `note VARCHAR(8), UNIQUE KEY note_key (note)) ENGINE=InnoDB`,
  );
  try {
    await body(table);
  } finally {
    await sql(`DROP TABLE IF EXISTS \`${table}\``);
  }
}

function sink(
  table: string,
  guarantee: "exactly-once" | "at-least-once" | "none" = "exactly-once",
) {
  return mariaDbUpsertSink<Total>({
    connection: TEST_CONNECTION,
    table,
    columns: ["account", "total"],
    keyColumns: ["account"],
    values: (t) => [t.account, t.total],
    deliveryGuarantee: guarantee,
    batchSize: 2,
  });
}

Deno.test("upsertSql updates every non-key column from the inserted row", () => {
  assert.equal(
    upsertSql({
      table: "test.totals",
      columns: ["account", "total", "n"],
      keyColumns: ["account"],
    }),
    "INSERT INTO `test`.`totals` (`account`, `total`, `n`) VALUES (?, ?, ?) " +
      "ON DUPLICATE KEY UPDATE `total` = VALUES(`total`), `n` = VALUES(`n`)",
  );
  assert.equal(
    upsertSql({ table: "t", columns: ["k"], keyColumns: ["k"] }),
    "INSERT INTO `t` (`k`) VALUES (?) ON DUPLICATE KEY UPDATE `k` = `k`",
  );
  assert.throws(
    () => upsertSql({ table: "t", columns: ["a"], keyColumns: ["b"] }),
    /mariaDbUpsertSink: every key column must be one of columns \["a"\]: current value is "b"/,
  );
  assert.throws(
    () => upsertSql({ table: "t", columns: [], keyColumns: [] }),
    /columns must be a non-empty list of distinct names: current value is \[\]/,
  );
});

Deno.test("a replay through the upsert sink shows earlier values again and ends on the failure-free table", async () => {
  await withTable(async (table) => {
    const updates = [5, 10, 15].map((total) => ({ account: "a", total }));
    const seen: number[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      // Attempt 0 crashes after its last flush; attempt 1 replays from the beginning.
      const writer = await sink(table).createWriter(writerContext({ uid: "u", attempt }));
      for (const update of updates) {
        await writer.write(update, ctx);
        await writer.flush(false);
        seen.push((await rows(table, "account"))[0]!.total as number);
      }
      await writer.write({ account: "b", total: 1 }, ctx);
      await writer.flush(true);
      await writer.close();
    }
    assert.deepEqual(seen, [5, 10, 15, 5, 10, 15]);
    assert.deepEqual(await rows(table, "account"), [
      { account: "a", total: 15, note: null },
      { account: "b", total: 1, note: null },
    ]);
  });
});

Deno.test("the upsert sink sends a full batch at once and the rest at the barrier, except with no guarantee", async () => {
  await withTable(async (table) => {
    const writer = await sink(table, "none").createWriter(writerContext({ uid: "u" }));
    await writer.write({ account: "a", total: 1 }, ctx);
    await writer.flush(false);
    assert.deepEqual(await rows(table, "account"), []);
    await writer.write({ account: "b", total: 2 }, ctx); // the batch of 2 is full
    assert.equal((await rows(table, "account")).length, 2);
    await writer.write({ account: "c", total: 3 }, ctx);
    await writer.flush(true);
    assert.equal((await rows(table, "account")).length, 3);
    await writer.close();
  });
});

Deno.test("the upsert sink refuses key columns that are not a key of the table, without restarts", async () => {
  await withTable(async (table) => {
    const wrong = mariaDbUpsertSink<Total>({
      connection: TEST_CONNECTION,
      table,
      columns: ["account", "total"],
      keyColumns: ["total"],
      values: (t) => [t.account, t.total],
    });
    await assert.rejects(
      async () => await wrong.createWriter(writerContext({ uid: "u" })),
      (e: unknown) =>
        e instanceof UpsertKeyError && e instanceof SuppressRestartsError &&
        /keyColumns \["total"\] must be the columns of the table's primary key or of one of its unique keys: its unique keys are \{.*"PRIMARY":\["account"\]/
          .test(e.message) &&
        e.message.includes('"note_key":["note"]'),
    );
  });
});

Deno.test("mariaDbUpsertSink defaults to at-least-once and refuses an unknown guarantee", () => {
  const options = {
    connection: TEST_CONNECTION,
    table: "t",
    columns: ["a"],
    keyColumns: ["a"],
    values: (n: number) => [n],
  };
  assert.equal(mariaDbUpsertSink(options).deliveryGuarantee, "at-least-once");
  assert.throws(
    () => mariaDbUpsertSink({ ...options, deliveryGuarantee: "maybe" as never }),
    /mariaDbUpsertSink: deliveryGuarantee must be one of .* current value is "maybe"/,
  );
});
