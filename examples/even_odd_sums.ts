/**
 * Seed example 5: exactly-once under failure. A source emits 1..10; even
 * numbers are summed into `even`, odd ones into `odd` (keyed ValueState), and
 * every running sum goes to a two-phase-commit sink, so only records of
 * completed checkpoints are ever committed.
 *
 * The source is the test kit's deterministic `TestSource`: it holds after 5
 * until a checkpoint covering 5 has completed, so that checkpoint holds
 * source offset 5, sum_even 6 and sum_odd 9, as in the seed.
 *
 * Run (local mode):
 *
 *     deno run -A examples/even_odd_sums.ts
 *     deno run -A examples/even_odd_sums.ts --fail-after 7
 *
 * With `--fail-after 7`, the first attempt throws while 7 is in flight; the
 * job restores the checkpoint taken after 5 and goes on. Both runs print the
 * same committed running sums and the same final line,
 * `sum_even=30 sum_odd=25`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type Collector,
  type FunctionInitializationContext,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { exitWithError } from "./_cli.ts";

/** Throws once, on the first attempt, when it sees `failAt`. */
export class FailOnce {
  readonly failAt: number | undefined;
  private attempt = 0;
  constructor(failAt: number | undefined) {
    this.failAt = failAt;
  }
  open(ctx: RuntimeContext): void {
    this.attempt = ctx.attempt;
  }
  map(n: number): number {
    if (n === this.failAt && this.attempt === 0) {
      throw new Error(`induced failure while ${n} is in flight`);
    }
    return n;
  }
}

/** Emits `[parity, running sum]` per number. */
export class RunningSum implements KeyedProcessFunction<string, number, [string, number]> {
  private sum!: ValueState<number>;
  initializeState(ctx: FunctionInitializationContext): void {
    if (ctx.isRestored) console.error(`restored from checkpoint ${ctx.restoredCheckpointId}`);
  }
  open(ctx: RuntimeContext): void {
    this.sum = ctx.getState(new ValueStateDescriptor<number>("sum"));
  }
  processElement(
    n: number,
    ctx: KeyedProcessContext<string>,
    out: Collector<[string, number]>,
  ): void {
    const sum = (this.sum.value() ?? 0) + n;
    this.sum.update(sum);
    out.collect([ctx.getCurrentKey(), sum]);
  }
}

/** Runs the job; returns the committed running sums in commit order. */
export async function runEvenOddSums(
  options: { failAfter?: number | undefined; checkpointDirectory?: string } = {},
): Promise<[string, number][]> {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(
    100,
    options.checkpointDirectory ? { directory: options.checkpointDirectory } : {},
  )
    .setRestartStrategy(RestartStrategies.fixedDelay(3, 100));
  const sink = new CollectingSink<[string, number]>();
  const numbers = TestSource.of<number>([
    1,
    2,
    3,
    4,
    5,
    TestSource.awaitCheckpoint(),
    6,
    7,
    8,
    9,
    10,
  ], {
    batchSize: 100,
  });
  env.fromSource(numbers, WatermarkStrategy.noWatermarks(), "numbers").uid("numbers")
    .map(new FailOnce(options.failAfter)).name("FailOnce")
    .keyBy((n) => (n % 2 === 0 ? "even" : "odd"))
    .process(new RunningSum()).uid("running-sums").name("RunningSum")
    .sinkTo(sink).uid("committed-sums");
  await env.execute("even odd sums");
  return sink.committed();
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { "fail-after": { type: "string" } },
  });
  const failAfter = values["fail-after"] === undefined ? undefined : Number(values["fail-after"]);
  const committed = await runEvenOddSums({ failAfter }).catch(exitWithError);
  for (const [key, sum] of committed) console.log(`(${key},${sum})`);
  const last = (key: string) => committed.filter(([k]) => k === key).at(-1)?.[1] ?? 0;
  console.log(`sum_even=${last("even")} sum_odd=${last("odd")}`);
}
