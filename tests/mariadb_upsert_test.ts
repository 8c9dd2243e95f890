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
import { RestartStrategies, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";
import { mariaDbUpsertSink } from "../connectors/mariadb/mod.ts";
import { rows, sql, TEST_CONNECTION, uniqueName } from "../connectors/mariadb/_test_kit.ts";
import {
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  SequenceCheck,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

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

Deno.test("a job upserting into MariaDB ends on the failure-free table across two induced failures", async () => {
  const table = uniqueName("upsert_job");
  await sql(
    `CREATE TABLE \`${table}\` (\`key\` VARCHAR(32) PRIMARY KEY, seq INT NOT NULL, ` +
      `sum INT NOT NULL) ENGINE=InnoDB`,
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
          failAfterCheckpoint(split1!, 3, 1),
        ], {
          batchSize: 8,
        }),
        WatermarkStrategy.noWatermarks(),
        "records",
      ).uid("records")
        .keyBy((r) => r.key)
        .process(new SequenceCheck()).uid("sums")
        .sinkTo(mariaDbUpsertSink<SumRecord>({
          connection: TEST_CONNECTION,
          table,
          columns: ["key", "seq", "sum"],
          keyColumns: ["key"],
          values: (r) => [r.key, r.seq, r.sum],
          deliveryGuarantee: "exactly-once",
          batchSize: 50,
        })).uid("upsert-out");
      const result = await env.execute("mariadb upsert sink");
      assert.equal(result.restarts, 2, result.summary);
    });
    const expected = [...expectedSums(SPLITS).values()].map((list) => list[list.length - 1]!)
      .sort((a, b) => a.key < b.key ? -1 : 1);
    const got = (await rows(table, "`key`")).map((r) => ({
      key: String(r.key),
      seq: Number(r.seq),
      sum: Number(r.sum),
    }));
    assert.deepEqual(got, expected);
  } finally {
    await sql(`DROP TABLE IF EXISTS \`${table}\``);
  }
});
