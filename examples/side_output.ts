/**
 * Seed example 3: side outputs. Temperatures of 30 or more go to the main
 * output (`high-temp`), the rest to the `low-temp` OutputTag.
 *
 * Run (local mode):
 *
 *     deno run -A examples/side_output.ts examples/data/side_output.csv
 *
 * From a socket instead (the seeds' `nc -lk 7777`; at-most-once, ends when
 * the peer closes):
 *
 *     deno run -A examples/side_output.ts --socket localhost:7777
 *
 * Prints `high-temp> sensor_1`, `high-temp> sensor_10`, `low-temp> sensor_6`
 * and `low-temp> sensor_7` (the two streams interleave).
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type Collector,
  OutputTag,
  type ProcessContext,
  type ProcessFunction,
  StreamExecutionEnvironment,
} from "../mod.ts";
import { readSensors, type SensorReading } from "./sensor.ts";
import { exitWithError } from "./_cli.ts";

/** The side output of readings below the threshold. */
export const LOW_TEMP: OutputTag<string> = new OutputTag<string>("low-temp");

/** Splits readings by temperature: ids of hot sensors on the main output, the rest to {@linkcode LOW_TEMP}. */
export class SplitByTemperature implements ProcessFunction<SensorReading, string> {
  readonly threshold: number;
  constructor(threshold: number) {
    this.threshold = threshold;
  }
  processElement(reading: SensorReading, ctx: ProcessContext, out: Collector<string>): void {
    if (reading.temperature >= this.threshold) out.collect(reading.id);
    else ctx.output(LOW_TEMP, reading.id);
  }
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      "dead-letter": { type: "boolean", default: false },
      socket: { type: "string" },
    },
  });
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  env.enableCheckpointing(1000);
  const high = readSensors(env, {
    path: positionals[0] ?? "examples/data/side_output.csv",
    socket: values.socket,
    deadLetter: values["dead-letter"],
  })
    .process(new SplitByTemperature(30)).name("SplitByTemperature");
  high.print({ prefix: "high-temp" });
  high.getSideOutput(LOW_TEMP).print({ prefix: "low-temp" });
  const result = await env.execute("side output").catch(exitWithError);
  console.log(result.summary);
}
