/**
 * The job of `bench/latency.ts`: a keyed running sum whose every record
 * carries the wall-clock time the source emitted it, and a non-transactional
 * sink that records `now - stamp` of every update in an HdrHistogram
 * (`npm:hdr-histogram-js@3.0.1`, µs).
 *
 *     deno run -A bench/latency_job.ts --nats URL --records N [--rate R]
 *         [--parallelism 2] [--keys 10000] [--checkpoint-ms 1000]
 *         [--checkpointing-mode exactly-once|at-least-once]
 *         [--buffer-timeout-ms 10] [--credits 8] [--warmup-ms 1000] --report DIR
 *
 * A `SequenceSource` (rate-limited to `--rate` records per second over all
 * subtasks with a token bucket, FLIP-238's `RateLimiter`, in batches of
 * `--batch` records; 0: as fast as it goes) feeds a chained map that makes
 * `{ key: i % keys, value: i, ts }`, `ts` being the wall-clock time of that
 * call ({@linkcode wallClockMs}: comparable across the processes of one
 * host). `keyBy(key)` sends it over the data plane (at parallelism 2 on two
 * worker processes, about half of it crosses from one process to the other
 * through NATS) to a running sum per key (`reduce`, keyed state, Flink's
 * `ReduceFunction`) whose every update goes to a chained sink (a
 * `SinkFunction`, at-least-once: it takes no part in transactions). The sink
 * records the latency of every update whose record was made at least
 * `--warmup-ms` after its first record (JIT warm-up, deployment stragglers).
 *
 * Unlike `jobs/keyed_sum_job.ts`, every record is stamped (no sampling, so
 * the tail percentiles count every record). The two clock reads per record
 * are not free: `op_now` was 7-13% of a slot thread's CPU profile at 1M
 * records/s; they are part of the max-load runs too, so the half-load
 * target is half of what this job sustains with them. The buffer
 * timeout (Flink's `setBufferTimeout`) and the credits per channel (buffers
 * in flight, `setNetworkBuffers`) are flags, so the benchmark can vary them.
 *
 * Checks: each map (source side) writes a report with the count and sum of
 * the numbers it made, each sink the count and the sum mod 2^32 of the
 * running sums it received (`expectedUpdateChecksum` of `jobs/_report.ts`
 * computes it without the engine), plus its histogram. The client prints
 * `RESULT <json>` with the job's result.
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
} from "../mod.ts";
import { addToChecksum, SubtaskTally, wallClockMs } from "./jobs/_report.ts";
import { newLatencyHistogram } from "./jobs/keyed_sum_job.ts";

/** A record of the latency job. */
export interface EmittedRecord {
  /** `i % keys`. */
  readonly key: number;
  /** `i` at the source; the running sum of the key after the reduce. */
  readonly value: number;
  /** Wall-clock time the source side made the latest record summed, ms. */
  readonly ts: number;
}

/** Stamps each number with its emission time (chained to the source). */
class StampEmission {
  private readonly reportDir: string;
  private readonly keys: number;
  private tally!: SubtaskTally;

  constructor(reportDir: string, keys: number) {
    this.reportDir = reportDir;
    this.keys = keys;
  }

  open(ctx: RuntimeContext): void {
    this.tally = new SubtaskTally(ctx);
  }

  map(i: number): EmittedRecord {
    const ts = wallClockMs();
    const t = this.tally;
    if (t.count++ === 0) t.firstMs = ts;
    t.lastMs = ts;
    t.checksum += i;
    return { key: i % this.keys, value: i, ts };
  }

  close(): void {
    this.tally.write(this.reportDir, "source");
  }
}

/** Width of a {@linkcode LatencyTimeline} window, ms. */
export const TIMELINE_WINDOW_MS = 50;

/** Latencies above this count as slow in a {@linkcode LatencyTimeline}, µs (the 20 ms target). */
export const SLOW_US = 20_000;

/**
 * One sink subtask's latencies over time, in windows of
 * {@linkcode TIMELINE_WINDOW_MS} of arrival (wall-clock) time: the benchmark
 * overlays it with the checkpoints' trigger times to show whether the slow
 * updates cluster after checkpoints. Written as `timeline-<subtask>.tl`
 * (JSON) beside the reports.
 */
export interface LatencyTimeline {
  /** The sink subtask. */
  readonly subtask: number;
  /** Per window with updates: `[start (wall-clock ms), updates, max latency µs, updates slower than SLOW_US]`. */
  readonly windows: [number, number, number, number][];
}

