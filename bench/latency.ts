/**
 * End-to-end latency in cluster mode at half of the maximum load, with a
 * checkpoint every second and a sink that is not transactional.
 *
 *     deno task bench:latency [--max-records 3000000] [--max-runs 3] [--duration-s 10] [--rounds 2]
 *         [--fraction 0.5] [--variants bt10,bt10-cr32]
 *         [--workers 2] [--slots 1] [--nats URL] [--cpu-prof DIR] [--gc-trace] [--max-eps R]
 *
 * The job is `bench/latency_job.ts`: a rate-limited sequence source, a
 * chained map stamping each record with its emission time, `keyBy` over the
 * data plane, a keyed running sum, a chained `SinkFunction` recording `now -
 * stamp` of every update in an HdrHistogram (µs). Parallelism 2 over two
 * worker processes (a slot each): about half of the records cross from one
 * process to the other through NATS. Checkpoints (every 1 s, to the
 * cluster's NATS Object Store bucket) are aligned exactly-once checkpoints
 * of the sum's keyed state; the sink takes no part in them.
 *
 * ## Runs
 *
 * 1. **max**, `--max-runs` times (3): the job as fast as the source goes
 *    (`--max-records`), buffer timeout 10 ms. The median of their rates
 *    (records / (last update sunk - first record made)) is the maximum
 *    sustainable load: a faster source only waits for credit (back
 *    pressure), it cannot push more through.
 *    `--max-eps R` skips these runs and takes R records/s as the maximum:
 *    to compare two trees at one and the same rate, in separate invocations
 *    (the figure is then not this run's maximum, and the output says so).
 * 2. **fixed**, `--rounds` rounds of every variant of `--variants`: the
 *    source limited to `--fraction` (0.5) of that maximum for `--duration-s`
 *    seconds, latencies recorded after a 1 s warm-up. A variant's name says
 *    what it changes: `bt<T>`: buffer timeout T ms (Flink's
 *    `setBufferTimeout`); `-cr<N>`: N credits (buffers in flight) per channel
 *    instead of 8; `-nocp`: no periodic checkpoint; `-alo`: at-least-once
 *    checkpoints (barriers not aligned, no input channel blocked). `bt10` is
 *    the default configuration; comparing variants shows what dominates.
 *
 * Rounds interleave the variants (`runRounds` of `_rounds.ts`); a run's rate
 * is checked to reach 95% of its target, or the run is reported as not
 * sustained. Latencies are merged over the rounds (HdrHistogram `add`) and
 * printed as p50, p99, p99.9 and max, in ms. Every run is checked like
 * `cluster_keyed_sum.ts` checks its runs: the sources made every number
 * once (count and sum), and the sinks' count and checksum of running sums
 * equal `expectedUpdateChecksum()` (`jobs/_report.ts`), so a lost or
 * duplicated record fails the benchmark.
 *
 * Each fixed run also prints where its slow (> 20 ms) updates fall: the
 * sinks' latencies per 50-ms window (`latency_job.ts`) overlaid on the
 * trigger times of the checkpoints the coordinator logged
 * (`latency_timeline.ts`: the share of slow updates in the 250 ms after a
 * trigger against the share of time those windows cover, and the worst
 * windows with their distance to the latest trigger). With `--gc-trace` the
 * workers run with `DENO_V8_FLAGS=--trace-gc` and each run prints the GC
 * pauses of every isolate (main and slot threads) during it
 * (`latency_gc.ts`).
 *
 * With `--cpu-prof DIR`, the worker processes write V8 CPU profiles there
 * (one per thread) and the top self-time functions of each are printed.
 *
 * The last line is `RESULT max_eps=… target_eps=… <variant>_p50_ms=…
 * <variant>_p99_ms=… <variant>_p999_ms=… <variant>_max_ms=… <variant>_eps=…
 * rounds=…` with `-` in variant names written `_`. Nothing is asserted on time.
 * The load averages are printed before and after.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as hdr from "npm:hdr-histogram-js@3.0.1";
import {
  BenchCluster,
  benchNats,
  parseResultLine,
  printCpuProfiles,
  runDeno,
} from "./_cluster_bench.ts";
import { expectEqual, resultLine } from "./_result.ts";
import { formatRate, median, runRounds, type Sample, type Variant } from "./_rounds.ts";
import { addToChecksum, expectedUpdateChecksum, readReports } from "./jobs/_report.ts";
import { newLatencyHistogram } from "./jobs/keyed_sum_job.ts";
import type { LatencyTimeline } from "./latency_job.ts";
import { describeGcPauses, parseGcTrace } from "./latency_gc.ts";
import {
  checkpointTriggerTimes,
  describeOverlay,
  overlayTimeline,
  steadyRate,
} from "./latency_timeline.ts";

const JOB = fileURLToPath(new URL("./latency_job.ts", import.meta.url));
const KEYS = 10_000;
const PARALLELISM = 2;

/** The variants run at the fixed rate unless `--variants` says otherwise. */
const DEFAULT_VARIANTS = "bt10,bt10-cr32";

