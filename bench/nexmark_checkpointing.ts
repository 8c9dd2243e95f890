/**
 * What checkpointing costs the keyed Nexmark queries: the dedup
 * (`nexmark/queries.ts`, Flink's keep-first-row deduplication on q18's key)
 * and the keyed count (`peers/weir.ts`'s {@linkcode CountPerKey}, a running
 * count of bids per auction), each run without periodic checkpoints, with a
 * full checkpoint every `--interval` ms (the heap backend's copy-on-write
 * snapshots) and with incremental checkpoints (the changelog backend,
 * FLIP-158), interleaved in one process.
 *
 *     deno task bench:checkpointing [--events 2000000] [--rounds 3] [--interval 1000]
 *         [--queries dedup,count] [--variants none,full,incremental]
 *
 * Issue 10's target: the dedup with a checkpoint every second runs at ≥ 0.9
 * of the dedup without checkpoints.
 *
 * ## Rounds
 *
 * Per query, each of `--rounds` rounds runs every variant once, in the
 * order `none`, `full`, `incremental` (`runRounds` of `_rounds.ts`, with a
 * garbage collection before each run), so a change in the machine's load
 * falls on every variant. Ratios are per round against that round's `none`
 * run; the figure reported is the median of the rounds' ratios, with the
 * rounds' own ratios beside it to show the spread.
 *
 * ## What is measured
 *
 * - `eps`: events generated / wall time of `execute()` (deployment, every
 *   checkpoint, the final checkpoint and its commit included).
 * - `eps_cpu`: events / CPU seconds of the process during the run (all its
 *   threads: V8's GC and compiler threads count). On a machine shared with
 *   other work this is the figure to compare: wall time counts other
 *   processes' turns, CPU time hardly does.
 * - `ratio_cpu`, `ratio_wall`: a variant's `eps_cpu` (`eps`) over the same
 *   round's `none` run.
 * - Checkpoints: completed (the final one included; `none` has only the
 *   final one), and over the periodic ones (all but the last) the median
 *   and longest synchronous pause (the longest among the subtasks'
 *   `syncDurationMs` of each checkpoint), the median and longest
 *   asynchronous part (`asyncDurationMs`) and the median bytes written.
 *
 * The checkpoint figures come from the coordinator's `checkpoint-completed`
 * log events (`runtime/log.ts`, JSON format, level `info`): for the length
 * of each run this harness sets that level and format and takes those
 * lines from `console.error` (every other line is passed through), then
 * restores them.
 *
 * ## The check
 *
 * In every round, every variant's sink must have committed every record it
 * received, and as many records as the `none` run of the round (the count
 * of each query is a function of the events alone); the harness fails
 * before printing any figure otherwise.
 *
 * ## Setup
 *
 * Local mode (the job runs in this process, one engine thread), parallelism
 * 1, exactly-once into the two-phase-commit blackhole, the heap state
 * backend, local checkpoint storage in a temporary directory (removed after
 * each run), `retainedCheckpoints` 1.
 *
 * ## Measured
 *
 * `deno task bench:checkpointing --events 2000000 --rounds 3` (defaults
 * otherwise) on the shared 2-core machine, load average 17–23, medians of
 * the per-round CPU ratios against `none` (the rounds' own in brackets):
 *
 * | query | variant | before the undo change | after |
 * | ----- | ------- | ---------------------- | ----- |
 * | dedup | full | 0.722 (0.722 0.775 0.666) | 0.933 (0.933 0.812 0.948) |
 * | dedup | incremental | 0.578 (0.649 0.578 0.505) | 0.685 (0.685 0.629 0.964) |
 * | count | full | 0.777 (0.893 0.777 0.626) | 0.940 (0.714 0.940 0.968) |
 * | count | incremental | 0.597 (0.597 0.966 0.565) | 0.802 (0.759 0.809 0.802) |
 *
 * "The undo change": keys created after a snapshot no longer get an undo
 * entry (`runtime/state/_heap_cow.ts`), and the changelog's dirty sets are
 * keyed by the heap backend's interned key instead of a string per write
 * (`runtime/state/changelog/_change_recorder.ts`). The "after" run shared
 * the machine with this repository's state test suite, so its absolute
 * figures are lower; only the ratios within a round compare. The
 * synchronous pause was 0 ms (the coordinator rounds to ms) at the median
 * in every variant, at most 16 ms (full) and 79 ms (incremental) of wall
 * time, on a machine where a thread waits for a core for tens of ms. A
 * full dedup checkpoint wrote 1.6–2.0 MB (median), an incremental one
 * 0.43–0.56 MB; the count's 0.20–0.24 MB and 66–72 KB.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { NexmarkSource } from "../connectors/datagen/nexmark/mod.ts";
import type { Bid, NexmarkEvent } from "../connectors/datagen/nexmark/model.ts";
import { type LogLevel, setLogFormat, setLogLevel } from "../runtime/log.ts";
import { expectEqual, resultLine } from "./_result.ts";
import { formatRatio, median, runRounds, type Sample } from "./_rounds.ts";
import { CountingTwoPhaseCommitSink, DedupFirst, dedupKey, newTally } from "./nexmark/queries.ts";
import { CountPerKey } from "./peers/weir.ts";

/** The queries measured. */
export const CHECKPOINTING_QUERIES = ["dedup", "count"] as const;
/** One of {@linkcode CHECKPOINTING_QUERIES}. */
export type CheckpointingQuery = typeof CHECKPOINTING_QUERIES[number];

