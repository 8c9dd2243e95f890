/**
 * Late records around a restore: a windowed job with `allowedLateness` and
 * `sideOutputLateData` gives, record by record, the same main and late
 * outputs whether or not it fails right after a checkpoint in the middle.
 *
 * This is where Weir differs from Flink (DESIGN §11, "Watermarks across a
 * restore"): Flink restarts every watermark at `Long.MIN_VALUE`, so a
 * record that was too late before the failure can be on time when it is
 * replayed. Weir restores each split's watermark and keeps each operator's
 * watermark as a floor until a higher one arrives, so what is late after the
 * restore is what was late before it.
 *
 * ## The script
 *
 * Watermarks are punctuated (one at each reading marked `wm`) and the source
 * runs in one subtask with one split, so each window subtask sees records
 * and watermarks in one fixed order: which records are late is a function of
 * the script alone. Windows are 1 s tumbling windows with 1 s allowed
 * lateness. Before the checkpoint the watermark reaches 2600 ms; right after
 * it (where the first attempt fails) and before any new watermark come:
 *
 * - `c@300`: its window `[0, 1000)` was purged at watermark 1999, so it is
 *   too late: it goes to the late side output (without the floor it would
 *   open that window again and fire it later);
 * - `c@1500`, `c@1600`: window `[1000, 2000)` fired and is within its
 *   allowed lateness, so each fires it again at once (without the floor
 *   neither would fire until the next watermark, and then only once);
 * - `b@700`: too late, like `c@300`;
 * - `b@1900`: window `[1000, 2000)` of `b` never had an element, but it is
 *   within its allowed lateness: the record opens it and fires it at once.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  OutputTag,
  type ProcessWindowFunction,
  RestartStrategies,
  StreamExecutionEnvironment,
  type TimeWindow,
  TumblingEventTimeWindows,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, type TestItem, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";

/** A reading: sensor, event time (ms), value; `wm` makes the generator emit watermark `ts`. */
interface Reading {
  readonly sensor: string;
  readonly ts: number;
  readonly n: number;
  readonly wm?: true;
}

function r(sensor: string, ts: number, n: number, wm?: "wm"): Reading {
  return wm ? { sensor, ts, n, wm: true } : { sensor, ts, n };
}

/** Watermark `ts` after each reading marked `wm`, and none otherwise (a punctuated generator). */
const punctuated = WatermarkStrategy.forGenerator<Reading>(() => ({
  onEvent: (reading, timestamp, output) => {
    if (reading.wm) output.emitWatermark(timestamp);
  },
  onPeriodicEmit: () => {},
})).withTimestampAssigner((reading) => reading.ts);

const ALLOWED_LATENESS_MS = 1_000;

/** The script; `fail` puts an induced failure (attempt 0) right after the checkpoint marker. */
function script(fail: boolean): TestItem<Reading>[] {
  return [
    r("a", 100, 1),
    r("b", 200, 2),
    r("c", 300, 4),
    r("a", 1_100, 8, "wm"), // fires [0, 1000) of a, b, c
    r("b", 900, 16), // within the allowed lateness: fires b's [0, 1000) again
    r("c", 1_200, 32),
    r("a", 2_600, 64, "wm"), // fires [1000, 2000) of a and c; purges [0, 1000)
    TestSource.awaitCheckpoint(),
    ...(fail ? [TestSource.fail("crash right after the checkpoint")] : []),
    r("c", 300, 128), // too late: [0, 1000) is purged
    r("c", 1_500, 256), // allowed lateness: fires c's [1000, 2000) again
    r("c", 1_600, 512), // and again
    r("b", 700, 1_024), // too late
    r("b", 1_900, 2_048), // allowed lateness: opens b's [1000, 2000) and fires it at once
    r("a", 2_200, 4_096),
    r("b", 2_300, 8_192),
    r("a", 3_100, 16_384, "wm"), // fires [2000, 3000) of a and b; purges [1000, 2000)
    r("c", 2_900, 32_768), // allowed lateness: fires c's [2000, 3000), new
    r("a", 4_200, 65_536, "wm"), // purges [2000, 3000) (cleanup 3999)
    r("b", 2_500, 131_072), // too late
    r("c", 4_100, 262_144),
  ];
}