/** What a variant name sets (see the module docs). */
export interface VariantSettings {
  /** Buffer timeout, ms. */
  readonly bufferTimeoutMs: number;
  /** Credits (buffers in flight) per channel. */
  readonly credits: number;
  /** Periodic checkpoint interval, ms; 0: none. */
  readonly checkpointMs: number;
  /** Checkpointing mode. */
  readonly mode: "exactly-once" | "at-least-once";
}

/**
 * Parses a variant name: `bt<T>` (buffer timeout T ms), then optionally
 * `-cr<N>` (N credits per channel; default 8), `-nocp` (no periodic
 * checkpoint), `-alo` (at-least-once checkpoints).
 * @throws {RangeError} naming the variant when it does not parse.
 */
export function parseVariant(name: string): VariantSettings {
  const m = /^bt(\d+)(?:-cr(\d+))?(-nocp|-alo)?$/.exec(name);
  if (m === null || (m[2] !== undefined && Number(m[2]) < 1)) {
    throw new RangeError(
      `a latency variant must be bt<ms>[-cr<credits>][-nocp|-alo], e.g. bt10-cr32: ` +
        `current value is '${name}'`,
    );
  }
  return {
    bufferTimeoutMs: Number(m[1]),
    credits: m[2] === undefined ? 8 : Number(m[2]),
    checkpointMs: m[3] === "-nocp" ? 0 : 1000,
    mode: m[3] === "-alo" ? "at-least-once" : "exactly-once",
  };
}

/** One run of the latency job. */
interface Run {
  readonly records: number;
  /** Target rate, records/s; 0: as fast as it goes. */
  readonly rate: number;
  /** Records per second, first record made to last update sunk. */
  readonly recordsPerSecond: number;
  /** Updates per second the sinks received after the warm-up (`steadyRate`), 0 when unknown. */
  readonly steadyRecordsPerSecond: number;
  /** End-to-end latencies, µs. */
  readonly histogram: hdr.Histogram;
  readonly checkpoints: number;
  /** Lateness of a 1 ms timer in this (otherwise idle) process during the run, µs. */
  readonly timerLateness: hdr.Histogram;
  /** Where the slow updates fall relative to checkpoint triggers (`latency_timeline.ts`). */
  readonly overlay: string;
  /** The workers' GC pauses during the run (`--gc-trace`), else `""`. */
  readonly gc: string;
}

/** How long after a checkpoint trigger counts as "after a checkpoint" in the overlay, ms. */
const OVERLAY_SPAN_MS = 250;

/**
 * A control for the machine's scheduling noise: a 1 ms `setInterval` in
 * this process, which does nothing else while a job runs, recording how
 * late each tick came (gap - 1 ms) in µs. When this process's timer is
 * 30 ms late, the job's threads, which share the same cores, are delayed
 * alike, whatever the engine does.
 */
