/**
 * Windows end to end, in local mode: jobs built with the public API
 * (`keyBy().window()`, `windowAll`, `countWindow`) that run through the
 * whole runtime (sources, network edges, watermarks, the window operator,
 * sinks), and the late-data path with its `numLateRecordsDropped` metric
 * in the job result.
 *
 * Watermarks are punctuated (the generator emits one at each record marked
 * `wm`), so which records are late is decided by the data alone, never by
 * the timing of periodic watermarks.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  EventTimeSessionWindows,
  OutputTag,
  type ProcessWindowFunction,
  SlidingEventTimeWindows,
  StreamExecutionEnvironment,
  type TimeWindow,
  TumblingEventTimeWindows,
  WatermarkStrategy,
} from "../mod.ts";
import { withTempDir } from "./_job_kit.ts";

/** A reading: sensor, event time (ms), value; `wm` makes the generator emit watermark `ts`. */
type Reading = { sensor: string; ts: number; n: number; wm?: true };

const r = (sensor: string, ts: number, n = 1, wm?: true): Reading =>
  wm ? { sensor, ts, n, wm } : { sensor, ts, n };

/** Watermark `ts` after each reading marked `wm`, and none otherwise. */
const punctuated = WatermarkStrategy.forGenerator<Reading>(() => ({
  onEvent: (reading, timestamp, output) => {
    if (reading.wm) output.emitWatermark(timestamp);
  },
  onPeriodicEmit: () => {},
})).withTimestampAssigner((reading) => reading.ts);

const sum = (a: Reading, b: Reading): Reading => ({ sensor: a.sensor, ts: a.ts, n: a.n + b.n });

Deno.test("keyBy().window(TumblingEventTimeWindows).reduce() sums each sensor per second, end to end", async () => {
  await withTempDir(async (directory) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(2);
    env.setCheckpointDirectory(directory);
    const readings: Reading[] = [];
    for (let i = 0; i < 300; i++) readings.push(r(`sensor_${i % 3}`, i * 10, i));
    const out: string[] = [];
    env.fromCollection(readings).uid("readings")
      .assignTimestampsAndWatermarks(
        WatermarkStrategy.forBoundedOutOfOrderness<Reading>(100).withTimestampAssigner((x) => x.ts),
      )
      .keyBy((x) => x.sensor)
      .window(TumblingEventTimeWindows.of(1_000))
      .reduce(sum)
      .uid("sums")
      .process<string>({
        processElement(value, ctx, collector) {
          collector.collect(`${value.sensor}@${ctx.timestamp()}=${value.n}`);
        },
      })
      .sinkTo({ kind: "simple", invoke: (line) => void out.push(line) });
    await env.execute("tumbling sums");
    const expected: string[] = [];
    for (let second = 0; second < 3; second++) {
      for (let s = 0; s < 3; s++) {
        let total = 0;
        for (let i = second * 100; i < second * 100 + 100; i++) if (i % 3 === s) total += i;
        expected.push(`sensor_${s}@${second * 1_000 + 999}=${total}`);
      }
    }
    assert.deepEqual(out.sort(), expected.sort());
  });
});

Deno.test("Sliding aggregates and session process functions give every window exactly once", async () => {
  await withTempDir(async (directory) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(2);
    env.setCheckpointDirectory(directory);
    const readings = [
      r("a", 0),
      r("a", 400),
      r("b", 900),
      r("a", 2_000),
      r("a", 2_300),
      r("b", 5_000),
    ];
    const keyed = env.fromCollection(readings).uid("readings")
      .assignTimestampsAndWatermarks(punctuated)
      .keyBy((x) => x.sensor);
    const counts: string[] = [];
    keyed.window(SlidingEventTimeWindows.of(2_000, 1_000))
      .aggregate<number, number, string>(
        {
          createAccumulator: () => 0,
          add: (_x, acc) => acc + 1,
          getResult: (acc) => acc,
          merge: (a, b) => a + b,
        },
        {
          process(key, ctx, elements, out) {
            out.collect(`${key} ${ctx.window().start} ${elements[0]}`);
          },
        } satisfies ProcessWindowFunction<number, string, string, TimeWindow>,
      )
      .uid("sliding")
      .sinkTo({ kind: "simple", invoke: (line) => void counts.push(line) });
    const sessions: string[] = [];
    keyed.window(EventTimeSessionWindows.withGap(1_000))
      .process<string>({
        process(key, ctx, elements, out) {
          out.collect(`${key} [${ctx.window().start},${ctx.window().end}) ${elements.length}`);
        },
      })
      .uid("sessions")
      .sinkTo({ kind: "simple", invoke: (line) => void sessions.push(line) });
    await env.execute("sliding and sessions");
    assert.deepEqual(counts.sort(), [
      "a -1000 2",
      "a 0 2",
      "a 1000 2",
      "a 2000 2",
      "b -1000 1",
      "b 0 1",
      "b 4000 1",
      "b 5000 1",
    ]);
    assert.deepEqual(sessions.sort(), [
      "a [0,1400) 2",
      "a [2000,3300) 2",
      "b [5000,6000) 1",
      "b [900,1900) 1",
    ]);
  });
});

Deno.test("Late records go to the late side output, or are counted as numLateRecordsDropped in the job result", async () => {
  await withTempDir(async (directory) => {
    const readings = [
      r("a", 100, 1),
      r("a", 1_500, 2, true), // watermark 1500: [0, 1000) fires
      r("a", 900, 4), // late for [0, 1000): allowed lateness is 0
      r("a", 1_600, 8, true),
      r("b", 200, 16), // late
    ];
    const run = async (withSideOutput: boolean) => {
      const env = StreamExecutionEnvironment.getExecutionEnvironment();
      env.setCheckpointDirectory(directory);
      const lateTag = new OutputTag<Reading>("late");
      const sums: number[] = [];
      const late: number[] = [];
      const windowed = env.fromCollection(readings).uid("readings")
        .assignTimestampsAndWatermarks(punctuated)
        .keyBy((x) => x.sensor)
        .window(TumblingEventTimeWindows.of(1_000));
      if (withSideOutput) windowed.sideOutputLateData(lateTag);
      const result = windowed.reduce(sum).uid("sums");
      result.sinkTo({ kind: "simple", invoke: (x) => void sums.push(x.n) });
      result.getSideOutput(lateTag).sinkTo({ kind: "simple", invoke: (x) => void late.push(x.n) });
      const job = await env.execute("late data");
      const vertex = Object.values(job.metrics).find((m) => "sums" in m.operators)!;
      return { sums, late, dropped: vertex.operators["sums"]!.numLateRecordsDropped };
    };
    assert.deepEqual(await run(true), { sums: [1, 10], late: [4, 16], dropped: 0 });
    assert.deepEqual(await run(false), { sums: [1, 10], late: [], dropped: 2 });
  });
});

Deno.test("countWindowAll groups the whole stream by count in one subtask", async () => {
  await withTempDir(async (directory) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(3);
    env.setCheckpointDirectory(directory);
    const batches: number[] = [];
    env.fromCollection(Array.from({ length: 12 }, (_, i) => i + 1)).uid("numbers")
      .countWindowAll(4)
      .reduce((a, b) => a + b)
      .uid("batches")
      .sinkTo({ kind: "simple", invoke: (n) => void batches.push(n) });
    await env.execute("count windows");
    assert.equal(batches.length, 3);
    assert.equal(batches.reduce((a, b) => a + b), 78, "every element in exactly one batch");
  });
});