/** How a run checkpoints: `none` (only the final checkpoint), `full` or `incremental` periodic ones. */
export const CHECKPOINTING_VARIANTS = ["none", "full", "incremental"] as const;
/** One of {@linkcode CHECKPOINTING_VARIANTS}. */
export type CheckpointingVariant = typeof CHECKPOINTING_VARIANTS[number];

/** One completed checkpoint, from the coordinator's `checkpoint-completed` event. */
export interface CheckpointFigures {
  /** The checkpoint's id. */
  readonly checkpointId: number;
  /** Longest synchronous part among the subtasks, ms. */
  readonly syncMs: number;
  /** Longest asynchronous part among the subtasks, ms. */
  readonly asyncMs: number;
  /** Bytes the subtasks acknowledged. */
  readonly bytes: number;
}

/** What one run measured. */
export interface CheckpointingRun {
  /** Records the sink committed. */
  readonly count: number;
  /** Checkpoints completed, the final one included. */
  readonly completed: number;
  /** The completed checkpoints in completion order, the final one last. */
  readonly checkpoints: readonly CheckpointFigures[];
}

/** What {@linkcode runCheckpointing} runs. */
export interface RunCheckpointingOptions {
  /** The query. */
  readonly query: CheckpointingQuery;
  /** How it checkpoints. */
  readonly variant: CheckpointingVariant;
  /** Events generated (event numbers `0..events-1`), a positive integer. */
  readonly events: number;
  /** Periodic checkpoint interval of `full` and `incremental`, ms (default 1000). */
  readonly intervalMs?: number;
}

function buildJob(
  env: StreamExecutionEnvironment,
  query: CheckpointingQuery,
  events: number,
  sink: CountingTwoPhaseCommitSink,
): void {
  const bids = env.fromSource(
    new NexmarkSource({ events }),
    WatermarkStrategy.noWatermarks(),
    "nexmark",
  ).uid("nexmark").flatMap<Bid>((e: NexmarkEvent, out) => {
    if (e.type === "bid") out.collect(e.bid);
  }).name("bid");
  const keyed = query === "dedup"
    ? bids.keyBy(dedupKey).process(new DedupFirst()).uid("dedup")
    : bids.keyBy((b) => b.auction).process(new CountPerKey()).uid("count");
  keyed.sinkTo(sink).uid("blackhole");
}

