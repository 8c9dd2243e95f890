/**
 * The write-ahead-log sink under SIGKILL: a child process runs a job
 * writing through the WAL sink into PostgreSQL (`wal_kill_job.ts`; small
 * parts and statements, so a commit is several statements long) and is
 * killed with SIGKILL once rows are in the table, as likely as not in the
 * middle of a transaction; a second process resumes the job from its latest
 * completed checkpoint. The table must hold exactly the failure-free rows.
 *
 * @module
 */

import assert from "node:assert/strict";
import postgres from "npm:postgres@3.4.9";
import { withTempDir } from "./_job_kit.ts";
import {
  assertSameRows,
  expectedRows,
  KILL_JOB_SPLITS,
  killAndResume,
  sumRecordOf,
} from "./_sink_job_kit.ts";
import { WAL_KILL_CONNECTION } from "./wal_kill_job.ts";

const JOB = new URL("./wal_kill_job.ts", import.meta.url).pathname;

Deno.test("a job writing through the WAL sink to PostgreSQL, SIGKILLed mid-run and resumed, leaves exactly the failure-free rows", async () => {
  const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  const table = `wal_kill_${suffix}`;
  const committerTable = `wal_kill_committed_${suffix}`;
  const sql = postgres({ ...WAL_KILL_CONNECTION, max: 1, onnotice: () => {} });
  await sql.unsafe(
    `CREATE TABLE ${table} (key text NOT NULL, seq integer NOT NULL, sum integer NOT NULL)`,
  );
  const count = async () =>
    Number((await sql.unsafe(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n);
  try {
    await withTempDir(async (checkpoints) => {
      await killAndResume({
        job: JOB,
        args: [table, committerTable, checkpoints],
        checkpoints,
        killWhen: async () => (await count()) >= 1000,
        awaiting: "1000 rows from the first run",
        afterKill: async () => {
          const atKill = await count();
          const total = KILL_JOB_SPLITS.splits * KILL_JOB_SPLITS.keysPerSplit *
            KILL_JOB_SPLITS.recordsPerKey;
          assert.ok(atKill < total, `the first run had written everything (${atKill} rows)`);
        },
      });
    });
    const got = (await sql.unsafe(`SELECT key, seq, sum FROM ${table} ORDER BY key, seq`))
      .map(sumRecordOf);
    assertSameRows(got, expectedRows(KILL_JOB_SPLITS));
  } finally {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.unsafe(`DROP TABLE IF EXISTS ${committerTable}`);
    await sql.end({ timeout: 0 });
  }
});
