/**
 * At-least-once checkpoints (`enableCheckpointing(ms, { mode: "at-least-once" })`)
 * with two inputs under skew: a fast source and a slow one (with `pause`
 * markers) are unioned into a keyed operator, which reads one channel per
 * source.
 *
 * The slow source's records reach the keyed subtask through a pipeline of
 * unchained identity maps, so its barriers arrive hops after the fast
 * channel's, while the fast source keeps emitting: in exactly-once mode the
 * fast channel would be blocked meanwhile (see `alignment_test.ts`).
 * Without alignment no channel is blocked after its barrier: the task's
 * `alignment` fault point (reached whenever a channel is blocked) is never
 * reached, and the keyed state at some checkpoint holds records that came
 * after their source's barrier. After a failure
 * the job restores and replays: no record is lost, and the records after a
 * barrier that were already in the restored state come again (duplicates).
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
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import type { TestItem } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";

type Origin = "fast" | "slow";

interface Tagged {
  readonly origin: Origin;
  readonly key: string;
  readonly seq: number;
}

/** Per checkpoint: what each source had emitted, and what the keyed subtask had processed. */
interface Cut {
  emitted: Partial<Record<Origin, number>>;
  processed: Partial<Record<Origin, number>>;
}

type Cuts = Map<number, Cut>;

function cutOf(cuts: Cuts, checkpointId: number): Cut {
  let cut = cuts.get(checkpointId);
  if (!cut) {
    cut = { emitted: {}, processed: {} };
    cuts.set(checkpointId, cut);
  }
  return cut;
}

/** An identity map chained to a source that counts what it passed, in operator state. */
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

/** Passes records on and counts, per source, what it processed (operator state). */
class ProcessedCounter implements KeyedProcessFunction<string, Tagged, Tagged> {
  readonly cuts: Cuts;
  private processed = { fast: 0, slow: 0 };
  private state!: ListState<{ fast: number; slow: number }>;
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
    cutOf(this.cuts, context.checkpointId).processed = { ...this.processed };
  }
  processElement(r: Tagged, _ctx: KeyedProcessContext<string>, out: Collector<Tagged>): void {
    this.processed[r.origin]++;
    out.collect(r);
  }
}

function records(origin: Origin, keys: number, perKey: number): Tagged[] {
  const out: Tagged[] = [];
  for (let seq = 0; seq < perKey; seq++) {
    for (let k = 0; k < keys; k++) out.push({ origin, key: `${origin}-${k}`, seq });
  }
  return out;
}

const id = (r: Tagged) => `${r.origin}/${r.key}/${r.seq}`;

Deno.test("at-least-once checkpoints never block the fast input, and a failure loses nothing", async () => {
  const fast = records("fast", 4, 3000);
  const slow = records("slow", 2, 100);
  // The fast source waits for a checkpoint two thirds in, then fails once.
  const failAt = 8000;
  const fastItems: TestItem<Tagged>[] = [
    ...fast.slice(0, failAt),
    TestSource.awaitCheckpoint(),
    TestSource.fail("induced failure after a completed at-least-once checkpoint"),
    ...fast.slice(failAt),
  ];
  const slowItems: TestItem<Tagged>[] = [];
  slow.forEach((r, i) => {
    slowItems.push(r);
    if ((i + 1) % 5 === 0) slowItems.push(TestSource.pause(2));
  });
  const cuts: Cuts = new Map();
  const blocked: number[] = [];
  await withTempDir(async (dir) => {
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(5, { directory: dir, mode: "at-least-once" })
      .setRestartStrategy(RestartStrategies.fixedDelay(2, 0))
      .setNetworkBuffers({ bufferSize: 32, credits: 4 });
    const sink = new CollectingSink<Tagged>();
    const fastStream = env.fromSource(
      TestSource.of(fastItems, { batchSize: 16 }),
      WatermarkStrategy.noWatermarks(),
      "fast",
    ).uid("fast").map(new EmittedCounter("fast", cuts)).uid("fast-count");
    const slowStream = env.fromSource(
      TestSource.of(slowItems, { batchSize: 1 }),
      WatermarkStrategy.noWatermarks(),
      "slow",
    ).uid("slow").map(new EmittedCounter("slow", cuts)).uid("slow-count");
    let slowPath = slowStream;
    for (let hop = 0; hop < 6; hop++) {
      slowPath = slowPath.map((r) => r).uid(`slow-hop-${hop}`).disableChaining();
    }
    fastStream.union(slowPath)
      .keyBy((r) => r.key)
      .process(new ProcessedCounter(cuts)).uid("processed")
      .sinkTo(sink).uid("committed");
    const keyed = env.getJobGraph().vertices.find((v) =>
      v.operators.some((o) => o.uid === "processed")
    )!;
    assert.equal(keyed.inputs.length, 2, "the keyed vertex does not read both sources");
    env.setFaultInjector({
      task: (point, site) => {
        if (point === "alignment" && site.vertexId === keyed.id) blocked.push(site.checkpointId);
      },
    });
    const result = await env.execute("at-least-once skewed union");
    const context = result.summary;
    assert.equal(result.restarts, 1, context);
    assert.ok(result.checkpoints.completed >= 2, context);
    assert.deepEqual(blocked, [], "a channel was blocked for alignment");

    // Nothing lost: every input record is in the committed output.
    const out = sink.committed();
    const seen = new Map<string, number>();
    for (const r of out) seen.set(id(r), (seen.get(id(r)) ?? 0) + 1);
    const missing = [...fast, ...slow].filter((r) => !seen.has(id(r)));
    assert.deepEqual(missing.slice(0, 5), [], `${missing.length} records lost; ${context}`);
    assert.equal(seen.size, fast.length + slow.length);
    assert.ok(out.length >= fast.length + slow.length);

    // Some checkpoint's keyed state holds records from after their source's
    // barrier: the channel whose barrier came first kept flowing while the
    // other channel's barrier was on its way.
    const complete = [...cuts].filter(([, c]) =>
      c.emitted.fast !== undefined && c.emitted.slow !== undefined &&
      c.processed.fast !== undefined
    );
    assert.ok(complete.length >= 2, `${complete.length} checkpoints reached every party`);
    const ahead = complete.filter(([, c]) =>
      c.processed.fast! > c.emitted.fast! || c.processed.slow! > c.emitted.slow!
    );
    assert.ok(
      ahead.length >= 1,
      `no checkpoint held records after their barrier: ${JSON.stringify(complete)}`,
    );
    // Never fewer: each barrier follows its source's records on its channel.
    for (const [checkpointId, c] of complete) {
      assert.ok(
        c.processed.fast! >= c.emitted.fast! && c.processed.slow! >= c.emitted.slow!,
        `checkpoint ${checkpointId} misses records before its barrier: ${JSON.stringify(c)}`,
      );
    }
  });
});
