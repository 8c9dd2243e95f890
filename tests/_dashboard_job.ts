/**
 * The job the dashboard's browser test shows: a rate-limited sequence of
 * numbers, a keyed running sum, and a slow sink, so that the vertex before
 * the sink is back-pressured (Flink measures back pressure at the sender:
 * the time a subtask waits for credit to emit).
 *
 *     deno run -A tests/_dashboard_job.ts --name "dashboard x" --nats nats://127.0.0.1:4222
 *     deno run -A tests/_dashboard_job.ts --name "dashboard x" --ui --checkpoint-dir /tmp/cp
 *
 * Its job graph has three vertices (chains):
 *
 * | vertex | operators                 | parallelism | edge in    |
 * | ------ | ------------------------- | ----------- | ---------- |
 * | 1st    | `numbers -> parse`        | 2           |            |
 * | 2nd    | `sum -> format` (keyed)   | 2           | HASH       |
 * | 3rd    | `slow sink`               | 1           | REBALANCE  |
 *
 * The sink sleeps `--sink-delay-ms` (default 5) per record, so it takes at
 * most ~200 records/s while the source offers `--rate` (default 1000)
 * records/s: the keyed vertex spends most of each second waiting for credit
 * (`backPressuredTimeMsPerSecond` > 500, Flink's HIGH) and the sink none (it
 * has no network output). Small network buffers (16 records, 2 credits) keep
 * what is in flight, and so checkpoint alignment, short: checkpoints every
 * 500 ms still complete. It runs until cancelled (10^9 records).
 *
 * `--fail-flag PATH`: once a file PATH exists, the sink removes it and
 * throws ("planned failure: PATH exists"; it looks every 20 records), so a
 * test picks the moment of exactly one failure, in whichever attempt runs
 * then; the job restarts (fixed delay, 3 attempts, 500 ms apart).
 *
 * Options: `--name` (job name, default "dashboard job"), `--nats URL`
 * (cluster mode; read by Weir itself), `--checkpoint-dir DIR` (local mode's
 * checkpoint directory), `--rate N`, `--sink-delay-ms N`, `--fail-flag
 * PATH`; other arguments (`--ui`) are Weir's.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { existsSync } from "node:fs";
import {
  RestartStrategies,
  SequenceSource,
  type SinkFunction,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  strict: false,
  options: {
    name: { type: "string", default: "dashboard job" },
    nats: { type: "string" },
    "checkpoint-dir": { type: "string" },
    rate: { type: "string", default: "1000" },
    "sink-delay-ms": { type: "string", default: "5" },
    "fail-flag": { type: "string" },
  },
});
const rate = Number(values.rate);
const sinkDelayMs = Number(values["sink-delay-ms"]);
const failFlag = typeof values["fail-flag"] === "string" ? values["fail-flag"] : undefined;
let written = 0;
const slowSink: SinkFunction<string> = {
  kind: "simple",
  async invoke() {
    // One sink subtask (parallelism 1): removing the flag makes this the only failure.
    if (failFlag !== undefined && ++written % 20 === 0 && existsSync(failFlag)) {
      Deno.removeSync(failFlag);
      throw new Error(`planned failure: ${failFlag} exists`);
    }
    await new Promise<void>((resolve) => setTimeout(resolve, sinkDelayMs));
  },
};
const env = StreamExecutionEnvironment.getExecutionEnvironment();
env.setParallelism(2)
  .enableCheckpointing(500)
  .setNetworkBuffers({ bufferSize: 16, credits: 2 })
  .setRestartStrategy(RestartStrategies.fixedDelay(3, 500));
if (typeof values["checkpoint-dir"] === "string") {
  env.setCheckpointDirectory(values["checkpoint-dir"]);
}
env.fromSource(
  new SequenceSource(1, 1_000_000_000, { recordsPerSecond: rate }),
  WatermarkStrategy.noWatermarks(),
  "numbers",
)
  .uid("numbers")
  .map((n) => n).uid("parse").name("parse")
  .keyBy((n) => n % 8)
  .reduce((a, b) => a + b).uid("sum").name("sum")
  .map((sum) => `sum=${sum}`).uid("format").name("format")
  .rebalance()
  .sinkTo(slowSink)
  .uid("slow-sink").name("slow sink").setParallelism(1);
await env.execute(String(values.name));