/** Records the end-to-end latency of every update (after the warm-up). */
class LatencyRecorder implements SinkFunction<EmittedRecord> {
  readonly kind = "simple";
  private readonly reportDir: string;
  private readonly warmupMs: number;
  private histogram: hdr.Histogram | undefined;
  private tally!: SubtaskTally;
  private recordFromMs = 0;
  private windows!: Map<number, [number, number, number, number]>;

  constructor(reportDir: string, warmupMs: number) {
    this.reportDir = reportDir;
    this.warmupMs = warmupMs;
  }

  open(ctx: RuntimeContext): void {
    this.tally = new SubtaskTally(ctx);
    this.histogram = newLatencyHistogram();
    this.windows = new Map();
  }

  invoke(record: EmittedRecord): void {
    const now = wallClockMs();
    const t = this.tally;
    if (t.count++ === 0) {
      t.firstMs = now;
      this.recordFromMs = now + this.warmupMs;
    }
    t.lastMs = now;
    t.checksum = addToChecksum(t.checksum, record.value);
    if (record.ts >= this.recordFromMs) {
      const us = Math.max(1, Math.round((now - record.ts) * 1000));
      this.histogram!.recordValue(us);
      const start = Math.floor(now / TIMELINE_WINDOW_MS) * TIMELINE_WINDOW_MS;
      let w = this.windows.get(start);
      if (w === undefined) this.windows.set(start, w = [start, 0, 0, 0]);
      w[1]++;
      if (us > w[2]) w[2] = us;
      if (us > SLOW_US) w[3]++;
    }
  }

  close(): void {
    this.tally.write(this.reportDir, "sink", {
      histogram: hdr.encodeIntoCompressedBase64(this.histogram!),
    });
    const timeline: LatencyTimeline = {
      subtask: this.tally.subtask,
      windows: [...this.windows.values()],
    };
    Deno.writeTextFileSync(
      `${this.reportDir}/timeline-${this.tally.subtask}.tl`,
      JSON.stringify(timeline),
    );
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string" },
      records: { type: "string" },
      rate: { type: "string", default: "0" },
      batch: { type: "string", default: "64" },
      keys: { type: "string", default: "10000" },
      parallelism: { type: "string", default: "2" },
      "checkpoint-ms": { type: "string", default: "1000" },
      "checkpointing-mode": { type: "string", default: "exactly-once" },
      "buffer-timeout-ms": { type: "string", default: "10" },
      credits: { type: "string", default: "8" },
      "warmup-ms": { type: "string", default: "1000" },
      report: { type: "string" },
    },
  });
  if (values.report === undefined) throw new Error("latency_job.ts needs --report DIR");
  if (values.records === undefined) throw new Error("latency_job.ts needs --records N");
  const records = Number(values.records);
  const rate = Number(values.rate);
  const checkpointMs = Number(values["checkpoint-ms"]);
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.setParallelism(Number(values.parallelism));
  env.setBufferTimeout(Number(values["buffer-timeout-ms"]));
  env.setNetworkBuffers({ credits: Number(values.credits) });
  const mode = values["checkpointing-mode"];
  if (mode !== "exactly-once" && mode !== "at-least-once") {
    throw new Error(
      `--checkpointing-mode must be exactly-once or at-least-once: current value is ${mode}`,
    );
  }
  if (checkpointMs > 0) env.enableCheckpointing(checkpointMs, { mode });
  env.setRestartStrategy(RestartStrategies.noRestart());
  const batchSize = Number(values.batch);
  env.fromSource(
    new SequenceSource(
      0,
      records - 1,
      rate > 0 ? { recordsPerSecond: rate, batchSize } : { batchSize: 1024 },
    ),
    WatermarkStrategy.noWatermarks(),
    "sequence",
  )
    .uid("sequence")
    .map(new StampEmission(values.report, Number(values.keys)))
    .uid("stamp")
    .keyBy((r) => r.key)
    .reduce((a, b) => ({ key: a.key, value: a.value + b.value, ts: b.ts }))
    .uid("sum")
    .sinkTo(new LatencyRecorder(values.report, Number(values["warmup-ms"])))
    .uid("latency");
  const result = await env.execute("latency-bench");
  console.log(`RESULT ${
    JSON.stringify({
      durationMs: result.durationMs,
      restarts: result.restarts,
      checkpoints: result.checkpoints.completed,
      failedCheckpoints: result.checkpoints.failed,
      metrics: result.metrics,
    })
  }`);
}
