/**
 * The MariaDB upsert sink end to end (the server at 127.0.0.1:3306,
 * database `test`, a table with a unique name dropped afterwards): a keyed
 * running-sum job at parallelism 2 upserts each key's latest `(seq, sum)`
 * and fails twice on scripted `TestSource.fail` markers. The replays
 * rewrite earlier values for a while; the final table must equal the
 * failure-free one: one row per key with its last sum.
 *
 * @module
 */

import assert from "node:assert/strict";
import { mariaDbUpsertSink } from "../connectors/mariadb/mod.ts";
import { rows, sql, TEST_CONNECTION, uniqueName } from "../connectors/mariadb/_test_kit.ts";
import { type SumRecord, withTempDir } from "./_job_kit.ts";
import { expectedLatestRows, runWithTwoFailures, sumRecordOf } from "./_sink_job_kit.ts";

Deno.test("a job upserting into MariaDB ends on the failure-free table across two induced failures", async () => {
  const table = uniqueName("upsert_job");
  await sql(
    `CREATE TABLE \`${table}\` (\`key\` VARCHAR(32) PRIMARY KEY, seq INT NOT NULL, ` +
      `sum INT NOT NULL) ENGINE=InnoDB`,
  );
  try {
    await withTempDir(async (checkpoints) => {
      await runWithTwoFailures({
        checkpoints,
        failAfter: [2, 3],
        sink: mariaDbUpsertSink<SumRecord>({
          connection: TEST_CONNECTION,
          table,
          columns: ["key", "seq", "sum"],
          keyColumns: ["key"],
          values: (r) => [r.key, r.seq, r.sum],
          deliveryGuarantee: "exactly-once",
          batchSize: 50,
        }),
        sinkUid: "upsert-out",
        jobName: "mariadb upsert sink",
      });
    });
    const expected = expectedLatestRows();
    const got = (await rows(table, "`key`")).map(sumRecordOf);
    assert.deepEqual(got, expected);
  } finally {
    await sql(`DROP TABLE IF EXISTS \`${table}\``);
  }
});
