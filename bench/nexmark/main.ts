/**
 * The Nexmark harness: runs a query on the engine, then its hand-written
 * baseline over the same events, checks that both counted the same output,
 * and prints throughput, throughput per core and the ratio.
 *
 *     deno task nexmark --query q1 [--events 10000000] [--parallelism N]
 *         [--checkpoint-interval MS] [--nats URL] [--workers 2] [--slots 1]
 *     deno task nexmark --all [--events 2000000] [--chart bench/nexmark/results.svg]
 *
 * **Local mode** (default): the job runs in this process (one thread, so one
 * core), checkpointing every `--checkpoint-interval` ms (default 1000; 0
 * turns periodic checkpoints off, the final checkpoint stays) to a temporary
 * directory, into the exactly-once blackhole (`CountingTwoPhaseCommitSink`).
 * `eps` is events generated / wall time of `execute()`: it includes building
 * the JobGraph, deploying the subtasks, every checkpoint and the final
 * checkpoint with its commit (a few ms in all for local mode). Per core:
 * `eps` / 1.
 *
 * **Cluster mode** (`--nats URL`): the harness starts a coordinator and
 * `--workers` worker processes (`--slots` each) itself, on the NATS server
 * at URL (it does not use a running cluster; run no other Weir cluster on
 * that server), runs `job.ts` as the client, and stops them at the end.
 * `eps` is events / the job's duration as the coordinator reports it
 * (submission to finish: it includes deployment of the slot threads, about
 * 0.1–0.2 s). Cores used are measured: the CPU time (utime + stime from
 * `/proc/<pid>/stat`) of the coordinator and the worker processes over the
 * job, so `eps_per_core` = events / CPU seconds.
 *
 * The baseline (`baseline.ts`) runs after the engine, in this process. The
 * engine's committed output count must equal the baseline's: the harness
 * fails otherwise. dedup's count depends on the arrival order of a key's
 * bids, which parallelism > 1 does not fix: there the check is that the
 * count lies between the number of distinct (bidder, auction) keys and the
 * number of bids, both from the baseline.
 *
 * The last line is `RESULT query=… events=… eps=… eps_per_core=… baseline_eps=… ratio=…`
 * (`ratio` = eps_per_core / baseline_eps). `--all` runs every query, prints
 * a markdown table, writes the SVG chart and prints one `RESULT` line per
 * query.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { StreamExecutionEnvironment } from "../../mod.ts";
import { BenchCluster, runDeno } from "../_cluster_bench.ts";
import { type BaselineResult, runBaseline } from "./baseline.ts";
import { renderChart } from "./chart.ts";
import { type JobResultLine, type SinkReport } from "./job.ts";
import { isQueryName, newTally, QUERIES, QUERY_NAMES, type QueryName } from "./queries.ts";
import { join } from "node:path";

const JOB = fileURLToPath(new URL("./job.ts", import.meta.url));

/** One query's figures. */
interface QueryResult {
  readonly query: QueryName;
  readonly events: number;
  readonly count: number;
  readonly eps: number;
  readonly cores: number;
  readonly epsPerCore: number;
  readonly checkpoints: number;
  readonly baselineCount: number;
  readonly baselineEps: number;
}

interface RunOptions {
  readonly query: QueryName;
  readonly events: number;
  readonly parallelism: number;
  readonly checkpointInterval: number;
}

interface EngineRun {
  readonly count: number;
  readonly seconds: number;
  readonly cpuSeconds: number | undefined;
  readonly checkpoints: number;
}

function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** utime + stime of `pid` in seconds (`/proc/<pid>/stat`, clock ticks of 1/100 s). */
function cpuSecondsOf(pid: number | "self"): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // After "(comm)": state is field 3, utime field 14, stime field 15 (1-based).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function runLocal(o: RunOptions): Promise<EngineRun> {
  const directory = await Deno.makeTempDir({ prefix: "weir-nexmark-" });
  try {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(o.parallelism);
    if (o.checkpointInterval > 0) env.enableCheckpointing(o.checkpointInterval, { directory });
    else env.setCheckpointDirectory(directory);
    const tally = newTally();
    QUERIES[o.query](env, { source: { events: o.events }, tally });
    collectGarbage();
    const cpu0 = cpuSecondsOf("self");
    const t0 = performance.now();
    const result = await env.execute(`nexmark-${o.query}`);
    const seconds = (performance.now() - t0) / 1000;
    const cpuSeconds = cpuSecondsOf("self") - cpu0;
    if (tally.committed !== tally.records) {
      throw new Error(
        `nexmark ${o.query}: the sink received ${tally.records} records but committed ` +
          `${tally.committed} (${tally.transactions} transactions)`,
      );
    }
    return {
      count: tally.committed,
      seconds,
      cpuSeconds,
      checkpoints: result.checkpoints.completed,
    };
  } finally {
    await Deno.remove(directory, { recursive: true });
  }
}

