/**
 * Window join and window coGroup end to end, in local mode (Flink's
 * `JoinedStreams` and `CoGroupedStreams`): exact outputs per key and
 * window, including windows with elements of one input only, and late
 * elements dropped and counted.
 *
 * ## Why the late elements are late whatever the timing
 *
 * Both inputs come from one source subtask (split by `filter`), whose
 * watermarks are punctuated (`wm` records). The late elements follow an
 * `awaitCheckpoint` marker placed after the watermark that closes the first
 * windows: the checkpoint completes only after its barrier, which follows
 * that watermark on every channel, has reached the join's window operator
 * on both inputs, so the operator's watermark (the minimum of both) is past
 * the windows when the late elements arrive.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type Collector,
  type DataStream,
  type ProcessContext,
  StreamExecutionEnvironment,
  TumblingEventTimeWindows,
  WatermarkStrategy,
} from "../mod.ts";
import { type TestItem, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";

/** One event of either input: side, key, event time (ms), a label; `wm` emits watermark `ts`. */
type Event = { side: "L" | "R"; key: string; ts: number; label: string; wm?: true };

const ev = (side: "L" | "R", key: string, ts: number, label: string, wm?: true): Event =>
  wm ? { side, key, ts, label, wm } : { side, key, ts, label };

const punctuated = WatermarkStrategy.forGenerator<Event>(() => ({
  onEvent: (e, timestamp, output) => {
    if (e.wm) output.emitWatermark(timestamp);
  },
  onPeriodicEmit: () => {},
})).withTimestampAssigner((e) => e.ts);

/** The input: windows [0, 1000) and [1000, 2000) of 1 s tumbling windows, then two late events. */
const ITEMS: TestItem<Event>[] = [
  ev("L", "a", 100, "l1"),
  ev("R", "a", 150, "r1"),
  ev("L", "a", 200, "l2"),
  ev("R", "a", 250, "r2"),
  ev("L", "b", 300, "l3"),
  ev("R", "b", 350, "r3"),
  ev("L", "c", 400, "l4"), // c has no right element
  ev("R", "d", 450, "r4"), // d has no left element
  ev("L", "a", 1_100, "l5"),
  ev("R", "a", 1_200, "r5"),
  ev("L", "z", 1_500, "lz", true), // watermark 1500: [0, 1000) fires
  TestSource.awaitCheckpoint(),
  ev("L", "a", 500, "late-l"), // late for [0, 1000): dropped
  ev("R", "b", 600, "late-r"), // late: dropped
];

/** Runs `build` on the two inputs split from one source; returns the labelled results and the drops. */
async function run(
  build: (left: DataStream<Event>, right: DataStream<Event>) => DataStream<string>,
): Promise<{ byWindow: Record<string, string[]>; dropped: number | undefined }> {
  return await withTempDir(async (directory) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(2)
      .enableCheckpointing(50, { directory });
    const events = env.fromSource(TestSource.of(ITEMS), punctuated, "events")
      .uid("events").setParallelism(1);
    const left = events.filter((e) => e.side === "L");
    const right = events.filter((e) => e.side === "R");
    const byWindow: Record<string, string[]> = {};
    build(left, right)
      .process<[string, number | undefined]>({
        processElement(
          line: string,
          ctx: ProcessContext,
          out: Collector<[string, number | undefined]>,
        ) {
          out.collect([line, ctx.timestamp()]);
        },
      })
      .sinkTo({
        kind: "simple",
        invoke: ([line, ts]) => {
          const space = line.indexOf(" ");
          (byWindow[`${line.slice(0, space)}@${ts}`] ??= []).push(line.slice(space + 1));
        },
      }).setParallelism(1);
    const result = await env.execute("window join");
    const vertex = Object.values(result.metrics).find((m) => "two-inputs" in m.operators);
    return { byWindow, dropped: vertex?.operators["two-inputs"]?.numLateRecordsDropped };
  });
}

Deno.test("join().where().equalTo().window().apply() emits each key's cross product per window in arrival order, and drops late elements", async () => {
  const { byWindow, dropped } = await run((left, right) =>
    left.join(right)
      .where((l) => l.key)
      .equalTo((r) => r.key)
      .window(TumblingEventTimeWindows.of(1_000))
      .apply((l, r) => `${l.key} ${l.label}+${r.label}`)
      .uid("two-inputs")
  );
  // Keys c and d (one side only) and z emit nothing; results carry the window's maxTimestamp.
  assert.deepEqual(byWindow, {
    "a@999": ["l1+r1", "l1+r2", "l2+r1", "l2+r2"],
    "b@999": ["l3+r3"],
    "a@1999": ["l5+r5"],
  });
  assert.equal(dropped, 2);
});

Deno.test("a FlatJoinFunction object emits zero or more results per pair through its collector", async () => {
  const { byWindow } = await run((left, right) =>
    left.join(right)
      .where((l) => l.key)
      .equalTo((r) => r.key)
      .window(TumblingEventTimeWindows.of(1_000))
      .apply<string>({
        join(l: Event, r: Event, out: Collector<string>) {
          if (l.label === "l2") return; // zero results for l2's pairs
          out.collect(`${l.key} ${l.label}+${r.label}`);
          if (r.label === "r1") out.collect(`${l.key} ${l.label}+${r.label}(again)`);
        },
      })
      .uid("two-inputs")
  );
  assert.deepEqual(byWindow, {
    "a@999": ["l1+r1", "l1+r1(again)", "l1+r2"],
    "b@999": ["l3+r3"],
    "a@1999": ["l5+r5"],
  });
});

Deno.test("coGroup().where().equalTo().window().apply() gets both sides of every key's window, either possibly empty", async () => {
  const { byWindow, dropped } = await run((left, right) =>
    left.coGroup(right)
      .where((l) => l.key)
      .equalTo((r) => r.key)
      .window(TumblingEventTimeWindows.of(1_000))
      .apply<string>((ls, rs, out) => {
        const key = ls[0]?.key ?? rs[0]!.key;
        out.collect(`${key} [${ls.map((l) => l.label)}] [${rs.map((r) => r.label)}]`);
      })
      .uid("two-inputs")
  );
  assert.deepEqual(byWindow, {
    "a@999": ["[l1,l2] [r1,r2]"],
    "b@999": ["[l3] [r3]"],
    "c@999": ["[l4] []"],
    "d@999": ["[] [r4]"],
    "a@1999": ["[l5] [r5]"],
    "z@1999": ["[lz] []"],
  });
  assert.equal(dropped, 2);
});

Deno.test("join and coGroup reject what is not a function, naming the call", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const s = env.fromCollection([1, 2, 3]);
  assert.throws(
    () => s.join(s).where("x" as unknown as (v: number) => number),
    /join\(\)\.where\(\) needs a key selector function \(value\) => key: current value is x/,
  );
  const windowed = s.coGroup(s).where((v) => v).equalTo((v) => v)
    .window(TumblingEventTimeWindows.of(1_000));
  assert.throws(
    () => windowed.apply({} as never),
    /coGroup\(\)\.apply\(\) needs a CoGroupFunction/,
  );
  assert.throws(() => windowed.allowedLateness(-1), /current value is -1/);
});
