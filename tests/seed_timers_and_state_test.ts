/**
 * In-process acceptance tests for the seed examples of DESIGN.md §10 whose
 * answers depend on state and time rather than on printed output:
 *
 * - seed 4 (timers): a `KeyedProcessFunction` warns when a sensor's
 *   temperature keeps rising for 10 s of processing time, driven by a
 *   `ManualClock` (`env.setClock`);
 * - seed 2 (keyed state): the alerts at parallelism 4, the IEEE-double jump
 *   that is not reported, and the key groups of the seed's keys;
 * - seed 5 (even/odd sums): what the checkpoint restored after the crash at 7
 *   holds, observed through the restored job's behaviour.
 *
 * ## How the tests drive the manual clock
 *
 * `execute()` runs the job on the test's own event loop, so the test moves
 * the clock while it awaits the job. Readings reach the keyed operator
 * asynchronously (a `keyBy` is a network edge between two subtask actors),
 * so the test must not move time while a reading is in flight, or the
 * reading would see a later processing time. Hence the scripts: a
 * `TestSource.pause(ms)` after each group of readings holds the source until
 * the clock has moved `ms`, and the test moves it only once the operator
 * reported every reading of the group (`seen`). Time therefore moves exactly
 * at the scripted points, and every timer's due time is exact.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  assignToKeyGroup,
  type Collector,
  DEFAULT_MAX_PARALLELISM,
  type FunctionInitializationContext,
  type KeyedProcessContext,
  keyHash,
  type OnTimerContext,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, ManualClock, type TestItem, TestSource } from "../testing.ts";
import { TemperatureJumpAlert } from "../examples/temperature_alert.ts";
import { TemperatureRiseWarning } from "../examples/rising_temperature.ts";
import { FailOnce, runEvenOddSums, RunningSum } from "../examples/even_odd_sums.ts";
import { sensorFile, type SensorReading } from "../examples/sensor.ts";

// ---------------------------------------------------------------------------
// Seed 4: timers

/** The seed's warning text for `id`, spelled out (examples/rising_temperature.ts makes it). */
function warning(id: string): string {
  return `sensor ${id} temperature rose continuously for 10000 ms`;
}

/** What the function saw, shared by all its per-subtask copies (they are shallow). */
interface TimerProbe {
  /** Every reading processed, with the processing time it was processed at. */
  readonly seen: { id: string; temperature: number; atMs: number }[];
  /** Every timer that fired: key, due time, time domain, the processing time it fired at, attempt. */
  readonly fired: {
    id: string;
    timestamp: number;
    domain: "event-time" | "processing-time";
    atMs: number;
    attempt: number;
  }[];
  /** The checkpoint each subtask copy was restored from (`undefined`: a fresh start). */
  readonly restoredFrom: (number | undefined)[];
}

function newProbe(): TimerProbe {
  return { seen: [], fired: [], restoredFrom: [] };
}

/**
 * Seed example 4, the function of `examples/rising_temperature.ts`,
 * reporting to `probe` what it sees and fires.
 */
class ProbedRiseWarning extends TemperatureRiseWarning {
  readonly probe: TimerProbe;
  private attempt = 0;

  constructor(probe: TimerProbe) {
    super();
    this.probe = probe;
  }

  initializeState(ctx: FunctionInitializationContext): void {
    this.probe.restoredFrom.push(ctx.restoredCheckpointId);
  }

  override open(ctx: RuntimeContext): void {
    super.open(ctx);
    this.attempt = ctx.attempt;
  }

  override processElement(
    reading: SensorReading,
    ctx: KeyedProcessContext<string>,
    out: Collector<string>,
  ): void {
    super.processElement(reading, ctx, out);
    const atMs = ctx.timerService().currentProcessingTime();
    this.probe.seen.push({ id: reading.id, temperature: reading.temperature, atMs });
  }

  override onTimer(timestamp: number, ctx: OnTimerContext<string>, out: Collector<string>): void {
    this.probe.fired.push({
      id: ctx.getCurrentKey(),
      timestamp,
      domain: ctx.timeDomain(),
      atMs: ctx.timerService().currentProcessingTime(),
      attempt: this.attempt,
    });
    super.onTimer(timestamp, ctx, out);
  }
}

