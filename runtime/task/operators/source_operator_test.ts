import assert from "node:assert/strict";
import type {
  InputStatus,
  ReaderOutput,
  Source,
  SourceOutput,
  SourceReader,
  SourceSplit,
} from "../../api/source.ts";
import { computeKeyGroupRangeForOperatorIndex } from "../../state/key_group.ts";
import { ManualClock } from "../../time/manual_clock.ts";
import { MAX_WATERMARK, WatermarkStrategy } from "../../time/watermark.ts";
import type { OperatorEnvironment, Output } from "./operator.ts";
import { operatorRestore, type TakenSnapshot, takeSnapshot } from "./_snapshot_kit.ts";
import { SourceOperator, type SourceSplitState } from "./source_operator.ts";

interface ListSplit extends SourceSplit {
  /** Timestamps still to emit, one record each. */
  readonly timestamps: readonly number[];
}

/**
 * A source whose splits are lists of timestamps; each split emits its
 * records through its own split output. `polls` counts reader polls.
 */
class ListSource implements Source<number, ListSplit> {
  readonly boundedness;
  readonly splits: ListSplit[];
  polls = 0;
  constructor(splits: ListSplit[], boundedness: "bounded" | "continuous-unbounded") {
    this.splits = splits;
    this.boundedness = boundedness;
  }
  enumerateSplits(): ListSplit[] {
    return this.splits;
  }
  createReader(): SourceReader<number, ListSplit> {
    const bounded = this.boundedness === "bounded";
    const countPoll = () => this.polls++;
    const active: { splitId: string; rest: number[]; out?: SourceOutput<number> }[] = [];
    return {
      addSplits(splits) {
        for (const s of splits) active.push({ splitId: s.splitId, rest: [...s.timestamps] });
      },
      pollNext(output: ReaderOutput<number>): InputStatus {
        countPoll();
        for (const a of active) {
          a.out ??= output.createOutputForSplit(a.splitId);
          const ts = a.rest.shift();
          if (ts !== undefined) a.out.collect(ts, ts);
        }
        if (active.every((a) => a.rest.length === 0)) {
          return bounded ? "END_OF_INPUT" : "NOTHING_AVAILABLE";
        }
        return "MORE_AVAILABLE";
      },
      snapshotState: () => active.map(({ splitId, rest }) => ({ splitId, timestamps: [...rest] })),
    };
  }
}

/** An operator environment on `clock` that records the wake-ups asked for. */
function environment(clock: ManualClock, subtaskIndex = 0, parallelism = 1) {
  const wakeups: number[] = [];
  const env: OperatorEnvironment = {
    jobId: "job-1",
    jobName: "watermarks",
    vertexId: "v0",
    subtaskIndex,
    parallelism,
    maxParallelism: 128,
    keyGroupRange: computeKeyGroupRangeForOperatorIndex(128, parallelism, subtaskIndex),
    attempt: 0,
    clock,
    checkpointingMode: "exactly-once",
    requestWakeup: (t) => wakeups.push(t),
  };
  return { env, wakeups };
}

/** An output recording records, watermarks and statuses as strings, in order. */
function recording(): Output & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    collect: (v, ts) => seen.push(`record ${v}@${ts}`),
    collectSide: () => {},
    emitWatermark: (w) => seen.push(`wm ${w}`),
    emitWatermarkStatus: (s) => seen.push(s),
  };
}

async function open(
  source: ListSource,
  options: {
    strategy?: WatermarkStrategy<number>;
    subtaskIndex?: number;
    parallelism?: number;
    clock?: ManualClock;
    restore?: Pick<TakenSnapshot, "operator">;
  } = {},
) {
  const clock = options.clock ?? new ManualClock();
  const { env, wakeups } = environment(clock, options.subtaskIndex, options.parallelism);
  const out = recording();
  const op = new SourceOperator({
    uid: "events",
    name: "Source: events",
    source: source as unknown as Source<unknown, SourceSplit>,
    watermarkStrategy: (options.strategy ?? WatermarkStrategy.forMonotonousTimestamps()) as never,
    env,
    output: out,
    autoWatermarkIntervalMs: 200,
  });
  await op.initializeState(
    options.restore === undefined ? undefined : operatorRestore(options.restore.operator),
  );
  await op.open();
  return { op, out, wakeups, clock };
}

/** Whether `promise` settled after a few turns of the microtask queue. */
async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false;
  promise.then(() => done = true);
  for (let i = 0; i < 10; i++) await Promise.resolve();
  return done;
}

