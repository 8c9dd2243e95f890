/**
 * Region failover under repeated faults, in local mode: a job of four
 * independent forward pipelines (parallelism 4, chaining off: source ->
 * map -> exactly-once `CollectingSink`, so four pipelined regions) runs a
 * fault plan drawn from a seed, and commits record by record what the
 * failure-free run commits (lost = 0, duplicated = 0, in order per split).
 *
 * Each fault fires once, the first time its condition holds, whatever the
 * attempt:
 *
 * - `map`: a map subtask throws on record `seq` of its split;
 * - `before-snapshot`, `after-snapshot`: a map or sink subtask throws when it
 *   takes checkpoint `>= checkpoint` (before its synchronous part, or after
 *   it, while the checkpoint is pending and other subtasks' asynchronous
 *   parts run or have acknowledged);
 * - `before-commit`: a sink subtask throws on the completion notification of
 *   checkpoint `>= checkpoint`, after the coordinator wrote the checkpoint's
 *   metadata and before `notifyCheckpointComplete` reached the sink (its
 *   restored region must commit what that checkpoint pre-committed);
 * - `reopen`: a map subtask throws on record `seq`, and again when its
 *   region is redeployed (in `open`, before it reports ready): a failure
 *   while a region restarts, which must become a full failover;
 * - `pair`: a map subtask throws on record `seq`, and once its region was
 *   redeployed the map of another region throws on its next record: two
 *   regions failing close together.
 *
 * The schedule's timing varies from run to run (the machine is loaded), the
 * outcome does not: every fault fires, and the committed output is the
 * failure-free run's.
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
import { CollectingSink, type FaultPoint, type FaultSite, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";

const PARALLELISM = 4;
const RECORDS = 400;
const MARK_EVERY = 40;

/** A record of split `split`, numbered `seq` within it. */
interface Rec {
  readonly split: number;
  readonly seq: number;
}

/** One fault of a plan; see the module docs. */
type Fault =
  | { readonly kind: "map" | "reopen"; readonly subtask: number; readonly seq: number }
  | {
    readonly kind: "pair";
    readonly subtask: number;
    readonly seq: number;
    readonly other: number;
  }
  | {
    readonly kind: "before-snapshot" | "after-snapshot";
    readonly vertex: "map" | "sink";
    readonly subtask: number;
    readonly checkpoint: number;
  }
  | { readonly kind: "before-commit"; readonly subtask: number; readonly checkpoint: number };

/** What fired, shared by every subtask copy of the job's functions (local mode: one process). */
interface Fired {
  /** Names of the faults that fired, in order. */
  readonly log: string[];
  /** Fault indexes that fired (and the `reopen`/`pair` second halves, as `<i>b`). */
  readonly done: Set<string>;
  /** `pair` faults whose first half fired: the map subtask to fail next, by fault index. */
  readonly armed: Map<number, number>;
}

/** A small deterministic PRNG (mulberry32). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The fault plan of `seed`: one `reopen`, one `pair`, one `before-commit` and three more. */
function plan(seed: number): Fault[] {
  const r = random(seed);
  const subtask = () => Math.floor(r() * PARALLELISM);
  const seq = () => 20 + Math.floor(r() * (RECORDS - 60));
  const checkpoint = () => 2 + Math.floor(r() * 6);
  const s = subtask();
  const faults: Fault[] = [
    { kind: "reopen", subtask: subtask(), seq: seq() },
    { kind: "pair", subtask: s, seq: seq(), other: (s + 1 + Math.floor(r() * 3)) % PARALLELISM },
    { kind: "before-commit", subtask: subtask(), checkpoint: checkpoint() },
  ];
  for (let i = 0; i < 3; i++) {
    const pick = r();
    if (pick < 0.34) faults.push({ kind: "map", subtask: subtask(), seq: seq() });
    else {
      faults.push({
        kind: pick < 0.67 ? "before-snapshot" : "after-snapshot",
        vertex: r() < 0.5 ? "map" : "sink",
        subtask: subtask(),
        checkpoint: checkpoint(),
      });
    }
  }
  return faults;
}

