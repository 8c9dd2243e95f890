/**
 * The job of `wal_kill_test.ts`, run in a child process so that the test
 * can SIGKILL it: two source splits with pauses (a run lasts about two
 * seconds), a keyed running sum and a `WriteAheadSink` into PostgreSQL
 * (127.0.0.1:5432) at parallelism 2, checkpoints every 20 ms
 * (`_sink_job_kit.ts`'s {@linkcode keyedSumJob} over
 * {@linkcode KILL_JOB_SPLITS}).
 *
 * Run: `deno run -A tests/wal_kill_job.ts <table> <committer table> <checkpoint dir> [<job id to resume>]`.
 *
 * @module
 */

import { RestartStrategies } from "../mod.ts";
import { PostgresWalTarget } from "../connectors/wal/postgres_wal_target.ts";
import { WriteAheadSink } from "../connectors/wal/wal_sink.ts";
import type { SumRecord } from "./_job_kit.ts";
import { keyedSumJob, KILL_JOB_SPLITS, pacedSplits } from "./_sink_job_kit.ts";

/** The server the job writes to. */
export const WAL_KILL_CONNECTION = {
  host: "127.0.0.1",
  port: 5432,
  user: "postgres",
  database: "postgres",
};

if (import.meta.main) {
  const [table, committerTable, checkpoints, resumeJobId] = Deno.args;
  if (table === undefined || committerTable === undefined || checkpoints === undefined) {
    throw new Error(
      "usage: wal_kill_job.ts <table> <committer table> <checkpoint dir> [<job id to resume>]",
    );
  }
  const env = keyedSumJob({
    checkpoints,
    lists: pacedSplits(KILL_JOB_SPLITS),
    restartStrategy: RestartStrategies.noRestart(),
    batchSize: 10,
    sink: new WriteAheadSink<SumRecord>({
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
    sinkUid: "wal-out",
  });
  if (resumeJobId !== undefined) env.resumeFrom({ jobId: resumeJobId });
  const result = await env.execute("wal sink kill");
  console.log(`DONE restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
}
