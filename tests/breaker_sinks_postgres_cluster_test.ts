/**
 * Cluster mode, attacked by breaker-2 of issue 9: the PostgreSQL
 * prepared-transaction sink (`tests/jobs/breaker_job.ts --postgres`: a
 * JetStream source, keyBy across a network edge, a running count per key,
 * rows `(k, n, c)`) while a worker process is SIGKILLed at a fault point of
 * checkpoint 3 (alignment, after the sink's snapshot, i.e. after `PREPARE
 * TRANSACTION`, and before its commit). The table is compared record by
 * record with the failure-free result (every input once, the counts of
 * each key 1..m), and no gid may be left prepared. Two jobs with different
 * gid prefixes then write one table at once, one of them killed.
 *
 * The tests share one private PostgreSQL server (`startPostgresServer`,
 * `max_prepared_transactions` 16); each runs on a NATS server of its own,
 * with a coordinator and two workers (`cli.ts`), and stops every process it
 * started.
 *
 * @module
 */

import assert from "node:assert/strict";
import postgres from "npm:postgres@3.4.9";
import { Proc, serveDirectory, TestCluster } from "./_cluster.ts";
import { type NatsServerHandle, startNatsServer } from "./_nats_server.ts";
import { startPostgresServer } from "./_postgres_server.ts";
import { connectNats } from "../runtime/actor/nats_connect.ts";
import { jetstreamApi } from "../runtime/actor/nats_deps.ts";

const pg = await startPostgresServer();
globalThis.addEventListener("unload", () => pg.stopSync());

const T = { sanitizeResources: false, sanitizeOps: false };

interface Row {
  k: string;
  n: number;
  c: number;
}

/** Publishes `{ k: <prefix>k<i % 5>, n: i }` for i < count to `<stream>.in`. */
async function load(nats: NatsServerHandle, stream: string, keyPrefix: string, count: number) {
  const nc = await connectNats({ servers: nats.url });
  try {
    const jsm = await jetstreamApi.jetstreamManager(nc);
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
    const js = jetstreamApi.jetstream(nc);
    const input = Array.from({ length: count }, (_, i) => ({ k: `${keyPrefix}k${i % 5}`, n: i }));
    for (const r of input) {
      await js.publish(`${stream}.in`, new TextEncoder().encode(JSON.stringify(r)));
    }
    return input;
  } finally {
    await nc.close();
  }
}

/** Asserts `rows` hold every input once and the counts of each key 1..m. */
function assertExactlyOnce(rows: readonly Row[], input: readonly { k: string; n: number }[]) {
  const got = rows.map((r) => `${r.k}/${r.n}`).sort();
  const want = input.map((r) => `${r.k}/${r.n}`).sort();
  assert.deepEqual(got, want, `${rows.length} rows for ${input.length} inputs`);
  for (const k of new Set(input.map((r) => r.k))) {
    const counts = rows.filter((r) => r.k === k).map((r) => r.c).sort((a, b) => a - b);
    assert.deepEqual(counts, counts.map((_, i) => i + 1), `counts of key ${k}`);
  }
}

/** Runs `body` with a NATS server, a cluster of two workers, the served repository and a fresh table. */
async function withCluster(
  body: (env: {
    nats: NatsServerHandle;
    cluster: TestCluster;
    submit: (args: string[]) => Proc;
    table: string;
    sql: postgres.Sql;
  }) => Promise<void>,
) {
  const nats = await startNatsServer({ jetstream: true });
  const server = serveDirectory();
  const cluster = new TestCluster({
    nats: nats.url,
    workers: 2,
    slots: 2,
    heartbeatTimeoutMs: 3000,
  });
  const sql = postgres(pg.url, { max: 2, onnotice: () => {} });
  const table = `breaker_pg_${crypto.randomUUID().slice(0, 8)}`;
  const jobs: Proc[] = [];
  try {
    await sql.unsafe(`CREATE TABLE ${table} (k TEXT NOT NULL, n INT NOT NULL, c INT NOT NULL)`);
    await cluster.start();
    const submit = (args: string[]) => {
      const job = new Proc("job", [
        "run",
        "-A",
        `${server.url}tests/jobs/breaker_job.ts`,
        "--nats",
        nats.url,
        "--postgres",
        pg.url,
        "--table",
        table,
        ...args,
      ]);
      jobs.push(job);
      return job;
    };
    await body({ nats, cluster, submit, table, sql });
  } catch (error) {
    console.error(cluster.logs());
    throw error;
  } finally {
    for (const job of jobs) await job.kill();
    await cluster.stop();
    await server.close();
    await nats.stop();
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
    await sql.end();
  }
}

