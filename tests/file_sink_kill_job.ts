/**
 * The job of `file_sink_kill_test.ts`, run in a child process so that the
 * test can SIGKILL it: two source splits with pauses (so a run lasts about
 * two seconds), a keyed running sum and a CSV `FileSink` at parallelism 2,
 * checkpoints every 20 ms into a local directory.
 *
 * Run: `deno run -A tests/file_sink_kill_job.ts <out dir> <checkpoint dir> [<job id to resume>]`.
 *
 * @module
 */

import { RestartStrategies, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";
import { FileSink } from "../connectors/file/file_sink.ts";
import { DefaultRollingPolicy } from "../connectors/file/rolling_policy.ts";
import { csvEncoder } from "../connectors/file/row_encoders.ts";
import {
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  SequenceCheck,
  type SumRecord,
} from "./_job_kit.ts";

/** The job's input: 2 splits of 2 keys × 1500 records. */
export const KILL_JOB_SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 2,
  recordsPerKey: 1500,
  awaitCheckpointEvery: 1_000_000,
};

/** The splits with a 20 ms pause after every 50 records. */
export function killJobItems(): TestItem<KeyedRecord>[][] {
  return keyedSplits(KILL_JOB_SPLITS).map((items) => {
    const paced: TestItem<KeyedRecord>[] = [];
    items.forEach((item, i) => {
      paced.push(item);
      if ((i + 1) % 50 === 0) paced.push(TestSource.pause(20));
    });
    return paced;
  });
}

if (import.meta.main) {
  const [out, checkpoints, resumeJobId] = Deno.args;
  if (out === undefined || checkpoints === undefined) {
    throw new Error("usage: file_sink_kill_job.ts <out dir> <checkpoint dir> [<job id to resume>]");
  }
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(2)
    .enableCheckpointing(20, { directory: checkpoints })
    .setRestartStrategy(RestartStrategies.noRestart());
  if (resumeJobId !== undefined) env.resumeFrom({ jobId: resumeJobId });
  env.fromSource(
    TestSource.perSubtask(killJobItems(), { batchSize: 10 }),
    WatermarkStrategy.noWatermarks(),
    "records",
  ).uid("records")
    .keyBy((r) => r.key)
    .process(new SequenceCheck()).uid("sums")
    .sinkTo(
      new FileSink<SumRecord>({
        path: out,
        encoder: csvEncoder({
          header: ["key", "seq", "sum"],
          toFields: (r) => [r.key, r.seq, r.sum],
        }),
        rollingPolicy: new DefaultRollingPolicy({ maxPartSizeBytes: 4096 }),
      }),
    ).uid("csv-out");
  const result = await env.execute("file sink kill");
  console.log(`DONE restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
}
