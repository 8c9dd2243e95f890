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
import { RestartStrategies, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";
import { PostgresUpsertSink } from "../connectors/postgres/mod.ts";
import {
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  SequenceCheck,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

const URL = "postgres://postgres@127.0.0.1:5432/postgres";

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

Deno.test("a job upserting into PostgreSQL ends on the failure-free table across two induced failures", async () => {
  const sql = postgres(URL, { max: 1, onnotice: () => {} });
  const table = `weir_upsert_job_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  await sql.unsafe(
    `CREATE TABLE ${table} (key text PRIMARY KEY, seq int NOT NULL, sum int NOT NULL)`,
  );
  try {
    const [split0, split1] = keyedSplits(SPLITS);
    await withTempDir(async (checkpoints) => {
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .setParallelism(2)
        .enableCheckpointing(20, { directory: checkpoints })
        .setRestartStrategy(RestartStrategies.fixedDelay(3, 0));
      env.fromSource(
        TestSource.perSubtask([
          failAfterCheckpoint(split0!, 2, 0),
          failAfterCheckpoint(split1!, 4, 1),
        ], {
          batchSize: 8,
        }),
        WatermarkStrategy.noWatermarks(),
        "records",
      ).uid("records")
        .keyBy((r) => r.key)
        .process(new SequenceCheck()).uid("sums")
        .sinkTo(
          new PostgresUpsertSink<SumRecord>({
            url: URL,
            table,
            columns: ["key", "seq", "sum"],
            keyColumns: ["key"],
            values: (r) => [r.key, r.seq, r.sum],
            batchSize: 50,
            deliveryGuarantee: "exactly-once",
          }),
        ).uid("pg-upsert");
      const result = await env.execute("postgres upsert sink");
      assert.equal(result.restarts, 2, result.summary);
    });
    const got = (await sql.unsafe(`SELECT key, seq, sum FROM ${table} ORDER BY key`)).map((r) => ({
      key: String(r.key),
      seq: Number(r.seq),
      sum: Number(r.sum),
    }));
    const expected = [...expectedSums(SPLITS).values()].map((sums) => sums[sums.length - 1]!)
      .sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
    assert.equal(got.length, SPLITS.splits * SPLITS.keysPerSplit, "one row per key");
    assert.deepEqual(got, expected);
  } finally {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}`);
    await sql.end();
  }
});
