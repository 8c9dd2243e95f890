/**
 * Seed example 2: keyed state. Keyed by sensor id, a ValueState holds the
 * last temperature, and a jump of 10 degrees or more emits
 * `(id,last,current)`.
 *
 * Run (local mode):
 *
 *     deno run -A examples/temperature_alert.ts examples/data/sensors.csv
 *     deno run -A examples/temperature_alert.ts examples/data/bad_sensors.csv
 *     deno run -A examples/temperature_alert.ts examples/data/bad_sensors.csv --dead-letter
 *
 * It prints the alerts, then a one-line checkpoint summary. A malformed line
 * fails the job with an error naming the file and line; with `--dead-letter`
 * the line is printed on stderr instead and the job goes on.
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type Collector,
  DEAD_LETTER,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import { sensorFile, type SensorReading } from "./sensor.ts";
import { exitWithError } from "./_cli.ts";

/** Emits `[id, last, current]` when `|current - last| >= threshold`. */
export class TemperatureJumpAlert
  implements KeyedProcessFunction<string, SensorReading, [string, number, number]> {
  readonly threshold: number;
  private last!: ValueState<number>;
  constructor(threshold: number) {
    this.threshold = threshold;
  }
  open(ctx: RuntimeContext): void {
    this.last = ctx.getState(new ValueStateDescriptor<number>("last-temperature"));
  }
  processElement(
    reading: SensorReading,
    _ctx: KeyedProcessContext<string>,
    out: Collector<[string, number, number]>,
  ): void {
    const last = this.last.value();
    if (last !== undefined && Math.abs(reading.temperature - last) >= this.threshold) {
      out.collect([reading.id, last, reading.temperature]);
    }
    this.last.update(reading.temperature);
  }
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      "dead-letter": { type: "boolean", default: false },
      "threshold": { type: "string", default: "10" },
    },
  });
  const path = positionals[0] ?? "examples/data/sensors.csv";
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(1000);
  const readings = env.fromSource(
    sensorFile(path, values["dead-letter"]),
    WatermarkStrategy.noWatermarks(),
    "sensors",
  ).uid("sensor-source");
  readings.getSideOutput(DEAD_LETTER).print({ target: "stderr", prefix: "dead-letter" });
  readings
    .keyBy((r) => r.id)
    .process(new TemperatureJumpAlert(Number(values.threshold)))
    .uid("temperature-jump-alert")
    .name("TemperatureJumpAlert")
    .print();
  const result = await env.execute("temperature alert").catch(exitWithError);
  console.log(result.summary);
}
