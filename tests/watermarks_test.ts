/**
 * Event time end to end: per-split watermarks, idleness and watermarks that
 * hold across a restore (issue 8, item 1; the idleness test of item 7).
 *
 * ## How the tests drive time
 *
 * Watermarks are periodic on processing time, so every job here runs on a
 * `ManualClock` (`env.setClock`) with a 100 ms auto-watermark interval: a
 * periodic watermark goes out only when the test moves the clock. Sources
 * are `TestSource`s whose `pause` markers hold a split until the clock has
 * moved, and whose `fail` marker ends an unbounded job at a scripted point
 * (the test's way to cancel it). Every wait has a deadline that fails
 * naming what was missing.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type AggregateFunction,
  type Collector,
  JobFailedError,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type OnTimerContext,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  TumblingEventTimeWindows,
  type WatermarkGenerator,
  type WatermarkOutput,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, ManualClock, type TestItem, TestSource } from "../testing.ts";
import { waitUntil } from "./_wait.ts";
import { withTempDir } from "./_job_kit.ts";

/** A reading: a key and its event time (ms). */
interface Reading {
  readonly key: string;
  readonly ts: number;
}

function reading(key: string, ts: number): TestItem<Reading> {
  return TestSource.timestamped({ key, ts }, ts);
}

/** What the timer function saw, shared by its per-subtask copies (they are shallow). */
interface TimerProbe {
  /** Readings processed. */
  readonly seen: Reading[];
  /** Event-time timers fired: `<key>@<time>`, with the processing time they fired at. */
  readonly fired: { readonly timer: string; readonly atMs: number }[];
}

/** Registers an event-time timer 10 ms after each reading; reports the timers that fire. */
class TimerPerReading implements KeyedProcessFunction<string, Reading, string> {
  readonly probe: TimerProbe;
  constructor(probe: TimerProbe) {
    this.probe = probe;
  }
  processElement(r: Reading, ctx: KeyedProcessContext<string>): void {
    this.probe.seen.push(r);
    ctx.timerService().registerEventTimeTimer(r.ts + 10);
  }
  onTimer(timestamp: number, ctx: OnTimerContext<string>): void {
    this.probe.fired.push({
      timer: `${ctx.getCurrentKey()}@${timestamp}`,
      atMs: ctx.timerService().currentProcessingTime(),
    });
  }
}

/** A pause longer than any test's clock steps, in ms. */
const HOUR_MS = 3_600_000;

/** Why a test's job ended: the scripted failure that stands for a cancel. */
const STOP = "stop the unbounded job";

/**
 * readings → keyBy(key) → {@linkcode TimerPerReading}, on `clock`, with
 * periodic watermarks every 100 ms of it.
 */
function timerJob(options: {
  source: TestSource<Reading>;
  strategy: WatermarkStrategy<Reading>;
  /** A strategy for `assignTimestampsAndWatermarks` after the source, if any. */
  assign?: WatermarkStrategy<Reading>;
  parallelism: number;
  clock: ManualClock;
  probe: TimerProbe;
}): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(options.parallelism)
    .setClock(options.clock)
    .setAutoWatermarkInterval(100);
  let readings = env.fromSource(options.source, options.strategy, "readings").uid("readings")
    .map((r) => r).name("chained"); // status and watermarks pass through a chained operator
  if (options.assign) readings = readings.assignTimestampsAndWatermarks(options.assign);
  readings
    .keyBy((r) => r.key)
    .process(new TimerPerReading(options.probe)).uid("timers")
    .sinkTo({ kind: "simple", invoke() {} });
  return env;
}

/** Runs `steps` while the job runs, then awaits the job's end by the scripted STOP failure. */
async function runUntilStopped(
  env: StreamExecutionEnvironment,
  steps: () => Promise<void>,
): Promise<void> {
  const job = env.execute("watermarks");
  job.catch(() => {}); // awaited below, also when a step fails
  try {
    await steps();
  } finally {
    await assert.rejects(job, (error: unknown) => {
      assert.ok(error instanceof JobFailedError, String(error));
      assert.match(error.message, new RegExp(STOP));
      return true;
    });
  }
}

