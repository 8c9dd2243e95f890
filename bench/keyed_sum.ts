/**
 * Benchmark: a keyed running sum over 10k keys, in local mode, beside a
 * hand-written loop that does the same work, interleaved in one run.
 *
 *     deno task bench                      # 5M records per run, 3 rounds
 *     deno run -A --v8-flags=--expose-gc bench/keyed_sum.ts --records 2000000 --rounds 5
 *
 * Each round runs, in this order ({@linkcode runRounds}: A B C A B C ...):
 * the hand-written loop (records made in the loop, a `Map` of running sums,
 * each sum handed to a sink function), the engine with checkpoints off, and
 * the engine with a checkpoint every 1 s. The engine job is `SequenceSource
 * -> map to {key, value} -> keyBy(key) -> reduce(sum) -> sink`, parallelism
 * 1 (the keyBy edge goes through the data plane: buffers, credits,
 * MessagePack). A garbage collection precedes each run (with
 * `--v8-flags=--expose-gc`, as `deno task bench` does).
 *
 * Every run is checked before its figures count: its sink must see each
 * record's update once, in key order, i.e. `records` updates whose checksum
 * (sum of the running sums mod 2^32) equals {@linkcode expectedUpdateChecksum},
 * computed without the engine. A mismatch ends the benchmark with an error
 * naming both values (exit code 1).
 *
 * Figures: records per wall second, and records per CPU-second of this
 * process (all threads: the engine's, and V8's garbage collector's). Each is
 * the median over the rounds; each ratio is the median of the per-round
 * ratios, the figure to compare across machines (the per-round values are
 * printed beside it). The last line is
 * `RESULT hand_eps=… engine_eps=… engine_cp_eps=… hand_eps_cpu=… engine_eps_cpu=… engine_cp_eps_cpu=… ratio=… ratio_cpu=… checkpoint_cost=… checkpoint_cost_cpu=… rounds=…`.
 * Nothing is asserted on timing.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { SequenceSource, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";
import { formatRate, formatRatio, runRounds, type Sample } from "./_rounds.ts";
import { expectEqual, resultLine } from "./_result.ts";
import { addToChecksum, expectedUpdateChecksum } from "./jobs/_report.ts";

const KEYS = 10_000;

interface Pair {
  key: number;
  value: number;
}

/** What a run's sink saw, and the checkpoints it completed. */
interface Outcome {
  readonly updates: number;
  readonly checksum: number;
  readonly checkpoints: number;
}

function handWritten(records: number): Outcome {
  const sums = new Map<number, number>();
  let updates = 0;
  let checksum = 0;
  const sink = (sum: number) => {
    updates++;
    checksum = addToChecksum(checksum, sum);
  };
  for (let i = 0; i < records; i++) {
    const r: Pair = { key: i % KEYS, value: i };
    const sum = (sums.get(r.key) ?? 0) + r.value;
    sums.set(r.key, sum);
    sink(sum);
  }
  return { updates, checksum, checkpoints: 0 };
}

async function engine(records: number, checkpointMs: number, directory: string): Promise<Outcome> {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  if (checkpointMs > 0) env.enableCheckpointing(checkpointMs, { directory });
  else env.setCheckpointDirectory(directory);
  let updates = 0;
  let checksum = 0;
  env.fromSource(
    new SequenceSource(0, records - 1, { batchSize: 1024 }),
    WatermarkStrategy.noWatermarks(),
    "sequence",
  )
    .uid("sequence")
    .map((i: number): Pair => ({ key: i % KEYS, value: i }))
    .keyBy((r) => r.key)
    .reduce((a, b) => ({ key: a.key, value: a.value + b.value }))
    .uid("sum")
    .sinkTo({
      kind: "simple",
      invoke: (r: Pair) => {
        updates++;
        checksum = addToChecksum(checksum, r.value);
      },
    });
  const result = await env.execute("keyed-sum-bench");
  return { updates, checksum, checkpoints: result.checkpoints.completed };
}

