/**
 * Dynamic alert thresholds with the broadcast state pattern (Flink's
 * `KeyedBroadcastProcessFunction`): temperature readings of three sensors
 * are keyed by sensor; alert thresholds arrive on a control stream, are
 * broadcast to every subtask, and change the alerts while the job runs.
 *
 * Run (local mode, parallelism 2 by default):
 *
 *     deno run -A examples/dynamic_thresholds.ts [--parallelism N]
 *
 * Run (cluster mode, with a coordinator and workers running; see `cli.ts`):
 *
 *     deno run -A examples/dynamic_thresholds.ts --nats nats://127.0.0.1:4222
 *
 * In cluster mode the alert lines are printed by the workers (on their
 * stdout) and this process prints the summary.
 *
 * It prints one line per alert, in the order the subtasks emit them, e.g.
 *
 *     alert> 5000 sensor_2 27 > 25 (threshold of sensor_2 since 5000)
 *
 * then the job's one-line summary. The set of alerts is always the same
 * (see below); {@linkcode alertsOf} computes it without Weir, and
 * `tests/examples_dynamic_thresholds_test.ts` runs this file and compares.
 *
 * ## How it decides
 *
 * A threshold `{ sensor, ts, limit }` applies to `sensor` (or to every
 * sensor when `sensor` is `"*"`) from event time `ts` on; at a reading's
 * time the latest threshold (by `ts`) for its sensor or `"*"` is in force.
 * Thresholds are kept in broadcast state (one version list per sensor).
 * A reading is not judged when it arrives: the two streams race, so the
 * threshold for its time may not have arrived yet. It waits in keyed state
 * for an event-time timer at its timestamp; the operator's watermark is the
 * minimum over both inputs, so when the timer fires every threshold up to
 * that time has arrived, and the alerts are the same on every run and after
 * every restore. (In a real deployment the control stream is long-lived and
 * mostly quiet: give its source `withIdleness` so that it does not hold
 * event time back while idle.)
 *
 * @module
 */

