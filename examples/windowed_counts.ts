/**
 * A tumbling event-time count per sensor, with late readings sent to a side
 * output: Flink's first windowed job, over the seed's sensor CSV (lines
 * `id,epochSeconds,temperature`).
 *
 * Run (local mode):
 *
 *     deno run -A examples/windowed_counts.ts examples/data/sensors.csv
 *
 * It prints exactly these lines, then the one-line checkpoint summary (whose
 * figures vary):
 *
 *     (sensor_1,1547718195,1547718200,3)
 *     (sensor_7,1547718200,1547718205,2)
 *     late> (sensor_7,1547718202,19.9)
 *     late> (sensor_7,1547718202,30)
 *     (sensor_10,1547718205,1547718210,2)
 *     (sensor_1,1547718205,1547718210,1)
 *
 * A window line is `(id,windowStart,windowEnd,count)`, times in epoch
 * seconds; a `late>` line is a reading that came after the watermark had
 * passed the end of its window. Options:
 *
 * - `--window-seconds N`: the tumbling window size (default 5);
 * - `--out-of-orderness-seconds N`: how far behind the highest timestamp
 *   seen a reading may be and still count (default 2). The watermark is the
 *   highest timestamp seen minus N seconds minus 1 ms.
 *
 * With the defaults, sensor_1's reading at 1547718207 moves the watermark to
 * 1547718204.999 s, which closes the window `[1547718200, 1547718205)`: the
 * two sensor_7 readings at 1547718202 that follow it are late. With
 * `--out-of-orderness-seconds 3` none is, and sensor_7's window counts 4.
 *
 * ## Why the watermarks are punctuated
 *
 * Flink's `forBoundedOutOfOrderness` emits its watermark periodically (every
 * 200 ms of processing time), so which readings of a small file are late
 * would depend on how fast the file is read. This example's generator emits
 * the watermark at every reading instead (a punctuated generator, Flink's
 * `WatermarkGenerator.onEvent`), so what is late depends on the file alone.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type AggregateFunction,
  type Collector,
  OutputTag,
  type ProcessWindowContext,
  type ProcessWindowFunction,
  StreamExecutionEnvironment,
  type TimeWindow,
  TumblingEventTimeWindows,
  type WatermarkGenerator,
  type WatermarkOutput,
  WatermarkStrategy,
} from "../mod.ts";
import { sensorFile, type SensorReading } from "./sensor.ts";
import { exitWithError } from "./_cli.ts";

/** The side output of readings too late for their window. */
export const LATE_READINGS: OutputTag<SensorReading> = new OutputTag<SensorReading>(
  "late-readings",
);

/**
 * Watermark = highest timestamp seen − bound − 1 ms, emitted at every reading
 * that raises it (a punctuated `BoundedOutOfOrdernessWatermarks`). Its state,
 * the highest timestamp seen, is checkpointed with its split.
 */
export class PunctuatedOutOfOrderness implements WatermarkGenerator<SensorReading> {
  readonly #boundMs: number;
  #maxTimestamp = Number.NEGATIVE_INFINITY;

  /**
   * Creates the generator of one split.
   * @param boundMs how far behind the highest timestamp a reading may be, in ms (>= 0).
   * @throws {RangeError} when `boundMs` is negative or not finite.
   */
  constructor(boundMs: number) {
    if (!(Number.isFinite(boundMs) && boundMs >= 0)) {
      throw new RangeError(
        `The out-of-orderness bound must be a finite number >= 0 ms: current value is ${boundMs}`,
      );
    }
    this.#boundMs = boundMs;
  }

