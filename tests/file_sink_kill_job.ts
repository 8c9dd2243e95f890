/**
 * The job of `file_sink_kill_test.ts`, run in a child process so that the
 * test can SIGKILL it: two source splits with pauses (so a run lasts about
 * two seconds), a keyed running sum and a CSV `FileSink` at parallelism 2,
 * checkpoints every 20 ms into a local directory (`_sink_job_kit.ts`'s
 * {@linkcode keyedSumJob} over {@linkcode KILL_JOB_SPLITS}).
 *
 * Run: `deno run -A tests/file_sink_kill_job.ts <out dir> <checkpoint dir> [<job id to resume>]`.
 *
 * @module
 */

import { RestartStrategies } from "../mod.ts";
import { FileSink } from "../connectors/file/file_sink.ts";
import { DefaultRollingPolicy } from "../connectors/file/rolling_policy.ts";
import { csvEncoder } from "../connectors/file/row_encoders.ts";
import type { SumRecord } from "./_job_kit.ts";
import { keyedSumJob, KILL_JOB_SPLITS, pacedSplits } from "./_sink_job_kit.ts";

if (import.meta.main) {
  const [out, checkpoints, resumeJobId] = Deno.args;
  if (out === undefined || checkpoints === undefined) {
    throw new Error("usage: file_sink_kill_job.ts <out dir> <checkpoint dir> [<job id to resume>]");
  }
  const env = keyedSumJob({
    checkpoints,
    lists: pacedSplits(KILL_JOB_SPLITS),
    restartStrategy: RestartStrategies.noRestart(),
    batchSize: 10,
    sink: new FileSink<SumRecord>({
      path: out,
      encoder: csvEncoder({
        header: ["key", "seq", "sum"],
        toFields: (r) => [r.key, r.seq, r.sum],
      }),
      rollingPolicy: new DefaultRollingPolicy({ maxPartSizeBytes: 4096 }),
    }),
    sinkUid: "csv-out",
  });
  if (resumeJobId !== undefined) env.resumeFrom({ jobId: resumeJobId });
  const result = await env.execute("file sink kill");
  console.log(`DONE restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
}
