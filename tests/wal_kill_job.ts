/**
 * The job of `wal_kill_test.ts`, run in a child process so that the test
 * can SIGKILL it: two source splits with pauses (a run lasts about two
 * seconds), a keyed running sum and a `WriteAheadSink` into PostgreSQL
 * (127.0.0.1:5432) at parallelism 2, checkpoints every 20 ms.
 *
 * Run: `deno run -A tests/wal_kill_job.ts <table> <committer table> <checkpoint dir> [<job id to resume>]`.
 *
 * @module
 */

import { RestartStrategies, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";
import { PostgresWalTarget } from "../connectors/wal/postgres_wal_target.ts";
import { WriteAheadSink } from "../connectors/wal/wal_sink.ts";
import {
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  SequenceCheck,
  type SumRecord,
} from "./_job_kit.ts";

/** The server the job writes to. */
export const WAL_KILL_CONNECTION = {
  host: "127.0.0.1",
  port: 5432,
  user: "postgres",
  database: "postgres",
};

/** The job's input: 2 splits of 2 keys × 1500 records. */
export const WAL_KILL_SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 2,
  recordsPerKey: 1500,
  awaitCheckpointEvery: 1_000_000,
};

function items(): TestItem<KeyedRecord>[][] {
  return keyedSplits(WAL_KILL_SPLITS).map((list) => {
    const paced: TestItem<KeyedRecord>[] = [];
    list.forEach((item, i) => {
      paced.push(item);
      if ((i + 1) % 50 === 0) paced.push(TestSource.pause(20));
    });
    return paced;
  });
}

if (import.meta.main) {
  const [table, committerTable, checkpoints, resumeJobId] = Deno.args;
  if (table === undefined || committerTable === undefined || checkpoints === undefined) {
    throw new Error(
      "usage: wal_kill_job.ts <table> <committer table> <checkpoint dir> [<job id to resume>]",
    );
  }
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(2)
    .enableCheckpointing(20, { directory: checkpoints })
    .setRestartStrategy(RestartStrategies.noRestart());
  if (resumeJobId !== undefined) env.resumeFrom({ jobId: resumeJobId });
  env.fromSource(
    TestSource.perSubtask(items(), { batchSize: 10 }),
    WatermarkStrategy.noWatermarks(),
    "records",
  ).uid("records")
    .keyBy((r) => r.key)
    .process(new SequenceCheck()).uid("sums")
    .sinkTo(
      new WriteAheadSink<SumRecord>({
        target: new PostgresWalTarget<SumRecord>({
          connection: WAL_KILL_CONNECTION,
          table,
          committerTable,
          columns: ["key", "seq", "sum"],
          toRow: (r) => r,
          maxRowsPerStatement: 20,
        }),
        maxValuesPerCommittable: 40,
      }),
    ).uid("wal-out");
  const result = await env.execute("wal sink kill");
  console.log(`DONE restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
}
