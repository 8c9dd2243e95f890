/**
 * Throughput of the write-ahead-log sink into PostgreSQL (the shared server
 * at 127.0.0.1:5432), driven as the sink operator drives it: 200k records
 * of `{ id, key, amount }` written in 10 checkpoints, each checkpoint's
 * committables committed through the atomic target (one transaction per
 * part, multi-row INSERTs), into a table with a unique name dropped
 * afterwards. Varies `maxValuesPerCommittable`.
 *
 * Run: `deno run -A connectors/wal/wal_sink_bench.ts [records]`.
 * Prints `RESULT part=… records=… eps=… transactions=…` per variant.
 *
 * @module
 */

import postgres from "npm:postgres@3.4.9";
import { CommitRequestImpl } from "../../runtime/task/operators/sink_commit.ts";
import { PostgresWalTarget } from "./postgres_wal_target.ts";
import { WriteAheadSink } from "./wal_sink.ts";

interface Bill {
  readonly id: number;
  readonly key: string;
  readonly amount: number;
}

const CONNECTION = { host: "127.0.0.1", port: 5432, user: "postgres", database: "postgres" };
const RECORDS = Number(Deno.args[0] ?? 200_000);
const CHECKPOINTS = 10;

const sql = postgres({ ...CONNECTION, max: 1, onnotice: () => {} });
try {
  for (const part of [1_000, 10_000]) {
    const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
    const table = `wal_bench_${suffix}`;
    const committerTable = `wal_bench_committed_${suffix}`;
    await sql.unsafe(
      `CREATE TABLE ${table} (id integer NOT NULL, key text NOT NULL, amount integer NOT NULL)`,
    );
    try {
      const sink = new WriteAheadSink<Bill>({
        target: new PostgresWalTarget<Bill>({
          connection: CONNECTION,
          table,
          committerTable,
          columns: ["id", "key", "amount"],
          toRow: (bill) => bill,
        }),
        maxValuesPerCommittable: part,
      });
      const base = { subtaskIndex: 0, parallelism: 1, attempt: 0, uid: "bench", jobId: "bench" };
      const writer = sink.createWriter({
        ...base,
        restoredCheckpointId: undefined,
        restoredState: [],
        checkpointingMode: "exactly-once",
      });
      const committer = await sink.createCommitter({ ...base, restoredCheckpointId: undefined });
      const perCheckpoint = Math.ceil(RECORDS / CHECKPOINTS);
      const context = { timestamp: undefined };
      let transactions = 0;
      const started = performance.now();
      for (let checkpoint = 1, written = 0; written < RECORDS; checkpoint++) {
        const end = Math.min(RECORDS, written + perCheckpoint);
        for (; written < end; written++) {
          writer.write(
            { id: written, key: `account-${written % 997}`, amount: written % 1001 },
            context,
          );
        }
        const committables = writer.prepareCommit!(checkpoint) as readonly unknown[];
        await committer.commit(
          committables.map((c) =>
            new CommitRequestImpl({ checkpointId: checkpoint, committable: c }, 0)
          ) as never,
        );
        transactions += committables.length;
      }
      const seconds = (performance.now() - started) / 1000;
      await committer.close();
      const [{ n }] = await sql.unsafe(`SELECT count(*)::int AS n FROM ${table}`) as unknown as [
        { n: number },
      ];
      if (n !== RECORDS) throw new Error(`expected ${RECORDS} rows, found ${n}`);
      console.log(
        `RESULT part=${part} records=${RECORDS} eps=${
          Math.round(RECORDS / seconds)
        } transactions=${transactions}`,
      );
    } finally {
      await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
      await sql.unsafe(`DROP TABLE IF EXISTS ${committerTable}`);
    }
  }
} finally {
  await sql.end({ timeout: 0 });
}