/** Collects garbage before a measurement when run with `--v8-flags=--expose-gc` (as `deno task bench` does), so one run's garbage does not bill the next. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      records: { type: "string", default: "5000000" },
      rounds: { type: "string", default: "3" },
    },
  });
  const records = Number(values.records);
  const expected = expectedUpdateChecksum(records, KEYS);
  const check = (name: string, o: Outcome) => {
    expectEqual(`${name}: updates sunk`, records, o.updates);
    expectEqual(`${name}: checksum of the updates sunk`, expected, o.checksum);
    return o;
  };
  const directory = await Deno.makeTempDir({ prefix: "weir-bench-" });
  try {
    handWritten(records); // warm-up
    const eps = (s: Sample<Outcome>) => records / (s.wallMs / 1000);
    const epsCpu = (s: Sample<Outcome>) => records / (s.cpuMs / 1000);
    const rounds = await runRounds<Outcome>({
      rounds: Number(values.rounds),
      before: collectGarbage,
      variants: [
        { name: "hand-written", run: () => check("hand-written loop", handWritten(records)) },
        { name: "engine", run: async () => check("engine", await engine(records, 0, directory)) },
        {
          name: "engine+cp",
          run: async () => check("engine + checkpoints", await engine(records, 1000, directory)),
        },
      ],
      onSample: (s) =>
        console.log(
          `round ${s.round}: ${s.variant.padEnd(12)} ${formatRate(eps(s))}, ` +
            `${formatRate(epsCpu(s), "records/CPU-s")} (${(s.wallMs / 1000).toFixed(2)} s wall, ` +
            `${(s.cpuMs / 1000).toFixed(2)} s CPU, ${s.value.checkpoints} checkpoint(s) ` +
            `completed, the final one included)`,
        ),
    });
    const m = (variant: string, f: (s: Sample<Outcome>) => number) => rounds.median(variant, f);
    const ratio = rounds.ratio("engine", "hand-written", eps);
    const ratioCpu = rounds.ratio("engine", "hand-written", epsCpu);
    const cpKeeps = rounds.ratio("engine+cp", "engine", eps);
    const cpKeepsCpu = rounds.ratio("engine+cp", "engine", epsCpu);
    const checkpoints = rounds.samples("engine+cp").reduce((n, s) => n + s.value.checkpoints, 0);
    const row = (label: string, variant: string) =>
      console.log(
        `${label.padEnd(28)} ${formatRate(m(variant, eps))}, ` +
          formatRate(m(variant, epsCpu), "records/CPU-s"),
      );
    console.log(
      `records per run: ${records}, keys: ${KEYS}, rounds: ${rounds.count} interleaved; ` +
        `medians, and medians of per-round ratios; every run's ${records} updates and ` +
        `checksum ${expected} checked`,
    );
    row("hand-written loop:", "hand-written");
    row("engine, checkpoints off:", "engine");
    row(`engine, checkpoint every 1s:`, "engine+cp");
    console.log(`  (${checkpoints} checkpoints in all)`);
    console.log(`engine / hand-written, wall: ${formatRatio(ratio)} (target >= 0.25)`);
    console.log(`engine / hand-written, CPU:  ${formatRatio(ratioCpu)}`);
    console.log(
      `checkpointing cost, wall:    ${(1 - cpKeeps.medianOfRatios).toFixed(3)} ` +
        `(1 - ${formatRatio(cpKeeps)}; target <= 0.10)`,
    );
    console.log(
      `checkpointing cost, CPU:     ${(1 - cpKeepsCpu.medianOfRatios).toFixed(3)} ` +
        `(1 - ${formatRatio(cpKeepsCpu)})`,
    );
    console.log(resultLine({
      hand_eps: m("hand-written", eps),
      engine_eps: m("engine", eps),
      engine_cp_eps: m("engine+cp", eps),
      hand_eps_cpu: m("hand-written", epsCpu),
      engine_eps_cpu: m("engine", epsCpu),
      engine_cp_eps_cpu: m("engine+cp", epsCpu),
      ratio: ratio.medianOfRatios,
      ratio_cpu: ratioCpu.medianOfRatios,
      checkpoint_cost: 1 - cpKeeps.medianOfRatios,
      checkpoint_cost_cpu: 1 - cpKeepsCpu.medianOfRatios,
      rounds: rounds.count,
    }));
  } finally {
    await Deno.remove(directory, { recursive: true });
  }
}

if (import.meta.main) await main();
