/**
 * A job for the cluster test of the interval join: clicks (input 1,
 * parallelism 1) and buys (input 2, parallelism 2, rate-limited) keyed by
 * user, joined by `intervalJoin(...).between(LOWER_MS, UPPER_MS)` at
 * parallelism 2; each pair is printed (`join:<subtask>> user click:buy`).
 *
 *     deno run -A tests/jobs/interval_join_job.ts --nats nats://127.0.0.1:4222 [--fail-once]
 *
 * Timestamps rise within every source subtask and watermarks are
 * monotonous, so no element is late and the pairs are a function of the
 * input ({@linkcode expectedPairs}). With `--fail-once` the first buy map
 * subtask throws in attempt 0 at its first record after a checkpoint
 * completed: the job restarts from the latest one, whose state holds both
 * sides' buffers. The print sink is at-least-once, so lines after that
 * checkpoint may repeat; none may be missing or wrong.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type Collector,
  type ProcessJoinContext,
  type ProcessJoinFunction,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import { SequenceSource } from "../../connectors/datagen/sequence_source.ts";

/** A click or a buy: number `n` of its input, user, event time (ms). */
export interface Act {
  readonly n: number;
  readonly user: string;
  readonly ts: number;
}

/** Clicks and buys of the job. */
export const CLICKS = 300;
/** Buys of the job. */
export const BUYS = 600;
/** The join's bounds, ms: a buy from 20 ms before to 30 ms after the click. */
export const LOWER_MS = -20;
/** See {@linkcode LOWER_MS}. */
export const UPPER_MS = 30;
const USERS = 5;

/** Click `n`: every 10 ms. */
export function click(n: number): Act {
  return { n, user: `u${n % USERS}`, ts: n * 10 };
}

/** Buy `n`: every 5 ms. */
export function buy(n: number): Act {
  return { n, user: `u${(n * 3) % USERS}`, ts: n * 5 };
}

/** Every line the job prints (each at least once), without the print prefix: `user click:buy@ts`. */
export function expectedPairs(): string[] {
  const lines: string[] = [];
  for (let c = 0; c < CLICKS; c++) {
    const l = click(c);
    for (let b = 0; b < BUYS; b++) {
      const r = buy(b);
      if (l.user === r.user && r.ts >= l.ts + LOWER_MS && r.ts <= l.ts + UPPER_MS) {
        lines.push(`${l.user} ${l.n}:${r.n}@${Math.max(l.ts, r.ts)}`);
      }
    }
  }
  return lines.sort();
}

const pairs: ProcessJoinFunction<Act, Act, string> = {
  processElement(l: Act, r: Act, ctx: ProcessJoinContext, out: Collector<string>) {
    out.collect(`${l.user} ${l.n}:${r.n}@${ctx.getTimestamp()}`);
  },
};

/** Buy `n` of a number; with `failOnce`, subtask 0 throws in attempt 0 after a completed checkpoint. */
class ToBuy {
  private attempt = 0;
  private subtask = 0;
  private checkpointed = false;
  constructor(readonly failOnce: boolean) {}
  open(ctx: RuntimeContext): void {
    this.attempt = ctx.attempt;
    this.subtask = ctx.subtaskIndex;
  }
  notifyCheckpointComplete(): void {
    this.checkpointed = true;
  }
  map(n: number): Act {
    if (this.failOnce && this.attempt === 0 && this.subtask === 0 && this.checkpointed) {
      throw new Error(`planned failure at buy ${n}, after a completed checkpoint`);
    }
    return buy(n);
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { nats: { type: "string" }, "fail-once": { type: "boolean", default: false } },
  });
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(2)
    .enableCheckpointing(100)
    .setRestartStrategy(RestartStrategies.fixedDelay(2, 100));
  const byTs = WatermarkStrategy.forMonotonousTimestamps<Act>().withTimestampAssigner((a) => a.ts);
  const clicks = env.fromSource(
    new SequenceSource(0, CLICKS - 1),
    WatermarkStrategy.noWatermarks(),
    "clicks",
  ).uid("clicks").setParallelism(1)
    .map(click).uid("to-click").setParallelism(1)
    .assignTimestampsAndWatermarks(byTs).uid("click-time").setParallelism(1);
  const buys = env.fromSource(
    new SequenceSource(0, BUYS - 1, { recordsPerSecond: 400 }),
    WatermarkStrategy.noWatermarks(),
    "buys",
  ).uid("buys").setParallelism(2)
    .map(new ToBuy(values["fail-once"])).uid("to-buy").setParallelism(2)
    .assignTimestampsAndWatermarks(byTs).uid("buy-time").setParallelism(2);
  clicks.keyBy((c) => c.user)
    .intervalJoin(buys.keyBy((b) => b.user))
    .between(LOWER_MS, UPPER_MS)
    .process(pairs).uid("interval-join")
    .print({ prefix: "join" });
  const result = await env.execute("interval join cluster job");
  console.log(`RESULT restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
}
