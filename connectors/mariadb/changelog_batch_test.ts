import assert from "node:assert/strict";
import { ChangelogRowBatch, deleteSql } from "./changelog_batch.ts";
import type { SqlConnection } from "./connection.ts";
import { parseInsertStatement } from "./statement.ts";
import { upsertSql } from "./upsert_sink.ts";

type Change = { kind: "upsert" | "delete"; key: string; v: number };

function recorder(): { connection: SqlConnection; sent: [string, readonly unknown[]][] } {
  const sent: [string, readonly unknown[]][] = [];
  return {
    sent,
    connection: {
      query: (sql, values) => {
        sent.push([sql, values ?? []]);
        return Promise.resolve({});
      },
      threadId: 1,
      end: () => Promise.resolve(),
      destroy: () => {},
    },
  };
}

Deno.test("deleteSql deletes a batch of keys with one statement, one- and two-column keys", () => {
  assert.equal(deleteSql("t", ["k"], 2), "DELETE FROM `t` WHERE `k` IN (?, ?)");
  assert.equal(
    deleteSql("db.t", ["a", "b`c"], 2),
    "DELETE FROM `db`.`t` WHERE (`a`, `b``c`) IN ((?, ?), (?, ?))",
  );
  assert.throws(() => deleteSql("t", ["k"], 0), /rows must be an integer >= 1/);
  assert.throws(() => deleteSql("t", [], 1), /keyColumns must name at least one column/);
});

Deno.test("a ChangelogRowBatch keeps the last change per key and sends deletes, then upserts", async () => {
  const statement = parseInsertStatement(
    upsertSql({ table: "t", columns: ["k", "v"], keyColumns: ["k"] }),
  );
  const batch = new ChangelogRowBatch<Change>(statement, (c) => [c.key, c.v], {
    table: "t",
    keyColumns: ["k"],
    key: (c) => [c.key],
    isDelete: (c) => c.kind === "delete",
  }, "test sink");
  const changes: Change[] = [
    { kind: "upsert", key: "a", v: 1 },
    { kind: "upsert", key: "b", v: 1 },
    { kind: "delete", key: "a", v: 0 },
    { kind: "upsert", key: "b", v: 2 },
    { kind: "delete", key: "c", v: 0 },
    { kind: "upsert", key: "c", v: 3 },
    { kind: "delete", key: "d", v: 0 },
  ];
  for (const c of changes) batch.add(c);
  assert.equal(batch.rows, 4);
  const { connection, sent } = recorder();
  assert.equal(await batch.send(connection), 4);
  assert.equal(batch.rows, 0);
  assert.deepEqual(sent, [
    ["DELETE FROM `t` WHERE `k` IN (?, ?)", ["a", "d"]],
    [
      "INSERT INTO `t` (`k`, `v`) VALUES (?, ?),(?, ?) ON DUPLICATE KEY UPDATE `v` = VALUES(`v`)",
      ["b", 2, "c", 3],
    ],
  ]);
  assert.equal(await batch.send(connection), 0);
  assert.equal(sent.length, 2, "an empty batch sends nothing");
  assert.throws(
    () =>
      new ChangelogRowBatch<Change>(statement, (c) => [c.key, c.v], {
        table: "t",
        keyColumns: ["k"],
        key: () => [],
        isDelete: () => false,
      }, "test sink").add(changes[0]!),
    /test sink: key\(record\) must return one value per key column \(k\): current value is \[\]/,
  );
});
