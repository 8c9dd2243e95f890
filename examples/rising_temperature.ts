/**
 * Seed example 4: processing-time timers. Keyed by sensor, a warning goes
 * out when a sensor's temperature keeps rising for 10 s of processing time:
 *
 * - a rise while the sensor has no timer registers one at now + 10 s;
 * - a drop deletes the sensor's timer;
 * - when the timer fires, it emits
 *   `sensor <id> temperature rose continuously for 10000 ms`.
 *
 * (A reading equal to the last one leaves the timer as it is, as in the
 * seed.)
 *
 * Run (local mode):
 *
 *     deno run -A examples/rising_temperature.ts examples/data/rising_temperatures.csv
 *
 * The readings (CSV lines `id,epochSeconds,temperature`; the timestamps play
 * no part) are replayed at `--replay-rate` lines per second of processing
 * time (default 3), so the 10 s pass in real time: the 42 lines of
 * `rising_temperatures.csv` take 14 s. In that file sensor_1 rises every
 * second, sensor_2 drops every fifth second, and sensor_3 rises for 7 s,
 * drops, and rises again for the last 5 s; so the run prints exactly
 *
 *     sensor sensor_1 temperature rose continuously for 10000 ms
 *
 * about 11 s after it starts, then the one-line checkpoint summary (whose
 * figures vary). Timers still pending when the input ends do not fire (as
 * in Flink since FLIP-147), so sensor_1's second rise period, cut short by
 * the end of the file, warns no more.
 *
 * ## How the replay works
 *
 * The file is read and parsed when the job is built (a malformed line stops
 * the example before the job starts, naming the file and line). A
 * rate-limited `SequenceSource` of line indexes paces the replay, and a map
 * turns each index into its reading: the source is replayable, its position
 * (the next line index) is checkpointed. The job runs in local mode only:
 * the readings travel in the map function, not through a connector.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type Collector,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type OnTimerContext,
  type RuntimeContext,
  SequenceSource,
  type SingleOutputStreamOperator,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import { parseSensorReading, type SensorReading } from "./sensor.ts";
import { exitWithError } from "./_cli.ts";

/** How long a temperature must keep rising before the warning, in ms of processing time (the seed's 10 s). */
export const RISE_INTERVAL_MS: number = 10_000;

/** The seed's warning for sensor `id`: `sensor <id> temperature rose continuously for 10000 ms`. */
export function riseWarning(id: string): string {
  return `sensor ${id} temperature rose continuously for ${RISE_INTERVAL_MS} ms`;
}

/**
 * Seed example 4 as a `KeyedProcessFunction` (keyed by sensor id): a rise
 * with no timer registers a processing-time timer at now + 10 s, remembered
 * in ValueState; a drop deletes it; the timer emits {@linkcode riseWarning}.
 * Its state (last temperature, pending timer) and the timer itself are in
 * every checkpoint.
 */
export class TemperatureRiseWarning implements KeyedProcessFunction<string, SensorReading, string> {
  // Functions are copied per subtask (shallowly): TypeScript-private fields, not #private.
  private lastTemperature!: ValueState<number>;
  private timer!: ValueState<number>;

  /** Gets the sensor's state: its last temperature and its pending timer (ms). */
  open(ctx: RuntimeContext): void {
    this.lastTemperature = ctx.getState(new ValueStateDescriptor<number>("last-temperature"));
    this.timer = ctx.getState(new ValueStateDescriptor<number>("rise-timer"));
  }

  /** Registers the timer on a rise without one, deletes it on a drop. */
  processElement(
    reading: SensorReading,
    ctx: KeyedProcessContext<string>,
    _out: Collector<string>,
  ): void {
    const timers = ctx.timerService();
    const last = this.lastTemperature.value();
    const timer = this.timer.value();
    this.lastTemperature.update(reading.temperature);
    if (last === undefined) return;
    if (reading.temperature > last && timer === undefined) {
      const due = timers.currentProcessingTime() + RISE_INTERVAL_MS;
      timers.registerProcessingTimeTimer(due);
      this.timer.update(due);
    } else if (reading.temperature < last && timer !== undefined) {
      timers.deleteProcessingTimeTimer(timer);
      this.timer.clear();
    }
  }

  /** Emits the warning; the next rise starts a new 10 s. */
  onTimer(_timestamp: number, ctx: OnTimerContext<string>, out: Collector<string>): void {
    out.collect(riseWarning(ctx.getCurrentKey()));
    this.timer.clear();
  }
}

/**
 * The readings of the CSV file `path`, in order (blank lines skipped).
 * @throws {Error} naming the file and line of a malformed line, or when there is no reading.
 */
export async function readSensorLines(path: string): Promise<SensorReading[]> {
  const readings: SensorReading[] = [];
  const lines = (await Deno.readTextFile(path)).split(/\r?\n/);
  lines.forEach((line, i) => {
    if (line.trim() === "") return;
    try {
      readings.push(parseSensorReading(line));
    } catch (error) {
      throw new Error(
        `Cannot parse line ${i + 1} of ${path}: ${(error as Error).message}: ${
          JSON.stringify(line)
        }`,
      );
    }
  });
  if (readings.length === 0) throw new Error(`${path} holds no reading`);
  return readings;
}

/** Options of {@linkcode risingTemperature}. */
export interface RisingTemperatureOptions {
  /** The readings to replay, in order (at least one). */
  readonly readings: readonly SensorReading[];
  /** Readings per second of processing time (> 0). */
  readonly replayRate: number;
}

/**
 * Builds the job on `env`: the readings replayed at `replayRate`, keyed by
 * sensor, through {@linkcode TemperatureRiseWarning}.
 * @returns the stream of warnings.
 * @throws {RangeError} when `replayRate` is not a positive number, or there is no reading.
 */
export function risingTemperature(
  env: StreamExecutionEnvironment,
  options: RisingTemperatureOptions,
): SingleOutputStreamOperator<string> {
  const readings = [...options.readings];
  if (readings.length === 0) throw new RangeError("rising temperature needs at least one reading");
  const lineIndexes = new SequenceSource(0, readings.length - 1, {
    recordsPerSecond: options.replayRate,
    batchSize: 1,
  });
  return env.fromSource(lineIndexes, WatermarkStrategy.noWatermarks(), "sensor-replay")
    .uid("sensor-replay").setParallelism(1)
    .map((i) => readings[i]!).name("Readings")
    .keyBy((reading) => reading.id)
    .process(new TemperatureRiseWarning()).uid("rise-warning").name("TemperatureRiseWarning");
}

if (import.meta.main) {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(1000);
  try {
    const { values, positionals } = parseArgs({
      args: Deno.args,
      allowPositionals: true,
      options: { "replay-rate": { type: "string", default: "3" } },
    });
    const path = positionals[0] ?? "examples/data/rising_temperatures.csv";
    const replayRate = Number(values["replay-rate"]);
    if (!(replayRate > 0 && Number.isFinite(replayRate))) {
      throw new Error(
        `--replay-rate must be a positive number of lines per second: current value is "${
          values["replay-rate"]
        }"`,
      );
    }
    risingTemperature(env, { readings: await readSensorLines(path), replayRate }).print();
  } catch (error) {
    exitWithError(error);
  }
  const result = await env.execute("rising temperature").catch(exitWithError);
  console.log(result.summary);
}
