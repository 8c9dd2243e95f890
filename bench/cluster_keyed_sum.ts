/**
 * Benchmark (b) of cluster mode: a keyed running sum over NATS with two
 * worker processes and a checkpoint every second: throughput, and
 * end-to-end latency at full speed and at a fixed, sustainable rate.
 *
 *     deno task bench:cluster                      # both cluster benchmarks
 *     deno run -A bench/cluster_keyed_sum.ts [--records 5000000] [--rounds 3]
 *         [--workers 2] [--slots 1] [--parallelism 2] [--fraction 0.5] [--duration-s 10]
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
 * Every run is checked before its figures count: the sources made
 * `records` records summing to `records * (records - 1) / 2`, and the sinks
 * received `records` updates whose checksum (their running sums added mod
 * 2^32) equals `expectedUpdateChecksum()` of `jobs/_report.ts`, computed
 * without the engine, so a record lost or duplicated anywhere changes it. A
 * mismatch ends the benchmark with an error naming the expected and the
 * received values (exit code 1).
 *
 * Throughput is records / (last update seen by a sink - first record made by
 * a source), wall-clock time of the host: it excludes process start-up,
 * submission, deployment and the final checkpoint. CPU time is that of
 * every process of the run (`readCpu()` of `_rounds.ts`: the job's client or
 * local process, the coordinator and the workers; the NATS server when it is
 * the benchmark's own), start-up included; records per CPU-second divide the
 * run's records by it. Latency is from the
 * record's creation (in the map chained to the source) to its update
 * reaching the sink: it includes waiting in a partly filled buffer (up to
 * the 10 ms buffer timeout), the NATS hop for records that change process,
 * queueing in the input gate and the reduce. At max rate it is mostly time
 * queued behind the credit window (backpressure). It is sampled (1 record
 * in 7, see `keyed_sum_job.ts`: reading the clock for every record would
 * cost more than 10% of the work) and excludes records created in a sink's
 * first second (JIT warm-up). The three runs are interleaved over
 * `--rounds` rounds (default 3); latencies are merged over the rounds, rates
 * are medians, and the ratio cluster/local is the median of the per-round
 * ratios. The last line is `RESULT local_eps=… cluster_eps=… local_eps_cpu=…
 * cluster_eps_cpu=… ratio=… ratio_cpu=… max_p50_ms=… max_p99_ms=…
 * fixed_eps=… fixed_eps_cpu=… fixed_p50_ms=… fixed_p99_ms=… fixed_p999_ms=…
 * rounds=…`. Nothing is asserted on timing.
 *
 * `--workers 1 --slots 2` puts both parallel subtasks of every vertex in one
 * worker process (a slot thread each), so that the keyBy exchange goes
 * between slot threads through `MessagePort`s instead of NATS (see
 * `runtime/actor/port_transport.ts`); the default, 2 workers x 1 slot, sends
 * about half of it between processes through NATS.
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
  cpuScope,
  parseResultLine,
  printCpuProfiles,
  runDeno,
} from "./_cluster_bench.ts";
import { formatRate, formatRatio, median, type Rounds, runRounds, type Sample } from "./_rounds.ts";
import { expectEqual, resultLine } from "./_result.ts";
import { addToChecksum, expectedUpdateChecksum, readReports } from "./jobs/_report.ts";
import { newLatencyHistogram } from "./jobs/keyed_sum_job.ts";

const JOB = fileURLToPath(new URL("./jobs/keyed_sum_job.ts", import.meta.url));
/** Keys of the job (`--keys` of `keyed_sum_job.ts`). */
export const KEYS = 10_000;

/** What the job's client prints on its `RESULT` line. */
interface JobResultLine {
  readonly durationMs: number;
  readonly restarts: number;
  readonly checkpoints: number;
  readonly failedCheckpoints: number;
  readonly metrics: Record<string, { name: string; backPressuredTimeMsPerSecond: number }>;
}

