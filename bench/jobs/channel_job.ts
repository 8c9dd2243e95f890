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
import { wallClockMs, writeReport } from "./_report.ts";

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
  private subtask = 0;
  private attempt = 0;
  private count = 0;
  private checksum = 0;
  private firstMs = 0;
  private lastMs = 0;

  constructor(reportDir: string, expected: number) {
    this.reportDir = reportDir;
    this.expected = expected;
  }

  open(ctx: RuntimeContext): void {
    this.subtask = ctx.subtaskIndex;
    this.attempt = ctx.attempt;
  }

  map(i: number): KeyValue {
    if (this.count === 0) this.firstMs = wallClockMs();
    this.count++;
    this.checksum += i;
    if (this.count === this.expected) this.lastMs = wallClockMs();
    return { key: i % 10_000, value: i };
  }

  close(): void {
    writeReport(this.reportDir, {
      role: "source",
      subtask: this.subtask,
      attempt: this.attempt,
      pid: Deno.pid,
      records: this.count,
      firstMs: this.firstMs,
      lastMs: this.lastMs,
      checksum: this.checksum,
    });
  }
}

/** Counts the records and times the first and the last. */
class CountingSink implements SinkFunction<KeyValue> {
  readonly kind = "simple";
  private readonly reportDir: string;
  private readonly expected: number;
  private subtask = 0;
  private attempt = 0;
  private count = 0;
  private checksum = 0;
  private firstMs = 0;
  private lastMs = 0;

  constructor(reportDir: string, expected: number) {
    this.reportDir = reportDir;
    this.expected = expected;
  }

  open(ctx: RuntimeContext): void {
    this.subtask = ctx.subtaskIndex;
    this.attempt = ctx.attempt;
  }

  invoke(record: KeyValue): void {
    if (this.count === 0) this.firstMs = wallClockMs();
    this.count++;
    this.checksum += record.value;
    if (this.count === this.expected) this.lastMs = wallClockMs();
  }

  close(): void {
    writeReport(this.reportDir, {
      role: "sink",
      subtask: this.subtask,
      attempt: this.attempt,
      pid: Deno.pid,
      records: this.count,
      firstMs: this.firstMs,
      lastMs: this.lastMs,
      checksum: this.checksum,
    });
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