/** What one run committed, per sink subtask, in commit order. */
interface Outputs {
  readonly main: string[][];
  readonly late: string[][];
  readonly restarts: number;
  readonly dropped: number | undefined;
}

/**
 * Runs the job over `script(fail)`, with the window operator at parallelism
 * 2 (keys `a` and `b` go to subtask 0, `c` to subtask 1).
 */
async function run(fail: boolean): Promise<Outputs> {
  return await withTempDir(async (directory) => {
    const main = new CollectingSink<string>();
    const late = new CollectingSink<string>();
    const lateTag = new OutputTag<Reading>("late-readings");
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(2)
      .enableCheckpointing(50, { directory })
      .setRestartStrategy(RestartStrategies.fixedDelay(1, 0));
    const describeWindow: ProcessWindowFunction<Reading, string, string, TimeWindow> = {
      process(key, ctx, [sum], out) {
        out.collect(`${key} [${ctx.window().start},${ctx.window().end}) n=${sum!.n}`);
      },
    };
    const sums = env.fromSource(TestSource.of(script(fail)), punctuated, "readings")
      .uid("readings").setParallelism(1)
      .keyBy((reading) => reading.sensor)
      .window(TumblingEventTimeWindows.of(1_000))
      .allowedLateness(ALLOWED_LATENESS_MS)
      .sideOutputLateData(lateTag)
      .reduce(
        (a, b) => ({ sensor: a.sensor, ts: Math.max(a.ts, b.ts), n: a.n + b.n }),
        describeWindow,
      )
      .uid("sums");
    sums.sinkTo(main).uid("main-output");
    sums.getSideOutput(lateTag)
      .map((x) => `${x.sensor}@${x.ts} n=${x.n}`)
      .sinkTo(late).uid("late-output");
    const result = await env.execute(fail ? "late data with a failure" : "late data");
    const metrics = Object.values(result.metrics).find((m) => "sums" in m.operators);
    return {
      main: main.committedBySubtask(),
      late: late.committedBySubtask(),
      restarts: result.restarts,
      dropped: metrics?.operators["sums"]?.numLateRecordsDropped,
    };
  });
}

/** All of a run's records, sorted: what the script makes of each window and late record. */
function all(bySubtask: readonly string[][]): string[] {
  return bySubtask.flat().sort();
}

Deno.test("late records around a restore give the main and late outputs of a run without the failure, record by record", async () => {
  const clean = await run(false);
  const failed = await run(true);

  // The script does what its comments say (so the comparison below is about late data).
  assert.equal(clean.restarts, 0);
  assert.deepEqual(
    all(clean.main),
    [
      "a [0,1000) n=1",
      "b [0,1000) n=2",
      "c [0,1000) n=4",
      "b [0,1000) n=18",
      "a [1000,2000) n=8",
      "c [1000,2000) n=32",
      "c [1000,2000) n=288",
      "c [1000,2000) n=800",
      "b [1000,2000) n=2048",
      "a [2000,3000) n=4160",
      "b [2000,3000) n=8192",
      "c [2000,3000) n=32768",
      "a [3000,4000) n=16384",
      "a [4000,5000) n=65536",
      "c [4000,5000) n=262144",
    ].sort(),
  );
  assert.deepEqual(all(clean.late), ["b@700 n=1024", "b@2500 n=131072", "c@300 n=128"].sort());
  assert.equal(clean.dropped, 0, "late records go to the side output, none is dropped");

  assert.equal(failed.restarts, 1, "the induced failure restarted the job once");
  assert.equal(failed.dropped, 0, "late records go to the side output after the restore too");
  assert.deepEqual(failed.main, clean.main, "main output, per subtask in commit order");
  assert.deepEqual(failed.late, clean.late, "late output, per subtask in commit order");
});