Deno.test("an unbounded source with 1 split read by 2 source subtasks still fires event-time timers while it runs", async () => {
  const clock = new ManualClock(0);
  const probe: TimerProbe = { seen: [], fired: [] };
  // One split: source subtask 1 owns none. Unless it is idle, it holds event
  // time at -Infinity downstream and no timer ever fires while the job runs.
  const items: TestItem<Reading>[] = [
    reading("a", 1_000),
    reading("b", 2_000),
    reading("c", 3_000),
    reading("d", 10_000),
    TestSource.pause(HOUR_MS),
    TestSource.fail(STOP),
  ];
  const env = timerJob({
    source: TestSource.of(items, { bounded: false, batchSize: 10 }),
    strategy: WatermarkStrategy.forMonotonousTimestamps<Reading>(),
    parallelism: 2,
    clock,
    probe,
  });

  await runUntilStopped(env, async () => {
    try {
      await waitUntil(() => probe.seen.length === 4, {
        timeoutMs: 30_000,
        missing: () => `${probe.seen.length} of 4 readings reached the timer function`,
      });
      // Periodic watermarks: 9 999 from subtask 0, while subtask 1 is idle.
      await waitUntil(() => {
        clock.advance(100);
        return probe.fired.length >= 3;
      }, {
        timeoutMs: 30_000,
        missing: () =>
          `timers [${
            probe.fired.map((f) => f.timer)
          }] fired of a@1010, b@2010, c@3010 (clock at ${clock.now()} ms)`,
      });
    } finally {
      clock.advance(HOUR_MS); // releases the pause: the job stops
    }
  });
  // The timer of d (10 010) is beyond the watermark: nothing ended event
  // time (no MAX_WATERMARK) while the source ran.
  assert.deepEqual(probe.fired.map((f) => f.timer).sort(), ["a@1010", "b@2010", "c@3010"]);
});

Deno.test("an unbounded source with 1 split read by 2 source subtasks still fires every event-time window while it runs", async () => {
  const clock = new ManualClock(0);
  const fired: string[] = [];
  // Tumbling 1 s windows of counts per key. Source subtask 1 owns no split:
  // unless it is idle from the start, no window fires before the job ends.
  const items: TestItem<Reading>[] = [
    reading("a", 100),
    reading("a", 900),
    reading("b", 1_500),
    reading("a", 2_100),
    reading("b", 5_000),
    TestSource.pause(HOUR_MS),
    TestSource.fail(STOP),
  ];
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(2)
    .setClock(clock)
    .setAutoWatermarkInterval(100);
  env.fromSource(
    TestSource.of(items, { bounded: false, batchSize: 10 }),
    WatermarkStrategy.forMonotonousTimestamps<Reading>(),
    "readings",
  ).uid("readings")
    .keyBy((r) => r.key)
    .window(TumblingEventTimeWindows.of(1_000))
    .aggregate(COUNT, {
      process(key: string, ctx, counts: readonly number[], out: Collector<string>) {
        out.collect(`${key}[${ctx.window().start},${ctx.window().end})=${counts[0]}`);
      },
    }).uid("windows")
    .sinkTo({ kind: "simple", invoke: (w: string) => void fired.push(w) });

  await runUntilStopped(env, async () => {
    try {
      await waitUntil(() => {
        clock.advance(100);
        return fired.length >= 3;
      }, {
        timeoutMs: 30_000,
        missing: () =>
          `windows [${fired}] fired of a[0,1000)=2, b[1000,2000)=1, a[2000,3000)=1 (clock at ${clock.now()} ms)`,
      });
    } finally {
      clock.advance(HOUR_MS); // releases the pause: the job stops
    }
  });
  // b's window [5000, 6000) is beyond the watermark (4 999): nothing ended
  // event time while the source ran.
  assert.deepEqual(fired.sort(), ["a[0,1000)=2", "a[2000,3000)=1", "b[1000,2000)=1"]);
});

/** Counts a window's readings. */
const COUNT: AggregateFunction<Reading, number, number> = {
  createAccumulator: () => 0,
  add: (_r, n) => n + 1,
  getResult: (n) => n,
  merge: (a, b) => a + b,
};

