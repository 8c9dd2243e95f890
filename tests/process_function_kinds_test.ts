/**
 * The ProcessFunction kinds of the seed notes (`ProcessFunction`,
 * `KeyedProcessFunction`, `ProcessWindowFunction`, `ProcessAllWindowFunction`
 * and `ProcessJoinFunction`; the co-process and broadcast kinds have their
 * own tests), each on the seed's ten sensor readings, each with its exact
 * expected output, and each run twice: without a failure, and with a
 * failure after a completed checkpoint and a restart from it. The committed
 * output of the second run must equal the first record by record.
 *
 * ## Determinism
 *
 * Every operator runs at parallelism 1 and watermarks are punctuated (the
 * generator emits `max timestamp - 2 s` after every reading that raises
 * it), so the order of records and watermarks on every channel, and so
 * every output, is a function of the input alone. The failure marker sits
 * two readings after an `awaitCheckpoint` marker: timers fire and windows
 * close between the checkpoint and the failure, and what they emitted in
 * the failed attempt must not be committed.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type Collector,
  type DataStream,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type OnTimerContext,
  OutputTag,
  type ProcessContext,
  type ProcessJoinContext,
  type ProcessWindowContext,
  RestartStrategies,
  StreamExecutionEnvironment,
  type TimeWindow,
  TumblingEventTimeWindows,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, type TestItem, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";

/** A reading of the seed: sensor id, event time (ms), temperature. */
type Reading = { id: string; ts: number; temperature: number };

const r = (id: string, seconds: number, temperature: number): Reading => ({
  id,
  ts: seconds * 1000,
  temperature,
});

/** The seed's input of its KeyedProcessFunction example (ProcessTest2_ApplicationCase). */
const READINGS: Reading[] = [
  r("sensor_1", 1547718199, 35.8),
  r("sensor_1", 1547718199, 34.1),
  r("sensor_1", 1547718199, 34.2),
  r("sensor_1", 1547718199, 35.1),
  r("sensor_6", 1547718201, 15.4),
  r("sensor_7", 1547718202, 6.7),
  r("sensor_10", 1547718205, 38.1),
  r("sensor_10", 1547718205, 39),
  r("sensor_6", 1547718201, 18),
  r("sensor_7", 1547718202, 9.1),
];

/** The readings; with `fail`, a checkpoint after the 5th and a failure after the 8th. */
function items(fail: boolean): TestItem<Reading>[] {
  if (!fail) return [...READINGS];
  return [
    ...READINGS.slice(0, 5),
    TestSource.awaitCheckpoint(),
    ...READINGS.slice(5, 8),
    TestSource.fail("induced failure after the 8th reading"),
    ...READINGS.slice(8),
  ];
}

/** Punctuated bounded out-of-orderness of 2 s: watermark `max ts - 2000` whenever the max rises. */
const WATERMARKS = WatermarkStrategy.forGenerator<Reading>(() => {
  let max = Number.NEGATIVE_INFINITY;
  return {
    onEvent: (_reading, timestamp, output) => {
      if (timestamp <= max) return;
      max = timestamp;
      output.emitWatermark(max - 2000);
    },
    onPeriodicEmit: () => {},
  };
}).withTimestampAssigner((reading) => reading.ts);

/** What one run committed, per sink name, and how often it restarted. */
interface RunResult {
  readonly committed: Record<string, unknown[]>;
  readonly restarts: number;
}

/**
 * Runs `build` over the readings at parallelism 1 with a checkpoint every
 * 50 ms, once without and once with the induced failure. With `orderless`,
 * each sink's records are compared sorted (for outputs whose order depends
 * on how two inputs interleave).
 * @returns both runs' committed outputs.
 */
