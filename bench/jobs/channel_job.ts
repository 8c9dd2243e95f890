/**
 * The job of `bench/cluster_channel.ts`: `--records` records
 * `{ key: i % 10000, value: i }` made by a map chained to a sequence source,
 * sent over one `rebalance()` channel to a counting sink, parallelism 1 each,
 * so the channel is the whole job. On a cluster of two workers with one slot
 * each, the source subtask and the sink subtask run in different worker
 * processes, and every record crosses NATS once.
 *
 *     deno run -A bench/jobs/channel_job.ts --nats nats://127.0.0.1:4222 \
 *       --records 5000000 --report /tmp/reports [--buffer-size 2048] [--credits 8]
 *
 * The map (source side) and the sink each write a {@linkcode SubtaskReport}
 * into `--report DIR` at `close()`: their pid, the wall-clock times of their
 * first and last record, and the sum of the values. The client prints one
 * line `RESULT <json>` with the job's result.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  RestartStrategies,
  type RuntimeContext,
  SequenceSource,
  type SinkFunction,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import { SubtaskTally } from "./_report.ts";

/** The records of the channel benchmark. */
export interface KeyValue {
  /** `i % 10000`. */
  readonly key: number;
  /** `i`. */
  readonly value: number;
}

/** Makes the records (chained to the source) and times the first and the last. */
class MakeRecords {
  private readonly reportDir: string;
  private readonly expected: number;
  private tally!: SubtaskTally;

  constructor(reportDir: string, expected: number) {
    this.reportDir = reportDir;
    this.expected = expected;
  }

  open(ctx: RuntimeContext): void {
    this.tally = new SubtaskTally(ctx, this.expected);
  }

  map(i: number): KeyValue {
    this.tally.note(i);
    return { key: i % 10_000, value: i };
  }

  close(): void {
    this.tally.write(this.reportDir, "source");
  }
}

/** Counts the records and times the first and the last. */
class CountingSink implements SinkFunction<KeyValue> {
  readonly kind = "simple";
  private readonly reportDir: string;
  private readonly expected: number;
  private tally!: SubtaskTally;

  constructor(reportDir: string, expected: number) {
    this.reportDir = reportDir;
    this.expected = expected;
  }

  open(ctx: RuntimeContext): void {
    this.tally = new SubtaskTally(ctx, this.expected);
  }

  invoke(record: KeyValue): void {
    this.tally.note(record.value);
  }

  close(): void {
    this.tally.write(this.reportDir, "sink");
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string" },
      records: { type: "string", default: "5000000" },
      report: { type: "string" },
      "buffer-size": { type: "string", default: "2048" },
      credits: { type: "string", default: "8" },
    },
  });
  const records = Number(values.records);
  if (values.report === undefined) throw new Error("channel_job.ts needs --report DIR");
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.setParallelism(1);
  env.setNetworkBuffers({
    bufferSize: Number(values["buffer-size"]),
    credits: Number(values.credits),
  });
  env.setRestartStrategy(RestartStrategies.noRestart());
  env.fromSource(
    new SequenceSource(0, records - 1, { batchSize: 1024 }),
    WatermarkStrategy.noWatermarks(),
    "sequence",
  )
    .uid("sequence")
    .map(new MakeRecords(values.report, records))
    .uid("make-records")
    .rebalance()
    .sinkTo(new CountingSink(values.report, records))
    .uid("count");
  const result = await env.execute("cluster-channel-bench");
  console.log(`RESULT ${
    JSON.stringify({
      jobId: result.jobId,
      durationMs: result.durationMs,
      restarts: result.restarts,
      checkpoints: result.checkpoints.completed,
      metrics: result.metrics,
    })
  }`);
}