Deno.test("a quiet split turns idle after the idle timeout and no longer holds back the watermark (ManualClock)", async () => {
  const clock = new ManualClock(0);
  const probe: TimerProbe = { seen: [], fired: [] };
  // One source subtask with two splits: split 1 emits one early reading and
  // then nothing; split 0 goes on, one reading per 300 ms of processing time.
  const busy: TestItem<Reading>[] = [];
  for (let i = 1; i <= 12; i++) busy.push(reading("busy", i * 1_000), TestSource.pause(300));
  busy.push(TestSource.fail(STOP));
  const quiet: TestItem<Reading>[] = [reading("quiet", 100)];
  const env = timerJob({
    source: TestSource.perSubtask([busy, quiet], { bounded: false }),
    strategy: WatermarkStrategy.forMonotonousTimestamps<Reading>().withIdleness(1_000),
    parallelism: 1,
    clock,
    probe,
  });

  await runUntilStopped(env, async () => {
    try {
      // Step the clock only once the previous reading arrived, so each
      // reading's processing time is fixed by the script.
      for (let n = 2; n <= 13; n++) {
        await waitUntil(() => probe.seen.length >= n, {
          timeoutMs: 30_000,
          missing: () => `${probe.seen.length} of ${n} readings arrived (clock at ${clock.now()})`,
        });
        for (let step = 0; step < 3; step++) clock.advance(100);
      }
    } finally {
      clock.advance(HOUR_MS);
    }
  });
  const timers = probe.fired.map((f) => f.timer);
  for (const expected of ["quiet@110", "busy@1010", "busy@2010", "busy@3010"]) {
    assert.ok(timers.includes(expected), `${expected} fired: ${JSON.stringify(probe.fired)}`);
  }
  // Until the quiet split turned idle it held the watermark at 99, below
  // every timer. Its first periodic check (at 100 ms or later) saw its one
  // reading, so it turned idle 1 000 ms after that check at the earliest.
  for (const f of probe.fired) assert.ok(f.atMs >= 1_100, `${f.timer} fired at ${f.atMs} ms`);
});

Deno.test("assignTimestampsAndWatermarks in the middle of a job drives event-time timers with its own periodic watermarks", async () => {
  const clock = new ManualClock(0);
  const probe: TimerProbe = { seen: [], fired: [] };
  // The source has no timestamps and no watermarks: only the operator after it does.
  const items: TestItem<Reading>[] = [
    { key: "a", ts: 1_000 },
    { key: "b", ts: 2_000 },
    { key: "c", ts: 10_000 },
    TestSource.pause(HOUR_MS),
    TestSource.fail(STOP),
  ];
  const env = timerJob({
    source: TestSource.of(items, { bounded: false, batchSize: 10 }),
    strategy: WatermarkStrategy.noWatermarks<Reading>(),
    assign: WatermarkStrategy.forBoundedOutOfOrderness<Reading>(5_000)
      .withTimestampAssigner((r) => r.ts),
    parallelism: 1,
    clock,
    probe,
  });
  await runUntilStopped(env, async () => {
    try {
      await waitUntil(() => {
        clock.advance(100);
        return probe.fired.length >= 2;
      }, {
        timeoutMs: 30_000,
        missing: () =>
          `timers [${probe.fired.map((f) => f.timer)}] fired of a@1010, b@2010 ` +
          `(${probe.seen.length} of 3 readings seen, clock at ${clock.now()} ms)`,
      });
    } finally {
      clock.advance(HOUR_MS);
    }
  });
  // The watermark is 10 000 - 5 000 - 1: c's timer (10 010) stays pending.
  assert.deepEqual(probe.fired.map((f) => f.timer).sort(), ["a@1010", "b@2010"]);
});

// ---------------------------------------------------------------------------
// Late records around a restore

/**
 * Punctuated watermarks: after each event, the largest timestamp seen minus
 * 100 ms. Its state, the largest timestamp, is checkpointed with the split.
 */
class MaxMinusBound implements WatermarkGenerator<Reading> {
  private max = Number.NEGATIVE_INFINITY;
  onEvent(_event: Reading, timestamp: number, output: WatermarkOutput): void {
    if (timestamp > this.max) this.max = timestamp;
    output.emitWatermark(this.max - 100);
  }
  onPeriodicEmit(): void {}
  snapshotState(): number {
    return this.max;
  }
  restoreState(state: unknown): void {
    this.max = state as number;
  }
}

/** A reading judged against the operator's watermark when it arrived. */
interface Judged {
  readonly key: string;
  readonly ts: number;
  readonly watermark: number;
  readonly late: boolean;
}

/** Emits, for every reading, whether it is late: timestamp <= the current watermark. */
class LatenessJudge implements KeyedProcessFunction<string, Reading, Judged> {
  open(_ctx: RuntimeContext): void {}
  processElement(r: Reading, ctx: KeyedProcessContext<string>, out: Collector<Judged>): void {
    const watermark = ctx.timerService().currentWatermark();
    out.collect({
      key: r.key,
      ts: ctx.timestamp()!,
      watermark,
      late: ctx.timestamp()! <= watermark,
    });
  }
}

/**
 * The readings: on time and late ones on two keys. A checkpoint is taken
 * while the source waits at the marker; then, in one poll (no checkpoint
 * can fall in between), the first readings after it and the failure on
 * `failOnAttempt`. The restored attempt replays them from the checkpoint.
 */
