/**
 * The interval join end to end, in local mode (Flink's
 * `KeyedStream.intervalJoin` and `IntervalJoinOperator`):
 *
 * - exact results of a small join, with each result's timestamp (the later
 *   of the pair) and late elements on their side's late-data output;
 * - exactness under an injected failure, in the shape of
 *   `window_checkpointing_test.ts`: parallelism 4, a checkpoint every
 *   100 ms, the left source fails once after at least 3 completed
 *   checkpoints; every pair the bounds admit must be committed exactly once,
 *   none other, and the committed output must equal the failure-free run's.
 *
 * The expected pairs are computed from the input by brute force over all
 * pairs of a key, not with the operator's arithmetic. Every split's
 * timestamps rise and its watermarks are punctuated (`ts - 1` at each
 * element), so no element is ever late: which pairs join is a function of
 * the input alone.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type Collector,
  OutputTag,
  type ProcessJoinContext,
  type ProcessJoinFunction,
  RestartStrategies,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, type TestItem, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";

/** One element of either side: key, sequence number, event time (ms); `wm` emits watermark `ts`. */
type El = { key: string; seq: number; ts: number; wm?: true };

/** Emits `key:lseq:rseq@timestamp`. */
const pairs: ProcessJoinFunction<El, El, string> = {
  processElement(l: El, r: El, ctx: ProcessJoinContext, out: Collector<string>) {
    out.collect(`${l.key}:${l.seq}:${r.seq}@${ctx.getTimestamp()}`);
  },
};

Deno.test("intervalJoin().between() joins each pair within the bounds once, stamped with the later timestamp; late elements go to their side outputs", async () => {
  await withTempDir(async (directory) => {
    // Watermark `ts` at elements marked `wm`, none otherwise.
    const punctuated = WatermarkStrategy.forGenerator<El>(() => ({
      onEvent: (e, timestamp, output) => {
        if (e.wm) output.emitWatermark(timestamp);
      },
      onPeriodicEmit: () => {},
    })).withTimestampAssigner((e) => e.ts);
    const el = (key: string, seq: number, ts: number, wm?: true): El =>
      wm ? { key, seq, ts, wm } : { key, seq, ts };
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(2)
      .enableCheckpointing(50, { directory });
    // One source for both sides (split by filter): watermarks and barriers reach the join in one order.
    const items: TestItem<El & { side: "L" | "R" }>[] = [
      { ...el("a", 0, 100), side: "L" },
      { ...el("a", 1, 101), side: "R" }, // 101 - 100 = 1: in [-2, 1]
      { ...el("a", 2, 103), side: "R" }, // 3: out
      { ...el("a", 3, 104), side: "L" }, // r1: -3 out; r2: -1 in
      { ...el("b", 4, 98), side: "R" }, // no left of b yet
      { ...el("b", 5, 99), side: "L" }, // b r4: -1 in
      { ...el("a", 6, 200, true), side: "L" }, // watermark 200
      TestSource.awaitCheckpoint(), // the join has seen watermark 200 on both inputs
      { ...el("a", 7, 199), side: "R" }, // late right
      { ...el("b", 8, 150), side: "L" }, // late left
      { ...el("a", 9, 201), side: "R" }, // a l6: 1 in
    ];
    const events = env.fromSource(
      TestSource.of(items),
      punctuated as unknown as WatermarkStrategy<El & { side: "L" | "R" }>,
      "events",
    ).uid("events").setParallelism(1);
    const leftLate = new OutputTag<El>("left-late");
    const rightLate = new OutputTag<El>("right-late");
    const joined = events.filter((e) => e.side === "L").keyBy((e) => e.key)
      .intervalJoin(events.filter((e) => e.side === "R").keyBy((e) => e.key))
      .between(-2, 1)
      .sideOutputLeftLateData(leftLate)
      .sideOutputRightLateData(rightLate)
      .process(pairs)
      .uid("join");
    const out: string[] = [];
    const late: string[] = [];
    joined.sinkTo({ kind: "simple", invoke: (x) => void out.push(x) }).setParallelism(1);
    joined.getSideOutput(leftLate)
      .union(joined.getSideOutput(rightLate))
      .sinkTo({ kind: "simple", invoke: (e) => void late.push(`${e.key}:${e.seq}`) })
      .setParallelism(1);
    await env.execute("interval join");
    assert.deepEqual(out.sort(), ["a:0:1@101", "a:3:2@104", "a:6:9@201", "b:5:4@99"]);
    assert.deepEqual(late.sort(), ["a:7", "b:8"]);
  });
});

