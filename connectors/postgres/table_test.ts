import assert from "node:assert/strict";
import { PlanningError } from "../../runtime/table/changelog_mode.ts";
import { TYPES } from "../../runtime/table/types.ts";
import { committerContext } from "./_test_kit.ts";
import { PreparedTransactionsDisabledError } from "./errors.ts";
import { postgresTableConnector, postgresUrl } from "./table.ts";

const table = (options: Record<string, string>, primaryKey: string[] | null = null) => ({
  name: "totals",
  columns: [{ name: "k", type: TYPES.STRING }, { name: "v", type: TYPES.BIGINT }],
  options: { connector: "postgres", username: "postgres", ...options },
  rows: [],
  primaryKey,
  watermark: null,
});

Deno.test("a postgres table connects by url or by host/port/database, append-only without a key", () => {
  assert.equal(
    postgresUrl(table({ url: "jdbc:postgresql://db.local:5433/shop", password: "p@ss" })),
    "postgres://postgres:p%40ss@db.local:5433/shop",
  );
  assert.equal(postgresUrl(table({ database: "d" })), "postgres://postgres@127.0.0.1:5432/d");
  assert.equal(postgresTableConnector.sink!(table({ database: "d" })).accepts, "append");
  assert.equal(postgresTableConnector.sink!(table({ database: "d" }, ["k"])).accepts, "updates");
});

Deno.test("the postgres connector refuses bad options by name", () => {
  const refused = (options: Record<string, string>, pattern: RegExp) =>
    assert.throws(
      () => postgresTableConnector.validate(table(options)),
      (e: unknown) => e instanceof PlanningError && pattern.test(e.message),
    );
  refused({ url: "jdbc:mariadb://h/d" }, /option 'url' of table totals must be jdbc:postgresql:/);
  refused({ database: "d", "sink.gid-prefix": "bad prefix" }, /table totals: .*gidPrefix/);
  refused({ database: "d", "scan.fetch-size": "5" }, /Unsupported option 'scan.fetch-size'/);
  refused(
    { database: "d", "sink.delivery-guarantee": "twice" },
    /'sink.delivery-guarantee' of table totals must be one of/,
  );
});

Deno.test("a SQL table on a server without prepared transactions is told to set 'sink.delivery-guarantee' = 'at-least-once', not to use a DataStream sink", async () => {
  // The shared server at 5432 runs with max_prepared_transactions = 0.
  const { sink } = postgresTableConnector.sink!(table({ database: "postgres" }));
  assert.ok(sink.kind === "v2" && sink.createCommitter !== undefined);
  const createCommitter = sink.createCommitter.bind(sink);
  await assert.rejects(
    async () => await createCommitter(committerContext()),
    (e: unknown) => {
      assert.ok(e instanceof PreparedTransactionsDisabledError);
      assert.match(e.message, /has max_prepared_transactions = 0/);
      assert.match(
        e.message,
        /or set 'sink\.delivery-guarantee' = 'at-least-once' in the WITH options of table totals/,
      );
      assert.doesNotMatch(e.message, /PostgresUpsertSink/);
      return true;
    },
  );
});