/** One run of the job ({@linkcode runJob}). */
export interface Run {
  /** Records the run made and summed. */
  readonly records: number;
  /** The source's rate limit, records per second; 0 for none. */
  readonly rate: number;
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

/** The options of one run ({@linkcode runJob}). */
export interface RunOptions {
  /** Records the source makes (`--records` of the job). */
  readonly records: number;
  /** Records per second; 0 for as fast as it goes. */
  readonly rate: number;
  /** The job's parallelism. */
  readonly parallelism: number;
  /** NATS URL for the cluster; `undefined` for local mode. */
  readonly nats: string | undefined;
  /** Worker pids the subtasks must have run in (cluster mode). */
  readonly workerPids: readonly number[];
}

/**
 * Runs `keyed_sum_job.ts` once (in local mode, or submitted to the cluster
 * at `o.nats`) to its end and checks it: no restart, the sources' record
 * count and checksum, the sinks' update count and checksum against
 * `expectedUpdateChecksum()`, and in cluster mode that the subtasks ran in
 * exactly the processes `o.workerPids`. `bench/multihost.ts` runs it too.
 *
 * @returns Its rate (records per second, first record made to last update
 *   sunk), latencies and checkpoint figures.
 * @throws {Error} naming the expected and the received value when a check
 *   fails, or with the job's output when it fails.
 */
export async function runJob(o: RunOptions): Promise<Run> {
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
      "--keys",
      String(KEYS),
      "--report",
      dir,
    ]);
    const result = parseResultLine<JobResultLine>(out);
    expectEqual("restarts of the job", 0, result.restarts);
    const reports = await readReports(dir);
    const sources = reports.filter((r) => r.role === "source");
    const sinks = reports.filter((r) => r.role === "sink");
    const sum = (rs: typeof reports, f: (r: (typeof reports)[number]) => number) =>
      rs.reduce((n, r) => n + f(r), 0);
    expectEqual("records the sources made", o.records, sum(sources, (r) => r.records));
    expectEqual(
      "checksum of the sources (sum of the records made)",
      (o.records * (o.records - 1)) / 2,
      sum(sources, (r) => r.checksum),
    );
    expectEqual("updates the sinks received", o.records, sum(sinks, (r) => r.records));
    expectEqual(
      "checksum of the sinks (running sums received, mod 2^32)",
      expectedUpdateChecksum(o.records, KEYS),
      sinks.reduce((c, r) => addToChecksum(c, r.checksum), 0),
    );
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
      records: o.records,
      rate: o.rate,
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
      rounds: { type: "string", default: "3" },
      workers: { type: "string", default: "2" },
      slots: { type: "string", default: "1" },
      parallelism: { type: "string", default: "2" },
      fraction: { type: "string", default: "0.5" },
      "duration-s": { type: "string", default: "10" },
      "cpu-prof": { type: "string" },
    },
  });
  const records = Number(values.records);
  const parallelism = Number(values.parallelism);
  const fraction = Number(values.fraction);
  const durationS = Number(values["duration-s"]);
  const nats = await benchNats(values.nats);
  const cpuProfileDir = values["cpu-prof"];
  const workers = Number(values.workers);
  if (!Number.isInteger(workers) || workers < 1) {
    throw new RangeError(
      `--workers must be a positive integer: current value is ${values.workers}`,
    );
  }
  const cluster = new BenchCluster({
    nats: nats.url,
    workers,
    slots: Number(values.slots),
    cpuProfileDir,
  });
  const eps = (s: Sample<Run>) => s.value.recordsPerSecond;
  const epsCpu = (s: Sample<Run>) => s.value.records / (s.cpuMs / 1000);
  let rounds: Rounds<Run>;
  try {
    await cluster.start();
    const workerPids = Array.from({ length: workers }, (_, i) => cluster.workerPid(i));
    const base = { parallelism, workerPids };
    console.log(
      `keyed running sum, ${KEYS} keys, parallelism ${parallelism}, checkpoint every 1 s; ` +
        `NATS ${nats.url}${
          nats.private ? " (private server)" : ""
        }; coordinator + ${workers} worker(s) x ` +
        `${values.slots} slot(s); ${cpuScope(nats)}`,
    );
    rounds = await runRounds<Run>({
      rounds: Number(values.rounds),
      variants: [
        { name: "local", run: () => runJob({ ...base, records, rate: 0, nats: undefined }) },
        { name: "cluster", run: () => runJob({ ...base, records, rate: 0, nats: nats.url }) },
        {
          name: "fixed",
          run: ({ earlier }) => {
            const max = earlier.find((s) => s.variant === "cluster")!;
            const rate = fraction * max.value.recordsPerSecond;
            const n = Math.max(1, Math.round(rate * durationS));
            return runJob({ ...base, records: n, rate, nats: nats.url });
          },
        },
      ],
      onSample: (s) => {
        const what = s.variant === "local"
          ? "local, max rate:  "
          : s.variant === "cluster"
          ? "cluster, max rate:"
          : `cluster, fixed ${formatRate(s.value.rate)} (${100 * fraction}% of max):`;
        console.log(
          `round ${s.round}: ${what} ${describe(s.value)}; ` +
            `${formatRate(epsCpu(s), "records/CPU-s")} (${(s.cpuMs / 1000).toFixed(2)} s CPU)`,
        );
      },
    });
  } catch (error) {
    console.error(cluster.logs());
    throw error;
  } finally {
    await cluster.stop();
    await nats.stop();
  }
  const merged = (variant: string) => {
    const h = newLatencyHistogram();
    for (const s of rounds.samples(variant)) h.add(s.value.histogram);
    return h;
  };
  const [localH, maxH, fixedH] = [merged("local"), merged("cluster"), merged("fixed")];
  const rate = (variant: string) =>
    `${formatRate(rounds.median(variant, eps))} (${
      formatRate(rounds.median(variant, epsCpu), "records/CPU-s")
    })`;
  const ratio = rounds.ratio("cluster", "local", eps);
  const ratioCpu = rounds.ratio("cluster", "local", epsCpu);
  const target = median(rounds.samples("fixed").map((s) => s.value.rate));
  console.log(
    `over ${rounds.count} interleaved rounds (rates: medians; latencies: all rounds merged; ` +
      `every run's counts and checksums checked):`,
  );
  console.log(`local mode, max rate (baseline): ${rate("local")}; ${latencies(localH)}`);
  console.log(`cluster, max rate:               ${rate("cluster")}; ${latencies(maxH)}`);
  console.log(
    `cluster, fixed rate ${formatRate(target)} (${100 * fraction}% of max): ` +
      `${rate("fixed")} achieved; ${latencies(fixedH)}`,
  );
  console.log(`cluster / local, max rate, wall: ${formatRatio(ratio)}`);
  console.log(`cluster / local, max rate, CPU:  ${formatRatio(ratioCpu)}`);
  const p = (h: hdr.Histogram, q: number) => h.getValueAtPercentile(q) / 1000;
  console.log(resultLine({
    local_eps: rounds.median("local", eps),
    cluster_eps: rounds.median("cluster", eps),
    local_eps_cpu: rounds.median("local", epsCpu),
    cluster_eps_cpu: rounds.median("cluster", epsCpu),
    ratio: ratio.medianOfRatios,
    ratio_cpu: ratioCpu.medianOfRatios,
    max_p50_ms: p(maxH, 50),
    max_p99_ms: p(maxH, 99),
    fixed_eps: rounds.median("fixed", eps),
    fixed_eps_cpu: rounds.median("fixed", epsCpu),
    fixed_p50_ms: p(fixedH, 50),
    fixed_p99_ms: p(fixedH, 99),
    fixed_p999_ms: p(fixedH, 99.9),
    rounds: rounds.count,
  }));
  if (cpuProfileDir !== undefined) await printCpuProfiles(cpuProfileDir);
}

if (import.meta.main) await main();
