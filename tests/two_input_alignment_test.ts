/**
 * Aligned checkpoints of a two-input operator under skew: a fast input of
 * parallelism 3 and a slow one of parallelism 1 (with `pause` markers) are
 * connected into a `KeyedCoProcessFunction` of parallelism 2, keyed on the
 * same keys. Each keyed subtask reads three channels of input 1 and one of
 * input 2, and must align barriers across both inputs.
 *
 * The function keeps, per key and input, the last sequence number and a
 * running sum in keyed state shared by both inputs, and fails on any gap or
 * repeat; so a lost or replayed record, or stale state, fails the job or
 * shows in the committed output. The test also checks the consistent cut
 * itself: at every checkpoint, the records each source had emitted (summed
 * over its subtasks) equal the records of that input the keyed subtasks had
 * processed. A failure is injected while a keyed subtask aligns checkpoint
 * 3; the committed output must equal the failure-free one (exactly once).
 * The same job with unaligned checkpoints (FLIP-76) and a failure in input 1
 * must commit the same output.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type CheckpointedFunction,
  type Collector,
  type FunctionInitializationContext,
  type FunctionSnapshotContext,
  type KeyedCoProcessFunction,
  type KeyedProcessContext,
  type ListState,
  ListStateDescriptor,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, type TestItem, TestSource } from "../testing.ts";
import { assertSameOutput, withTempDir } from "./_job_kit.ts";

type Origin = "fast" | "slow";

interface Numbered {
  readonly key: string;
  readonly seq: number;
}

/** Output: `key` is `<key>/<origin>`, so each output key's order is that of one input channel. */
interface Summed {
  readonly key: string;
  readonly seq: number;
  readonly sum: number;
}

interface Cut {
  readonly emitted: Record<Origin, number>;
  readonly processed: Record<Origin, number>;
  readonly reporters: Set<string>;
}
type Cuts = Map<number, Cut>;

function cutOf(cuts: Cuts, id: number): Cut {
  let cut = cuts.get(id);
  if (!cut) {
    cut = { emitted: { fast: 0, slow: 0 }, processed: { fast: 0, slow: 0 }, reporters: new Set() };
    cuts.set(id, cut);
  }
  return cut;
}

/** An identity map chained to a source subtask: counts what it passed, reports it per checkpoint. */
class EmittedCounter implements CheckpointedFunction {
  private count = 0;
  private subtask = -1;
  private state!: ListState<number>;
  constructor(readonly origin: Origin, readonly cuts: Cuts) {}
  open(ctx: RuntimeContext): void {
    this.subtask = ctx.subtaskIndex;
  }
  initializeState(context: FunctionInitializationContext): void {
    this.state = context.operatorStateStore.getListState(new ListStateDescriptor<number>("n"));
    this.count = [...this.state.get()].reduce((a, b) => a + b, 0);
  }
  snapshotState(context: FunctionSnapshotContext): void {
    this.state.update([this.count]);
    const cut = cutOf(this.cuts, context.checkpointId);
    cut.emitted[this.origin] += this.count;
    cut.reporters.add(`${this.origin}#${this.subtask}`);
  }
  map(record: Numbered): Numbered {
    this.count++;
    return record;
  }
}