  /** Emits a new watermark when `timestamp` (ms) is the highest seen. */
  onEvent(_reading: SensorReading, timestamp: number, output: WatermarkOutput): void {
    if (timestamp <= this.#maxTimestamp) return;
    this.#maxTimestamp = timestamp;
    output.emitWatermark(timestamp - this.#boundMs - 1);
  }

  /** Nothing: every watermark was emitted at its reading. */
  onPeriodicEmit(_output: WatermarkOutput): void {}

  /** The highest timestamp seen, ms. */
  snapshotState(): number {
    return this.#maxTimestamp;
  }

  /**
   * Restores the highest timestamp seen.
   * @throws {Error} when `state` is not a number.
   */
  restoreState(state: unknown): void {
    if (typeof state !== "number" || Number.isNaN(state)) {
      throw new Error(
        `Cannot restore PunctuatedOutOfOrderness: its state is the highest timestamp seen (a number), current value is ${
          JSON.stringify(state)
        }`,
      );
    }
    this.#maxTimestamp = Math.max(this.#maxTimestamp, state);
  }
}

/** Counts the readings of a window (an incremental aggregate: one number per sensor and window). */
export const COUNT_READINGS: AggregateFunction<SensorReading, number, number> = {
  createAccumulator: () => 0,
  add: (_reading, count) => count + 1,
  getResult: (count) => count,
  merge: (a, b) => a + b,
};

/** Emits `[id, windowStart, windowEnd, count]`, times in epoch seconds. */
export const WINDOW_COUNT: ProcessWindowFunction<
  number,
  [string, number, number, number],
  string,
  TimeWindow
> = {
  process(
    id: string,
    ctx: ProcessWindowContext<TimeWindow>,
    [count]: readonly number[],
    out: Collector<[string, number, number, number]>,
  ): void {
    const window = ctx.window();
    out.collect([id, window.start / 1000, window.end / 1000, count ?? 0]);
  },
};

/** Options of {@linkcode windowedCounts}. */
export interface WindowedCountsOptions {
  /** The CSV file of readings. */
  readonly path: string;
  /** The tumbling window size, in seconds (a positive integer). */
  readonly windowSeconds: number;
  /** The out-of-orderness bound, in seconds (>= 0). */
  readonly outOfOrdernessSeconds: number;
}

/**
 * Builds the job on `env`: readings of `path`, keyed by sensor, counted per
 * tumbling event-time window; window counts and late readings are printed.
 * @throws {RangeError} when the window size is not a positive integer
 *   number of ms, or the bound is negative.
 */
export function windowedCounts(
  env: StreamExecutionEnvironment,
  options: WindowedCountsOptions,
): void {
  const boundMs = options.outOfOrdernessSeconds * 1000;
  new PunctuatedOutOfOrderness(boundMs); // checks the bound now, not when the job runs
  const counts = env.fromSource(
    sensorFile(options.path, false),
    WatermarkStrategy.forGenerator<SensorReading>(() => new PunctuatedOutOfOrderness(boundMs))
      .withTimestampAssigner((reading) => reading.timestamp * 1000),
    "sensors",
  ).uid("sensor-source")
    .keyBy((reading) => reading.id)
    .window(TumblingEventTimeWindows.of(options.windowSeconds * 1000))
    .sideOutputLateData(LATE_READINGS)
    .aggregate(COUNT_READINGS, WINDOW_COUNT)
    .uid("window-counts")
    .name("WindowCounts");
  counts.print();
  counts.getSideOutput(LATE_READINGS).print({
    prefix: "late",
    formatter: (r) => `(${r.id},${r.timestamp},${r.temperature})`,
  });
}

/** Reads a command-line number of seconds. @throws {Error} naming the option and its value. */
function seconds(option: string, value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) {
    throw new Error(`--${option} must be a number of seconds: current value is "${value}"`);
  }
  return n;
}

if (import.meta.main) {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(1000);
  try {
    const { values, positionals } = parseArgs({
      args: Deno.args,
      allowPositionals: true,
      options: {
        "window-seconds": { type: "string", default: "5" },
        "out-of-orderness-seconds": { type: "string", default: "2" },
      },
    });
    windowedCounts(env, {
      path: positionals[0] ?? "examples/data/sensors.csv",
      windowSeconds: seconds("window-seconds", values["window-seconds"]),
      outOfOrdernessSeconds: seconds(
        "out-of-orderness-seconds",
        values["out-of-orderness-seconds"],
      ),
    });
  } catch (error) {
    exitWithError(error);
  }
  const result = await env.execute("windowed counts").catch(exitWithError);
  console.log(result.summary);
}