/** Takes the `checkpoint-completed` events off `console.error` while `body` runs. */
async function withCheckpointEvents<T>(
  body: () => Promise<T>,
): Promise<{ value: T; checkpoints: CheckpointFigures[] }> {
  const checkpoints: CheckpointFigures[] = [];
  const original = console.error;
  const previous: LogLevel = (Deno.env.get("WEIR_LOG_LEVEL") as LogLevel | undefined) ?? "warn";
  console.error = (...args: unknown[]) => {
    const line = args[0];
    if (args.length === 1 && typeof line === "string" && line.startsWith("{")) {
      try {
        const parsed = JSON.parse(line) as {
          level?: string;
          event?: {
            name?: string;
            checkpointId?: number;
            syncMs?: number;
            asyncMs?: number;
            bytes?: number;
          };
        };
        const e = parsed.event;
        if (e?.name === "checkpoint-completed") {
          checkpoints.push({
            checkpointId: Number(e.checkpointId),
            syncMs: Number(e.syncMs),
            asyncMs: Number(e.asyncMs),
            bytes: Number(e.bytes),
          });
          return;
        }
        if (parsed.level === "info" || parsed.level === "debug") return; // ours, not asked for
      } catch {
        // not a JSON log line: pass it through
      }
    }
    original(...args);
  };
  setLogLevel("info");
  setLogFormat("json");
  try {
    return { value: await body(), checkpoints };
  } finally {
    console.error = original;
    setLogLevel(previous);
    setLogFormat(Deno.env.get("WEIR_LOG_FORMAT") === "json" ? "json" : "text");
  }
}

/**
 * Runs one query once, in this process, checkpointing as `variant` says.
 * @returns the committed count and the checkpoints' figures.
 * @throws {Error} when the sink received records it did not commit (naming
 *   both counts), or whatever the job fails with.
 * @throws {RangeError} when `events` is not a positive integer.
 */
export async function runCheckpointing(o: RunCheckpointingOptions): Promise<CheckpointingRun> {
  if (!(Number.isSafeInteger(o.events) && o.events > 0)) {
    throw new RangeError(
      `Cannot run the checkpointing benchmark as 'events' must be a positive integer: current value is ${o.events}`,
    );
  }
  const directory = await Deno.makeTempDir({ prefix: "weir-nexmark-checkpointing-" });
  try {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(1);
    const intervalMs = o.intervalMs ?? 1000;
    if (o.variant === "none") env.setCheckpointDirectory(directory);
    else {
      env.enableCheckpointing(intervalMs, {
        directory,
        incrementalCheckpoints: o.variant === "incremental",
      });
    }
    const tally = newTally();
    buildJob(env, o.query, o.events, new CountingTwoPhaseCommitSink(tally));
    const { value: result, checkpoints } = await withCheckpointEvents(() =>
      env.execute(`nexmark-checkpointing-${o.query}-${o.variant}`)
    );
    if (tally.committed !== tally.records) {
      throw new Error(
        `${o.query} (${o.variant}): the sink received ${tally.records} records but committed ` +
          `${tally.committed} (${tally.transactions} transactions)`,
      );
    }
    return { count: tally.committed, completed: result.checkpoints.completed, checkpoints };
  } finally {
    await Deno.remove(directory, { recursive: true });
  }
}

/** Median and longest of `metric` over the periodic checkpoints (all but the final one). */
function periodic(
  runs: readonly CheckpointingRun[],
  metric: (c: CheckpointFigures) => number,
): { median: number; max: number } {
  const values = runs.flatMap((r) => r.checkpoints.slice(0, -1).map(metric));
  return { median: median(values), max: values.length === 0 ? NaN : Math.max(...values) };
}

