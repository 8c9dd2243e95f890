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
import { expectedSums, withTempDir } from "./_job_kit.ts";
import { waitUntil } from "./_wait.ts";
import { WAL_KILL_CONNECTION, WAL_KILL_SPLITS } from "./wal_kill_job.ts";

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
      const first = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", JOB, table, committerTable, checkpoints],
        stdout: "null",
        stderr: "piped",
      }).spawn();
      const stderr = new Response(first.stderr).text();
      let killed = false;
      try {
        await waitUntil(async () => (await count()) >= 1000, {
          timeoutMs: 60_000,
          missing: () => "1000 rows from the first run",
        });
        first.kill("SIGKILL");
        killed = true;
      } finally {
        if (!killed) first.kill("SIGKILL");
        const status = await first.status;
        assert.equal(status.signal, "SIGKILL", `the first run ended by itself: ${await stderr}`);
      }
      const atKill = await count();
      const total = WAL_KILL_SPLITS.splits * WAL_KILL_SPLITS.keysPerSplit *
        WAL_KILL_SPLITS.recordsPerKey;
      assert.ok(atKill < total, `the first run had written everything (${atKill} rows)`);
      const jobs = [];
      for await (const entry of Deno.readDir(checkpoints)) jobs.push(entry.name);
      assert.equal(jobs.length, 1, `one job's checkpoints: ${jobs.join(", ")}`);

      const second = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", JOB, table, committerTable, checkpoints, jobs[0]!],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stdout = new TextDecoder().decode(second.stdout);
      assert.ok(
        second.success && stdout.includes("DONE restarts=0"),
        `the resumed run failed: ${stdout}${new TextDecoder().decode(second.stderr)}`,
      );
    });
    const rows = await sql.unsafe(`SELECT key, seq, sum FROM ${table} ORDER BY key, seq`);
    const got = rows.map((r) => ({ key: String(r.key), seq: Number(r.seq), sum: Number(r.sum) }));
    const expected = [...expectedSums(WAL_KILL_SPLITS).values()].flat()
      .sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : a.seq - b.seq);
    assert.equal(got.length, expected.length, "rows in the table");
    assert.deepEqual(got, expected);
  } finally {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.unsafe(`DROP TABLE IF EXISTS ${committerTable}`);
    await sql.end({ timeout: 0 });
  }
});