class TimerProbe {
  readonly histogram: hdr.Histogram = newLatencyHistogram();
  #last = performance.now();
  readonly #timer = setInterval(() => {
    const now = performance.now();
    this.histogram.recordValue(Math.max(1, Math.round((now - this.#last - 1) * 1000)));
    this.#last = now;
  }, 1);

  stop(): hdr.Histogram {
    clearInterval(this.#timer);
    return this.histogram;
  }
}

interface RunOptions {
  readonly nats: string;
  readonly records: number;
  readonly rate: number;
  readonly bufferTimeoutMs: number;
  readonly checkpointMs: number;
  /** Checkpointing mode. */
  readonly mode: "exactly-once" | "at-least-once";
  /** Credits (buffers in flight) per channel. */
  readonly credits: number;
  /** The coordinator's output so far (its checkpoint log lines give the trigger times). */
  readonly coordinatorOutput: () => string;
  /** The workers' output so far (`--trace-gc` lines), or `undefined` without `--gc-trace`. */
  readonly workerOutput: (() => string[]) | undefined;
}

async function runJob(o: RunOptions): Promise<Run> {
  const dir = await Deno.makeTempDir({ prefix: "weir-bench-latency-" });
  const probe = new TimerProbe();
  const workerOutputBefore = o.workerOutput?.().map((out) => out.length) ?? [];
  try {
    const out = await runDeno("latency job", [
      "run",
      "-A",
      JOB,
      "--nats",
      o.nats,
      "--records",
      String(o.records),
      "--rate",
      String(Math.round(o.rate)),
      "--parallelism",
      String(PARALLELISM),
      "--keys",
      String(KEYS),
      "--checkpoint-ms",
      String(o.checkpointMs),
      "--buffer-timeout-ms",
      String(o.bufferTimeoutMs),
      "--checkpointing-mode",
      o.mode,
      "--credits",
      String(o.credits),
      "--report",
      dir,
    ]);
    const result = parseResultLine<{ restarts: number; checkpoints: number }>(out);
    expectEqual("restarts of the latency job", 0, result.restarts);
    const reports = await readReports(dir);
    const sources = reports.filter((r) => r.role === "source");
    const sinks = reports.filter((r) => r.role === "sink");
    const sum = (rs: typeof reports, f: (r: (typeof reports)[number]) => number) =>
      rs.reduce((n, r) => n + f(r), 0);
    expectEqual("records the sources made", o.records, sum(sources, (r) => r.records));
    expectEqual(
      "checksum of the sources (sum of the numbers made)",
      (o.records * (o.records - 1)) / 2,
      sum(sources, (r) => r.checksum),
    );
    expectEqual("updates the sinks received", o.records, sum(sinks, (r) => r.records));
    expectEqual(
      "checksum of the sinks (running sums received, mod 2^32)",
      expectedUpdateChecksum(o.records, KEYS),
      sinks.reduce((c, r) => addToChecksum(c, r.checksum), 0),
    );
    const firstMs = Math.min(...sources.filter((r) => r.records > 0).map((r) => r.firstMs));
    const lastMs = Math.max(...sinks.map((r) => r.lastMs));
    const histogram = newLatencyHistogram();
    for (const sink of sinks) histogram.add(hdr.decodeFromCompressedBase64(sink.histogram!));
    const timelines: LatencyTimeline[] = [];
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name.endsWith(".tl")) {
        timelines.push(JSON.parse(await Deno.readTextFile(`${dir}/${entry.name}`)));
      }
    }
    const overlay = describeOverlay(
      overlayTimeline(timelines, checkpointTriggerTimes(o.coordinatorOutput()), OVERLAY_SPAN_MS),
      OVERLAY_SPAN_MS,
    );
    return {
      records: o.records,
      rate: o.rate,
      recordsPerSecond: o.records / ((lastMs - firstMs) / 1000),
      steadyRecordsPerSecond: steadyRate(timelines) ?? 0,
      histogram,
      checkpoints: result.checkpoints,
      timerLateness: probe.stop(),
      overlay,
      gc: o.workerOutput === undefined ? "" : describeGcPauses(parseGcTrace(
        o.workerOutput().map((out, i) => out.slice(workerOutputBefore[i] ?? 0)).join("\n"),
      )),
    };
  } finally {
    probe.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

/** `p50 1.23 ms, p99 4.56 ms, p99.9 7.89 ms, max 12.3 ms (n = 123)`. */
function latencies(h: hdr.Histogram): string {
  const ms = (p: number) => (h.getValueAtPercentile(p) / 1000).toFixed(2);
  return `p50 ${ms(50)} ms, p99 ${ms(99)} ms, p99.9 ${ms(99.9)} ms, ` +
    `max ${(h.maxValue / 1000).toFixed(1)} ms (n = ${h.totalCount})`;
}

/**
 * The median and max of the durations the coordinator logged for each
 * completed checkpoint of every run (`latest #N in D ms, … (sync S ms,
 * async A ms, alignment L ms)`: the slowest subtask's of each part).
 */
function checkpointSummary(coordinatorOutput: string): string {
  const parts = {
    total: [] as number[],
    sync: [] as number[],
    async: [] as number[],
    alignment: [] as number[],
  };
  const re = /latest #\d+ in (\d+) ms, [^(]*\(sync (\d+) ms, async (\d+) ms, alignment (\d+) ms\)/g;
  for (const m of coordinatorOutput.matchAll(re)) {
    parts.total.push(Number(m[1]));
    parts.sync.push(Number(m[2]));
    parts.async.push(Number(m[3]));
    parts.alignment.push(Number(m[4]));
  }
  const stat = (xs: number[]) => `median ${median(xs)} ms, max ${Math.max(...xs)} ms`;
  return parts.total.length === 0
    ? "checkpoints: the coordinator logged none completed"
    : `checkpoints of all runs (${parts.total.length}; the slowest subtask's part of each): ` +
      `duration ${stat(parts.total)}; sync ${stat(parts.sync)}; async ${stat(parts.async)}; ` +
      `alignment ${stat(parts.alignment)}`;
}

async function loadAverage(): Promise<string> {
  try {
    return (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

function positive(name: string, text: string): number {
  const v = Number(text);
  if (!(Number.isFinite(v) && v > 0)) {
    throw new RangeError(`--${name} must be a positive number: current value is ${text}`);
  }
  return v;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      nats: { type: "string" },
      "max-records": { type: "string", default: "3000000" },
      "max-runs": { type: "string", default: "3" },
      "max-eps": { type: "string" },
      "duration-s": { type: "string", default: "10" },
      rounds: { type: "string", default: "2" },
      fraction: { type: "string", default: "0.5" },
      variants: { type: "string", default: DEFAULT_VARIANTS },
      workers: { type: "string", default: "2" },
      slots: { type: "string", default: "1" },
      "cpu-prof": { type: "string" },
      "gc-trace": { type: "boolean", default: false },
    },
  });
  const maxRecords = positive("max-records", values["max-records"]);
  const durationS = positive("duration-s", values["duration-s"]);
  const fraction = positive("fraction", values.fraction);
  const names = values.variants.split(",");
  names.forEach(parseVariant); // fail before starting anything
  const nats = await benchNats(values.nats);
  const workers = positive("workers", values.workers);
  const cpuProfileDir = values["cpu-prof"];
  const cluster = new BenchCluster({
    nats: nats.url,
    workers,
    slots: Number(values.slots),
    cpuProfileDir,
    env: values["gc-trace"] ? { DENO_V8_FLAGS: "--trace-gc" } : {},
  });
  let maxEps = 0;
  const coordinatorOutput = () => cluster.coordinator?.output ?? "";
  // Worker processes are started in order and never restarted: their outputs only grow.
  const workerOutput = values["gc-trace"] ? () => cluster.workers.map((w) => w.output) : undefined;
  const variants: Variant<Run>[] = names.map((name) => {
    const settings = parseVariant(name);
    return {
      name,
      run: () => {
        const rate = fraction * maxEps;
        const records = Math.max(1, Math.round(rate * durationS));
        return runJob({
          nats: nats.url,
          records,
          rate,
          ...settings,
          coordinatorOutput,
          workerOutput,
        });
      },
    };
  });
  const describe = (s: Sample<Run>) => {
    const r = s.value;
    const target = r.rate === 0 ? "as fast as it goes" : `target ${formatRate(r.rate)}`;
    const kept = r.rate === 0 || r.recordsPerSecond >= 0.95 * r.rate ? "" : " NOT SUSTAINED";
    return `round ${s.round} ${s.variant} (${target}): ${formatRate(r.recordsPerSecond)}${kept} ` +
      `(after the warm-up ${formatRate(r.steadyRecordsPerSecond)}), ` +
      `${r.checkpoints} checkpoints; ${latencies(r.histogram)}; timer lateness p99 ` +
      `${(r.timerLateness.getValueAtPercentile(99) / 1000).toFixed(2)} ms\n  ${r.overlay}${
        r.gc === "" ? "" : `\n  ${r.gc}`
      }`;
  };
  console.log(
    `latency: keyed running sum, ${KEYS} keys, parallelism ${PARALLELISM}, coordinator + ` +
      `${workers} worker(s) x ${values.slots} slot(s), NATS ${nats.url}` +
      `${nats.private ? " (private)" : ""}; checkpoint every 1 s; sink not transactional; ` +
      `load average ${await loadAverage()}`,
  );
  let rounds;
  try {
    await cluster.start();
    if (values["max-eps"] !== undefined) {
      maxEps = positive("max-eps", values["max-eps"]);
      console.log(
        `maximum load given (--max-eps, not measured): ${formatRate(maxEps)}; the variants run ` +
          `at ${formatRate(fraction * maxEps)}`,
      );
    } else {
      const max = await runRounds<Run>({
        rounds: positive("max-runs", values["max-runs"]),
        variants: [{
          name: "max",
          run: () =>
            runJob({
              nats: nats.url,
              records: maxRecords,
              rate: 0,
              ...parseVariant("bt10"),
              coordinatorOutput,
              workerOutput,
            }),
        }],
        onSample: (s) => console.log(describe(s)),
      });
      maxEps = max.median("max", (s) => s.value.recordsPerSecond);
      const steady = max.median("max", (s) => s.value.steadyRecordsPerSecond);
      console.log(
        `maximum sustainable load: ${formatRate(maxEps)} (median of ${max.count} runs; after ` +
          `the warm-up alone ${formatRate(steady)}); the variants run at ` +
          `${formatRate(fraction * maxEps)}`,
      );
    }
    rounds = await runRounds<Run>({
      rounds: positive("rounds", values.rounds),
      variants,
      onSample: (s) => console.log(describe(s)),
    });
    console.log(checkpointSummary(cluster.coordinator?.output ?? ""));
  } catch (error) {
    console.error(cluster.logs());
    throw error;
  } finally {
    await cluster.stop();
    await nats.stop();
  }
  console.log(`load average after: ${await loadAverage()}`);
  if (cpuProfileDir !== undefined) await printCpuProfiles(cpuProfileDir);
  const fields: Record<string, number> = {
    max_eps: maxEps,
    target_eps: fraction * maxEps,
  };
  console.log(
    `over ${rounds.count} rounds (rates: medians; latencies: rounds merged; every run's counts ` +
      `and checksums checked); maximum sustainable load ${formatRate(maxEps)}`,
  );
  for (const v of variants) {
    const h = newLatencyHistogram();
    const late = newLatencyHistogram();
    for (const s of rounds.samples(v.name)) {
      h.add(s.value.histogram);
      late.add(s.value.timerLateness);
    }
    const eps = rounds.median(v.name, (s) => s.value.recordsPerSecond);
    console.log(
      `${v.name} at ${100 * fraction}% of max: ${formatRate(eps)}; ${latencies(h)}; ` +
        `timer lateness p99 ${(late.getValueAtPercentile(99) / 1000).toFixed(2)} ms, p99.9 ` +
        `${(late.getValueAtPercentile(99.9) / 1000).toFixed(2)} ms`,
    );
    const key = v.name.replaceAll("-", "_");
    fields[`${key}_eps`] = eps;
    fields[`${key}_p50_ms`] = h.getValueAtPercentile(50) / 1000;
    fields[`${key}_p99_ms`] = h.getValueAtPercentile(99) / 1000;
    fields[`${key}_p999_ms`] = h.getValueAtPercentile(99.9) / 1000;
    fields[`${key}_max_ms`] = h.maxValue / 1000;
    fields[`${key}_timer_p99_ms`] = late.getValueAtPercentile(99) / 1000;
  }
  fields.rounds = rounds.count;
  console.log(resultLine(fields));
}

if (import.meta.main) await main();
