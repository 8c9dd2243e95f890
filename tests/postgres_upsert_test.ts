/**
 * The PostgreSQL upsert sink end to end, on the shared server at
 * 127.0.0.1:5432 (it needs no prepared transactions), in a table with a
 * unique name dropped afterwards: a keyed running-sum job at parallelism 2
 * upserts each key's latest `(seq, sum)` and fails twice on scripted
 * `TestSource.fail` markers, each after a completed checkpoint. The replays
 * rewrite earlier values for a while; the final table must equal the
 * failure-free one exactly: one row per key with its last seq and sum.
 *
 * @module
 */

import assert from "node:assert/strict";
import postgres from "npm:postgres@3.4.9";
import { PostgresUpsertSink } from "../connectors/postgres/mod.ts";
import { type SumRecord, withTempDir } from "./_job_kit.ts";
import {
  expectedLatestRows,
  runWithTwoFailures,
  SINK_JOB_SPLITS,
  sumRecordOf,
} from "./_sink_job_kit.ts";

const URL = "postgres://postgres@127.0.0.1:5432/postgres";

Deno.test("a job upserting into PostgreSQL ends on the failure-free table across two induced failures", async () => {
  const sql = postgres(URL, { max: 1, onnotice: () => {} });
  const table = `weir_upsert_job_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  await sql.unsafe(
    `CREATE TABLE ${table} (key text PRIMARY KEY, seq int NOT NULL, sum int NOT NULL)`,
  );
  try {
    await withTempDir(async (checkpoints) => {
      await runWithTwoFailures({
        checkpoints,
        sink: new PostgresUpsertSink<SumRecord>({
          url: URL,
          table,
          columns: ["key", "seq", "sum"],
          keyColumns: ["key"],
          values: (r) => [r.key, r.seq, r.sum],
          batchSize: 50,
          deliveryGuarantee: "exactly-once",
        }),
        sinkUid: "pg-upsert",
        jobName: "postgres upsert sink",
      });
    });
    const got = (await sql.unsafe(`SELECT key, seq, sum FROM ${table} ORDER BY key`))
      .map(sumRecordOf);
    const expected = expectedLatestRows();
    assert.equal(
      got.length,
      SINK_JOB_SPLITS.splits * SINK_JOB_SPLITS.keysPerSplit,
      "one row per key",
    );
    assert.deepEqual(got, expected);
  } finally {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.end();
  }
});