async function runCluster(o: RunOptions, cluster: BenchCluster, nats: string): Promise<EngineRun> {
  const report = await Deno.makeTempDir({ prefix: "weir-nexmark-report-" });
  try {
    const pids = [cluster.coordinator!.child.pid, ...cluster.workers.map((w) => w.child.pid)];
    const cpu = () => pids.reduce((s, pid) => s + cpuSecondsOf(pid), 0);
    const cpu0 = cpu();
    const output = await runDeno(`nexmark-${o.query}`, [
      "run",
      "-A",
      JOB,
      "--nats",
      nats,
      "--query",
      o.query,
      "--events",
      String(o.events),
      "--parallelism",
      String(o.parallelism),
      "--checkpoint-interval",
      String(o.checkpointInterval),
      "--report",
      report,
    ]);
    const cpuSeconds = cpu() - cpu0;
    const line = output.split("\n").findLast((l) => l.startsWith("RESULT "));
    if (line === undefined) throw new Error(`nexmark ${o.query}: no RESULT line in:\n${output}`);
    const result = JSON.parse(line.slice("RESULT ".length)) as JobResultLine;
    const sinks: SinkReport[] = [];
    for await (const e of Deno.readDir(report)) {
      sinks.push(JSON.parse(await Deno.readTextFile(join(report, e.name))) as SinkReport);
    }
    if (sinks.length !== o.parallelism) {
      throw new Error(
        `nexmark ${o.query}: ${sinks.length} of ${o.parallelism} sink subtasks reported`,
      );
    }
    const records = sinks.reduce((s, r) => s + r.records, 0);
    const committed = sinks.reduce((s, r) => s + r.committed, 0);
    if (records !== committed || result.restarts !== 0) {
      throw new Error(
        `nexmark ${o.query}: sinks received ${records} records, committed ${committed}; ` +
          `restarts ${result.restarts}`,
      );
    }
    return {
      count: committed,
      seconds: result.durationMs / 1000,
      cpuSeconds,
      checkpoints: result.checkpoints,
    };
  } finally {
    await Deno.remove(report, { recursive: true });
  }
}

/** Counts of dedup at parallelism > 1 vary with arrival order: bounds instead of equality. */
function checkCount(o: RunOptions, engine: number, base: BaselineResult, bids: number): void {
  const baseline = base.count;
  if (o.query === "dedup" && o.parallelism > 1) {
    const least = base.distinctKeys ?? 0;
    if (engine < least || engine > bids) {
      throw new Error(
        `nexmark dedup: the engine counted ${engine} records, outside ${least} (distinct ` +
          `keys) .. ${bids} (bids) for ${o.events} events`,
      );
    }
    return;
  }
  if (engine !== baseline) {
    throw new Error(
      `nexmark ${o.query}: the engine counted ${engine} records, the baseline ${baseline}, ` +
        `for ${o.events} events`,
    );
  }
}

async function runQuery(
  o: RunOptions,
  cluster: { cluster: BenchCluster; nats: string } | undefined,
): Promise<QueryResult> {
  const engine = cluster === undefined
    ? await runLocal(o)
    : await runCluster(o, cluster.cluster, cluster.nats);
  collectGarbage();
  runBaseline(o.query, { events: Math.min(o.events, 200_000) }); // JIT warm-up
  const base = runBaseline(o.query, { events: o.events });
  const bids = o.query === "dedup" ? runBaseline("q0", { events: o.events }).count : 0;
  checkCount(o, engine.count, base, bids);
  const eps = o.events / engine.seconds;
  // Local mode runs on one thread; cluster mode: measured CPU seconds of all processes.
  const cores = cluster === undefined ? 1 : (engine.cpuSeconds ?? engine.seconds) / engine.seconds;
  const epsPerCore = eps / cores;
  console.log(
    `${o.query}: engine counted ${engine.count}, baseline ${base.count}; ` +
      `engine ${fmt(eps)} in ${engine.seconds.toFixed(2)} s (${engine.checkpoints} checkpoints, ` +
      `CPU ${engine.cpuSeconds?.toFixed(2)} s), baseline ${fmt(base.eps)} in ` +
      `${(base.ms / 1000).toFixed(2)} s`,
  );
  return {
    query: o.query,
    events: o.events,
    count: engine.count,
    eps,
    cores,
    epsPerCore,
    checkpoints: engine.checkpoints,
    baselineCount: base.count,
    baselineEps: base.eps,
  };
}