/** Per key and input: sequence check and running sum, in keyed state both inputs share. */
class SequencePerInput
  implements KeyedCoProcessFunction<string, Numbered, Numbered, Summed>, CheckpointedFunction {
  private subtask = -1;
  private processed = { fast: 0, slow: 0 };
  private counts!: ListState<{ fast: number; slow: number }>;
  private last!: ValueState<Record<Origin, number>>;
  private sums!: ValueState<Record<Origin, number>>;
  constructor(readonly cuts: Cuts) {}
  initializeState(context: FunctionInitializationContext): void {
    this.counts = context.operatorStateStore.getListState(
      new ListStateDescriptor<{ fast: number; slow: number }>("processed"),
    );
    this.processed = { fast: 0, slow: 0 };
    for (const p of this.counts.get()) {
      this.processed.fast += p.fast;
      this.processed.slow += p.slow;
    }
  }
  snapshotState(context: FunctionSnapshotContext): void {
    this.counts.update([{ ...this.processed }]);
    const cut = cutOf(this.cuts, context.checkpointId);
    cut.processed.fast += this.processed.fast;
    cut.processed.slow += this.processed.slow;
    cut.reporters.add(`keyed#${this.subtask}`);
  }
  open(ctx: RuntimeContext): void {
    this.subtask = ctx.subtaskIndex;
    this.last = ctx.getState(new ValueStateDescriptor<Record<Origin, number>>("last"));
    this.sums = ctx.getState(new ValueStateDescriptor<Record<Origin, number>>("sums"));
  }
  private step(origin: Origin, r: Numbered, key: string, out: Collector<Summed>): void {
    const last = this.last.value() ?? { fast: -1, slow: -1 };
    if (r.seq !== last[origin] + 1) {
      throw new Error(`key ${key} input ${origin}: expected seq ${last[origin] + 1}, got ${r.seq}`);
    }
    this.last.update({ ...last, [origin]: r.seq });
    const sums = this.sums.value() ?? { fast: 0, slow: 0 };
    const sum = sums[origin] + r.seq;
    this.sums.update({ ...sums, [origin]: sum });
    this.processed[origin]++;
    out.collect({ key: `${key}/${origin}`, seq: r.seq, sum });
  }
  processElement1(r: Numbered, ctx: KeyedProcessContext<string>, out: Collector<Summed>): void {
    this.step("fast", r, ctx.getCurrentKey(), out);
  }
  processElement2(r: Numbered, ctx: KeyedProcessContext<string>, out: Collector<Summed>): void {
    this.step("slow", r, ctx.getCurrentKey(), out);
  }
}

const KEYS = 6;

/** Split `s` of the fast input: keys `k<j>` with `j % 3 === s`, seq 0..perKey-1 each. */
function fastSplit(s: number, perKey: number): TestItem<Numbered>[] {
  const out: TestItem<Numbered>[] = [];
  for (let seq = 0; seq < perKey; seq++) {
    for (let k = s; k < KEYS; k += 3) out.push({ key: `k${k}`, seq });
    if (seq % 200 === 199) out.push(TestSource.awaitCheckpoint());
  }
  return out;
}

function slowItems(perKey: number): TestItem<Numbered>[] {
  const out: TestItem<Numbered>[] = [];
  for (let seq = 0; seq < perKey; seq++) {
    for (let k = 0; k < KEYS; k++) out.push({ key: `k${k}`, seq });
    out.push(TestSource.pause(3));
  }
  return out;
}

function expected(fastPerKey: number, slowPerKey: number): Summed[] {
  const out: Summed[] = [];
  for (const [origin, perKey] of [["fast", fastPerKey], ["slow", slowPerKey]] as const) {
    for (let k = 0; k < KEYS; k++) {
      for (let seq = 0; seq < perKey; seq++) {
        out.push({ key: `k${k}/${origin}`, seq, sum: (seq * (seq + 1)) / 2 });
      }
    }
  }
  return out;
}