/** The prepared gids whose prefix starts with `prefix` (gids are `weir:<prefix>:<owner>:<checkpoint>:<token>`). */
async function preparedGids(sql: postgres.Sql, prefix: string): Promise<string[]> {
  const rows = await sql`SELECT gid FROM pg_prepared_xacts WHERE gid LIKE ${
    "weir:" + prefix + "%"
  }`;
  return rows.map((r) => r.gid as string);
}

for (const point of ["alignment", "after-snapshot", "before-commit"]) {
  Deno.test({
    ...T,
    name:
      `breaker: the PostgreSQL prepared sink in cluster mode commits every row once and leaves no gid prepared when a worker is SIGKILLed at ${point} of checkpoint 3`,
    async fn() {
      await withCluster(async ({ nats, cluster, submit, table, sql }) => {
        const input = await load(nats, "pg-in", "", 400);
        const exited: string[] = [];
        for (const w of cluster.workers) w.child.status.then(() => exited.push(w.name));
        const prefix = `brk-${point}`;
        const job = submit([
          "--source",
          "pg-in",
          "--sink",
          "unused",
          "--txn-bucket",
          "pg-txn",
          "--gid-prefix",
          prefix,
          "--rate",
          "200",
          "--kill-at",
          `${point}:3`,
          "--restarts",
          "5",
        ]);
        const status = await job.endWithin(150_000);
        assert.equal(status.code, 0, job.output);
        assert.equal(exited.length, 1, `worker processes that died: ${exited}`);
        assert.match(cluster.coordinator.output, /restarting as attempt 1/);
        assertExactlyOnce(await sql.unsafe<Row[]>(`SELECT k, n, c FROM ${table}`), input);
        assert.deepEqual(await preparedGids(sql, prefix), [], "no gid left prepared");
      });
    },
  });
}

Deno.test({
  ...T,
  name:
    "breaker: two jobs with different gid prefixes write one PostgreSQL table at once, one worker SIGKILLed after a snapshot, and each commits its rows once",
  async fn() {
    await withCluster(async ({ nats, cluster, submit, table, sql }) => {
      const inputA = await load(nats, "pg-a", "a", 300);
      const inputB = await load(nats, "pg-b", "b", 300);
      const exited: string[] = [];
      for (const w of cluster.workers) w.child.status.then(() => exited.push(w.name));
      const common = ["--sink", "unused", "--rate", "150", "--restarts", "5"];
      const a = submit([
        ...common,
        "--source",
        "pg-a",
        "--txn-bucket",
        "pg-txn-a",
        "--gid-prefix",
        "brk-two-a",
        "--kill-at",
        "after-snapshot:3",
      ]);
      const b = submit([
        ...common,
        "--source",
        "pg-b",
        "--txn-bucket",
        "pg-txn-b",
        "--gid-prefix",
        "brk-two-b",
      ]);
      const [sa, sb] = await Promise.all([a.endWithin(200_000), b.endWithin(200_000)]);
      assert.equal(sa.code, 0, a.output);
      assert.equal(sb.code, 0, b.output);
      assert.ok(exited.length >= 1, `worker processes that died: ${exited}`);
      const rows = await sql.unsafe<Row[]>(`SELECT k, n, c FROM ${table}`);
      assertExactlyOnce(rows.filter((r) => r.k.startsWith("a")), inputA);
      assertExactlyOnce(rows.filter((r) => r.k.startsWith("b")), inputB);
      assert.deepEqual(await preparedGids(sql, "brk-two-"), [], "no gid left prepared");
    });
  },
});