function lateScript(failOnAttempt: number): TestItem<Reading>[] {
  return [
    reading("k1", 1_000),
    reading("k2", 1_500), // watermark 1 400
    reading("k1", 900), // late
    reading("k2", 1_450),
    TestSource.awaitCheckpoint(),
    reading("k1", 1_200), // replayed first: late only if the watermark held
    reading("k2", 1_390), // late
    reading("k1", 1_460), // on time: 1 460 > 1 400
    TestSource.fail("crash after the late readings", { attempt: failOnAttempt }),
    reading("k2", 1_800), // watermark 1 700
    reading("k1", 1_650), // late
    reading("k2", 1_750),
  ];
}

async function runLateJob(failOnAttempt: number): Promise<{ out: Judged[]; restarts: number }> {
  return await withTempDir(async (dir) => {
    const sink = new CollectingSink<Judged>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(2)
      .enableCheckpointing(20, { directory: dir })
      .setRestartStrategy(RestartStrategies.fixedDelay(1, 0));
    env.fromSource(
      TestSource.of(lateScript(failOnAttempt), { batchSize: 100 }),
      WatermarkStrategy.forGenerator<Reading>(() => new MaxMinusBound()),
      "readings",
    ).uid("readings").setParallelism(1)
      .keyBy((r) => r.key)
      .process(new LatenessJudge()).uid("judge")
      .sinkTo(sink).uid("judged");
    const result = await env.execute("late around a restore");
    return { out: sink.committed(), restarts: result.restarts };
  });
}

/** The judged readings of each key, in order. */
function byKey(out: readonly Judged[]): Record<string, Judged[]> {
  const keys: Record<string, Judged[]> = {};
  for (const j of out) (keys[j.key] ??= []).push(j);
  return keys;
}

Deno.test("late records around a restore are judged as in a run without the failure", async () => {
  const failureFree = await runLateJob(99);
  const restored = await runLateJob(0);
  assert.equal(failureFree.restarts, 0);
  assert.equal(restored.restarts, 1, "the job failed once and was restored");
  const expected = byKey(failureFree.out);
  // The script's own verdicts, so the comparison cannot pass vacuously.
  assert.deepEqual(expected["k1"]!.map((j) => [j.ts, j.late]), [
    [1_000, false],
    [900, true],
    [1_200, true],
    [1_460, false],
    [1_650, true],
  ]);
  assert.deepEqual(expected["k2"]!.map((j) => [j.ts, j.late]), [
    [1_500, false],
    [1_450, false],
    [1_390, true],
    [1_800, false],
    [1_750, false],
  ]);
  assert.deepEqual(byKey(restored.out), expected);
});

Deno.test("an operator that held only a watermark does not block a resume without allowNonRestoredState", async () => {
  await withTempDir(async (dir) => {
    const build = (options: { stampUid: string | undefined; failOnAttempt: number }) => {
      const sink = new CollectingSink<Judged>();
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .enableCheckpointing(20, { directory: dir })
        .setRestartStrategy(RestartStrategies.noRestart());
      let readings = env.fromSource(
        TestSource.of(lateScript(options.failOnAttempt), { batchSize: 100 }),
        WatermarkStrategy.forGenerator<Reading>(() => new MaxMinusBound()),
        "readings",
      ).uid("readings");
      // A stateless operator: at the checkpoint it holds nothing but its watermark.
      if (options.stampUid !== undefined) readings = readings.map((r) => r).uid(options.stampUid);
      readings.keyBy((r) => r.key).process(new LatenessJudge()).uid("judge")
        .sinkTo(sink).uid("judged");
      return { env, sink };
    };
    const first = build({ stampUid: "stamp", failOnAttempt: 0 });
    const error = await first.env.execute("late around a resume").then(
      () => assert.fail("the first run should fail for good"),
      (e: unknown) => e,
    );
    assert.ok(error instanceof JobFailedError, String(error));
    const jobId = /resumeFrom\(\{ jobId: "([^"]+)"/.exec(error.message)?.[1];
    assert.ok(jobId !== undefined, `the error says how to resume: ${error.message}`);

    const resumed = build({ stampUid: undefined, failOnAttempt: 99 });
    resumed.env.resumeFrom({ jobId });
    await resumed.env.execute("late around a resume");
    // The judge kept its floor: the first replayed reading is late, as without the failure.
    // (Before them, the resumed sink may commit the checkpoint's pending transaction.)
    assert.deepEqual(byKey(resumed.sink.committed())["k1"]!.slice(-3).map((j) => [j.ts, j.late]), [
      [1_200, true],
      [1_460, false],
      [1_650, true],
    ]);
  });
});