Deno.test("intervalJoin().between() rejects bounds that hold no difference and functions without processElement", () => {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const a = env.fromCollection([1]).keyBy((x) => x);
  const b = env.fromCollection([2]).keyBy((x) => x);
  assert.throws(
    () => a.intervalJoin(b).between(5, 1),
    /lowerMs <= upperMs: current values are 5 and 1/,
  );
  assert.throws(
    () => a.intervalJoin(b).between(0.5, 1),
    /integer lower bound in ms: current value is 0.5/,
  );
  assert.throws(
    () => a.intervalJoin(b).between(0, 0).lowerBoundExclusive().process(pairs as never),
    /bounds \(0, 0\] hold no timestamp difference/,
  );
  assert.throws(
    () => a.intervalJoin(b).between(0, 1).process({} as never),
    /needs a ProcessJoinFunction/,
  );
});

// ---------------------------------------------------------------------------
// Exactness under a failure

const PARALLELISM = 4;
const KEYS = 8;
const PER_KEY = 240;
const LOWER = -3;
const UPPER = 5;

/** Left timestamps: bursts of 40 elements 1 ms apart, 15 ms between bursts. */
const leftTime = (seq: number) => seq + Math.floor(seq / 40) * 15;
/** Right timestamps: one every 2 ms. */
const rightTime = (seq: number) => 2 * seq;

/** The splits of one side: key `k<i>` in split `i % PARALLELISM`, keys interleaved, rising timestamps. */
function splits(
  time: (seq: number) => number,
  failAfterCheckpoints: number | undefined,
): TestItem<El>[][] {
  const lists: TestItem<El>[][] = [];
  for (let split = 0; split < PARALLELISM; split++) {
    const items: TestItem<El>[] = [];
    let emitted = 0;
    let markers = 0;
    for (let seq = 0; seq < PER_KEY; seq++) {
      for (let k = split; k < KEYS; k += PARALLELISM) {
        items.push({ key: `k${k}`, seq, ts: time(seq) });
        if (++emitted % 60 !== 0) continue;
        items.push(TestSource.awaitCheckpoint());
        if (split === 0 && ++markers === failAfterCheckpoints) {
          items.push(TestSource.fail(`induced failure after ${markers} checkpoints`));
        }
      }
    }
    lists.push(items);
  }
  return lists;
}

/** Every pair the bounds admit, by brute force: `key:lseq:rseq@max(ts)`. */
function expectedPairs(): string[] {
  const out: string[] = [];
  for (let k = 0; k < KEYS; k++) {
    for (let l = 0; l < PER_KEY; l++) {
      for (let r = 0; r < PER_KEY; r++) {
        const d = rightTime(r) - leftTime(l);
        if (d >= LOWER && d <= UPPER) {
          out.push(`k${k}:${l}:${r}@${Math.max(leftTime(l), rightTime(r))}`);
        }
      }
    }
  }
  return out.sort();
}

const TICKS = WatermarkStrategy.forGenerator<El>(() => ({
  onEvent: (_e, timestamp, output) => output.emitWatermark(timestamp - 1),
  onPeriodicEmit: () => {},
})).withTimestampAssigner((e) => e.ts);

async function runJoin(failAfterCheckpoints: number | undefined) {
  return await withTempDir(async (directory) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(PARALLELISM)
      .enableCheckpointing(100, { directory })
      .setRestartStrategy(RestartStrategies.fixedDelay(3, 0));
    const left = env.fromSource(
      TestSource.perSubtask(splits(leftTime, failAfterCheckpoints)),
      TICKS,
      "left",
    ).uid("left");
    const right = env.fromSource(
      TestSource.perSubtask(splits(rightTime, undefined)),
      TICKS,
      "right",
    )
      .uid("right");
    const sink = new CollectingSink<string>();
    left.keyBy((e) => e.key)
      .intervalJoin(right.keyBy((e) => e.key))
      .between(LOWER, UPPER)
      .process(pairs)
      .uid("join")
      .sinkTo(sink).uid("pairs");
    const result = await env.execute("interval join under a failure");
    return { committed: [...sink.committed()], restarts: result.restarts };
  });
}

Deno.test("an interval join commits every pair exactly once after a failure and restore, as the failure-free run does", async () => {
  const expected = expectedPairs();
  assert.ok(expected.length > 3000, `expected pairs: ${expected.length}`);
  const clean = await runJoin(undefined);
  assert.equal(clean.restarts, 0);
  assert.deepEqual([...clean.committed].sort(), expected);
  const failed = await runJoin(3);
  assert.equal(failed.restarts, 1);
  const twice = failed.committed.filter((x, i, all) => all.indexOf(x) !== i);
  assert.deepEqual(twice, [], "pairs committed twice");
  assert.deepEqual([...failed.committed].sort(), expected);
});