Deno.test("an unbounded source subtask without splits is idle from its first poll and never polls its reader", async () => {
  const source = new ListSource([{ splitId: "only", timestamps: [1] }], "continuous-unbounded");
  const { op, out } = await open(source, { subtaskIndex: 1, parallelism: 2 });
  assert.deepEqual(out.seen, [], "nothing before the first poll");
  assert.equal(await op.poll(), "NOTHING_AVAILABLE");
  assert.equal(await op.poll(), "NOTHING_AVAILABLE");
  assert.deepEqual(out.seen, ["idle"]);
  assert.equal(source.polls, 0);
  const available = op.isAvailable();
  assert.equal(await settled(available), false, "it waits forever: no end, no MAX_WATERMARK");
  await op.close();
  assert.equal(await settled(available), true, "until it is closed");
  assert.deepEqual(out.seen, ["idle"]);
});

Deno.test("a bounded source subtask without splits is idle, then ends with 'active' and MAX_WATERMARK", async () => {
  const source = new ListSource([{ splitId: "only", timestamps: [1] }], "bounded");
  const { op, out } = await open(source, { subtaskIndex: 1, parallelism: 2 });
  assert.equal(await op.poll(), "END_OF_INPUT");
  await op.endInput();
  assert.deepEqual(out.seen, ["idle", "active", `wm ${MAX_WATERMARK}`]);
});

Deno.test("periodic watermarks come from processing-time wake-ups, also while the reader has nothing", async () => {
  const source = new ListSource([{ splitId: "a", timestamps: [1_000] }], "continuous-unbounded");
  const { op, out, wakeups, clock } = await open(source, { clock: new ManualClock(5_000) });
  assert.deepEqual(wakeups, [], "no wake-up before the first poll");
  assert.equal(await op.poll(), "NOTHING_AVAILABLE");
  assert.deepEqual(wakeups, [5_200]);
  clock.setTime(5_100);
  op.onProcessingTime(5_100); // another operator's timer: not due yet
  assert.deepEqual(out.seen, ["record 1000@1000"]);
  clock.setTime(5_200);
  op.onProcessingTime(5_200);
  assert.deepEqual(out.seen, ["record 1000@1000", "wm 999"]);
  assert.deepEqual(wakeups, [5_200, 5_200, 5_400]);
});

Deno.test("without a generator or idleness the source asks for no wake-ups", async () => {
  const source = new ListSource([{ splitId: "a", timestamps: [1] }], "bounded");
  const { op, wakeups } = await open(source, { strategy: WatermarkStrategy.noWatermarks() });
  await op.poll();
  op.onProcessingTime(10_000);
  assert.deepEqual(wakeups, []);
});

Deno.test("with idleness, a source subtask whose splits went quiet turns idle on its wake-ups", async () => {
  const source = new ListSource([{ splitId: "a", timestamps: [10] }], "continuous-unbounded");
  const strategy = WatermarkStrategy.forMonotonousTimestamps<number>().withIdleness(1_000);
  const { op, out, clock } = await open(source, { strategy });
  await op.poll();
  for (let t = 200; t <= 1_400; t += 200) {
    clock.setTime(t);
    op.onProcessingTime(t);
  }
  assert.deepEqual(out.seen, ["record 10@10", "wm 9", "idle"]);
});

Deno.test("a checkpoint keeps each split with its watermark state, and a restore resumes it", async () => {
  const source = new ListSource([{ splitId: "a", timestamps: [1_000, 3_000, 2_000] }], "bounded");
  const strategy = WatermarkStrategy.forBoundedOutOfOrderness<number>(100);
  const first = await open(source, { strategy });
  await first.op.poll(); // 1 000
  first.clock.setTime(200);
  first.op.onProcessingTime(200); // wm 899
  await first.op.poll(); // 3 000, not yet in a watermark
  const snapshot = await takeSnapshot(await first.op.snapshotState(1));
  const items = snapshot.operator!["_splits"]!.items as SourceSplitState[];
  assert.deepEqual(items, [{
    split: { splitId: "a", timestamps: [2_000] },
    watermark: { watermark: 899, generator: 3_000 },
  }]);
  assert.equal(snapshot.watermark, undefined, "the floor lives with the split");

  const second = await open(source, { strategy, restore: snapshot });
  await second.op.poll(); // 2 000, replayed after the checkpoint
  second.clock.setTime(200);
  second.op.onProcessingTime(200);
  // As without a failure: the generator remembers 3 000.
  assert.deepEqual(second.out.seen, ["record 2000@2000", "wm 2899"]);
});

Deno.test("splits checkpointed in the older format, bare, are restored without watermark state", async () => {
  const source = new ListSource([], "bounded");
  const bare = { _splits: { mode: "split" as const, items: [{ splitId: "a", timestamps: [5] }] } };
  const { op, out } = await open(source, { restore: { operator: bare } });
  assert.equal(await op.poll(), "END_OF_INPUT");
  assert.deepEqual(out.seen, ["record 5@5"]);

  const broken = { _splits: { mode: "split" as const, items: [{ id: "a" }] } };
  await assert.rejects(
    () => open(source, { restore: { operator: broken } }),
    /Cannot restore source 'Source: events' \(uid events\) subtask 0\/1 of job job-1: .*\{"id":"a"\}/,
  );
});