async function runBoth(
  build: (readings: DataStream<Reading>, sink: (name: string) => CollectingSink<unknown>) => void,
  options: { readonly orderless?: boolean } = {},
): Promise<{ clean: RunResult; failed: RunResult }> {
  const run = async (fail: boolean): Promise<RunResult> =>
    await withTempDir(async (directory) => {
      const env = StreamExecutionEnvironment.getExecutionEnvironment()
        .setParallelism(1)
        .enableCheckpointing(50, { directory })
        .setRestartStrategy(RestartStrategies.fixedDelay(2, 0));
      const readings = env.fromSource(TestSource.of(items(fail)), WATERMARKS, "readings")
        .uid("readings");
      const sinks = new Map<string, CollectingSink<unknown>>();
      build(readings, (name) => {
        const sink = new CollectingSink<unknown>();
        sinks.set(name, sink);
        return sink;
      });
      const result = await env.execute(`process function kinds${fail ? " with a failure" : ""}`);
      const committed: Record<string, unknown[]> = {};
      for (const [name, sink] of sinks) {
        const records = [...sink.committed()];
        committed[name] = options.orderless ? records.map(String).sort() : records;
      }
      return { committed, restarts: result.restarts };
    });
  const clean = await run(false);
  const failed = await run(true);
  assert.equal(clean.restarts, 0);
  assert.equal(failed.restarts, 1, "the induced failure restarted the job once");
  assert.deepEqual(failed.committed, clean.committed, "output after the restore");
  return { clean, failed };
}

Deno.test("ProcessFunction: readings of 30 or more on the main output, the rest on the low-temp side output (seed ProcessTest3_SideOuptCase)", async () => {
  const lowTemp = new OutputTag<string>("low-temp");
  const { clean } = await runBoth((readings, sink) => {
    const high = readings.process<string>({
      processElement(reading: Reading, ctx: ProcessContext, out: Collector<string>) {
        const line = `${reading.id} ${reading.temperature}`;
        if (reading.temperature >= 30) out.collect(line);
        else ctx.output(lowTemp, line);
      },
    });
    high.sinkTo(sink("high-temp")).uid("high-temp");
    high.getSideOutput(lowTemp).sinkTo(sink("low-temp")).uid("low-temp");
  });
  assert.deepEqual(clean.committed, {
    "high-temp": [
      "sensor_1 35.8",
      "sensor_1 34.1",
      "sensor_1 34.2",
      "sensor_1 35.1",
      "sensor_10 38.1",
      "sensor_10 39",
    ],
    "low-temp": ["sensor_6 15.4", "sensor_7 6.7", "sensor_6 18", "sensor_7 9.1"],
  });
});

/** Reports each rise of a sensor's temperature, and an event-time timer 2 s after each reading. */
class RiseAndTimer implements KeyedProcessFunction<string, Reading, string> {
  private last!: ValueState<number>;
  open(context: { getState<T>(d: ValueStateDescriptor<T>): ValueState<T> }): void {
    this.last = context.getState(new ValueStateDescriptor<number>("last-temperature"));
  }
  processElement(reading: Reading, ctx: KeyedProcessContext<string>, out: Collector<string>) {
    const last = this.last.value();
    this.last.update(reading.temperature);
    if (last !== undefined && reading.temperature > last) {
      out.collect(`${reading.id} rose ${last}->${reading.temperature}`);
    }
    ctx.timerService().registerEventTimeTimer(reading.ts + 2000);
  }
  onTimer(timestamp: number, ctx: OnTimerContext<string>, out: Collector<string>) {
    out.collect(`${ctx.getCurrentKey()} timer ${timestamp} (${ctx.timeDomain()})`);
  }
}

Deno.test("KeyedProcessFunction: keyed state and event-time timers, which fire as the watermark passes them and again after a restore", async () => {
  const { clean } = await runBoth((readings, sink) => {
    readings.keyBy((x) => x.id).process(new RiseAndTimer()).uid("rise-and-timer")
      .sinkTo(sink("out")).uid("out");
  });
  assert.deepEqual(clean.committed["out"], [
    "sensor_1 rose 34.1->34.2",
    "sensor_1 rose 34.2->35.1",
    // sensor_10 at ...205 s raises the watermark to ...203 s: the timers at ...201 s and ...203 s fire.
    "sensor_1 timer 1547718201000 (event-time)",
    "sensor_6 timer 1547718203000 (event-time)",
    "sensor_10 rose 38.1->39",
    // sensor_6's second reading sets its timer at ...203 s again, behind the watermark: it fires at the next advance (the end).
    "sensor_6 rose 15.4->18",
    "sensor_7 rose 6.7->9.1",
    "sensor_6 timer 1547718203000 (event-time)",
    "sensor_7 timer 1547718204000 (event-time)",
    "sensor_10 timer 1547718207000 (event-time)",
  ]);
});

