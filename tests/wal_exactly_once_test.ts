/**
 * The write-ahead-log sink end to end on PostgreSQL (the shared server at
 * 127.0.0.1:5432, tables with unique names dropped afterwards): a keyed
 * running-sum job at parallelism 2 fails twice on scripted
 * `TestSource.fail` markers, each after a completed checkpoint, and
 * restores. The table must hold exactly the failure-free output, each row
 * once; the committer table must hold one row per batch sent.
 *
 * @module
 */

import assert from "node:assert/strict";
import postgres from "npm:postgres@3.4.9";
import { PostgresWalTarget } from "../connectors/wal/postgres_wal_target.ts";
import { WriteAheadSink } from "../connectors/wal/wal_sink.ts";
import { type SumRecord, withTempDir } from "./_job_kit.ts";
import { assertSameRows, expectedRows, runWithTwoFailures, sumRecordOf } from "./_sink_job_kit.ts";

const CONNECTION = { host: "127.0.0.1", port: 5432, user: "postgres", database: "postgres" };

Deno.test("a job writing through the write-ahead-log sink to PostgreSQL commits each row exactly once across two induced failures", async () => {
  const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  const table = `wal_job_${suffix}`;
  const committerTable = `wal_job_committed_${suffix}`;
  const sql = postgres({ ...CONNECTION, max: 1, onnotice: () => {} });
  await sql.unsafe(
    `CREATE TABLE ${table} (key text NOT NULL, seq integer NOT NULL, sum integer NOT NULL)`,
  );
  try {
    await withTempDir(async (checkpoints) => {
      await runWithTwoFailures({
        checkpoints,
        sink: new WriteAheadSink<SumRecord>({
          target: new PostgresWalTarget<SumRecord>({
            connection: CONNECTION,
            table,
            committerTable,
            columns: ["key", "seq", "sum"],
            toRow: (r) => r,
            maxRowsPerStatement: 50,
          }),
          maxValuesPerCommittable: 100,
        }),
        sinkUid: "wal-out",
        jobName: "wal sink exactly-once",
      });
    });
    const got = (await sql.unsafe(`SELECT key, seq, sum FROM ${table} ORDER BY key, seq`))
      .map(sumRecordOf);
    const expected = expectedRows();
    assertSameRows(got, expected);
    const batches = await sql.unsafe(
      `SELECT count(*)::int AS n, sum(value_count)::int AS values, count(DISTINCT attempt)::int AS attempts
       FROM ${committerTable} WHERE sink_id = 'wal-out'`,
    );
    assert.equal(batches[0]!.values, expected.length, "values recorded in the committer table");
    assert.equal(batches[0]!.attempts, 3, "batches of all three attempts were sent");
  } finally {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.unsafe(`DROP TABLE IF EXISTS ${committerTable}`);
    await sql.end({ timeout: 0 });
  }
});
