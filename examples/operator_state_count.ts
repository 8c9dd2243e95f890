/**
 * Seed example 1: operator state. A map counts the records its subtask has
 * seen, keeps the count in operator ListState (`CheckpointedFunction`), and
 * emits the running count. At parallelism 1 the five seed lines give
 * `1 2 3 4 5`.
 *
 * Run (local mode):
 *
 *     deno run -A examples/operator_state_count.ts examples/data/five_readings.csv
 *
 * From a socket instead (the seeds' `nc -lk 7777`; at-most-once, ends when
 * the peer closes):
 *
 *     deno run -A examples/operator_state_count.ts --socket localhost:7777
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  type CheckpointedFunction,
  type FunctionInitializationContext,
  type ListState,
  ListStateDescriptor,
  StreamExecutionEnvironment,
} from "../mod.ts";
import { readSensors, type SensorReading } from "./sensor.ts";
import { exitWithError } from "./_cli.ts";

/** Emits how many records this subtask has seen, restored from operator state. */
export class CountingMap implements CheckpointedFunction {
  private count = 0;
  private state!: ListState<number>;
  initializeState(ctx: FunctionInitializationContext): void {
    this.state = ctx.operatorStateStore.getListState(new ListStateDescriptor<number>("count"));
    this.count = this.state.get().reduce((a, b) => a + b, 0);
  }
  snapshotState(): void {
    this.state.update([this.count]);
  }
  map(_reading: SensorReading): number {
    return ++this.count;
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
  env.setParallelism(1).enableCheckpointing(1000);
  readSensors(env, {
    path: positionals[0] ?? "examples/data/five_readings.csv",
    socket: values.socket,
    deadLetter: values["dead-letter"],
  })
    .map(new CountingMap()).uid("counting-map").name("CountingMap")
    .print();
  const result = await env.execute("operator state count").catch(exitWithError);
  console.log(result.summary);
}
