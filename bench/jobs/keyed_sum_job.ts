/**
 * The job of `bench/cluster_keyed_sum.ts`: a keyed running sum with
 * end-to-end latency. A sequence source (optionally rate-limited) feeds a
 * chained map that makes `{ key: i % keys, value: i, ts }`, stamping `ts`
 * with the record's creation time; `keyBy(key)` sends it over the data plane
 * to a running sum per key (`reduce`, keyed state) whose every update goes
 * to a chained sink that records `now - ts` in an HdrHistogram.
 *
 *     deno run -A bench/jobs/keyed_sum_job.ts --nats nats://127.0.0.1:4222 \
 *       --records 5000000 [--rate 1000000] [--keys 10000] [--parallelism 2] \
 *       [--checkpoint-ms 1000] [--warmup-ms 1000] [--memory-threshold BYTES] --report /tmp/reports
 *     deno run -A bench/jobs/keyed_sum_job.ts --checkpoint-dir /tmp/chk ...   # local mode
 *
 * `--rate` is the source's total rate in records per second (0, the
 * default: as fast as it goes).
 *
 * Latency is sampled: reading the clock costs about 150 ns in Deno
 * (`performance.now()`; `Date.now()` about 70 ns), which at a million
 * records per second would be a sizeable part of the work measured. So only
 * records whose index is a multiple of `--sample-every` (default 7, prime to
 * the number of keys, so every key is sampled) are stamped; the others carry
 * `ts: 0`, and the sink reads the clock only for stamped ones. Latency is
 * recorded in microseconds, except for records created in the first
 * `--warmup-ms` after the first record a sink subtask received (JIT warm-up
 * and deployment stragglers). A sink's `lastMs` is the time of its last
 * sampled update. A map's checksum is the sum of the `i` it made; a sink's is
 * the sum, mod 2^32, of every running sum it received
 * ({@linkcode addToChecksum}), which `expectedUpdateChecksum()` of
 * `_report.ts` computes without the engine: a lost or duplicated record
 * changes every later running sum of its key. Each map
 * (source side) and sink subtask writes a {@linkcode SubtaskReport} into
 * `--report DIR` at `close()`; the sinks' reports carry their histograms.
 * The client prints one line `RESULT <json>` with the job's result.
 *
 * @module
 */

import { parseArgs } from "node:util";
import * as hdr from "npm:hdr-histogram-js@3.0.1";
import {
  RestartStrategies,
  type RuntimeContext,
  SequenceSource,
  type SinkFunction,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import { addToChecksum, SubtaskTally, wallClockMs } from "./_report.ts";

/** A record of the latency job. */
export interface StampedRecord {
  /** `i % keys`. */
  readonly key: number;
  /** `i` at the source; the running sum of the key after the reduce. */
  readonly value: number;
  /**
   * Creation time ({@linkcode wallClockMs}) of the latest record summed, in
   * ms; 0 for a record that is not sampled.
   */
  readonly ts: number;
}

/**
 * A histogram of latencies in microseconds: 1 µs to 1 h, 3 significant
 * digits (HdrHistogram's usual precision).
 */
export function newLatencyHistogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

/** Makes the stamped records (chained to the source). */
class StampRecords {
  private readonly reportDir: string;
  private readonly keys: number;
  private readonly sampleEvery: number;
  private tally!: SubtaskTally;

  constructor(reportDir: string, keys: number, sampleEvery: number) {
    this.reportDir = reportDir;
    this.keys = keys;
    this.sampleEvery = sampleEvery;
  }

  open(ctx: RuntimeContext): void {
    this.tally = new SubtaskTally(ctx);
  }

  map(i: number): StampedRecord {
    const t = this.tally;
    let ts = 0;
    if (i % this.sampleEvery === 0 || t.count === 0) {
      ts = wallClockMs();
      if (t.count === 0) t.firstMs = ts;
      t.lastMs = ts;
    }
    t.count++;
    t.checksum += i;
    return { key: i % this.keys, value: i, ts };
  }

  close(): void {
    this.tally.write(this.reportDir, "source");
  }
}

/** Records each update's end-to-end latency. */
class LatencySink implements SinkFunction<StampedRecord> {
  readonly kind = "simple";
  private readonly reportDir: string;
  private readonly warmupMs: number;
  private histogram: hdr.Histogram | undefined;
  private tally!: SubtaskTally;
  private recordFromMs = 0;

  constructor(reportDir: string, warmupMs: number) {
    this.reportDir = reportDir;
    this.warmupMs = warmupMs;
  }

  open(ctx: RuntimeContext): void {
    this.tally = new SubtaskTally(ctx);
    this.histogram = newLatencyHistogram();
  }

  invoke(record: StampedRecord): void {
    const t = this.tally;
    if (t.count++ === 0) {
      t.firstMs = wallClockMs();
      this.recordFromMs = t.firstMs + this.warmupMs;
    }
    t.checksum = addToChecksum(t.checksum, record.value);
    if (record.ts === 0) return; // not sampled
    const now = wallClockMs();
    t.lastMs = now;
    if (record.ts >= this.recordFromMs) {
      this.histogram!.recordValue(Math.max(1, Math.round((now - record.ts) * 1000)));
    }
  }

  close(): void {
    this.tally.write(this.reportDir, "sink", {
      histogram: hdr.encodeIntoCompressedBase64(this.histogram!),
    });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string" },
      records: { type: "string", default: "5000000" },
      rate: { type: "string", default: "0" },
      keys: { type: "string", default: "10000" },
      parallelism: { type: "string", default: "2" },
      "checkpoint-ms": { type: "string", default: "1000" },
      "checkpoint-dir": { type: "string" },
      "memory-threshold": { type: "string" },
      "warmup-ms": { type: "string", default: "1000" },
      "sample-every": { type: "string", default: "7" },
      report: { type: "string" },
    },
  });
  if (values.report === undefined) throw new Error("keyed_sum_job.ts needs --report DIR");
  const records = Number(values.records);
  const rate = Number(values.rate);
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.setParallelism(Number(values.parallelism));
  env.enableCheckpointing(Number(values["checkpoint-ms"]), {
    ...(values["checkpoint-dir"] === undefined ? {} : { directory: values["checkpoint-dir"] }),
    ...(values["memory-threshold"] === undefined
      ? {}
      : { memoryThresholdBytes: Number(values["memory-threshold"]) }),
  });
  env.setRestartStrategy(RestartStrategies.noRestart());
  env.fromSource(
    new SequenceSource(
      0,
      records - 1,
      rate > 0 ? { recordsPerSecond: rate, batchSize: 1024 } : { batchSize: 1024 },
    ),
    WatermarkStrategy.noWatermarks(),
    "sequence",
  )
    .uid("sequence")
    .map(new StampRecords(values.report, Number(values.keys), Number(values["sample-every"])))
    .uid("stamp")
    .keyBy((r) => r.key)
    .reduce((a, b) => ({ key: a.key, value: a.value + b.value, ts: b.ts }))
    .uid("sum")
    .sinkTo(new LatencySink(values.report, Number(values["warmup-ms"])))
    .uid("latency");
  const result = await env.execute("cluster-keyed-sum-bench");
  console.log(`RESULT ${
    JSON.stringify({
      jobId: result.jobId,
      durationMs: result.durationMs,
      restarts: result.restarts,
      checkpoints: result.checkpoints.completed,
      failedCheckpoints: result.checkpoints.failed,
      metrics: result.metrics,
    })
  }`);
}