Deno.test("a keyed two-input operator aligns a fast input of parallelism 3 with a slow one of parallelism 1, exactly once across a failure", async () => {
  const FAST = 600;
  const SLOW = 40;
  const cuts: Cuts = new Map();
  const alignments: { attempt: number; subtask: number; checkpointId: number }[] = [];
  await withTempDir(async (dir) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(5, { directory: dir })
      .setRestartStrategy(RestartStrategies.fixedDelay(2, 0))
      .setNetworkBuffers({ bufferSize: 32, credits: 4 });
    const fast = env.fromSource(
      TestSource.perSubtask([0, 1, 2].map((s) => fastSplit(s, FAST)), { batchSize: 16 }),
      WatermarkStrategy.noWatermarks(),
      "fast",
    ).uid("fast").setParallelism(3)
      .map(new EmittedCounter("fast", cuts)).uid("fast-count").setParallelism(3);
    const slow = env.fromSource(
      TestSource.of(slowItems(SLOW)),
      WatermarkStrategy.noWatermarks(),
      "slow",
    ).uid("slow").setParallelism(1)
      .map(new EmittedCounter("slow", cuts)).uid("slow-count").setParallelism(1);
    const sink = new CollectingSink<Summed>();
    fast.connect(slow).keyBy((r) => r.key, (r) => r.key)
      .process(new SequencePerInput(cuts)).uid("sequences").setParallelism(2)
      .sinkTo(sink).uid("committed").setParallelism(2);
    const keyed = env.getJobGraph().vertices.find((v) => v.operators[0]!.uid === "sequences")!;
    assert.deepEqual(
      keyed.inputs.map((i) => env.getJobGraph().edges[i]!.typeNumber),
      [1, 2],
    );
    env.setFaultInjector({
      task: (point, site) => {
        if (point !== "alignment" || site.vertexId !== keyed.id) return;
        alignments.push({
          attempt: site.attempt,
          subtask: site.subtask,
          checkpointId: site.checkpointId,
        });
        if (site.attempt === 0 && site.subtask === 1 && site.checkpointId === 3) {
          throw new Error("induced failure while aligning checkpoint 3");
        }
      },
    });
    const result = await env.execute("skewed two-input");
    const context = result.summary;
    assert.equal(result.restarts, 1, context);
    assertSameOutput(sink.committed(), expected(FAST, SLOW), context);
    for (const attempt of [0, 1]) {
      for (const subtask of [0, 1]) {
        assert.ok(
          alignments.some((a) => a.attempt === attempt && a.subtask === subtask),
          `no alignment on subtask ${subtask} in attempt ${attempt}: ${JSON.stringify(alignments)}`,
        );
      }
    }
    // 3 fast counters, 1 slow counter, 2 keyed subtasks reported: a whole cut.
    const complete = [...cuts].filter(([, c]) => c.reporters.size === 6);
    assert.ok(complete.length >= 3, `${complete.length} checkpoints reached every party`);
    assert.ok(
      complete.some(([, c]) =>
        c.emitted.fast > 0 && c.emitted.fast < FAST * KEYS && c.emitted.slow < SLOW * KEYS
      ),
      `no checkpoint landed mid-stream: ${JSON.stringify(complete)}`,
    );
    for (const [id, cut] of complete) {
      assert.deepEqual(
        cut.processed,
        cut.emitted,
        `checkpoint ${id}: the keyed subtasks' state is not the cut the sources took`,
      );
    }
  });
});

Deno.test("a keyed two-input operator under skew with unaligned checkpoints is exactly once across a failure", async () => {
  const FAST = 600;
  const SLOW = 40;
  const cuts: Cuts = new Map();
  await withTempDir(async (dir) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(5, { directory: dir, unalignedCheckpoints: true })
      .setRestartStrategy(RestartStrategies.fixedDelay(2, 0))
      .setNetworkBuffers({ bufferSize: 32, credits: 4 });
    const fastSplits = [0, 1, 2].map((s) => fastSplit(s, FAST));
    // Split 0 fails once, mid-stream: at item 900, after its second awaitCheckpoint marker (801).
    fastSplits[0]!.splice(900, 0, TestSource.fail("induced failure in input 1, mid-stream"));
    const fast = env.fromSource(
      TestSource.perSubtask(fastSplits, { batchSize: 16 }),
      WatermarkStrategy.noWatermarks(),
      "fast",
    ).uid("fast").setParallelism(3)
      .map(new EmittedCounter("fast", cuts)).uid("fast-count").setParallelism(3);
    const slow = env.fromSource(
      TestSource.of(slowItems(SLOW)),
      WatermarkStrategy.noWatermarks(),
      "slow",
    ).uid("slow").setParallelism(1)
      .map(new EmittedCounter("slow", cuts)).uid("slow-count").setParallelism(1);
    const sink = new CollectingSink<Summed>();
    fast.connect(slow).keyBy((r) => r.key, (r) => r.key)
      .process(new SequencePerInput(cuts)).uid("sequences").setParallelism(2)
      .sinkTo(sink).uid("committed").setParallelism(2);
    const result = await env.execute("skewed two-input, unaligned");
    assert.equal(result.restarts, 1, result.summary);
    assertSameOutput(sink.committed(), expected(FAST, SLOW), result.summary);
  });
});
