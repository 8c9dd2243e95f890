/**
 * The Nexmark harness: runs a query on the engine and its hand-written
 * baseline over the same events, in alternating rounds, checks in every
 * round that both output exactly the same number of records, and prints the
 * medians of throughput, throughput per CPU second and their ratio.
 *
 *     deno task nexmark --query q1 [--events 10000000] [--rounds 3] [--parallelism N]
 *         [--checkpoint-interval MS] [--nats URL] [--workers 2] [--slots 1]
 *     deno task nexmark --all [--events 2000000] [--rounds 3] [--chart bench/nexmark/results.svg]
 *     deno task nexmark --query q5 --sql [--check] [--events N] [--rounds 3] [--parallelism N]
 *     deno task nexmark --all --sql [--events 2000000]
 *
 * `--sql` runs the query's SQL version (`sql/q5.sql`) against its
 * DataStream version instead of the hand-written baseline, and checks
 * that both give as many rows (`--check`: the same rows, by checksum; see
 * `sql_run.ts`).
 *
 * ## Rounds
 *
 * Each of `--rounds` rounds (default 3) runs the engine, then the baseline
 * (engine, baseline, engine, baseline, …; `runRounds` of `../_rounds.ts`,
 * with a garbage collection before each run), so a change in the machine's
 * load during the run falls on both sides. The figures printed are medians
 * over the rounds, and the ratio is the median of the rounds' ratios
 * (`report.ts`). Round 1 includes both sides' JIT warm-up; with 3 rounds or
 * more the median leaves it out.
 *
 * ## What is measured
 *
 * - `eps`: events generated / the engine's wall time.
 * - `eps_per_core`: events / the CPU seconds of the engine's run, in both
 *   modes, so local and cluster figures compare, and a machine busy with
 *   other work lowers `eps` but hardly `eps_per_core`.
 * - `baseline_eps`, `baseline_eps_per_core`: the same for the baseline loop
 *   (`baseline.ts`), which runs in this process on one thread.
 * - `ratio`: `eps_per_core / baseline_eps_per_core`, events per CPU second
 *   against events per CPU second: the share of the hand-written ceiling the
 *   engine reaches.
 *
 * CPU time is `readCpu()` of `../_rounds.ts` around each run: this process
 * (all its threads: the engine's, V8's GC and compiler threads) and every
 * process it started (cluster mode's coordinator, workers and client).
 *
 * **Local mode** (default): the job runs in this process, checkpointing every
 * `--checkpoint-interval` ms (default 1000; 0 turns periodic checkpoints
 * off, the final checkpoint stays) to a temporary directory, into the
 * exactly-once blackhole (`CountingTwoPhaseCommitSink`). Wall time is that
 * of `execute()`: it includes building the JobGraph, deploying the subtasks,
 * every checkpoint and the final checkpoint with its commit (a few ms in all).
 *
 * **Cluster mode** (`--nats URL`): the harness starts a coordinator and
 * `--workers` worker processes (`--slots` each) itself, on the NATS server
 * at URL (it does not use a running cluster; run no other Weir cluster on
 * that server; the server's own CPU is not counted), runs `job.ts` as the
 * client once per round, and stops them at the end. Wall time is the job's
 * duration as the coordinator reports it (submission to finish: it includes
 * deployment of the slot threads, about 0.1–0.2 s); CPU time covers the
 * client process's whole life (start-up included).
 *
 * ## The check
 *
 * In every round, the records the engine's sinks committed must equal the
 * records the baseline emitted, and the sinks must have committed every
 * record they received: the harness fails otherwise, before printing any
 * figure. Every query's count is a function of the events alone, at any
 * parallelism (dedup keeps the first bid per key, see `queries.ts`), so the
 * check is equality for all of them. For the windowed queries (q5, q7, q8,
 * q11) the sum mod 2^32 of a hash per committed record must also equal the
 * baseline's (`windowed_rows.ts`): the same records, not only as many. The
 * updating queries (q4, q6) emit changelogs whose length depends on arrival
 * order; their sinks count each change with its sign and hash it signed,
 * so the count and checksum compared are those of the table the changelog
 * folds to, against the baseline's final table (`q4_q6_baseline.ts`).
 *
 * ## Output
 *
 * One line per run, then per query (figures = medians)
 * `RESULT query=… events=… output=… eps=… eps_per_core=… baseline_eps=… baseline_eps_per_core=… ratio=… rounds=N`.
 * `--all` runs every query and, before the `RESULT` lines, prints a markdown
 * table and writes the SVG chart (engine and baseline events per CPU second).
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { StreamExecutionEnvironment } from "../../mod.ts";
import { BenchCluster, parseResultLine, runDeno } from "../_cluster_bench.ts";
import { expectEqual, resultLine } from "../_result.ts";
import { runRounds, type Sample } from "../_rounds.ts";
import { runBaseline } from "./baseline.ts";
import { renderChart } from "./chart.ts";
import { isUpdatingQueryName } from "./q4_q6_baseline.ts";
import { sqlMain } from "./sql_run.ts";
import type { JobResultLine, SinkReport } from "./job.ts";
import { isQueryName, newTally, QUERIES, QUERY_NAMES, type QueryName } from "./queries.ts";
import {
  BASELINE,
  ENGINE,
  type QueryResult,
  resultFields,
  type RunFigures,
  summarize,
  table,
} from "./report.ts";

const JOB = fileURLToPath(new URL("./job.ts", import.meta.url));

/** A run's figures plus the checksum of its output (0 for queries without a record hash). */
interface CheckedFigures extends RunFigures {
  /** Sum mod 2^32 of the output records' hashes (`windowed_rows.ts`); 0 without a hash. */
  readonly checksum: number;
}