/** Split `split`: RECORDS records with a checkpoint to wait for every MARK_EVERY. */
function split(split: number) {
  const items = [];
  for (let seq = 0; seq < RECORDS; seq++) {
    if (seq > 0 && seq % MARK_EVERY === 0) items.push(TestSource.awaitCheckpoint());
    items.push({ split, seq });
  }
  return items;
}

/**
 * An identity map that runs the plan's `map`, `reopen` and `pair` faults.
 * Functions are copied per subtask (own fields, shallowly): no #private fields.
 */
class FaultyMap {
  context: RuntimeContext | undefined;
  constructor(private readonly faults: readonly Fault[], private readonly fired: Fired) {}
  open(context: RuntimeContext): void {
    this.context = context;
    const { subtaskIndex: subtask } = context;
    this.faults.forEach((f, i) => {
      if (f.kind === "reopen" && f.subtask === subtask && this.once(`${i}`, false)) {
        if (this.once(`${i}b`)) {
          throw new Error(`induced failure of map#${subtask} while its region restarts (${i})`);
        }
      }
      // The pair's first region is being redeployed: the other region's map fails next.
      if (f.kind === "pair" && f.subtask === subtask && this.once(`${i}`, false)) {
        if (!this.fired.done.has(`${i}b`)) this.fired.armed.set(i, f.other);
      }
    });
  }
  map(r: Rec): Rec {
    const subtask = this.context!.subtaskIndex;
    this.faults.forEach((f, i) => {
      if (
        (f.kind === "map" || f.kind === "reopen" || f.kind === "pair") &&
        f.subtask === subtask && f.seq === r.seq && this.once(`${i}`)
      ) {
        throw new Error(
          `induced ${f.kind} failure of map#${subtask} at ${r.split}#${r.seq} (${i})`,
        );
      }
      if (this.fired.armed.get(i) === subtask && this.once(`${i}b`)) {
        this.fired.armed.delete(i);
        throw new Error(
          `induced failure of map#${subtask}, close after region ${f.subtask}'s (${i})`,
        );
      }
    });
    return r;
  }
  /** Marks `key` fired (when `mark`); true when it had not fired before (or, unmarked, when it had). */
  private once(key: string, mark = true): boolean {
    if (!mark) return this.fired.done.has(key);
    if (this.fired.done.has(key)) return false;
    this.fired.done.add(key);
    this.fired.log.push(key);
    return true;
  }
}

interface Run {
  readonly result: JobExecutionResult;
  readonly committed: Rec[];
  readonly fired: Fired;
}

/** Vertex ids of the job below, in the order it adds them. */
const VERTEX = { source: 0, map: 1, sink: 2 } as const;

async function run(faults: readonly Fault[]): Promise<Run> {
  return await withTempDir(async (dir) => {
    const fired: Fired = { log: [], done: new Set(), armed: new Map() };
    const sink = new CollectingSink<Rec>();
    const vertexIds: string[] = [];
    const taskFault = (point: FaultPoint, site: FaultSite) => {
      faults.forEach((f, i) => {
        if (
          f.kind !== "before-snapshot" && f.kind !== "after-snapshot" && f.kind !== "before-commit"
        ) {
          return;
        }
        if (site.subtask !== f.subtask) return;
        const vertex = f.kind === "before-commit" ? "sink" : f.vertex;
        if (site.vertexId !== vertexIds[VERTEX[vertex]]) return;
        if (point !== f.kind || site.checkpointId < f.checkpoint) return;
        if (fired.done.has(`${i}`)) return;
        fired.done.add(`${i}`);
        fired.log.push(`${i}`);
        throw new Error(
          `induced ${point} failure of ${vertex}#${site.subtask} at checkpoint ` +
            `${site.checkpointId} (${i})`,
        );
      });
    };
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .enableCheckpointing(10, { directory: dir })
      .setRestartStrategy(RestartStrategies.fixedDelay(100, 0))
      .disableOperatorChaining()
      .setFaultInjector({ task: taskFault });
    env.fromSource(
      TestSource.perSubtask<Rec>(
        Array.from({ length: PARALLELISM }, (_, i) => split(i)),
        { batchSize: 4 },
      ),
      WatermarkStrategy.noWatermarks(),
      "records",
    ).uid("records").setParallelism(PARALLELISM)
      .map(new FaultyMap(faults, fired)).uid("faulty").setParallelism(PARALLELISM)
      .sinkTo(sink).uid("committed").setParallelism(PARALLELISM);
    const graph = env.getJobGraph("region-faults");
    vertexIds.push(...graph.vertices.map((v) => v.id));
    const result = await env.execute("region failover faults");
    return { result, committed: sink.committed(), fired };
  });
}

