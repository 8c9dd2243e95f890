/**
 * Throughput of the PostgreSQL sinks, driven as the sink operator drives
 * them: records of `{ id, key, amount }` written in 10 checkpoints (flush,
 * prepareCommit, then the committer commits). The prepared sink runs on a
 * private server started here (`tests/_postgres_server.ts`, `fsync=off`),
 * at batch sizes 1, 100, 1000 and 5000; the upsert sink on the same server
 * at 1000. Tables have unique names and go with the server.
 *
 * Run: `deno run -A connectors/postgres/prepared_sink_bench.ts [records]`
 * (default 200 000). Prints the server's start-up time, then
 * `RESULT sink=… batch=… records=… eps=…` per variant.
 *
 * @module
 */

import postgres from "npm:postgres@3.4.9";
import { startPostgresServer } from "../../tests/_postgres_server.ts";
import { commitRequests, committerContext, uniqueName, writerContext } from "./_test_kit.ts";
import { PostgresPreparedSink } from "./prepared_sink.ts";
import { PostgresUpsertSink } from "./upsert_sink.ts";

interface Bill {
  readonly id: number;
  readonly key: string;
  readonly amount: number;
}

const RECORDS = Number(Deno.args[0] ?? 200_000);
const CHECKPOINTS = 10;
const CONTEXT = { timestamp: undefined };

const server = await startPostgresServer();
console.log(`private PostgreSQL started in ${server.startupMs.toFixed(0)} ms`);
const admin = postgres(server.url, { max: 1, onnotice: () => {} });
try {
  for (const batchSize of [1, 100, 1000, 5000]) {
    const records = batchSize === 1 ? Math.min(RECORDS, 20_000) : RECORDS;
    const table = uniqueName("weir_bench");
    await admin.unsafe(
      `CREATE TABLE ${table} (id int NOT NULL, key text NOT NULL, amount int NOT NULL)`,
    );
    const sink = new PostgresPreparedSink<Bill>({
      url: server.url,
      table,
      columns: ["id", "key", "amount"],
      values: (b) => [b.id, b.key, b.amount],
      gidPrefix: uniqueName("bench"),
      batchSize,
    });
    const committer = await sink.createCommitter(committerContext());
    const writer = await sink.createWriter(writerContext());
    const started = performance.now();
    let id = 0;
    for (let checkpoint = 1; checkpoint <= CHECKPOINTS; checkpoint++) {
      const until = Math.round((records * checkpoint) / CHECKPOINTS);
      for (; id < until; id++) {
        await writer.write({ id, key: `k${id % 100}`, amount: id % 1000 }, CONTEXT);
      }
      await writer.flush(false);
      await committer.commit(commitRequests(checkpoint, await writer.prepareCommit!(checkpoint)));
    }
    const seconds = (performance.now() - started) / 1000;
    await writer.close();
    await committer.close();
    const [{ n }] = await admin.unsafe(`SELECT count(*)::int AS n FROM ${table}`) as unknown as [
      { n: number },
    ];
    if (n !== records) throw new Error(`the table holds ${n} rows, wanted ${records}`);
    console.log(
      `RESULT sink=prepared batch=${batchSize} records=${records} eps=${
        Math.round(records / seconds)
      }`,
    );
  }
  {
    const table = uniqueName("weir_bench_upsert");
    await admin.unsafe(
      `CREATE TABLE ${table} (id int PRIMARY KEY, key text NOT NULL, amount int NOT NULL)`,
    );
    const sink = new PostgresUpsertSink<Bill>({
      url: server.url,
      table,
      columns: ["id", "key", "amount"],
      keyColumns: ["id"],
      values: (b) => [b.id, b.key, b.amount],
    });
    const writer = await sink.createWriter(writerContext());
    const started = performance.now();
    let id = 0;
    for (let checkpoint = 1; checkpoint <= CHECKPOINTS; checkpoint++) {
      const until = Math.round((RECORDS * checkpoint) / CHECKPOINTS);
      for (; id < until; id++) {
        await writer.write({ id, key: `k${id % 100}`, amount: id % 1000 }, CONTEXT);
      }
      await writer.flush(false);
    }
    const seconds = (performance.now() - started) / 1000;
    await writer.close();
    console.log(
      `RESULT sink=upsert batch=1000 records=${RECORDS} eps=${Math.round(RECORDS / seconds)}`,
    );
  }
} finally {
  await admin.end();
  await server.stop();
}
