/**
 * Benchmark (b) of cluster mode: a keyed running sum over NATS with two
 * worker processes and a checkpoint every second: throughput, and
 * end-to-end latency at full speed and at a fixed, sustainable rate.
 *
 *     deno task bench:cluster                      # both cluster benchmarks
 *     deno run -A bench/cluster_keyed_sum.ts [--records 5000000] [--rounds 2]
 *         [--slots 1] [--parallelism 2] [--fraction 0.5] [--duration-s 10]
 *         [--nats URL] [--cpu-prof DIR]
 *
 * The job is `bench/jobs/keyed_sum_job.ts`: sequence source -> map making
 * `{ key: i % 10000, value: i, ts }` (`ts`: creation time) -> `keyBy(key)`
 * -> running sum per key (`reduce`) -> a sink recording `now - ts` per
 * update into an HdrHistogram (µs; `npm:hdr-histogram-js`). Parallelism 2:
 * two source subtasks and two sum subtasks, spread by the coordinator over
 * the slots of two worker processes, so about half of the records cross from
 * one process to the other. Checkpoints go to a NATS Object Store bucket.
 *
 * Each round runs, in this order:
 *
 * 1. **local (baseline)**: the same job module in local mode (one process,
 *    one thread, checkpoints to a temporary directory), as fast as it goes;
 * 2. **cluster, max rate**: on the cluster, as fast as it goes (`--records`);
 * 3. **cluster, fixed rate**: on the cluster with the source limited to
 *    `--fraction` (default 50%) of the rate run 2 reached, for
 *    `--duration-s` seconds.
 *
 * Throughput is records / (last update seen by a sink - first record made by
 * a source), wall-clock time of the host: it excludes process start-up,
 * submission, deployment and the final checkpoint. Latency is from the
 * record's creation (in the map chained to the source) to its update
 * reaching the sink: it includes waiting in a partly filled buffer (up to
 * the 10 ms buffer timeout), the NATS hop for records that change process,
 * queueing in the input gate and the reduce. At max rate it is mostly time
 * queued behind the credit window (backpressure). It is sampled (1 record
 * in 7, see `keyed_sum_job.ts`: reading the clock for every record would
 * cost more than 10% of the work) and excludes records created in a sink's
 * first second (JIT warm-up). Latencies are merged over the rounds; rates
 * are medians. Nothing is asserted on timing.
 *
 * Without `--nats`, the benchmark starts its own nats-server (with JetStream)
 * on a free port and stops it at the end. With `--cpu-prof DIR`, the worker
 * processes write V8 CPU profiles there (one per thread), and the benchmark
 * prints their top self-time functions.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import * as hdr from "npm:hdr-histogram-js@3.0.1";
import {
  BenchCluster,
  benchNats,
  formatRate,
  median,
  parseResultLine,
  printCpuProfiles,
  runDeno,
} from "./_cluster_bench.ts";
import { readReports } from "./jobs/_report.ts";
import { newLatencyHistogram } from "./jobs/keyed_sum_job.ts";

const JOB = fileURLToPath(new URL("./jobs/keyed_sum_job.ts", import.meta.url));

/** What the job's client prints on its `RESULT` line. */
interface JobResultLine {
  readonly durationMs: number;
  readonly restarts: number;
  readonly checkpoints: number;
  readonly failedCheckpoints: number;
  readonly metrics: Record<string, { name: string; backPressuredTimeMsPerSecond: number }>;
}

/** One run of the job. */
interface Run {
  /** Records per second, first record made to last update sunk. */
  readonly recordsPerSecond: number;
  /** End-to-end latencies, µs. */
  readonly histogram: hdr.Histogram;
  /** Checkpoints completed. */
  readonly checkpoints: number;
  /** Back pressure of the source vertex, ms per second. */
  readonly sourceBackPressure: number;
  /** Checkpoints that failed. */
  readonly failedCheckpoints: number;
}

/** The options of one run. */
interface RunOptions {
  readonly records: number;
  /** Records per second; 0 for as fast as it goes. */
  readonly rate: number;
  readonly parallelism: number;
  /** NATS URL for the cluster; `undefined` for local mode. */
  readonly nats: string | undefined;
  /** Worker pids the subtasks must have run in (cluster mode). */
  readonly workerPids: readonly number[];
}

