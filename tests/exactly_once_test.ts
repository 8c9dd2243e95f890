/**
 * Exactly-once under injected failures: a keyed job (4 keys over 2 source
 * splits, a keyed running sum at parallelism 2, a two-phase-commit sink)
 * runs once without failure and then once per seed with a fault at a random
 * moment: a throw in a user map function, or a throw at one of the fault
 * points (`before-snapshot`, `alignment`, `after-snapshot`, the
 * coordinator's `before-notify-complete`, `before-commit`). Half of the
 * seeds also fail the restarted attempt once. The job settings (chaining,
 * buffers, credits, interval, concurrent checkpoints, a slower source split,
 * a slow sink) vary with the seed too.
 *
 * Every faulted run must restart once per fault, and no more; commit
 * exactly what the failure-free run committed (same multiset, same order per
 * key); take only consistent checkpoints (see `Cuts` in `_job_kit.ts`); and
 * leave no checkpoint files behind.
 *
 * Run one seed alone with `WEIR_SEED=<n> deno test -A tests/exactly_once_test.ts`.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type JobExecutionResult,
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { TestSource } from "../testing.ts";
import type { FaultPoint } from "../runtime/task/stream_task.ts";
import {
  assertConsistentCuts,
  assertSameOutput,
  type Cut,
  Cuts,
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  listTree,
  mulberry32,
  randomInt,
  SequenceCheck,
  type Skew,
  SlowCollectingSink,
  SplitCounter,
  splitKeys,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

const SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 2,
  recordsPerKey: 1000,
  awaitCheckpointEvery: 400,
};
/** Checkpoints every split waits for: at least this many complete on every attempt 0. */
const MARKERS_PER_SPLIT = Math.floor(
  (SPLITS.keysPerSplit * SPLITS.recordsPerKey) / SPLITS.awaitCheckpointEvery,
);

const FAULT_KINDS = [
  "user-map",
  "before-snapshot",
  "alignment",
  "after-snapshot",
  "before-notify-complete",
  "before-commit",
] as const;
type FaultKind = typeof FAULT_KINDS[number];

/** Operator uids of the job; the fault targets the vertex that runs one of them. */
const UIDS = ["records", "identity", "sums", "committed"] as const;
type Uid = typeof UIDS[number];

/** One seed's fault and job settings. */
interface Scenario {
  readonly seed: number;
  readonly kind: FaultKind;
  /** `user-map`: the record whose map call throws. */
  readonly record: KeyedRecord;
  /**
   * The checkpoint at which a checkpoint fault fires, or the first later one
   * that reaches the fault point (with concurrent checkpoints, a later one
   * may complete first and subsume it).
   */
  readonly checkpointId: number;
  /** The operator whose vertex a task fault hits. */
  readonly target: Uid;
  readonly subtask: number;
  readonly chaining: boolean;
  readonly intervalMs: number;
  readonly batchSize: number;
  readonly bufferSize: number;
  readonly credits: number;
  /** One source split pauses now and then (see `keyedSplits`). */
  readonly skew: Skew;
  /** The sink takes a macrotask turn every this many records (0: never), to back the data plane up. */
  readonly slowSinkEvery: number;
  /** A second fault, at the first time the restarted attempt 1 reaches this point. */
  readonly again: SecondFault | undefined;
  readonly maxConcurrentCheckpoints: number;
  readonly retainedCheckpoints: number;
}

/** A fault of the restarted attempt: at the first time it reaches `point` (on `target`'s subtask). */
interface SecondFault {
  readonly point: FaultPoint | "before-notify-complete";
  readonly target: Uid;
  readonly subtask: number;
}

const SECOND_FAULT_POINTS = [
  "before-snapshot",
  "alignment",
  "after-snapshot",
  "before-notify-complete",
  "before-commit",
] as const;

function scenario(seed: number, kind: FaultKind, twice: boolean): Scenario {
  const random = mulberry32(seed);
  const split = randomInt(random, 0, SPLITS.splits - 1);
  const key = splitKeys(split, SPLITS.keysPerSplit)[randomInt(random, 0, SPLITS.keysPerSplit - 1)]!;
  const targetOf = (point: FaultKind): Uid =>
    point === "alignment"
      ? "sums" // the only operator with several input channels (2 source subtasks, hash)
      : point === "before-commit"
      ? "committed" // the sink: its restore must commit what it had pre-committed
      : UIDS[randomInt(random, 0, UIDS.length - 1)]!;
  const target = targetOf(kind);
  const againPoint = SECOND_FAULT_POINTS[randomInt(random, 0, SECOND_FAULT_POINTS.length - 1)]!;
  const again: SecondFault | undefined = twice
    ? { point: againPoint, target: targetOf(againPoint), subtask: randomInt(random, 0, 1) }
    : undefined;
  return {
    seed,
    kind,
    record: { key, seq: randomInt(random, 0, SPLITS.recordsPerKey - 1) },
    checkpointId: randomInt(random, 1, MARKERS_PER_SPLIT),
    target,
    subtask: randomInt(random, 0, 1),
    chaining: random() < 0.5,
    intervalMs: randomInt(random, 1, 4),
    batchSize: randomInt(random, 1, 32),
    bufferSize: [1, 8, 32, 1024][randomInt(random, 0, 3)]!,
    credits: randomInt(random, 1, 4),
    slowSinkEvery: [0, 8, 32][randomInt(random, 0, 2)]!,
    skew: {
      split: randomInt(random, 0, SPLITS.splits - 1),
      every: randomInt(random, 10, 40),
      ms: 1,
    },
    again,
    maxConcurrentCheckpoints: randomInt(random, 1, 3),
    retainedCheckpoints: randomInt(random, 1, 3),
  };
}

