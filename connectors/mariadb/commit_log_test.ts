import assert from "node:assert/strict";
import { sql, uniqueName, withConnection } from "./_test_kit.ts";
import { CommitLog } from "./commit_log.ts";
import { formatXid } from "./xid.ts";

function xid(prefix: string, sequence: number) {
  return formatXid({ prefix, owner: 0, base: 0, writerId: "abcdefghij", sequence });
}

Deno.test("the commit log finds committed xids and prunes only its prefix's rows older than the retention", async () => {
  const table = uniqueName("xa_log_t");
  const mine = new CommitLog(table, "mine");
  const other = new CommitLog(table, "other");
  try {
    await withConnection(async (c) => {
      await mine.ensureTable(c);
      await mine.ensureTable(c); // idempotent
      await mine.insert(c, { xid: xid("mine", 1), checkpointId: 3, records: 10 });
      await mine.insert(c, { xid: xid("mine", 2), checkpointId: 4, records: 0 });
      await other.insert(c, { xid: xid("other", 1), checkpointId: 3, records: 5 });
      assert.equal(await mine.contains(c, xid("mine", 1)), true);
      assert.equal(await mine.contains(c, xid("mine", 3)), false);
      await c.query(
        `UPDATE \`${table}\` SET prepared_at = NOW(3) - INTERVAL 2 DAY WHERE bqual = ?`,
        ["abcdefghij.1"],
      );
      assert.equal(await mine.prune(c, 24 * 3600 * 1000), 1);
      assert.equal(await mine.contains(c, xid("mine", 1)), false);
      assert.equal(await mine.contains(c, xid("mine", 2)), true);
      assert.equal(await other.contains(c, xid("other", 1)), true);
    });
  } finally {
    await sql(`DROP TABLE IF EXISTS \`${table}\``);
  }
});

Deno.test("a commit log with an unusable table name is refused naming it", () => {
  assert.throws(() => new CommitLog("a.b.c", "p"), /commitLogTable must be a name or schema.name/);
});