/** A cluster the harness started, to run cluster-mode rounds on. */
export interface ClusterTarget {
  /** The coordinator and workers, children of this process. */
  readonly cluster: BenchCluster;
  /** The NATS URL the client connects to. */
  readonly nats: string;
}

/** What {@linkcode runQuery} runs. */
export interface RunQueryOptions {
  /** The query. */
  readonly query: QueryName;
  /** Events generated per run (event numbers `0..events-1`). */
  readonly events: number;
  /** The job's parallelism (default 1). */
  readonly parallelism?: number;
  /** Periodic checkpoint interval, ms; 0: only the final checkpoint (default 1000). */
  readonly checkpointInterval?: number;
  /** Rounds, each an engine run then a baseline run (default 3). */
  readonly rounds?: number;
  /** Run the engine on this cluster (default: local mode, in this process). */
  readonly cluster?: ClusterTarget;
  /** Where the per-round lines go (default `console.log`). */
  readonly log?: (line: string) => void;
}

interface Resolved {
  readonly query: QueryName;
  readonly events: number;
  readonly parallelism: number;
  readonly checkpointInterval: number;
}

function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function runLocal(o: Resolved): Promise<CheckedFigures> {
  const directory = await Deno.makeTempDir({ prefix: "weir-nexmark-" });
  try {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(o.parallelism);
    if (o.checkpointInterval > 0) env.enableCheckpointing(o.checkpointInterval, { directory });
    else env.setCheckpointDirectory(directory);
    const tally = newTally();
    QUERIES[o.query](env, { source: { events: o.events }, tally });
    const t0 = performance.now();
    const result = await env.execute(`nexmark-${o.query}`);
    const seconds = (performance.now() - t0) / 1000;
    if (tally.committed !== tally.records) {
      throw new Error(
        `nexmark ${o.query}: the sink received ${tally.records} records but committed ` +
          `${tally.committed} (${tally.transactions} transactions)`,
      );
    }
    return {
      count: isUpdatingQueryName(o.query) ? tally.net : tally.committed,
      checksum: tally.checksum,
      seconds,
      checkpoints: result.checkpoints.completed,
    };
  } finally {
    await Deno.remove(directory, { recursive: true });
  }
}

