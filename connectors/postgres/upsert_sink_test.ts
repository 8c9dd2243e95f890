/**
 * PostgresUpsertSink on the shared server at 127.0.0.1:5432 (no prepared
 * transactions needed), in tables with unique names dropped afterwards.
 *
 * @module
 */

import assert from "node:assert/strict";
import postgres from "npm:postgres@3.4.9";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { uniqueName, writerContext } from "./_test_kit.ts";
import { PostgresUpsertSink, rowKey, UpsertKeyError } from "./upsert_sink.ts";

const URL = "postgres://postgres@127.0.0.1:5432/postgres";
const CONTEXT = { timestamp: undefined };

interface Total {
  readonly account: string;
  readonly total: number | null;
}

async function withTable(
  columns: string,
  body: (table: string, sql: postgres.Sql) => Promise<void>,
): Promise<void> {
  const sql = postgres(URL, { max: 1, onnotice: () => {} });
  const table = uniqueName("weir_upsert");
  try {
    await sql.unsafe(`CREATE TABLE ${table} (${columns})`);
    await body(table, sql);
  } finally {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.end();
  }
}

const totalsSink = (table: string, options: { batchSize?: number; guarantee?: "none" } = {}) =>
  new PostgresUpsertSink<Total>({
    url: URL,
    table,
    columns: ["account", "total"],
    keyColumns: ["account"],
    values: (t) => [t.account, t.total],
    ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
    ...(options.guarantee === undefined ? {} : { deliveryGuarantee: options.guarantee }),
  });

Deno.test("a replay through PostgresUpsertSink shows earlier values again, 5 -> 10 -> 15 -> 5 -> 10 -> 15, and ends on the failure-free table", async () => {
  await withTable("account text PRIMARY KEY, total int", async (table, sql) => {
    const seen: number[] = [];
    const readA = async () =>
      seen.push(
        Number((await sql.unsafe(`SELECT total FROM ${table} WHERE account = 'a'`))[0]!.total),
      );
    // attempt 0 writes three updates of key a, one checkpoint each, then crashes
    const first = await totalsSink(table).createWriter(writerContext());
    for (const total of [5, 10, 15]) {
      await first.write({ account: "a", total }, CONTEXT);
      await first.write({ account: `b${total}`, total }, CONTEXT);
      await first.flush(false);
      await readA();
    }
    await first.close();
    // attempt 1 restored from before the first update replays them all
    const replay = await totalsSink(table).createWriter(
      writerContext({ attempt: 1, restoredCheckpointId: 1 }),
    );
    for (const total of [5, 10, 15]) {
      await replay.write({ account: "a", total }, CONTEXT);
      await replay.write({ account: `b${total}`, total }, CONTEXT);
      await replay.flush(false);
      await readA();
    }
    await replay.flush(true);
    await replay.close();
    assert.deepEqual(seen, [5, 10, 15, 5, 10, 15]);
    const rows = await sql.unsafe(`SELECT account, total FROM ${table} ORDER BY account`);
    assert.deepEqual(rows.map((r) => [r.account, r.total]), [
      ["a", 15],
      ["b10", 10],
      ["b15", 15],
      ["b5", 5],
    ]);
  });
});

Deno.test("PostgresUpsertSink keeps the last row of a key within a batch and sends full batches during writes", async () => {
  await withTable("account text PRIMARY KEY, total int", async (table, sql) => {
    const writer = await totalsSink(table, { batchSize: 3 }).createWriter(writerContext());
    try {
      // a, a, b, a, c: the batch holds a and b, then c fills it to 3 keys and it goes out
      for (const [account, total] of [["a", 1], ["a", 2], ["b", 3], ["a", 4], ["c", 5]] as const) {
        await writer.write({ account, total }, CONTEXT);
      }
      const rows = await sql.unsafe(`SELECT account, total FROM ${table} ORDER BY account`);
      assert.deepEqual(rows.map((r) => [r.account, r.total]), [["a", 4], ["b", 3], ["c", 5]]);
      await writer.write({ account: "a", total: 6 }, CONTEXT);
      await writer.flush(false);
      const after = await sql.unsafe(`SELECT total FROM ${table} WHERE account = 'a'`);
      assert.equal(after[0]!.total, 6);
    } finally {
      await writer.close();
    }
  });
});

Deno.test("PostgresUpsertSink with deliveryGuarantee none sends at a barrier only full batches, and everything at the end of input", async () => {
  await withTable("account text PRIMARY KEY, total int", async (table, sql) => {
    const writer = await totalsSink(table, { guarantee: "none" }).createWriter(writerContext());
    try {
      await writer.write({ account: "a", total: 1 }, CONTEXT);
      await writer.flush(false);
      assert.equal((await sql.unsafe(`SELECT * FROM ${table}`)).length, 0);
      await writer.flush(true);
      assert.equal((await sql.unsafe(`SELECT * FROM ${table}`)).length, 1);
    } finally {
      await writer.close();
    }
  });
});

Deno.test("PostgresUpsertSink refuses key columns without a unique index, and null keys, without restarts", async () => {
  await withTable("account text, total int", async (table) => {
    await assert.rejects(
      () => totalsSink(table).createWriter(writerContext()),
      (e: unknown) =>
        e instanceof UpsertKeyError && e instanceof SuppressRestartsError &&
        e.message.includes(`cannot upsert into ${table} on key (account)`) &&
        e.message.includes("42P10"),
    );
  });
  await withTable("account text PRIMARY KEY, total int", async (table) => {
    const sink = new PostgresUpsertSink<Total>({
      url: URL,
      table,
      columns: ["total", "account"],
      keyColumns: ["account"],
      values: (t) => [t.total, t.account === "" ? null : t.account],
    });
    const writer = await sink.createWriter(writerContext());
    try {
      assert.throws(
        () => writer.write({ account: "", total: 1 }, CONTEXT),
        (e: unknown) =>
          e instanceof UpsertKeyError &&
          /key column\(s\) account of a row .* are null/.test(e.message),
      );
    } finally {
      await writer.close();
    }
  });
});

Deno.test("rowKey tells keys apart by value and kind, and gives none for a null key", () => {
  assert.equal(rowKey([1, "x"], [0]), rowKey([1n, "y"], [0]));
  assert.notEqual(rowKey([1], [0]), rowKey(["1"], [0]));
  assert.notEqual(rowKey(["a;", "b"], [0, 1]), rowKey(["a", ";b"], [0, 1]));
  assert.notEqual(rowKey([true], [0]), rowKey(["true"], [0]));
  assert.equal(rowKey([new Date(5)], [0]), rowKey([new Date(5)], [0]));
  assert.equal(rowKey([null, 1], [0]), undefined);
});