const rate = (eps: number) => `${(eps / 1e6).toFixed(3)}M`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      events: { type: "string", default: "2000000" },
      rounds: { type: "string", default: "3" },
      interval: { type: "string", default: "1000" },
      queries: { type: "string", default: CHECKPOINTING_QUERIES.join(",") },
      variants: { type: "string", default: CHECKPOINTING_VARIANTS.join(",") },
    },
  });
  const events = Number(values.events);
  const rounds = Number(values.rounds);
  const intervalMs = Number(values.interval);
  if (!(Number.isSafeInteger(intervalMs) && intervalMs > 0)) {
    throw new RangeError(
      `--interval must be a positive integer (ms): current value is ${values.interval}`,
    );
  }
  const queries = values.queries.split(",");
  for (const q of queries) {
    if (!(CHECKPOINTING_QUERIES as readonly string[]).includes(q)) {
      throw new Error(
        `Unknown query '${q}' in --queries: expected some of ${CHECKPOINTING_QUERIES.join(", ")}`,
      );
    }
  }
  const variants = values.variants.split(",");
  for (const v of variants) {
    if (!(CHECKPOINTING_VARIANTS as readonly string[]).includes(v)) {
      throw new Error(
        `Unknown variant '${v}' in --variants: expected some of ${
          CHECKPOINTING_VARIANTS.join(", ")
        }`,
      );
    }
  }
  if (variants[0] !== "none") {
    throw new Error(
      `--variants must start with 'none', the baseline of the ratios: current value is ${values.variants}`,
    );
  }
  const [load1] = Deno.loadavg();
  console.log(
    `Nexmark checkpointing: ${events} events per run, ${rounds} rounds of ${
      variants.join(", ")
    } (interleaved), checkpoint interval ${intervalMs} ms, local storage, heap backend, ` +
      `parallelism 1, load average ${load1?.toFixed(1)}`,
  );
  const results: Record<string, number | string>[] = [];
  for (const query of queries as CheckpointingQuery[]) {
    const all = await runRounds<CheckpointingRun>({
      rounds,
      before: () => (globalThis as { gc?: () => void }).gc?.(),
      variants: (variants as CheckpointingVariant[]).map((variant) => ({
        name: variant,
        run: async ({ round, earlier }) => {
          const run = await runCheckpointing({ query, variant, events, intervalMs });
          const none = earlier[0];
          if (none !== undefined) {
            expectEqual(
              `${query} round ${round}: records committed with ${variant} checkpoints ` +
                `(expected: as many as without)`,
              none.value.count,
              run.count,
            );
          }
          return run;
        },
      })),
      onSample: (s: Sample<CheckpointingRun>) => {
        const c = s.value.checkpoints.slice(0, -1);
        console.log(
          `${query} round ${s.round}/${rounds} ${s.variant}: output ${s.value.count}, ` +
            `${(s.wallMs / 1000).toFixed(2)} s, CPU ${(s.cpuMs / 1000).toFixed(2)} s, ` +
            `${
              rate(events / (s.cpuMs / 1000))
            } events per CPU s, ${s.value.completed} checkpoints` +
            (c.length === 0
              ? ""
              : ` (sync ms: ${c.map((x) => x.syncMs).join(" ")}; async ms: ${
                c.map((x) => x.asyncMs).join(" ")
              })`),
        );
      },
    });
    const epsCpu = (s: Sample<CheckpointingRun>) => events / (s.cpuMs / 1000);
    const eps = (s: Sample<CheckpointingRun>) => events / (s.wallMs / 1000);
    for (const variant of variants) {
      const runs = all.samples(variant).map((s) => s.value);
      const cpu = all.ratio(variant, "none", epsCpu);
      const wall = all.ratio(variant, "none", eps);
      const sync = periodic(runs, (c) => c.syncMs);
      const async = periodic(runs, (c) => c.asyncMs);
      const bytes = periodic(runs, (c) => c.bytes);
      if (variant !== "none") {
        console.log(
          `${query} ${variant}: ratio_cpu ${formatRatio(cpu)}, ratio_wall ${
            formatRatio(wall)
          }; sync pause median ${sync.median} ms, max ${sync.max} ms; async median ${async.median} ms, max ${async.max} ms; median ${
            Math.round(bytes.median)
          } bytes per checkpoint`,
        );
      }
      results.push({
        query,
        variant,
        events,
        eps: all.median(variant, eps),
        eps_cpu: all.median(variant, epsCpu),
        ratio_cpu: cpu.medianOfRatios,
        ratio_wall: wall.medianOfRatios,
        checkpoints: median(runs.map((r) => r.completed)),
        sync_ms_median: sync.median,
        sync_ms_max: sync.max,
        async_ms_median: async.median,
        async_ms_max: async.max,
        bytes_median: bytes.median,
        rounds,
      });
    }
  }
  for (const r of results) console.log(resultLine(r));
}

if (import.meta.main) await main();