async function runCluster(o: Resolved, target: ClusterTarget): Promise<CheckedFigures> {
  const report = await Deno.makeTempDir({ prefix: "weir-nexmark-report-" });
  try {
    const output = await runDeno(`nexmark-${o.query}`, [
      "run",
      "-A",
      JOB,
      "--nats",
      target.nats,
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
    const result = parseResultLine<JobResultLine>(output);
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
    const checksum = sinks.reduce((s, r) => (s + r.checksum) >>> 0, 0);
    const net = sinks.reduce((s, r) => s + r.net, 0);
    return {
      count: isUpdatingQueryName(o.query) ? net : committed,
      checksum,
      seconds: result.durationMs / 1000,
      checkpoints: result.checkpoints,
    };
  } finally {
    await Deno.remove(report, { recursive: true });
  }
}

const millions = (eps: number) => `${(eps / 1e6).toFixed(3)}M`;

function positiveInteger(name: string, value: number): number {
  if (!(Number.isSafeInteger(value) && value > 0)) {
    throw new RangeError(
      `Cannot run Nexmark as '${name}' must be a positive integer: current value is ${value}`,
    );
  }
  return value;
}

function describe(o: Resolved, s: Sample<RunFigures>, rounds: number): string {
  const cpuSeconds = s.cpuMs / 1000;
  return `${o.query} round ${s.round}/${rounds} ${s.variant}: output ${s.value.count}, ` +
    `${s.value.seconds.toFixed(2)} s, CPU ${cpuSeconds.toFixed(2)} s, ` +
    `${millions(o.events / cpuSeconds)} events per CPU s` +
    (s.variant === ENGINE ? `, ${s.value.checkpoints} checkpoints` : "");
}

/**
 * Runs `options.rounds` rounds of `options.query` (engine, then baseline),
 * checks each and logs one line per run.
 * @returns the medians over the rounds.
 * @throws {Error} when a round's engine and baseline counts (or, for a
 *   windowed query, checksums) differ, or the engine's sinks did not commit
 *   every record they received.
 * @throws {RangeError} when `events`, `parallelism` or `rounds` is not a
 *   positive integer, or a run measured no CPU time.
 */
export async function runQuery(options: RunQueryOptions): Promise<QueryResult> {
  const o: Resolved = {
    query: options.query,
    events: positiveInteger("events", options.events),
    parallelism: positiveInteger("parallelism", options.parallelism ?? 1),
    checkpointInterval: options.checkpointInterval ?? 1000,
  };
  const count = options.rounds ?? 3;
  const log = options.log ?? console.log;
  const { cluster } = options;
  const rounds = await runRounds<CheckedFigures>({
    rounds: count,
    before: collectGarbage,
    variants: [
      { name: ENGINE, run: () => cluster === undefined ? runLocal(o) : runCluster(o, cluster) },
      {
        name: BASELINE,
        run: ({ round, earlier }) => {
          const base = runBaseline(o.query, { events: o.events });
          expectEqual(
            `nexmark ${o.query}, ${o.events} events, round ${round}: records the engine ` +
              `committed (expected: as many as the baseline emitted)`,
            base.count,
            earlier[0]!.value.count,
          );
          if (base.checksum !== undefined) {
            expectEqual(
              `nexmark ${o.query}, ${o.events} events, round ${round}: checksum of the records ` +
                `the engine committed (expected: the baseline's)`,
              base.checksum,
              earlier[0]!.value.checksum,
            );
          }
          return {
            count: base.count,
            checksum: base.checksum ?? 0,
            seconds: base.seconds,
            checkpoints: 0,
          };
        },
      },
    ],
    onSample: (s) => log(describe(o, s, count)),
  });
  return summarize({ query: o.query, events: o.events, rounds });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      query: { type: "string", default: "q1" },
      all: { type: "boolean", default: false },
      events: { type: "string" },
      rounds: { type: "string", default: "3" },
      parallelism: { type: "string", default: "1" },
      "checkpoint-interval": { type: "string", default: "1000" },
      nats: { type: "string" },
      workers: { type: "string", default: "2" },
      slots: { type: "string", default: "1" },
      chart: { type: "string", default: fileURLToPath(new URL("./results.svg", import.meta.url)) },
      sql: { type: "boolean", default: false },
      check: { type: "boolean", default: false },
    },
  });
  if (values.sql) {
    if (values.nats !== undefined) throw new Error("--sql runs in local mode only: drop --nats");
    await sqlMain({
      query: values.query,
      all: values.all,
      events: Number(values.events ?? (values.all ? 2_000_000 : 10_000_000)),
      rounds: Number(values.rounds),
      parallelism: Number(values.parallelism),
      checkpointInterval: Number(values["checkpoint-interval"]),
      check: values.check,
    });
    return;
  }
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
  const rounds = Number(values.rounds);
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
      ? "local mode (one engine thread)"
      : `cluster mode (${values.workers} workers x ${values.slots} slots, NATS ${values.nats})`;
    console.log(
      `Nexmark, ${events} events per query, ${rounds} rounds (engine, baseline, ...; ` +
        `medians), parallelism ${parallelism}, ${mode}, checkpoint interval ` +
        `${checkpointInterval} ms, exactly-once blackhole sink`,
    );
    for (const query of queries) {
      results.push(
        await runQuery({
          query,
          events,
          rounds,
          parallelism,
          checkpointInterval,
          ...(cluster === undefined ? {} : { cluster: { cluster, nats: values.nats! } }),
        }),
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
    const title = [
      `Nexmark on Weir: events per CPU second, medians of ${rounds} rounds`,
      `${events} events per query, parallelism ${parallelism}, ` +
      `checkpoint every ${checkpointInterval} ms${cluster === undefined ? "" : ", cluster mode"}`,
    ];
    await Deno.writeTextFile(
      values.chart,
      renderChart(
        results.map((r) => ({
          query: r.query,
          engine: r.epsPerCore,
          baseline: r.baselineEpsPerCore,
          ratio: r.ratio,
        })),
        title,
      ),
    );
    // Keep the committed chart in `deno fmt`'s style, so `deno task ok` stays clean.
    await new Deno.Command(Deno.execPath(), { args: ["fmt", "-q", values.chart] }).output();
    console.log(`chart written to ${values.chart}`);
  }
  for (const r of results) console.log(resultLine(resultFields(r)));
}

if (import.meta.main) await main();