async function runJob(o: RunOptions): Promise<Run> {
  const dir = await Deno.makeTempDir({ prefix: "weir-bench-keyed-" });
  try {
    const mode = o.nats === undefined
      ? ["--checkpoint-dir", `${dir}/checkpoints`]
      : ["--nats", o.nats];
    const out = await runDeno("keyed sum job", [
      "run",
      "-A",
      JOB,
      ...mode,
      "--records",
      String(o.records),
      "--rate",
      String(Math.round(o.rate)),
      "--parallelism",
      String(o.parallelism),
      "--report",
      dir,
    ]);
    const result = parseResultLine<JobResultLine>(out);
    if (result.restarts !== 0) throw new Error(`the job restarted ${result.restarts} times`);
    const reports = await readReports(dir);
    const sources = reports.filter((r) => r.role === "source");
    const sinks = reports.filter((r) => r.role === "sink");
    const sunk = sinks.reduce((n, r) => n + r.records, 0);
    const made = sources.reduce((n, r) => n + r.records, 0);
    if (sunk !== o.records || made !== o.records) {
      throw new Error(`${made} records made and ${sunk} sunk, expected ${o.records} each`);
    }
    if (o.nats !== undefined) {
      const pids = new Set(reports.map((r) => r.pid));
      if (pids.size !== o.workerPids.length || ![...pids].every((p) => o.workerPids.includes(p))) {
        throw new Error(
          `the subtasks ran in pids ${[...pids].join(", ")}, expected the worker processes ` +
            o.workerPids.join(", "),
        );
      }
    }
    const firstMs = Math.min(...sources.filter((r) => r.records > 0).map((r) => r.firstMs));
    const lastMs = Math.max(...sinks.map((r) => r.lastMs));
    const histogram = newLatencyHistogram();
    for (const sink of sinks) histogram.add(hdr.decodeFromCompressedBase64(sink.histogram!));
    const source = Object.values(result.metrics).find((m) => /sequence/.test(m.name));
    return {
      recordsPerSecond: o.records / ((lastMs - firstMs) / 1000),
      histogram,
      checkpoints: result.checkpoints,
      failedCheckpoints: result.failedCheckpoints,
      sourceBackPressure: source?.backPressuredTimeMsPerSecond ?? 0,
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** `p50 1.23 ms, p99 4.56 ms, p99.9 7.89 ms, max 12.3 ms (n = 123)`. */
function latencies(h: hdr.Histogram): string {
  const ms = (p: number) => (h.getValueAtPercentile(p) / 1000).toFixed(2);
  return `p50 ${ms(50)} ms, p99 ${ms(99)} ms, p99.9 ${ms(99.9)} ms, ` +
    `max ${(h.maxValue / 1000).toFixed(1)} ms (n = ${h.totalCount})`;
}

function describe(run: Run): string {
  return `${formatRate(run.recordsPerSecond)}; ${latencies(run.histogram)}; ` +
    `${run.checkpoints} checkpoints (${run.failedCheckpoints} failed); source back pressure ` +
    `${run.sourceBackPressure.toFixed(0)} ms/s`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string" },
      records: { type: "string", default: "5000000" },
      rounds: { type: "string", default: "2" },
      slots: { type: "string", default: "1" },
      parallelism: { type: "string", default: "2" },
      fraction: { type: "string", default: "0.5" },
      "duration-s": { type: "string", default: "10" },
      "cpu-prof": { type: "string" },
    },
  });
  const records = Number(values.records);
  const rounds = Number(values.rounds);
  const parallelism = Number(values.parallelism);
  const fraction = Number(values.fraction);
  const durationS = Number(values["duration-s"]);
  const nats = await benchNats(values.nats);
  const cpuProfileDir = values["cpu-prof"];
  const cluster = new BenchCluster({
    nats: nats.url,
    workers: 2,
    slots: Number(values.slots),
    cpuProfileDir,
  });
  const local: Run[] = [];
  const max: Run[] = [];
  const fixed: Run[] = [];
  const targets: number[] = [];
  try {
    await cluster.start();
    const workerPids = [cluster.workerPid(0), cluster.workerPid(1)];
    console.log(
      `keyed running sum, 10000 keys, parallelism ${parallelism}, checkpoint every 1 s; ` +
        `NATS ${nats.url}${nats.private ? " (private server)" : ""}; coordinator + 2 workers x ` +
        `${values.slots} slot(s)`,
    );
    for (let r = 1; r <= rounds; r++) {
      const base = { parallelism, workerPids };
      local.push(await runJob({ ...base, records, rate: 0, nats: undefined }));
      console.log(`round ${r}: local, max rate:   ${describe(local.at(-1)!)}`);
      max.push(await runJob({ ...base, records, rate: 0, nats: nats.url }));
      console.log(`round ${r}: cluster, max rate: ${describe(max.at(-1)!)}`);
      const rate = fraction * max.at(-1)!.recordsPerSecond;
      targets.push(rate);
      fixed.push(
        await runJob({ ...base, records: Math.round(rate * durationS), rate, nats: nats.url }),
      );
      console.log(
        `round ${r}: cluster, fixed ${formatRate(rate)} (${100 * fraction}% of max): ` +
          describe(fixed.at(-1)!),
      );
    }
  } catch (error) {
    console.error(cluster.logs());
    throw error;
  } finally {
    await cluster.stop();
    await nats.stop();
  }
  const merged = (runs: Run[]) => {
    const h = newLatencyHistogram();
    for (const run of runs) h.add(run.histogram);
    return h;
  };
  const eps = (runs: Run[]) => median(runs.map((r) => r.recordsPerSecond));
  const [localEps, maxEps, fixedEps] = [eps(local), eps(max), eps(fixed)];
  const [localH, maxH, fixedH] = [merged(local), merged(max), merged(fixed)];
  console.log(`over ${rounds} rounds (rates: medians; latencies: all rounds merged):`);
  console.log(`local mode, max rate (baseline): ${formatRate(localEps)}; ${latencies(localH)}`);
  console.log(`cluster, max rate:               ${formatRate(maxEps)}; ${latencies(maxH)}`);
  console.log(
    `cluster, fixed rate ${formatRate(median(targets))} (${100 * fraction}% of max): ` +
      `${formatRate(fixedEps)} achieved; ${latencies(fixedH)}`,
  );
  console.log(`cluster / local, max rate: ${(100 * maxEps / localEps).toFixed(1)}%`);
  const p = (h: hdr.Histogram, q: number) => (h.getValueAtPercentile(q) / 1000).toFixed(3);
  console.log(
    `RESULT local_eps=${Math.round(localEps)} cluster_eps=${Math.round(maxEps)} ` +
      `ratio=${(maxEps / localEps).toFixed(3)} max_p50_ms=${p(maxH, 50)} ` +
      `max_p99_ms=${p(maxH, 99)} fixed_eps=${Math.round(fixedEps)} ` +
      `fixed_p50_ms=${p(fixedH, 50)} fixed_p99_ms=${p(fixedH, 99)} ` +
      `fixed_p999_ms=${p(fixedH, 99.9)}`,
  );
  if (cpuProfileDir !== undefined) await printCpuProfiles(cpuProfileDir);
}

if (import.meta.main) await main();