/** The committed records of split `s`, in commit order. */
const ofSplit = (records: readonly Rec[], s: number) =>
  records.filter((r) => r.split === s).map((r) => r.seq);

/** `lost=<n> duplicated=<n>` of split `s` against the baseline. */
function compare(committed: readonly Rec[], baseline: readonly Rec[], s: number): string {
  const got = ofSplit(committed, s);
  const want = ofSplit(baseline, s);
  const seen = new Set(got);
  const lost = want.filter((n) => !seen.has(n)).length;
  const duplicated = got.length - seen.size;
  return `split ${s}: lost=${lost} duplicated=${duplicated}`;
}

const baseline = (() => {
  let cached: Promise<Run> | undefined;
  return () => cached ??= run([]);
})();

/** Seeds to run: `WEIR_REGION_FAULT_SEEDS` (e.g. `1-200` for a soak, or `5,9`), default 11, 23, 42. */
function seeds(): number[] {
  const spec = Deno.env.get("WEIR_REGION_FAULT_SEEDS");
  if (spec === undefined || spec === "") return [11, 23, 42];
  const range = /^(\d+)-(\d+)$/.exec(spec);
  if (range) {
    const from = Number(range[1]);
    return Array.from({ length: Number(range[2]) - from + 1 }, (_, i) => from + i);
  }
  const list = spec.split(",").map(Number);
  if (list.some((n) => !Number.isInteger(n))) {
    throw new TypeError(
      `WEIR_REGION_FAULT_SEEDS must be 'a-b' or 'a,b,…': current value is ${spec}`,
    );
  }
  return list;
}

for (const seed of seeds()) {
  Deno.test(`region failover under seed ${seed}'s faults commits exactly the failure-free output`, async () => {
    const base = await baseline();
    assert.equal(base.result.restarts, 0, base.result.summary);
    for (let s = 0; s < PARALLELISM; s++) {
      assert.deepEqual(ofSplit(base.committed, s), Array.from({ length: RECORDS }, (_, i) => i));
    }
    const faults = plan(seed);
    const faulted = await run(faults);
    const context = `seed ${seed}, plan ${JSON.stringify(faults)}, fired ${
      faulted.fired.log.join(",")
    }; ${faulted.result.summary}`;
    // Every fault (and both halves of `reopen` and `pair`) fired once.
    const expected = faults.flatMap((f, i) =>
      f.kind === "reopen" || f.kind === "pair" ? [`${i}`, `${i}b`] : [`${i}`]
    );
    assert.deepEqual([...faulted.fired.done].sort(), expected.sort(), context);
    assert.ok(faulted.result.restarts >= 1, context);
    for (let s = 0; s < PARALLELISM; s++) {
      assert.deepEqual(
        ofSplit(faulted.committed, s),
        ofSplit(base.committed, s),
        `${compare(faulted.committed, base.committed, s)}; ${context}`,
      );
    }
  });
}