function describe(s: Scenario): string {
  const where = s.kind === "user-map"
    ? `at record ${s.record.key}#${s.record.seq}`
    : s.kind === "before-notify-complete"
    ? `of checkpoint ${s.checkpointId}+ in the coordinator`
    : `of checkpoint ${s.checkpointId}+ on '${s.target}' subtask ${s.subtask}`;
  const again = s.again === undefined
    ? ""
    : s.again.point === "before-notify-complete"
    ? `, then ${s.again.point} in the coordinator on attempt 1`
    : `, then ${s.again.point} on '${s.again.target}' subtask ${s.again.subtask} on attempt 1`;
  return `seed ${s.seed}: ${s.kind} ${where}${again} (chaining ${s.chaining ? "on" : "off"}, ` +
    `interval ${s.intervalMs} ms, batch ${s.batchSize}, buffer ${s.bufferSize}, ` +
    `credits ${s.credits}, ${s.maxConcurrentCheckpoints} concurrent, ${s.retainedCheckpoints} retained, ` +
    `split ${s.skew.split} pausing every ${s.skew.every}, sink yielding every ${s.slowSinkEvery})`;
}

/** A counting identity map that throws on attempt 0 when it meets `failAt`. */
class FailingCounter extends SplitCounter {
  readonly failAt: KeyedRecord | undefined;
  readonly fired: { count: number };
  private attempt = 0;
  constructor(cuts: Cuts, failAt: KeyedRecord | undefined, fired: { count: number }) {
    super(cuts);
    this.failAt = failAt;
    this.fired = fired;
  }
  override open(context: RuntimeContext): void {
    super.open(context);
    this.attempt = context.attempt;
  }
  override onRecord(record: KeyedRecord): void {
    const f = this.failAt;
    if (this.attempt === 0 && f && record.key === f.key && record.seq === f.seq) {
      this.fired.count++;
      throw new Error(`induced failure in map at ${f.key}#${f.seq}`);
    }
  }
}

interface Run {
  readonly result: JobExecutionResult;
  /** Checkpoints every source and keyed subtask took. */
  readonly cuts: [number, Cut][];
  readonly committed: SumRecord[];
  readonly fired: number;
  /** The attempts that ran user code. */
  readonly attempts: number[];
  /** What the job left in its checkpoint directory (nothing, with `retainOnFinish` off). */
  readonly leftovers: string[];
}