function reading(id: string, temperature: number): SensorReading {
  return { id, timestamp: 0, temperature };
}

/** Waits (with real macrotask yields) until `condition` holds, the job failed, or 10 s passed. */
async function until(
  condition: () => boolean,
  what: string,
  job: { failure: unknown },
): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (job.failure !== undefined) throw job.failure;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** One step of a timer test: wait until `ready(probe)` holds, then move the clock `advanceMs`. */
interface ClockStep {
  readonly ready: (probe: TimerProbe) => boolean;
  readonly what: string;
  readonly advanceMs: number;
}

/** A step that waits until `n` readings were processed. */
function afterReadings(n: number, advanceMs: number): ClockStep {
  return { ready: (p) => p.seen.length >= n, what: `${n} readings processed`, advanceMs };
}

/** A step that waits until `n` timers fired. */
function afterTimers(n: number, advanceMs: number): ClockStep {
  return { ready: (p) => p.fired.length >= n, what: `${n} timers fired`, advanceMs };
}

/** Runs `body` with a fresh temporary directory, removed afterwards. */
async function withTempDir<T>(body: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "weir-seed-test-" });
  try {
    return await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A job's outcome as a test follows it while it runs. */
interface JobWatch<R> {
  failure: unknown;
  done: boolean;
  readonly result: Promise<R>;
}

/** Starts watching `execution`: `failure` and `done` update as it settles. */
function watch<R>(execution: Promise<R>): JobWatch<R> {
  const job: JobWatch<R> = {
    failure: undefined,
    done: false,
    result: execution.then(
      (result) => {
        job.done = true;
        return result;
      },
      (error) => {
        job.failure = error;
        throw error;
      },
    ),
  };
  return job;
}

/**
 * Runs readings → keyBy(id) → ProbedRiseWarning → CollectingSink on a
 * ManualClock starting at 0, moving the clock as `steps` say.
 * @returns the committed warnings, the probe and the clock.
 */
function runRiseWarning(
  script: readonly TestItem<SensorReading>[],
  steps: readonly ClockStep[],
): Promise<{ warnings: string[]; probe: TimerProbe; clock: ManualClock }> {
  return withTempDir(async (dir) => {
    const clock = new ManualClock(0);
    const probe = newProbe();
    const sink = new CollectingSink<string>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    // No periodic checkpoints: the final one (end of input) commits the warnings.
    env.setClock(clock).setCheckpointDirectory(dir);
    env.fromSource(TestSource.of(script), WatermarkStrategy.noWatermarks(), "readings")
      .uid("readings")
      .keyBy((r) => r.id)
      .process(new ProbedRiseWarning(probe)).uid("rise-warning")
      .sinkTo(sink).uid("warnings");
    const job = watch(env.execute("seed 4 timers"));
    for (const step of steps) {
      await until(() => step.ready(probe), step.what, job);
      clock.advance(step.advanceMs);
    }
    await job.result;
    return { warnings: sink.committed(), probe, clock };
  });
}

Deno.test("seed 4: a temperature rising for 10 s of processing time warns exactly once, when its timer is due", async () => {
  // sensor_1 rises every 3 s from t=0 to t=12 s: the first rise (t=3 s) sets
  // the timer to 13 s. The clock then stops at 13 s until the timer fired.
  const script = [
    reading("sensor_1", 10),
    TestSource.pause(3_000),
    reading("sensor_1", 11),
    TestSource.pause(3_000),
    reading("sensor_1", 12),
    TestSource.pause(3_000),
    reading("sensor_1", 13),
    TestSource.pause(3_000),
    reading("sensor_1", 14),
    TestSource.pause(10_000),
  ];
  const { warnings, probe, clock } = await runRiseWarning(script, [
    afterReadings(1, 3_000),
    afterReadings(2, 3_000),
    afterReadings(3, 3_000),
    afterReadings(4, 3_000),
    afterReadings(5, 1_000),
    afterTimers(1, 9_000),
  ]);

  assert.deepEqual(probe.seen.map((s) => s.atMs), [0, 3_000, 6_000, 9_000, 12_000]);
  assert.deepEqual(warnings, [warning("sensor_1")]);
  assert.deepEqual(probe.fired, [
    { id: "sensor_1", timestamp: 13_000, domain: "processing-time", atMs: 13_000, attempt: 0 },
  ]);
  assert.equal(clock.now(), 22_000);
});

Deno.test("seed 4: a drop before 10 s deletes the sensor's timer, so only the sensor that kept rising warns", async () => {
  // Both sensors rise at t=3 s, so both register a timer due at 13 s. sensor_2
  // drops at 6 s (its timer is deleted), rises again at 9 s (a new timer, due
  // at 19 s) and drops again at 12 s: it never warns, though the clock passes
  // both of its due times. sensor_1's timer, due at the same 13 s, must survive
  // the deletion of sensor_2's.
  const script = [
    reading("sensor_1", 10),
    reading("sensor_2", 20),
    TestSource.pause(3_000),
    reading("sensor_1", 11),
    reading("sensor_2", 21),
    TestSource.pause(3_000),
    reading("sensor_1", 12),
    reading("sensor_2", 19),
    TestSource.pause(3_000),
    reading("sensor_1", 13),
    reading("sensor_2", 20),
    TestSource.pause(3_000),
    reading("sensor_1", 14),
    reading("sensor_2", 18),
    TestSource.pause(10_000),
  ];
  const { warnings, probe } = await runRiseWarning(script, [
    afterReadings(2, 3_000),
    afterReadings(4, 3_000),
    afterReadings(6, 3_000),
    afterReadings(8, 3_000),
    afterReadings(10, 10_000),
  ]);

  assert.deepEqual(
    probe.seen.filter((s) => s.id === "sensor_2").map((s) => [s.temperature, s.atMs]),
    [[20, 0], [21, 3_000], [19, 6_000], [20, 9_000], [18, 12_000]],
  );
  assert.deepEqual(warnings, [warning("sensor_1")]);
  assert.deepEqual(probe.fired.map((f) => [f.id, f.timestamp]), [["sensor_1", 13_000]]);
});

Deno.test("seed 4: a pending timer is part of the checkpoint and fires once after a restore from it", async () => {
  // The rise at t=3 s registers the timer due at 13 s; a checkpoint covering
  // it completes; then the first attempt crashes. The restored attempt has
  // the timer from the checkpoint, and it fires once processing time reaches
  // 13 s. After the restore the clock may move freely: the checkpoint fixed
  // the due time.
  await withTempDir(async (dir) => {
    const clock = new ManualClock(0);
    const probe = newProbe();
    const sink = new CollectingSink<string>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setClock(clock)
      .enableCheckpointing(20, { directory: dir })
      .setRestartStrategy(RestartStrategies.fixedDelay(1, 0));
    const script = [
      reading("sensor_1", 10),
      TestSource.pause(3_000),
      reading("sensor_1", 11),
      TestSource.awaitCheckpoint(),
      TestSource.fail("crash with the timer pending"),
      TestSource.pause(15_000),
    ];
    env.fromSource(TestSource.of(script), WatermarkStrategy.noWatermarks(), "readings")
      .uid("readings")
      .keyBy((r) => r.id)
      .process(new ProbedRiseWarning(probe)).uid("rise-warning")
      .sinkTo(sink).uid("warnings");
    const job = watch(env.execute("seed 4 timer restore"));
    await until(() => probe.seen.length >= 1, "the first reading", job);
    clock.advance(3_000);
    await until(() => probe.restoredFrom.some((id) => id !== undefined), "the restore", job);
    while (!job.done) {
      if (job.failure !== undefined) throw job.failure;
      assert.ok(clock.now() < 100_000, "the job did not finish though the clock moved");
      clock.advance(1_000);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const result = await job.result;

    assert.equal(result.restarts, 1);
    assert.deepEqual(probe.seen.map((s) => [s.temperature, s.atMs]), [[10, 0], [11, 3_000]]);
    assert.deepEqual(probe.fired.map((f) => [f.id, f.timestamp, f.attempt]), [
      ["sensor_1", 13_000, 1],
    ]);
    assert.deepEqual(sink.committed(), [warning("sensor_1")]);
  });
});

// ---------------------------------------------------------------------------
// Seed 2: keyed state

/** The seed's three alerts, in input order. */
const SEED_ALERTS: [string, number, number][] = [
  ["sensor_1", 32.4, 42.4],
  ["sensor_10", 52.6, 22.5],
  ["sensor_7", 19.9, 30],
];

Deno.test("seed 2: 19.9 - 9.9 is 9.999999999999998 in IEEE doubles, so sensor_7's jump from 9.9 to 19.9 is no alert", async () => {
  assert.equal(19.9 - 9.9, 9.999999999999998);
  assert.equal(30 - 19.9, 10.100000000000001);
  await withTempDir(async (dir) => {
    const sink = new CollectingSink<[string, number, number]>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment().setCheckpointDirectory(dir);
    const readings = [6.7, 9.9, 19.9, 30].map((t) => reading("sensor_7", t));
    env.fromSource(TestSource.of(readings), WatermarkStrategy.noWatermarks(), "sensor_7")
      .uid("sensor-7")
      .keyBy((r) => r.id)
      .process(new TemperatureJumpAlert(10)).uid("temperature-jump-alert")
      .sinkTo(sink).uid("alerts");
    await env.execute("seed 2 sensor_7");
    assert.deepEqual(sink.committed(), [["sensor_7", 19.9, 30]]);
  });
});

Deno.test("the seed's keys map to fixed hashes and key groups (golden values)", () => {
  // These are part of the checkpoint format: a change would restore every
  // checkpoint into the wrong key groups. Do not update them.
  const golden: [string, number, number, number][] = [
    ["sensor_1", 3348993195, 58, 7738],
    ["sensor_6", 3962626753, 16, 25360],
    ["sensor_7", 3972746608, 69, 26821],
    ["sensor_10", 545360966, 110, 1774],
    ["even", 3100040011, 53, 11445],
    ["odd", 3696520513, 25, 3353],
  ];
  assert.equal(DEFAULT_MAX_PARALLELISM, 128);
  for (const [key, hash, group128, group32768] of golden) {
    assert.equal(keyHash(key), hash, `keyHash(${key})`);
    assert.equal(assignToKeyGroup(key, DEFAULT_MAX_PARALLELISM), group128, `${key} at 128`);
    assert.equal(assignToKeyGroup(key, 32768), group32768, `${key} at 32768`);
  }
});

Deno.test("seed 2 at parallelism 4: each alert comes from the subtask that owns its key's group", async () => {
  // Key groups 58, 110 and 69 of 128 belong to subtasks 1, 3 and 2 of 4
  // (Flink's keyGroup * parallelism / maxParallelism): the three sensors' state
  // lives in three different subtasks, and each still gives the seed's alert.
  await withTempDir(async (dir) => {
    const sink = new CollectingSink<[string, number, number]>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(4).setCheckpointDirectory(dir);
    env.fromSource(
      sensorFile(fileURLToPath(new URL("../examples/data/sensors.csv", import.meta.url)), false),
      WatermarkStrategy.noWatermarks(),
      "sensors",
    ).uid("sensor-source").setParallelism(1)
      .keyBy((r) => r.id)
      .process(new TemperatureJumpAlert(10)).uid("temperature-jump-alert")
      .sinkTo(sink).uid("alerts");
    await env.execute("seed 2 at parallelism 4");
    assert.deepEqual(sink.committedBySubtask(), [
      [],
      [SEED_ALERTS[0]],
      [SEED_ALERTS[2]],
      [SEED_ALERTS[1]],
    ]);
  });
});

// ---------------------------------------------------------------------------
// Seed 5: even/odd sums under failure

/** The seed's committed running sums, in order (a run without failure). */
const SEED_RUNNING_SUMS: [string, number][] = [
  ["odd", 1],
  ["even", 2],
  ["odd", 4],
  ["even", 6],
  ["odd", 9],
  ["even", 12],
  ["odd", 16],
  ["even", 20],
  ["odd", 25],
  ["even", 30],
];

/** What RunningSum saw: per attempt, each number and its key's sum before it. */
interface SumProbe {
  readonly seen: { attempt: number; n: number; sumBefore: number | undefined }[];
  readonly restoredFrom: (number | undefined)[];
}

/** The example's RunningSum, reporting what it sees (and quiet about restores). */
class ProbedRunningSum extends RunningSum {
  readonly probe: SumProbe;
  private sumBefore!: ValueState<number>;
  private attempt = 0;
  constructor(probe: SumProbe) {
    super();
    this.probe = probe;
  }
  override initializeState(ctx: FunctionInitializationContext): void {
    this.probe.restoredFrom.push(ctx.restoredCheckpointId);
  }
  override open(ctx: RuntimeContext): void {
    super.open(ctx);
    this.attempt = ctx.attempt;
    this.sumBefore = ctx.getState(new ValueStateDescriptor<number>("sum"));
  }
  override processElement(
    n: number,
    ctx: KeyedProcessContext<string>,
    out: Collector<[string, number]>,
  ): void {
    this.probe.seen.push({ attempt: this.attempt, n, sumBefore: this.sumBefore.value() });
    super.processElement(n, ctx, out);
  }
}

Deno.test("seed 5: the checkpoint restored after the crash at 7 holds source offset 5, sum_even 6 and sum_odd 9", async () => {
  // The example's job, wired as runEvenOddSums wires it, with RunningSum
  // probed: what the restored attempt sees first is what the checkpoint held.
  await withTempDir(async (dir) => {
    const probe: SumProbe = { seen: [], restoredFrom: [] };
    const sink = new CollectingSink<[string, number]>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.enableCheckpointing(100, { directory: dir })
      .setRestartStrategy(RestartStrategies.fixedDelay(3, 100));
    const numbers = TestSource.of<number>(
      [1, 2, 3, 4, 5, TestSource.awaitCheckpoint(), 6, 7, 8, 9, 10],
      { batchSize: 100 },
    );
    env.fromSource(numbers, WatermarkStrategy.noWatermarks(), "numbers").uid("numbers")
      .map(new FailOnce(7)).name("FailOnce")
      .keyBy((n) => (n % 2 === 0 ? "even" : "odd"))
      .process(new ProbedRunningSum(probe)).uid("running-sums")
      .sinkTo(sink).uid("committed-sums");
    const result = await env.execute("even odd sums, probed");

    assert.equal(result.restarts, 1);
    const [fresh, restored] = probe.restoredFrom;
    assert.equal(probe.restoredFrom.length, 2);
    assert.equal(fresh, undefined);
    assert.equal(typeof restored, "number");
    // Before the crash: 1..5 in order (6 may or may not have arrived).
    const first = probe.seen.filter((s) => s.attempt === 0).map((s) => s.n);
    assert.deepEqual(first.slice(0, 5), [1, 2, 3, 4, 5]);
    // After the restore: the source resumes after offset 5, with the sums of 1..5.
    const after = probe.seen.filter((s) => s.attempt === 1);
    assert.deepEqual(after.map((s) => s.n), [6, 7, 8, 9, 10]);
    assert.deepEqual(after.slice(0, 2).map((s) => [s.n, s.sumBefore]), [[6, 6], [7, 9]]);
    assert.deepEqual(sink.committed(), SEED_RUNNING_SUMS);
  });
});

Deno.test("seed 5: runEvenOddSums commits the same sums with and without the crash, in the checkpoint directory given", async () => {
  await withTempDir(async (dir) => {
    for (const failAfter of [undefined, 7]) {
      const checkpointDirectory = `${dir}/checkpoints-${failAfter ?? "none"}`;
      // RunningSum (one subtask) logs "restored from checkpoint <id>" on a restore: once
      // after the crash, never without it.
      const logged: string[] = [];
      const log = console.error;
      console.error = (...args: unknown[]) => void logged.push(args.map(String).join(" "));
      let committed: [string, number][];
      try {
        committed = await runEvenOddSums({ failAfter, checkpointDirectory });
      } finally {
        console.error = log;
      }
      assert.deepEqual(committed, SEED_RUNNING_SUMS, `failAfter ${failAfter}`);
      const restores = logged.filter((line) => /^restored from checkpoint \d+$/.test(line));
      assert.equal(
        restores.length,
        failAfter === undefined ? 0 : 1,
        `failAfter ${failAfter}: restores logged: ${JSON.stringify(logged)}`,
      );
      // The storage creates the directory on its first write and deletes the
      // job's checkpoints when the job finishes.
      const left = [...Deno.readDirSync(checkpointDirectory)].map((e) => e.name);
      assert.deepEqual(left, [], `checkpoints left in ${checkpointDirectory}`);
    }
  });
});
