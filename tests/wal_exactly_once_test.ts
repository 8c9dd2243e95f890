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
import { RestartStrategies, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";
import { PostgresWalTarget } from "../connectors/wal/postgres_wal_target.ts";
import { WriteAheadSink } from "../connectors/wal/wal_sink.ts";
import {
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  SequenceCheck,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

const CONNECTION = { host: "127.0.0.1", port: 5432, user: "postgres", database: "postgres" };

const SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 2,
  recordsPerKey: 400,
  awaitCheckpointEvery: 150,
};

/** Inserts a fail marker for `attempt` 20 records after the `nth` awaitCheckpoint marker. */
function failAfterCheckpoint(
  items: TestItem<KeyedRecord>[],
  nth: number,
  attempt: number,
): TestItem<KeyedRecord>[] {
  let seen = 0;
  const at = items.findIndex((item) =>
    item instanceof Object && "spec" in item && item.spec.kind === "await-checkpoint" &&
    ++seen === nth
  );
  assert.ok(at >= 0, `split has ${seen} awaitCheckpoint markers, wanted ${nth}`);
  return [
    ...items.slice(0, at + 21),
    TestSource.fail(`induced failure on attempt ${attempt}`, { attempt }),
    ...items.slice(at + 21),
  ];
}

Deno.test("a job writing through the write-ahead-log sink to PostgreSQL commits each row exactly once across two induced failures", async () => {
  const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  const table = `wal_job_${suffix}`;
  const committerTable = `wal_job_committed_${suffix}`;
  const sql = postgres({ ...CONNECTION, max: 1, onnotice: () => {} });
  await sql.unsafe(
    `CREATE TABLE ${table} (key text NOT NULL, seq integer NOT NULL, sum integer NOT NULL)`,
  );
  try {
    const [split0, split1] = keyedSplits(SPLITS);
    const lists = [failAfterCheckpoint(split0!, 2, 0), failAfterCheckpoint(split1!, 4, 1)];
    await withTempDir(async (checkpoints) => {
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .setParallelism(2)
        .enableCheckpointing(20, { directory: checkpoints })
        .setRestartStrategy(RestartStrategies.fixedDelay(3, 0));
      env.fromSource(
        TestSource.perSubtask(lists, { batchSize: 8 }),
        WatermarkStrategy.noWatermarks(),
        "records",
      ).uid("records")
        .keyBy((r) => r.key)
        .process(new SequenceCheck()).uid("sums")
        .sinkTo(
          new WriteAheadSink<SumRecord>({
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
        ).uid("wal-out");
      const result = await env.execute("wal sink exactly-once");
      assert.equal(result.restarts, 2, result.summary);
    });
    const rows = await sql.unsafe(`SELECT key, seq, sum FROM ${table} ORDER BY key, seq`);
    const got = rows.map((r) => ({ key: String(r.key), seq: Number(r.seq), sum: Number(r.sum) }));
    const expected = [...expectedSums(SPLITS).values()].flat()
      .sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : a.seq - b.seq);
    assert.equal(got.length, expected.length, "rows in the table");
    assert.deepEqual(got, expected);
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
