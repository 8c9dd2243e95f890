/**
 * The two-input ProcessFunction kinds (`CoProcessFunction`,
 * `KeyedCoProcessFunction`, `BroadcastProcessFunction`,
 * `KeyedBroadcastProcessFunction`), each with its exact expected output,
 * each run twice: without a failure, and with a failure injected in the
 * middle of input 2 after a completed checkpoint, then a restart from it.
 * The committed output of the second run must equal the first, record by
 * record.
 *
 * ## Determinism
 *
 * How two inputs interleave is not defined, so every function here is
 * written so that its output, as a multiset, is a function of the inputs
 * alone; each sink's records are compared sorted:
 *
 * - the co-process function maps each record alone;
 * - the keyed co-process join emits a pair when both sides are known
 *   (whichever came first), and its timers count the key's records with a
 *   timestamp at or below the timer's: the operator's watermark is the
 *   minimum over both inputs, so by then every such record has arrived;
 * - the broadcast enrichment buffers a record whose dictionary entry has
 *   not arrived in operator state and emits it when the entry arrives;
 * - the keyed broadcast thresholds (`examples/dynamic_thresholds.ts`)
 *   decide on event-time timers, by the threshold in force at the
 *   reading's time.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type BroadcastProcessFunction,
  type Collector,
  type CoProcessFunction,
  type FunctionInitializationContext,
  type KeyedCoProcessFunction,
  type KeyedProcessContext,
  type ListState,
  ListStateDescriptor,
  MapStateDescriptor,
  type OnTimerContext,
  OutputTag,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import type { StreamExecutionEnvironment as Env } from "../mod.ts";
import { CollectingSink, type TestItem, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";
import {
  alertsOf,
  READING_WATERMARKS,
  READINGS,
  type Threshold,
  THRESHOLD_WATERMARKS,
  THRESHOLDS,
  thresholdsJob,
} from "../examples/dynamic_thresholds.ts";

/** Items with, when `fail`, a checkpoint after `at` items and a failure 3 items later. */
function script<T>(values: readonly TestItem<T>[], fail: boolean, at: number): TestItem<T>[] {
  if (!fail) return [...values];
  return [
    ...values.slice(0, at),
    TestSource.awaitCheckpoint(),
    ...values.slice(at, at + 3),
    TestSource.fail(`induced failure after item ${at + 3} of input 2`),
    ...values.slice(at + 3),
  ];
}

interface RunResult {
  readonly committed: Record<string, string[]>;
  readonly restarts: number;
}

/**
 * Runs `build` at parallelism 2 with a checkpoint every 30 ms, without and
 * with the failure (`fail` is passed to `build` for its input 2).
 * @returns the clean run's committed records per sink, sorted.
 */
