/**
 * The MariaDB XA sink end to end (the server at 127.0.0.1:3306, database
 * `test`, a table with a unique name and no key, so that a duplicate would
 * be stored and seen): a keyed running-sum job at parallelism 2 fails twice
 * on scripted `TestSource.fail` markers, each after a completed checkpoint
 * and with checkpoints every 20 ms, so transactions are open and prepared
 * ones pending at each crash. The table must hold exactly the
 * failure-free output, each row once; no xid of the sink may be left
 * prepared; and the commit log must account for every row.
 *
 * @module
 */

import assert from "node:assert/strict";
import { JobFailedError, RestartStrategies, type StreamExecutionEnvironment } from "../mod.ts";
import type { TestItem } from "../testing.ts";
import { mariaDbXaSink } from "../connectors/mariadb/mod.ts";
import {
  cleanupPrefix,
  preparedOf,
  rows,
  sql,
  TEST_CONNECTION,
  uniqueName,
} from "../connectors/mariadb/_test_kit.ts";
import { type KeyedRecord, keyedSplits, type SumRecord, withTempDir } from "./_job_kit.ts";
import {
  assertSameRows,
  crashBeforeCommitThenLoseNotification,
  expectedRows,
  failAfterCheckpoint,
  keyedSumJob,
  SINK_JOB_SPLITS,
  sumRecordOf,
  twoFailureSplits,
} from "./_sink_job_kit.ts";

interface Faults {
  /** The source split lists (with or without fail markers). */
  readonly lists: TestItem<KeyedRecord>[][];
  /** Installs fault hooks on the environment, if any. */
  readonly install?: (env: StreamExecutionEnvironment) => void;
  /** The restarts the faults cause. */
  readonly restarts: number;
  /**
   * Runs the job instead of one plain execute: gets a builder of the job's
   * environment (a fresh one per call, with the given restart strategy).
   */
  readonly run?: (
    build: (restarts: ReturnType<typeof RestartStrategies.noRestart>) => StreamExecutionEnvironment,
  ) => Promise<void>;
}

/** Runs the keyed job into a fresh table and checks the table, the xids and the commit log. */
async function runAndCheck(name: string, faults: Faults): Promise<void> {
  const table = uniqueName("xa_job");
  const prefix = uniqueName("job");
  const commitLogTable = uniqueName("xa_job_log");
  await sql(
    `CREATE TABLE \`${table}\` (\`key\` VARCHAR(32) NOT NULL, seq INT NOT NULL, ` +
      `sum INT NOT NULL) ENGINE=InnoDB`,
  );
  try {
    await withTempDir(async (checkpoints) => {
      const build = (restarts: ReturnType<typeof RestartStrategies.noRestart>) =>
        keyedSumJob({
          checkpoints,
          lists: faults.lists,
          restartStrategy: restarts,
          ...(faults.install === undefined ? {} : { install: faults.install }),
          sink: mariaDbXaSink<SumRecord>({
            connection: TEST_CONNECTION,
            sql: `INSERT INTO \`${table}\` (\`key\`, seq, sum) VALUES (?, ?, ?)`,
            parameters: (r) => [r.key, r.seq, r.sum],
            batchSize: 50,
            xidPrefix: prefix,
            commitLogTable,
          }),
          sinkUid: "xa-out",
        });
      if (faults.run !== undefined) return await faults.run(build);
      const result = await build(RestartStrategies.fixedDelay(3, 0)).execute(name);
      assert.equal(result.restarts, faults.restarts, result.summary);
    });
    const got = (await rows(table, "`key`, seq")).map(sumRecordOf);
    const expected = expectedRows();
    assertSameRows(got, expected);
    assert.deepEqual(await preparedOf(prefix), [], "xids of the sink left prepared");
    const logged = await sql(
      `SELECT CAST(SUM(records) AS SIGNED) AS n FROM \`${commitLogTable}\` WHERE prefix = ?`,
      [prefix],
    ) as { n: bigint | number }[];
    assert.equal(Number(logged[0]!.n), expected.length, "records in committed transactions");
  } finally {
    await cleanupPrefix(prefix, commitLogTable);
    await sql(`DROP TABLE IF EXISTS \`${table}\``);
  }
}

Deno.test("a job writing through the MariaDB XA sink commits each row exactly once across two induced failures", async () => {
  await runAndCheck("mariadb xa sink exactly-once", {
    lists: twoFailureSplits(2, 4),
    restarts: 2,
  });
});

Deno.test("a MariaDB XA job commits each row exactly once when it crashes between pre-commit and commit, twice", async () => {
  const fired: string[] = [];
  await runAndCheck("mariadb xa sink crash before commit", {
    lists: keyedSplits(SINK_JOB_SPLITS),
    restarts: 2,
    install: crashBeforeCommitThenLoseNotification(fired),
  });
  assert.equal(fired.length, 2, `faults fired: ${fired.join(", ")}`);
});

Deno.test("a MariaDB XA job resumed from another job's checkpoint, then restored from its own, commits each row exactly once", async () => {
  const [split0, split1] = keyedSplits(SINK_JOB_SPLITS);
  let failedOnce = false;
  await runAndCheck("mariadb xa sink resumed", {
    // Fires in the resumed job's attempt 0 only: the first job fails earlier, by a fault.
    lists: [split0!, failAfterCheckpoint(split1!, 4, 0)],
    restarts: 1,
    install: (env) =>
      env.setFaultInjector({
        task: (point, site) => {
          if (
            !failedOnce && point === "before-snapshot" && site.checkpointId >= 3 &&
            site.vertexName.includes("Sink")
          ) {
            failedOnce = true;
            throw new Error(`induced failure before snapshotting checkpoint ${site.checkpointId}`);
          }
        },
      }),
    run: async (build) => {
      const error = await build(RestartStrategies.noRestart()).execute("mariadb xa first").then(
        () => assert.fail("the first job should fail for good"),
        (e: unknown) => e,
      );
      assert.ok(error instanceof JobFailedError, String(error));
      const hint = /resumeFrom\(\{ jobId: "([^"]+)", checkpointId: (\d+) \}\)/.exec(error.message);
      assert.ok(hint, `the error says how to resume: ${error.message}`);
      const resumed = build(RestartStrategies.fixedDelay(3, 0));
      resumed.resumeFrom({ jobId: hint[1]!, checkpointId: Number(hint[2]) });
      const result = await resumed.execute("mariadb xa resumed");
      assert.equal(result.restarts, 1, result.summary);
    },
  });
  assert.ok(failedOnce);
});