async function runJob(s: Scenario | undefined): Promise<Run> {
  return await withTempDir(async (dir) => {
    const fired = { count: 0 };
    const cuts = new Cuts();
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(s?.intervalMs ?? 10, {
        directory: dir,
        maxConcurrentCheckpoints: s?.maxConcurrentCheckpoints ?? 1,
        retainedCheckpoints: s?.retainedCheckpoints ?? 1,
      })
      .setRestartStrategy(RestartStrategies.fixedDelay(3, 0))
      .setNetworkBuffers({ bufferSize: s?.bufferSize ?? 1024, credits: s?.credits ?? 8 });
    if (s && !s.chaining) env.disableOperatorChaining();
    const sink = new SlowCollectingSink<SumRecord>(s?.slowSinkEvery ?? 0);
    env.fromSource(
      TestSource.perSubtask<KeyedRecord>(keyedSplits(SPLITS, s?.skew), {
        batchSize: s?.batchSize ?? 16,
      }),
      WatermarkStrategy.noWatermarks(),
      "records",
    ).uid("records").setParallelism(2)
      .map(new FailingCounter(cuts, s?.kind === "user-map" ? s.record : undefined, fired))
      .uid("identity").setParallelism(2)
      .keyBy((r) => r.key)
      .process(new SequenceCheck(cuts)).uid("sums").setParallelism(2)
      .sinkTo(sink).uid("committed").setParallelism(2);

    if (s) {
      const vertexOf = (uid: Uid) => {
        const vertex = env.getJobGraph().vertices.find((v) =>
          v.operators.some((o) => o.uid === uid)
        );
        assert.ok(vertex, `${describe(s)}: no vertex runs '${uid}'`);
        return vertex.id;
      };
      const first = s.kind === "user-map" ? undefined : {
        point: s.kind,
        vertexId: vertexOf(s.target),
      };
      const again = s.again && { ...s.again, vertexId: vertexOf(s.again.target) };
      let firstFired = false;
      let againFired = false;
      const fire = (what: string): never => {
        fired.count++;
        throw new Error(`induced failure ${what}`);
      };
      env.setFaultInjector({
        task: (point, site) => {
          if (
            first && !firstFired && point === first.point && site.attempt === 0 &&
            site.checkpointId >= s.checkpointId && site.vertexId === first.vertexId &&
            site.subtask === s.subtask
          ) {
            firstFired = true;
            fire(`at ${point} of checkpoint ${site.checkpointId}`);
          }
          if (
            again && !againFired && point === again.point && site.attempt === 1 &&
            site.vertexId === again.vertexId && site.subtask === again.subtask
          ) {
            againFired = true;
            fire(`at ${point} of checkpoint ${site.checkpointId} on attempt 1`);
          }
        },
        coordinator: (point, checkpointId, attempt) => {
          if (
            s.kind === point && !firstFired && attempt === 0 && checkpointId >= s.checkpointId
          ) {
            firstFired = true;
            fire(`in the coordinator at ${point} of checkpoint ${checkpointId}`);
          }
          if (again?.point === point && !againFired && attempt === 1) {
            againFired = true;
            fire(`in the coordinator at ${point} of checkpoint ${checkpointId} on attempt 1`);
          }
        },
      });
    }
    const result = await env.execute(s ? `exactly-once seed ${s.seed}` : "exactly-once baseline");
    return {
      result,
      cuts: cuts.complete(4),
      committed: sink.committed(),
      fired: fired.count,
      attempts: [...cuts.attempts].sort((a, b) => a - b),
      leftovers: await listTree(dir),
    };
  });
}

const SEED_BASE = 1000;
const SEED_STEP = 7919;

/** The seeds to run: 24 by default, or the one in `WEIR_SEED`. */
function seeds(): number[] {
  const one = Deno.env.get("WEIR_SEED");
  if (one !== undefined) return [Number(one)];
  return Array.from({ length: 24 }, (_, i) => SEED_BASE + i * SEED_STEP);
}

/**
 * A seed's scenario. The default seeds take every kind of first fault in
 * turn, each round alone and then followed by a second fault on attempt 1.
 */
function scenarioOf(seed: number): Scenario {
  const i = (seed - SEED_BASE) % SEED_STEP === 0 && seed >= SEED_BASE
    ? (seed - SEED_BASE) / SEED_STEP
    : seed;
  const round = Math.floor(i / FAULT_KINDS.length);
  return scenario(seed, FAULT_KINDS[i % FAULT_KINDS.length]!, round % 2 === 1);
}

Deno.test("a keyed job commits exactly the failure-free output whatever fault a seed injects", async (t) => {
  const baseline = await runJob(undefined);
  const expected = [...expectedSums(SPLITS).values()].flat();
  assertSameOutput(baseline.committed, expected, "failure-free run");
  assertConsistentCuts(baseline.cuts, MARKERS_PER_SPLIT, "failure-free run");
  assert.equal(
    baseline.result.restarts,
    0,
    `the failure-free run restarted: ${baseline.result.summary}`,
  );
  assert.deepEqual(baseline.attempts, [0], "the failure-free run deployed more than one attempt");
  assert.deepEqual(baseline.leftovers, [], "the failure-free run left checkpoint files behind");
  assert.ok(
    baseline.result.checkpoints.completed >= MARKERS_PER_SPLIT,
    `failure-free run: ${baseline.result.summary}`,
  );

  for (const seed of seeds()) {
    const s = scenarioOf(seed);
    await t.step(describe(s), async () => {
      const run = await runJob(s);
      const context = `${describe(s)}; ${run.result.summary}`;
      const faults = s.again ? 2 : 1;
      assert.equal(run.fired, faults, `${context}: faults fired`);
      // One restart per fault: any other failure is a bug of its own.
      assert.equal(run.result.restarts, faults, `${context}: restarts`);
      assert.deepEqual(
        run.attempts,
        s.again ? [0, 1, 2] : [0, 1],
        `${context}: attempts that ran user code`,
      );
      assert.deepEqual(run.leftovers, [], `${context}: checkpoint files left behind`);
      assertSameOutput(run.committed, baseline.committed, context);
      assertConsistentCuts(run.cuts, 1, context);
    });
  }
});
