/**
 * Aligned checkpoints with two inputs under skew: a fast source and a slow
 * one (with `pause` markers) are unioned into a keyed operator of
 * parallelism 2, so every keyed subtask reads one channel per source and
 * must align their barriers.
 *
 * The test checks the consistent cut itself: at every checkpoint, each
 * source records how many records it had emitted when it took the
 * checkpoint, and each keyed subtask records how many records of each
 * source it had processed when it took that checkpoint. Alignment is right
 * exactly when, per source, the keyed subtasks together processed what the
 * source had emitted before its barrier: no record after the barrier (the
 * early channel must be held back) and none missing.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type CheckpointedFunction,
  type Collector,
  type FunctionInitializationContext,
  type FunctionSnapshotContext,
  type KeyedProcessContext,
  type KeyedProcessFunction,
  type ListState,
  ListStateDescriptor,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  type ValueState,
  ValueStateDescriptor,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import type { TestItem } from "../testing.ts";
import { assertSameOutput, withTempDir } from "./_job_kit.ts";

type Origin = "fast" | "slow";

interface Tagged {
  readonly origin: Origin;
  readonly key: string;
  readonly seq: number;
}

interface Counted {
  readonly key: string;
  readonly seq: number;
  readonly count: number;
}

/** Per checkpoint: what each source had emitted, and what the keyed subtasks had processed. */
interface Cut {
  readonly emitted: Partial<Record<Origin, number>>;
  readonly processed: Record<Origin, number>;
  readonly keyedSubtasks: Set<number>;
}

type Cuts = Map<number, Cut>;

function cutOf(cuts: Cuts, checkpointId: number): Cut {
  let cut = cuts.get(checkpointId);
  if (!cut) {
    cut = { emitted: {}, processed: { fast: 0, slow: 0 }, keyedSubtasks: new Set() };
    cuts.set(checkpointId, cut);
  }
  return cut;
}

/**
 * An identity map chained to a source that counts the records it passed, in
 * operator state, and reports the count at every checkpoint.
 */
class EmittedCounter implements CheckpointedFunction {
  readonly origin: Origin;
  readonly cuts: Cuts;
  private count = 0;
  private state!: ListState<number>;
  constructor(origin: Origin, cuts: Cuts) {
    this.origin = origin;
    this.cuts = cuts;
  }
  initializeState(context: FunctionInitializationContext): void {
    this.state = context.operatorStateStore.getListState(new ListStateDescriptor<number>("n"));
    this.count = [...this.state.get()].reduce((a, b) => a + b, 0);
  }
  snapshotState(context: FunctionSnapshotContext): void {
    this.state.update([this.count]);
    cutOf(this.cuts, context.checkpointId).emitted[this.origin] = this.count;
  }
  map(record: Tagged): Tagged {
    this.count++;
    return record;
  }
}

/**
 * Counts per key (keyed state) and, per source, the records this subtask
 * processed (operator state, summed over subtasks when compared).
 */
class CountingKeyed implements KeyedProcessFunction<string, Tagged, Counted> {
  readonly cuts: Cuts;
  private subtask = -1;
  private processed = { fast: 0, slow: 0 };
  private state!: ListState<{ fast: number; slow: number }>;
  private count!: ValueState<number>;
  private last!: ValueState<number>;
  constructor(cuts: Cuts) {
    this.cuts = cuts;
  }
  initializeState(context: FunctionInitializationContext): void {
    this.state = context.operatorStateStore.getListState(
      new ListStateDescriptor<{ fast: number; slow: number }>("processed"),
    );
    this.processed = { fast: 0, slow: 0 };
    for (const p of this.state.get()) {
      this.processed.fast += p.fast;
      this.processed.slow += p.slow;
    }
  }
  snapshotState(context: FunctionSnapshotContext): void {
    this.state.update([{ ...this.processed }]);
    const cut = cutOf(this.cuts, context.checkpointId);
    cut.processed.fast += this.processed.fast;
    cut.processed.slow += this.processed.slow;
    cut.keyedSubtasks.add(this.subtask);
  }
  open(context: RuntimeContext): void {
    this.subtask = context.subtaskIndex;
    this.count = context.getState(new ValueStateDescriptor<number>("count"));
    this.last = context.getState(new ValueStateDescriptor<number>("last"));
  }
  processElement(r: Tagged, ctx: KeyedProcessContext<string>, out: Collector<Counted>): void {
    const last = this.last.value() ?? -1;
    if (r.seq !== last + 1) {
      throw new Error(`key ${ctx.getCurrentKey()}: expected seq ${last + 1}, got ${r.seq}`);
    }
    this.last.update(r.seq);
    const count = (this.count.value() ?? 0) + 1;
    this.count.update(count);
    this.processed[r.origin]++;
    out.collect({ key: r.key, seq: r.seq, count });
  }
}