async function runBoth(
  build: (env: Env, fail: boolean, sink: (name: string) => CollectingSink<unknown>) => void,
): Promise<Record<string, string[]>> {
  const run = (fail: boolean): Promise<RunResult> =>
    withTempDir(async (directory) => {
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .setParallelism(2)
        .enableCheckpointing(30, { directory })
        .setRestartStrategy(RestartStrategies.fixedDelay(2, 0));
      const sinks = new Map<string, CollectingSink<unknown>>();
      build(env, fail, (name) => {
        const sink = new CollectingSink<unknown>();
        sinks.set(name, sink);
        return sink;
      });
      const result = await env.execute(`two-input kinds${fail ? " with a failure" : ""}`);
      const committed: Record<string, string[]> = {};
      for (const [name, sink] of sinks) committed[name] = sink.committed().map(String).sort();
      return { committed, restarts: result.restarts };
    });
  const clean = await run(false);
  const failed = await run(true);
  assert.equal(clean.restarts, 0);
  assert.equal(failed.restarts, 1, "the induced failure restarted the job once");
  assert.deepEqual(failed.committed, clean.committed, "output after the restore");
  return clean.committed;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

Deno.test("CoProcessFunction: each input by its own method, side output from input 1, exact across a restart", async () => {
  const SEVENS = new OutputTag<number>("sevens");
  const fn: CoProcessFunction<number, string, string> = {
    processElement1(n, ctx, out) {
      if (n % 7 === 0) ctx.output(SEVENS, n);
      else out.collect(`n${n}:${n * n}`);
    },
    processElement2(w, _ctx, out) {
      out.collect(`w${w}:${w.length}`);
    },
  };
  const committed = await runBoth((env, fail, sink) => {
    const numbers = env.fromSource(TestSource.of(range(40)), WatermarkStrategy.noWatermarks(), "n")
      .uid("numbers").setParallelism(1);
    const words = env.fromSource(
      TestSource.of(script(range(30).map((i) => "x".repeat(i % 5) + i), fail, 12)),
      WatermarkStrategy.noWatermarks(),
      "w",
    ).uid("words").setParallelism(1);
    const co = numbers.connect(words).process(fn).uid("co-process").setParallelism(2);
    co.sinkTo(sink("main")).uid("main-out");
    co.getSideOutput(SEVENS).sinkTo(sink("sevens")).uid("sevens-out");
  });
  const expectedMain = [
    ...range(40).filter((n) => n % 7 !== 0).map((n) => `n${n}:${n * n}`),
    ...range(30).map((i) => "x".repeat(i % 5) + i).map((w) => `w${w}:${w.length}`),
  ].sort();
  assert.deepEqual(committed.main, expectedMain);
  assert.deepEqual(committed.sevens, ["0", "14", "21", "28", "35", "7"]);
});

/** A person (input 1) or an auction (input 2), q3-style, with event time in ms. */
type Person = { id: string; name: string; ts: number };
type Auction = { item: string; seller: string; ts: number };

/** Joins auctions with their seller's name; at person ts + 100 counts the seller's auctions so far. */
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
    ctx.timerService().registerEventTimeTimer(p.ts + 100);
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

Deno.test("KeyedCoProcessFunction: both inputs share keyed state and timers, exact across a restart", async () => {
  const persons: Person[] = range(10).map((i) => ({ id: `p${i}`, name: `N${i}`, ts: i * 20 }));
  const auctions: Auction[] = range(40).map((i) => ({
    item: `a${i}`,
    seller: `p${(i * 3) % 10}`,
    ts: i * 5,
  }));
  const monotonous = <T extends { ts: number }>() =>
    WatermarkStrategy.forMonotonousTimestamps<T>().withTimestampAssigner((x) => x.ts);
  const committed = await runBoth((env, fail, sink) => {
    const p = env.fromSource(TestSource.of(persons), monotonous<Person>(), "persons")
      .uid("persons").setParallelism(1);
    const a = env.fromSource(
      TestSource.of(script(auctions, fail, 15)),
      monotonous<Auction>(),
      "auctions",
    )
      .uid("auctions").setParallelism(1);
    p.connect(a).keyBy((x) => x.id, (x) => x.seller).process(new SellerJoin())
      .uid("seller-join").setParallelism(2)
      .sinkTo(sink("out")).uid("out");
  });
  const expected: string[] = auctions.map((a) => `${a.item} by N${a.seller.slice(1)}`);
  for (const person of persons) {
    const t = person.ts + 100;
    const n = auctions.filter((a) => a.seller === person.id && a.ts <= t).length;
    expected.push(`${person.id}@${t}: ${n} auctions`);
  }
  assert.deepEqual(committed.out, expected.sort());
});

/** Enriches ids with the dictionary's name; an id whose entry has not arrived waits in operator state. */
class Enrich implements BroadcastProcessFunction<string, [string, string], string> {
  static readonly NAMES = new MapStateDescriptor<string, string>("names");
  private waiting!: ListState<string>;
  initializeState(ctx: FunctionInitializationContext): void {
    this.waiting = ctx.operatorStateStore.getListState(new ListStateDescriptor<string>("waiting"));
  }
  snapshotState(): void {} // the list state is the state
  processElement(
    id: string,
    ctx: Parameters<
      BroadcastProcessFunction<string, [string, string], string>["processElement"]
    >[1],
    out: Collector<string>,
  ): void {
    const name = ctx.getBroadcastState(Enrich.NAMES).get(id.split("-")[0]!);
    if (name === undefined) this.waiting.add(id);
    else out.collect(`${id}=${name}`);
  }
  processBroadcastElement(
    [key, name]: [string, string],
    ctx: Parameters<
      BroadcastProcessFunction<string, [string, string], string>["processBroadcastElement"]
    >[1],
    out: Collector<string>,
  ): void {
    ctx.getBroadcastState(Enrich.NAMES).put(key, name);
    const still: string[] = [];
    for (const id of this.waiting.get()) {
      if (id.split("-")[0] === key) out.collect(`${id}=${name}`);
      else still.push(id);
    }
    this.waiting.update(still);
  }
}

Deno.test("BroadcastProcessFunction: every subtask enriches from the broadcast dictionary, exact across a restart", async () => {
  const ids = range(60).map((i) => `k${i % 8}-${i}`);
  const dictionary: [string, string][] = range(8).map((i) => [`k${i}`, `name${i}`]);
  const committed = await runBoth((env, fail, sink) => {
    const data = env.fromSource(
      TestSource.perSubtask([ids.slice(0, 30), ids.slice(30)]),
      WatermarkStrategy.noWatermarks(),
      "ids",
    ).uid("ids");
    const dict = env.fromSource(
      TestSource.of(script(dictionary, fail, 3)),
      WatermarkStrategy.noWatermarks(),
      "dictionary",
    ).uid("dictionary").setParallelism(1);
    data.connect(dict.broadcast(Enrich.NAMES)).process(new Enrich()).uid("enrich")
      .sinkTo(sink("out")).uid("out");
  });
  assert.deepEqual(
    committed.out,
    ids.map((id) => `${id}=name${id.split("-")[0]!.slice(1)}`).sort(),
  );
});

Deno.test("KeyedBroadcastProcessFunction: broadcast thresholds change the alerts by event time, exact across a restart", async () => {
  const committed = await runBoth((env, fail, sink) => {
    const readings = env.fromSource(TestSource.of([...READINGS]), READING_WATERMARKS, "readings")
      .uid("readings").setParallelism(1);
    const thresholds = env.fromSource(
      TestSource.of<Threshold>(script(THRESHOLDS, fail, 2)),
      THRESHOLD_WATERMARKS,
      "thresholds",
    ).uid("thresholds").setParallelism(1);
    thresholdsJob(readings, thresholds).sinkTo(sink("alerts")).uid("alerts-out");
  });
  const expected = alertsOf(READINGS, THRESHOLDS);
  assert.deepEqual(committed.alerts, [...expected].sort());
  // Every threshold change shows: alerts under each of the seven thresholds.
  for (const t of THRESHOLDS) {
    assert.ok(
      expected.some((a) => a.endsWith(`(threshold of ${t.sensor} since ${t.ts})`)),
      `an alert under ${JSON.stringify(t)}`,
    );
  }
});