import { parseArgs } from "node:util";
import {
  CollectionSource,
  type Collector,
  type DataStream,
  type KeyedBroadcastContext,
  type KeyedBroadcastOnTimerContext,
  type KeyedBroadcastProcessFunction,
  type KeyedBroadcastReadOnlyContext,
  type ListState,
  ListStateDescriptor,
  MapStateDescriptor,
  type RuntimeContext,
  type SingleOutputStreamOperator,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { exitWithError } from "./_cli.ts";

/** A temperature reading: sensor id, event time (ms), degrees. */
export interface Reading {
  readonly id: string;
  readonly ts: number;
  readonly temperature: number;
}

/** An alert threshold for `sensor` (`"*"`: every sensor) from event time `ts` (ms) on. */
export interface Threshold {
  readonly sensor: string;
  readonly ts: number;
  readonly limit: number;
}

/**
 * The alert line of `reading` above `threshold`:
 * `<ts> <id> <temperature> > <limit> (threshold of <sensor> since <ts>)`.
 */
export function alertLine(reading: Reading, threshold: Threshold): string {
  return `${reading.ts} ${reading.id} ${reading.temperature} > ${threshold.limit} (threshold of ${threshold.sensor} since ${threshold.ts})`;
}

/** The broadcast state: for each sensor (or `"*"`), its thresholds in `ts` order. */
export const THRESHOLDS_STATE: MapStateDescriptor<string, Threshold[]> = new MapStateDescriptor<
  string,
  Threshold[]
>("thresholds");

/** The threshold in force for `id` at `ts` among `versions` of `id` and of `"*"`, if any. */
export function thresholdAt(
  versions: { readonly own: readonly Threshold[]; readonly all: readonly Threshold[] },
  ts: number,
): Threshold | undefined {
  let best: Threshold | undefined;
  for (const t of [...versions.own, ...versions.all]) {
    if (t.ts <= ts && (best === undefined || t.ts > best.ts)) best = t;
  }
  return best;
}

/**
 * The keyed broadcast function: readings wait in keyed state for an
 * event-time timer at their timestamp, then meet the threshold in force.
 */
export class DynamicThresholdAlert
  implements KeyedBroadcastProcessFunction<string, Reading, Threshold, string> {
  private waiting!: ListState<Reading>;

  open(ctx: RuntimeContext): void {
    this.waiting = ctx.getListState(new ListStateDescriptor<Reading>("waiting-readings"));
  }

  processElement(
    reading: Reading,
    ctx: KeyedBroadcastReadOnlyContext<string>,
    _out: Collector<string>,
  ): void {
    this.waiting.add(reading);
    ctx.timerService().registerEventTimeTimer(reading.ts);
  }

  processBroadcastElement(
    threshold: Threshold,
    ctx: KeyedBroadcastContext<string>,
    _out: Collector<string>,
  ): void {
    const state = ctx.getBroadcastState(THRESHOLDS_STATE);
    const versions = [...(state.get(threshold.sensor) ?? []), threshold];
    versions.sort((a, b) => a.ts - b.ts);
    state.put(threshold.sensor, versions); // a new array: broadcast values are not changed in place
  }

  onTimer(
    timestamp: number,
    ctx: KeyedBroadcastOnTimerContext<string>,
    out: Collector<string>,
  ): void {
    const state = ctx.getBroadcastState(THRESHOLDS_STATE);
    const versions = { own: state.get(ctx.getCurrentKey()) ?? [], all: state.get("*") ?? [] };
    const later: Reading[] = [];
    for (const reading of this.waiting.get()) {
      if (reading.ts > timestamp) {
        later.push(reading);
        continue;
      }
      const threshold = thresholdAt(versions, reading.ts);
      if (threshold !== undefined && reading.temperature > threshold.limit) {
        out.collect(alertLine(reading, threshold));
      }
    }
    this.waiting.update(later);
  }
}

/** Event time of readings: their `ts`, ascending per source split. */
export const READING_WATERMARKS: WatermarkStrategy<Reading> = WatermarkStrategy
  .forMonotonousTimestamps<Reading>().withTimestampAssigner((r) => r.ts);

/** Event time of thresholds: their `ts`, ascending. */
export const THRESHOLD_WATERMARKS: WatermarkStrategy<Threshold> = WatermarkStrategy
  .forMonotonousTimestamps<Threshold>().withTimestampAssigner((t) => t.ts);

const SENSORS = ["sensor_1", "sensor_2", "sensor_3"];

/** The example's readings: each sensor once a second for 40 s, 20..39 degrees. */
export const READINGS: readonly Reading[] = Array.from(
  { length: 40 },
  (_, second) =>
    SENSORS.map((id, s) => ({
      id,
      ts: second * 1000,
      temperature: 20 + (second * 7 + s * 13) % 20,
    })),
).flat();

/** The example's thresholds, in `ts` order. */
export const THRESHOLDS: readonly Threshold[] = [
  { sensor: "*", ts: 0, limit: 34 },
  { sensor: "sensor_2", ts: 5_000, limit: 25 },
  { sensor: "*", ts: 10_000, limit: 37 },
  { sensor: "sensor_3", ts: 15_000, limit: 30 },
  { sensor: "*", ts: 20_000, limit: 35 },
  { sensor: "sensor_2", ts: 25_000, limit: 35 },
  { sensor: "*", ts: 30_000, limit: 33 },
];

/**
 * The alert lines of `readings` under `thresholds`, computed directly (no
 * streaming), in reading order.
 */
export function alertsOf(readings: readonly Reading[], thresholds: readonly Threshold[]): string[] {
  const alerts: string[] = [];
  for (const r of readings) {
    const t = thresholdAt(
      {
        own: thresholds.filter((x) => x.sensor === r.id),
        all: thresholds.filter((x) => x.sensor === "*"),
      },
      r.ts,
    );
    if (t !== undefined && r.temperature > t.limit) alerts.push(alertLine(r, t));
  }
  return alerts;
}

/**
 * The job: `readings` keyed by sensor, connected with `thresholds`
 * broadcast, through {@linkcode DynamicThresholdAlert}.
 * @returns the alert lines (see {@linkcode alertLine}).
 */
export function thresholdsJob(
  readings: DataStream<Reading>,
  thresholds: DataStream<Threshold>,
): SingleOutputStreamOperator<string> {
  return readings
    .keyBy((r) => r.id)
    .connect(thresholds.broadcast(THRESHOLDS_STATE as MapStateDescriptor<unknown, unknown>))
    .process(new DynamicThresholdAlert())
    .uid("dynamic-threshold-alert")
    .name("DynamicThresholdAlert");
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { parallelism: { type: "string", default: "2" }, nats: { type: "string" } },
  });
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(Number(values.parallelism))
    .enableCheckpointing(1000);
  const readings = env.fromSource(
    new CollectionSource([...READINGS]),
    READING_WATERMARKS,
    "readings",
  ).uid("readings").setParallelism(1);
  const thresholds = env.fromSource(
    new CollectionSource([...THRESHOLDS]),
    THRESHOLD_WATERMARKS,
    "thresholds",
  ).uid("thresholds").setParallelism(1);
  thresholdsJob(readings, thresholds).print({ prefix: "alert" });
  const result = await env.execute("dynamic thresholds").catch(exitWithError);
  console.log(result.summary);
}