function records(origin: Origin, keys: number, perKey: number): Tagged[] {
  const out: Tagged[] = [];
  for (let seq = 0; seq < perKey; seq++) {
    for (let k = 0; k < keys; k++) out.push({ origin, key: `${origin}-${k}`, seq });
  }
  return out;
}

/** Inserts `marker()` after every `every` items. */
function sprinkle(items: Tagged[], every: number, marker: () => TestItem<Tagged>): TestItem<
  Tagged
>[] {
  const out: TestItem<Tagged>[] = [];
  items.forEach((item, i) => {
    out.push(item);
    if ((i + 1) % every === 0) out.push(marker());
  });
  return out;
}

Deno.test("a keyed operator aligns a fast and a slow input and restores a consistent cut after a failure", async () => {
  const fast = records("fast", 4, 600);
  const slow = records("slow", 2, 60);
  const cuts: Cuts = new Map();
  const alignments: { attempt: number; subtask: number; checkpointId: number }[] = [];
  await withTempDir(async (dir) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(5, { directory: dir })
      .setRestartStrategy(RestartStrategies.fixedDelay(2, 0))
      .setNetworkBuffers({ bufferSize: 32, credits: 4 });
    const keyedUid = "counts";
    const sink = new CollectingSink<Counted>();
    const fastStream = env.fromSource(
      TestSource.of(sprinkle(fast, 600, () => TestSource.awaitCheckpoint()), { batchSize: 16 }),
      WatermarkStrategy.noWatermarks(),
      "fast",
    ).uid("fast").map(new EmittedCounter("fast", cuts)).uid("fast-count");
    const slowStream = env.fromSource(
      TestSource.of(sprinkle(slow, 10, () => TestSource.pause(3)), { batchSize: 1 }),
      WatermarkStrategy.noWatermarks(),
      "slow",
    ).uid("slow").map(new EmittedCounter("slow", cuts)).uid("slow-count");
    fastStream.union(slowStream)
      .keyBy((r) => r.key)
      .process(new CountingKeyed(cuts)).uid(keyedUid).setParallelism(2)
      .sinkTo(sink).uid("committed").setParallelism(2);
    const keyed = env.getJobGraph().vertices.find((v) =>
      v.operators.some((o) => o.uid === keyedUid)
    )!;
    assert.equal(keyed.inputs.length, 2, "the keyed vertex does not read both sources");
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
    const result = await env.execute("skewed union");

    const context = result.summary;
    assert.equal(result.restarts, 1, context);
    assert.ok(result.checkpoints.completed >= 3, context);
    const expected = [...fast, ...slow].map((r) => ({ key: r.key, seq: r.seq, count: r.seq + 1 }));
    assertSameOutput(sink.committed(), expected, context);

    // Alignment happened, on both subtasks, before and after the restart.
    for (const attempt of [0, 1]) {
      for (const subtask of [0, 1]) {
        assert.ok(
          alignments.some((a) => a.attempt === attempt && a.subtask === subtask),
          `no alignment on subtask ${subtask} in attempt ${attempt}: ${JSON.stringify(alignments)}`,
        );
      }
    }
    // Every checkpoint that all parties took is a consistent cut.
    const complete = [...cuts].filter(([, c]) =>
      c.emitted.fast !== undefined && c.emitted.slow !== undefined && c.keyedSubtasks.size === 2
    );
    assert.ok(complete.length >= 3, `${complete.length} checkpoints reached every party`);
    const midStream = complete.filter(([, c]) =>
      c.emitted.fast! > 0 && c.emitted.fast! < fast.length && c.emitted.slow! < slow.length
    );
    assert.ok(
      midStream.length >= 1,
      `no checkpoint landed mid-stream: ${JSON.stringify(complete)}`,
    );
    for (const [id, cut] of complete) {
      assert.deepEqual(
        cut.processed,
        { fast: cut.emitted.fast, slow: cut.emitted.slow },
        `checkpoint ${id}: the keyed subtasks' state is not the cut the sources took`,
      );
    }
  });
});
