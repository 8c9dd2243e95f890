import assert from "node:assert/strict";
import { ChangelogInsertBatch, checkChangelog } from "./changelog_batch.ts";

const spec = { table: "public.Totals", columns: ["k", "n", "v"] };

Deno.test("a ChangelogInsertBatch reduces to the last change per key and builds one statement", () => {
  const batch = new ChangelogInsertBatch("test sink", spec, ["k", "n"]);
  batch.add(["a", 1, 10]);
  batch.add(["b", 1, 20]);
  batch.add(["a", 1, 0], true);
  batch.add(["b", 1, 21]);
  batch.add(["c", 2, 0], true);
  assert.equal(batch.add(["a", 2, 30]), 4, "(a, 2) is another key than (a, 1)");
  const { rows, params, statement } = batch.take();
  assert.equal(rows, 4);
  assert.equal(
    statement,
    'WITH deleted AS (DELETE FROM "public"."Totals" WHERE ("k", "n") IN (($1, $2), ($3, $4))) ' +
      'INSERT INTO "public"."Totals" ("k", "n", "v") VALUES ($5, $6, $7), ($8, $9, $10) ' +
      'ON CONFLICT ("k", "n") DO UPDATE SET "v" = EXCLUDED."v"',
  );
  assert.deepEqual(params, ["a", 1, "c", 2, "b", 1, 21, "a", 2, 30]);
  assert.equal(batch.rows, 0);
  assert.throws(() => batch.take(), /take\(\) of an empty batch/);
});

Deno.test("a ChangelogInsertBatch of only deletes or only upserts sends a plain DELETE or upsert", () => {
  const batch = new ChangelogInsertBatch("test sink", spec, ["k"]);
  batch.add(["a", 1, 1], true);
  assert.equal(batch.take().statement, 'DELETE FROM "public"."Totals" WHERE ("k") IN (($1))');
  batch.add(["a", 1, 1]);
  assert.equal(
    batch.take().statement,
    'INSERT INTO "public"."Totals" ("k", "n", "v") VALUES ($1, $2, $3) ' +
      'ON CONFLICT ("k") DO UPDATE SET "n" = EXCLUDED."n", "v" = EXCLUDED."v"',
  );
  assert.throws(() => batch.add(["a"]), /values\(record\) must return one value per column/);
});

Deno.test("checkChangelog refuses key columns that are not written, naming them", () => {
  assert.throws(
    () =>
      checkChangelog("PostgresPreparedSink", spec, { keyColumns: ["x"], isDelete: () => false }),
    /PostgresPreparedSink: changelog.every key column must be one of columns \["k","n","v"\]: current value is "x"/,
  );
  assert.throws(
    () => checkChangelog("PostgresPreparedSink", spec, { keyColumns: ["k"] } as never),
    /changelog.isDelete must be a function/,
  );
});
