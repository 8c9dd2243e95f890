/**
 * A job for the cluster test of two-input operators: persons (input 1,
 * parallelism 1) and auctions (input 2, parallelism 2, rate-limited) are
 * connected, keyed by person id and seller, into a `KeyedCoProcessFunction`
 * at parallelism 2 that joins each auction with its seller's name (keyed
 * state both inputs share) and, at an event-time timer 1 s after a person
 * (ms), prints how many of the person's auctions had a timestamp up to
 * then. The lines go to the print sink (`join> …` on the workers' stdout).
 *
 *     deno run -A tests/jobs/two_input_job.ts --nats nats://127.0.0.1:4222 [--fail-once]
 *
 * With `--fail-once` the first auction map subtask throws in attempt 0 at
 * its first record after a checkpoint completed: the job restarts from the
 * latest one. The
 * print sink is at-least-once, so lines after that checkpoint may repeat;
 * no line may be missing or wrong. {@linkcode expectedLines} computes them.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type Collector,
  type KeyedCoProcessFunction,
  type KeyedProcessContext,
  type ListState,
  ListStateDescriptor,
  type OnTimerContext,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../../mod.ts";
import { SequenceSource } from "../../connectors/datagen/sequence_source.ts";

/** A person, auction number `n` of the input. */
export interface Person {
  readonly id: string;
  readonly name: string;
  readonly ts: number;
}

/** An auction. */
export interface Auction {
  readonly item: string;
  readonly seller: string;
  readonly ts: number;
}

/** Persons and auctions of the job. */
export const PERSONS = 20;
export const AUCTIONS = 600;

/** Person `n`. */
export function person(n: number): Person {
  return { id: `p${n}`, name: `N${n}`, ts: n * 100 };
}

/** Auction `n`. */
export function auction(n: number): Auction {
  return { item: `a${n}`, seller: `p${(n * 7) % PERSONS}`, ts: n * 10 };
}

/** The lines the job prints (each at least once), without the print prefix. */
export function expectedLines(): string[] {
  const lines: string[] = [];
  for (let n = 0; n < AUCTIONS; n++) {
    const a = auction(n);
    lines.push(`${a.item} by N${a.seller.slice(1)}`);
  }
  for (let n = 0; n < PERSONS; n++) {
    const p = person(n);
    const t = p.ts + 1000;
    let count = 0;
    for (let m = 0; m < AUCTIONS; m++) {
      const a = auction(m);
      if (a.seller === p.id && a.ts <= t) count++;
    }
    lines.push(`${p.id}@${t}: ${count} auctions`);
  }
  return lines.sort();
}

class SellerJoin implements KeyedCoProcessFunction<string, Person, Auction, string> {
  private name!: ValueState<string>;
  private pending!: ListState<string>;
  private times!: ListState<number>;
  open(ctx: RuntimeContext): void {
    this.name = ctx.getState(new ValueStateDescriptor<string>("name"));
    this.pending = ctx.getListState(new ListStateDescriptor<string>("pending"));
    this.times = ctx.getListState(new ListStateDescriptor<number>("auction-times"));
  }
  processElement1(p: Person, ctx: KeyedProcessContext<string>, out: Collector<string>): void {
    this.name.update(p.name);
    for (const item of this.pending.get()) out.collect(`${item} by ${p.name}`);
    this.pending.clear();
    ctx.timerService().registerEventTimeTimer(p.ts + 1000);
  }
  processElement2(a: Auction, _ctx: KeyedProcessContext<string>, out: Collector<string>): void {
    this.times.add(a.ts);
    const name = this.name.value();
    if (name === undefined) this.pending.add(a.item);
    else out.collect(`${a.item} by ${name}`);
  }
  onTimer(timestamp: number, ctx: OnTimerContext<string>, out: Collector<string>): void {
    const n = this.times.get().filter((t) => t <= timestamp).length;
    out.collect(`${ctx.getCurrentKey()}@${timestamp}: ${n} auctions`);
  }
}

/** Auction `n` of a number; with `failOnce`, subtask 0 throws in attempt 0 after a completed checkpoint. */
class ToAuction {
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
  map(n: number): Auction {
    if (this.failOnce && this.attempt === 0 && this.subtask === 0 && this.checkpointed) {
      throw new Error(`planned failure at auction ${n}, after a completed checkpoint`);
    }
    return auction(n);
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { nats: { type: "string" }, "fail-once": { type: "boolean", default: false } },
  });
  const failOnce = values["fail-once"];
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(2)
    .enableCheckpointing(100)
    .setRestartStrategy(RestartStrategies.fixedDelay(2, 100));
  const persons = env.fromSource(
    new SequenceSource(0, PERSONS - 1),
    WatermarkStrategy.noWatermarks(),
    "persons",
  ).uid("persons").setParallelism(1)
    .map(person).uid("to-person").setParallelism(1)
    .assignTimestampsAndWatermarks(
      WatermarkStrategy.forMonotonousTimestamps<Person>().withTimestampAssigner((p) => p.ts),
    ).uid("person-time").setParallelism(1);
  const auctions = env.fromSource(
    new SequenceSource(0, AUCTIONS - 1, { recordsPerSecond: 400 }),
    WatermarkStrategy.noWatermarks(),
    "auctions",
  ).uid("auctions").setParallelism(2)
    .map(new ToAuction(failOnce)).uid("to-auction").setParallelism(2)
    .assignTimestampsAndWatermarks(
      WatermarkStrategy.forMonotonousTimestamps<Auction>().withTimestampAssigner((a) => a.ts),
    ).uid("auction-time").setParallelism(2);
  persons.connect(auctions)
    .keyBy((p) => p.id, (a) => a.seller)
    .process(new SellerJoin()).uid("seller-join")
    .print({ prefix: "join" });
  const result = await env.execute("two-input cluster job");
  console.log(`RESULT restarts=${result.restarts} checkpoints=${result.checkpoints.completed}`);
}