Deno.test("ProcessWindowFunction: each sensor's readings per 5 s tumbling window, with count and maximum", async () => {
  const { clean } = await runBoth((readings, sink) => {
    readings.keyBy((x) => x.id)
      .window(TumblingEventTimeWindows.of(5_000))
      .process<string>({
        process(
          key: string,
          ctx: ProcessWindowContext<TimeWindow>,
          elements: readonly Reading[],
          out: Collector<string>,
        ) {
          const max = Math.max(...elements.map((e) => e.temperature));
          out.collect(
            `${key} [${ctx.window().start}, ${ctx.window().end}): ${elements.length}, max ${max}`,
          );
        },
      })
      .uid("per-sensor-windows")
      .sinkTo(sink("out")).uid("out");
  });
  // Windows of one end fire at one watermark; their order among keys is not part of the contract.
  assert.deepEqual([...clean.committed["out"]!].sort(), [
    "sensor_1 [1547718195000, 1547718200000): 4, max 35.8",
    "sensor_10 [1547718205000, 1547718210000): 2, max 39",
    "sensor_6 [1547718200000, 1547718205000): 2, max 18",
    "sensor_7 [1547718200000, 1547718205000): 2, max 9.1",
  ]);
  // The first window closes mid-stream (watermark ...203 s), the others at the end.
  assert.equal(clean.committed["out"]![0], "sensor_1 [1547718195000, 1547718200000): 4, max 35.8");
});

Deno.test("ProcessAllWindowFunction: all readings per 5 s tumbling window, with the sensors seen", async () => {
  const { clean } = await runBoth((readings, sink) => {
    readings.windowAll(TumblingEventTimeWindows.of(5_000))
      .process<string>({
        process(
          ctx: ProcessWindowContext<TimeWindow>,
          elements: readonly Reading[],
          out: Collector<string>,
        ) {
          const ids = [...new Set(elements.map((e) => e.id))].join(",");
          out.collect(
            `[${ctx.window().start}, ${ctx.window().end}): ${elements.length} readings of ${ids}`,
          );
        },
      })
      .uid("all-windows")
      .sinkTo(sink("out")).uid("out");
  });
  assert.deepEqual(clean.committed["out"], [
    "[1547718195000, 1547718200000): 4 readings of sensor_1",
    "[1547718200000, 1547718205000): 4 readings of sensor_6,sensor_7",
    "[1547718205000, 1547718210000): 2 readings of sensor_10",
  ]);
});

Deno.test("ProcessJoinFunction: each reading joined with the same sensor's warmer readings within 2 s (interval join)", async () => {
  const { clean } = await runBoth((readings, sink) => {
    // Generous watermarks here (10 s behind, punctuated), so that no reading is late for the join.
    const relaxed = readings.assignTimestampsAndWatermarks(
      WatermarkStrategy.forGenerator<Reading>(() => {
        let max = Number.NEGATIVE_INFINITY;
        return {
          onEvent: (_reading, timestamp, output) => {
            if (timestamp <= max) return;
            max = timestamp;
            output.emitWatermark(max - 10_000);
          },
          onPeriodicEmit: () => {},
        };
      }).withTimestampAssigner((reading) => reading.ts),
    );
    relaxed.keyBy((x) => x.id)
      .intervalJoin(relaxed.keyBy((x) => x.id))
      .between(-2_000, 2_000)
      .process<string>({
        processElement(l: Reading, w: Reading, ctx: ProcessJoinContext, out: Collector<string>) {
          if (l.temperature < w.temperature) {
            out.collect(`${l.id} ${l.temperature}<${w.temperature} @${ctx.getTimestamp()}`);
          }
        },
      })
      .uid("warmer-within-2s")
      .sinkTo(sink("out")).uid("out");
  }, { orderless: true });
  assert.deepEqual(clean.committed["out"], [
    "sensor_1 34.1<34.2 @1547718199000",
    "sensor_1 34.1<35.1 @1547718199000",
    "sensor_1 34.1<35.8 @1547718199000",
    "sensor_1 34.2<35.1 @1547718199000",
    "sensor_1 34.2<35.8 @1547718199000",
    "sensor_1 35.1<35.8 @1547718199000",
    "sensor_10 38.1<39 @1547718205000",
    "sensor_6 15.4<18 @1547718201000",
    "sensor_7 6.7<9.1 @1547718202000",
  ]);
});