const fmt = (eps: number) => `${(eps / 1e6).toFixed(3)}M events/s`;

function resultLine(r: QueryResult): string {
  return `RESULT query=${r.query} events=${r.events} eps=${Math.round(r.eps)} ` +
    `eps_per_core=${Math.round(r.epsPerCore)} baseline_eps=${Math.round(r.baselineEps)} ` +
    `ratio=${(r.epsPerCore / r.baselineEps).toFixed(3)}`;
}

function table(rows: readonly QueryResult[]): string {
  const lines = [
    "| query | events | output | engine events/s | cores | events/s per core | baseline events/s | engine / baseline | checkpoints |",
    "| ----- | -----: | -----: | --------------: | ----: | ----------------: | ----------------: | ----------------: | ----------: |",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.query} | ${r.events} | ${r.count} | ${Math.round(r.eps)} | ${r.cores.toFixed(2)} | ` +
        `${Math.round(r.epsPerCore)} | ${Math.round(r.baselineEps)} | ` +
        `${(100 * r.epsPerCore / r.baselineEps).toFixed(1)}% | ${r.checkpoints} |`,
    );
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      query: { type: "string", default: "q1" },
      all: { type: "boolean", default: false },
      events: { type: "string" },
      parallelism: { type: "string", default: "1" },
      "checkpoint-interval": { type: "string", default: "1000" },
      nats: { type: "string" },
      workers: { type: "string", default: "2" },
      slots: { type: "string", default: "1" },
      chart: { type: "string", default: fileURLToPath(new URL("./results.svg", import.meta.url)) },
    },
  });
  const queries: QueryName[] = values.all ? [...QUERY_NAMES] : [];
  if (!values.all) {
    if (!isQueryName(values.query)) {
      throw new Error(
        `Unknown --query '${values.query}': expected one of ${QUERY_NAMES.join(", ")}`,
      );
    }
    queries.push(values.query);
  }
  const events = Number(values.events ?? (values.all ? 2_000_000 : 10_000_000));
  const parallelism = Number(values.parallelism);
  const checkpointInterval = Number(values["checkpoint-interval"]);
  let cluster: BenchCluster | undefined;
  const results: QueryResult[] = [];
  try {
    if (values.nats !== undefined) {
      cluster = new BenchCluster({
        nats: values.nats,
        workers: Number(values.workers),
        slots: Number(values.slots),
      });
      await cluster.start();
    }
    const mode = cluster === undefined
      ? "local mode (one thread)"
      : `cluster mode (${values.workers} workers x ${values.slots} slots, NATS ${values.nats})`;
    console.log(
      `Nexmark, ${events} events per query, parallelism ${parallelism}, ${mode}, ` +
        `checkpoint interval ${checkpointInterval} ms, exactly-once blackhole sink`,
    );
    for (const query of queries) {
      const o = { query, events, parallelism, checkpointInterval };
      results.push(
        await runQuery(o, cluster === undefined ? undefined : { cluster, nats: values.nats! }),
      );
    }
  } catch (error) {
    if (cluster !== undefined) console.error(cluster.logs());
    throw error;
  } finally {
    await cluster?.stop();
  }
  if (values.all) {
    console.log(table(results));
    const title = `Nexmark on Weir, ${events} events, parallelism ${parallelism}, ` +
      `checkpoint every ${checkpointInterval} ms`;
    await Deno.writeTextFile(
      values.chart,
      renderChart(
        results.map((r) => ({ query: r.query, engine: r.epsPerCore, baseline: r.baselineEps })),
        title,
      ),
    );
    // Keep the committed chart in `deno fmt`'s style, so `deno task ok` stays clean.
    await new Deno.Command(Deno.execPath(), { args: ["fmt", "-q", values.chart] }).output();
    console.log(`chart written to ${values.chart}`);
  }
  for (const r of results) console.log(resultLine(r));
}

if (import.meta.main) await main();
