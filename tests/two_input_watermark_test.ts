/**
 * The watermark of a two-input operator is the minimum over both inputs,
 * and an idle input drops out of it, end to end (sources, channels, the
 * task's `TwoInputWatermarkValve`, event-time timers), on a `ManualClock`.
 *
 * Input 1 carries readings at 100, 200, ... 1000 ms and then pauses
 * (active, its watermark 999); input 2 carries one rule at 0 ms, then
 * pauses 60 s of processing time, then a rule at 60 s; its strategy has
 * `withIdleness(500)`. A `KeyedCoProcessFunction` registers an event-time
 * timer at each reading's time.
 *
 * 1. With the clock stopped, input 2's watermark (-1) holds the operator:
 *    every reading is processed and no timer fires.
 * 2. The clock moves in steps of 100 ms: input 2 turns idle and drops out, so the
 *    operator's watermark becomes input 1's (999), and the timers up to 900
 *    fire, while input 2 is still paused (its second rule not yet seen).
 * 3. The clock moves past the pauses: both inputs end and the last timer
 *    fires.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type Collector,
  type KeyedCoProcessFunction,
  type KeyedProcessContext,
  type OnTimerContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, ManualClock, type TestItem, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";

type Stamped = { readonly name: string; readonly ts: number };

/** What the function saw, shared by its per-subtask copies (shallow). */
interface Probe {
  readonly readings: number[];
  readonly rules: string[];
  readonly timers: { at: number; watermark: number; rulesSeen: number }[];
}

class TimerPerReading implements KeyedCoProcessFunction<string, Stamped, Stamped, string> {
  constructor(readonly probe: Probe) {}
  processElement1(r: Stamped, ctx: KeyedProcessContext<string>, _out: Collector<string>): void {
    this.probe.readings.push(r.ts);
    ctx.timerService().registerEventTimeTimer(r.ts);
  }
  processElement2(r: Stamped, _ctx: KeyedProcessContext<string>, _out: Collector<string>): void {
    this.probe.rules.push(r.name);
  }
  onTimer(timestamp: number, ctx: OnTimerContext<string>, out: Collector<string>): void {
    this.probe.timers.push({
      at: timestamp,
      watermark: ctx.timerService().currentWatermark(),
      rulesSeen: this.probe.rules.length,
    });
    out.collect(`timer ${ctx.getCurrentKey()}@${timestamp}`);
  }
}

async function until(condition: () => boolean, what: string, job: { failure: unknown }) {
  const deadline = Date.now() + 60_000; // generous: the machine is shared and slow
  while (!condition()) {
    if (job.failure !== undefined) throw job.failure;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

Deno.test("a two-input operator's watermark is the minimum over both inputs, without an idle one", async () => {
  await withTempDir(async (dir) => {
    const clock = new ManualClock(0);
    const probe: Probe = { readings: [], rules: [], timers: [] };
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setClock(clock)
      .setAutoWatermarkInterval(100)
      .setCheckpointDirectory(dir);
    const stamped = (name: string, ts: number) => TestSource.timestamped({ name, ts }, ts);
    const readings: TestItem<Stamped>[] = [
      ...Array.from({ length: 10 }, (_, i) => stamped(`r${i}`, (i + 1) * 100)),
      TestSource.pause(120_000),
    ];
    const rules: TestItem<Stamped>[] = [
      stamped("rule0", 0),
      TestSource.pause(60_000),
      stamped("rule1", 60_000),
    ];
    const sink = new CollectingSink<string>();
    const one = env.fromSource(
      TestSource.of(readings),
      WatermarkStrategy.forMonotonousTimestamps<Stamped>(),
      "readings",
    ).uid("readings").setParallelism(1);
    const two = env.fromSource(
      TestSource.of(rules),
      WatermarkStrategy.forMonotonousTimestamps<Stamped>().withIdleness(500),
      "rules",
    ).uid("rules").setParallelism(1);
    one.connect(two).keyBy(() => "k", () => "k")
      .process(new TimerPerReading(probe)).uid("timers").setParallelism(1)
      .sinkTo(sink).uid("out");
    const job: { failure: unknown } = { failure: undefined };
    const result = env.execute("two-input watermark").catch((e) => {
      job.failure = e;
      throw e;
    });

    // 1. Input 2 at -1 holds event time back.
    await until(
      () => probe.readings.length === 10 && probe.rules.length === 1,
      "every reading and the first rule",
      job,
    );
    assert.equal(probe.timers.length, 0, "no timer before input 2 moves or idles");

    // 2. Input 2 turns idle: the watermark is input 1's. Idleness is found
    // by periodic checks (500 ms since the first check that saw no record,
    // as Flink's IdlenessTimer), so the clock moves in steps of 100 ms,
    // staying far below the end of input 2's pause.
    for (let step = 0; probe.timers.length < 9; step++) {
      assert.ok(
        step < 500,
        `the timers up to 900 fired by ${clock.now()} ms: ${probe.timers.length}`,
      );
      if (job.failure !== undefined) throw job.failure;
      clock.advance(100);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await until(() => probe.timers.length >= 9, "the timers up to 900", job);
    assert.deepEqual(probe.timers.map((t) => t.at), [100, 200, 300, 400, 500, 600, 700, 800, 900]);
    assert.ok(probe.timers.every((t) => t.watermark === 999), JSON.stringify(probe.timers));
    assert.ok(probe.timers.every((t) => t.rulesSeen === 1), "input 2 was still paused");

    // 3. Everything ends.
    clock.advance(150_000);
    await result;
    assert.deepEqual(probe.rules, ["rule0", "rule1"]);
    assert.equal(probe.timers.length, 10);
    assert.deepEqual(
      [...sink.committed()].sort(),
      [100, 1000, 200, 300, 400, 500, 600, 700, 800, 900].map((t) => `timer k@${t}`).sort(),
    );
  });
});
