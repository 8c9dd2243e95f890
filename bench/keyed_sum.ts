/**
 * Benchmark: a keyed running sum over 10k keys, in local mode, beside a
 * hand-written loop that does the same work, all in one run.
 *
 *     deno task bench                      # 5M records per run, 3 rounds
 *     deno run -A --v8-flags=--expose-gc bench/keyed_sum.ts --records 2000000 --rounds 3
 *
 * Each round runs, in this order: the hand-written loop (records made in the
 * loop, a `Map` of running sums, each sum handed to a sink function), the
 * engine with checkpoints off, and the engine with a checkpoint every 1 s.
 * The engine job is `SequenceSource -> map to {key, value} -> keyBy(key) ->
 * reduce(sum) -> counting sink`, parallelism 1 (the keyBy edge goes through
 * the data plane: buffers, credits, MessagePack). Figures are medians over the
 * rounds; the ratios are what to compare across machines.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { SequenceSource, StreamExecutionEnvironment, WatermarkStrategy } from "../mod.ts";

const KEYS = 10_000;

interface Pair {
  key: number;
  value: number;
}

function handWritten(records: number): number {
  const t0 = performance.now();
  const sums = new Map<number, number>();
  let emitted = 0;
  const sink = (_sum: number) => {
    emitted++;
  };
  for (let i = 0; i < records; i++) {
    const r: Pair = { key: i % KEYS, value: i };
    const sum = (sums.get(r.key) ?? 0) + r.value;
    sums.set(r.key, sum);
    sink(sum);
  }
  if (emitted !== records) throw new Error("hand-written loop lost records");
  return records / ((performance.now() - t0) / 1000);
}

async function engine(records: number, checkpointMs: number, directory: string): Promise<{
  eps: number;
  checkpoints: number;
}> {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  if (checkpointMs > 0) env.enableCheckpointing(checkpointMs, { directory });
  else env.setCheckpointDirectory(directory);
  let emitted = 0;
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
      invoke: () => {
        emitted++;
      },
    });
  const t0 = performance.now();
  const result = await env.execute("keyed-sum-bench");
  const seconds = (performance.now() - t0) / 1000;
  if (emitted !== records) throw new Error(`engine emitted ${emitted} of ${records} records`);
  return { eps: records / seconds, checkpoints: result.checkpoints.completed };
}

/** Collects garbage before a measurement when run with `--v8-flags=--expose-gc` (as `deno task bench` does), so one run's garbage does not bill the next. */
function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const fmt = (eps: number) => `${(eps / 1e6).toFixed(2)}M records/s`;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      records: { type: "string", default: "5000000" },
      rounds: { type: "string", default: "3" },
    },
  });
  const records = Number(values.records);
  const rounds = Number(values.rounds);
  const directory = await Deno.makeTempDir({ prefix: "weir-bench-" });
  try {
    const hand: number[] = [];
    const off: number[] = [];
    const on: number[] = [];
    let checkpoints = 0;
    handWritten(records); // warm-up
    for (let r = 0; r < rounds; r++) {
      collectGarbage();
      hand.push(handWritten(records));
      collectGarbage();
      off.push((await engine(records, 0, directory)).eps);
      collectGarbage();
      const cp = await engine(records, 1000, directory);
      on.push(cp.eps);
      checkpoints += cp.checkpoints;
      console.log(
        `round ${r + 1}: hand-written ${fmt(hand.at(-1)!)}, engine ${fmt(off.at(-1)!)}, ` +
          `engine + checkpoints/1s ${fmt(on.at(-1)!)} (${cp.checkpoints} checkpoints)`,
      );
    }
    const h = median(hand);
    const e = median(off);
    const c = median(on);
    console.log(`records per run: ${records}, keys: ${KEYS}, rounds: ${rounds} (medians below)`);
    console.log(`hand-written loop:           ${fmt(h)}`);
    console.log(`engine, checkpoints off:     ${fmt(e)}`);
    console.log(`engine, checkpoint every 1s: ${fmt(c)} (${checkpoints} checkpoints in all)`);
    console.log(`engine / hand-written:       ${(100 * e / h).toFixed(1)}% (target >= 25%)`);
    console.log(`checkpointing cost:          ${(100 * (1 - c / e)).toFixed(1)}% (target <= 10%)`);
    console.log(
      `RESULT hand_eps=${Math.round(h)} engine_eps=${Math.round(e)} engine_cp_eps=${
        Math.round(c)
      } ` +
        `ratio=${(e / h).toFixed(3)} checkpoint_cost=${(1 - c / e).toFixed(3)}`,
    );
  } finally {
    await Deno.remove(directory, { recursive: true });
  }
}
