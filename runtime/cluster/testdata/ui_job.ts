/**
 * A job for the local dashboard's tests (`local_dashboard_test.ts`): a
 * rate-limited sequence (200 records/s), keyed by `n % 4`, mapped, into a
 * sink that drops the records; checkpoints every 500 ms. It runs until
 * cancelled (10^9 records).
 *
 *     WEIR_UI_PORT=0 deno run -A runtime/cluster/testdata/ui_job.ts <checkpoint-dir> --ui
 *
 * @module
 */

import {
  SequenceSource,
  type SinkFunction,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../../mod.ts";

const checkpointDirectory = Deno.args[0];
if (checkpointDirectory === undefined || checkpointDirectory.startsWith("--")) {
  throw new Error("usage: ui_job.ts <checkpoint-dir> [--ui]");
}
const drop: SinkFunction<number> = { kind: "simple", invoke() {} };
const env = StreamExecutionEnvironment.getExecutionEnvironment();
env.setParallelism(2).enableCheckpointing(500).setCheckpointDirectory(checkpointDirectory);
env.fromSource(
  new SequenceSource(1, 1_000_000_000, { recordsPerSecond: 200 }),
  WatermarkStrategy.noWatermarks(),
  "numbers",
)
  .uid("numbers")
  .keyBy((n) => n % 4)
  .map((n) => n * 2).uid("double").name("double")
  .sinkTo(drop).uid("drop").name("drop").setParallelism(1);
await env.execute("ui job");
