/**
 * The window operator on its per-record hot path: one operator subtask
 * (parallelism 1, 128 key groups) driven directly with 1M records over 10k
 * uniformly drawn keys (100k in one scenario), 100 records per ms of event time (10 s in all), a
 * watermark every 1000 records (10 ms), and every window fired by the end.
 * The records' key groups are computed beforehand and handed in, as a hash
 * edge does, so the figures leave out the hashing of keys.
 *
 * Run: `deno bench -A runtime/task/operators/window_operator_bench.ts`.
 * Divide 1M by the reported time per iteration for records per second.
 *
 * | scenario | window | function | shape it stands for |
 * | --- | --- | --- | --- |
 * | `tumbling reduce` | tumbling 1 s | `reduce` (a new object per record) | a windowed sum |
 * | `tumbling aggregate` | tumbling 1 s | `aggregate` (a count, accumulator changed in place) | q5's panes |
 * | `tumbling aggregate, 100k keys` | tumbling 1 s, 100k keys (~63k per window) | the same | q5's panes at 2M events (120k auction-pane pairs) |
 * | `tumbling aggregate + process` | tumbling 1 s | `aggregate` with a `ProcessWindowFunction` | q7, q8 |
 * | `sliding aggregate` | sliding 1 s / 200 ms (5 windows per record) | `aggregate` | q5's sliding sums |
 * | `session aggregate` | sessions, gap 100 ms (they merge) | `aggregate` | q11 |
 *
 * Each iteration checks what it measured: the sum (or count) over every
 * window the operator emitted equals the one the records imply (each record
 * counted once per window holding it), so a lost or duplicated record fails
 * the run.
 *
 * With `WEIR_BENCH_SMOKE=1` each benchmark runs one iteration of 100k
 * records (the smoke test `bench/micro_benches_test.ts` does so) instead of
 * Deno's calibrated count.
 *
 * {@linkcode runWindowScenario} runs one scenario outside `deno bench`, for
 * interleaved comparisons (`bench/_rounds.ts`) of two versions of the
 * operator in one process.
 *
 * @module
 */

import { StreamExecutionEnvironment } from "../../api/environment.ts";
import type { DataStream } from "../../api/datastream.ts";
import type { AggregateFunction } from "../../api/functions.ts";
import type { ProcessWindowFunction } from "../../api/window_functions.ts";
import type { WindowOperatorSpec } from "../../api/windowed_stream.ts";
import type { KeySelector } from "../../graph/stream_graph.ts";
import { assignToKeyGroup, KeyGroupRange } from "../../state/key_group.ts";
import { ManualClock } from "../../time/manual_clock.ts";
import { MAX_WATERMARK } from "../../time/watermark.ts";
import { TumblingEventTimeWindows } from "../../time/windows/tumbling_windows.ts";
import { SlidingEventTimeWindows } from "../../time/windows/sliding_windows.ts";
import { EventTimeSessionWindows } from "../../time/windows/session_windows.ts";
import type { TimeWindow } from "../../time/windows/window.ts";
import type { WindowAssigner } from "../../time/windows/window_assigner.ts";
import type { Output } from "./operator.ts";
import { WindowOperator } from "./window_operator.ts";

/** One Deno.bench iteration in the smoke test (`WEIR_BENCH_SMOKE=1`). */
const SMOKE = Deno.env.get("WEIR_BENCH_SMOKE") === "1";

/** Records per run: 1M (100k in the smoke test). */
export const RECORDS: number = SMOKE ? 100_000 : 1_000_000;
/** Keys the records are drawn from, unless a scenario says otherwise. */
const KEYS = 10_000;
const MAX_PARALLELISM = 128;
/** Records per ms of event time. */
const PER_MS = 100;
/** Records between two watermarks. */
const WATERMARK_EVERY = 1_000;

/** A record: its key and a value to sum. */
interface Reading {
  readonly k: number;
  readonly v: number;
}

/** The records of a run, their timestamps (ms) and key groups, drawn once per key count. */
interface Input {
  readonly records: readonly Reading[];
  readonly keys: readonly number[];
  readonly timestamps: Float64Array;
  readonly keyGroups: Int32Array;
}

function makeInput(n: number, numKeys: number): Input {
  const records: Reading[] = [];
  const keys: number[] = [];
  const timestamps = new Float64Array(n);
  const keyGroups = new Int32Array(n);
  const groupOfKey = Array.from(
    { length: numKeys },
    (_, k) => assignToKeyGroup(k, MAX_PARALLELISM),
  );
  let seed = 42;
  for (let i = 0; i < n; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const k = seed % numKeys;
    records.push({ k, v: i % 7 });
    keys.push(k);
    timestamps[i] = Math.floor(i / PER_MS);
    keyGroups[i] = groupOfKey[k]!;
  }
  return { records, keys, timestamps, keyGroups };
}

/** An empty stream of readings, to build a window on. */
const readings = (env: StreamExecutionEnvironment): DataStream<Reading> =>
  env.fromCollection<Reading>([]);
/** An empty stream of keys, to build a window on. */
const keys = (env: StreamExecutionEnvironment): DataStream<number> =>
  env.fromCollection<number>([]);

const sumReadings = (a: Reading, b: Reading): Reading => ({ k: a.k, v: a.v + b.v });

/** Counts a key's records, the record being the key (q5's panes); `[key, count]` changed in place. */
const COUNT: AggregateFunction<number, [number, number], readonly [number, number]> = {
  createAccumulator: () => [0, 0],
  add: (key, acc) => {
    acc[0] = key;
    acc[1]++;
    return acc;
  },
  getResult: (acc) => [acc[0], acc[1]],
  merge: (a, b) => [a[1] > 0 ? a[0] : b[0], a[1] + b[1]],
};

/** Attaches the window's end to a count, as q5/q7/q8's process window functions do. */
const WITH_END: ProcessWindowFunction<
  readonly [number, number],
  readonly [number, number, number],
  number,
  TimeWindow
> = {
  process(_key, ctx, counts, out) {
    const [k, n] = counts[0]!;
    out.collect([k, n, ctx.window().end]);
  },
};

/** What a scenario reads of each record and the total it expects over all emitted windows. */
interface Scenario {
  /** Builds the window (uid `"window"`) on a keyed stream of the records. */
  readonly build: (env: StreamExecutionEnvironment) => void;
  /** Whether the operator's input is the record's key alone (aggregate scenarios) or the record. */
  readonly keysOnly: boolean;
  /** The figure summed over the operator's outputs. */
  readonly total: (out: unknown) => number;
  /** What that sum must be: `perRecord` summed over the records, times the windows per record. */
  readonly perRecord: (r: Reading) => number;
  /** How many windows hold each record. */
  readonly windowsPerRecord: number;
  /** Keys the records are drawn from (default 10k). */
  readonly keys?: number;
}

/**
 * Counts each key's records per window of `assigner`, which puts every
 * record in `windowsPerRecord` windows; with `process`, through a
 * `ProcessWindowFunction` as well.
 */
function countScenario(
  assigner: WindowAssigner<unknown, TimeWindow>,
  windowsPerRecord: number,
  options: { process?: boolean; keys?: number } = {},
): Scenario {
  return {
    build: (env) => {
      const windowed = keys(env).keyBy((k) => k).window(assigner);
      (options.process ? windowed.aggregate(COUNT, WITH_END) : windowed.aggregate(COUNT))
        .uid("window");
    },
    keysOnly: true,
    total: (out) => (out as readonly number[])[1]!,
    perRecord: () => 1,
    windowsPerRecord,
    ...(options.keys === undefined ? {} : { keys: options.keys }),
  };
}

/** The scenarios of the module docs, by name. */
export const WINDOW_SCENARIOS: Readonly<Record<string, Scenario>> = {
  "tumbling reduce": {
    build: (env) =>
      readings(env).keyBy((r) => r.k).window(TumblingEventTimeWindows.of(1_000))
        .reduce(sumReadings).uid("window"),
    keysOnly: false,
    total: (out) => (out as Reading).v,
    perRecord: (r) => r.v,
    windowsPerRecord: 1,
  },
  "tumbling aggregate": countScenario(TumblingEventTimeWindows.of(1_000), 1),
  "tumbling aggregate, 100k keys": countScenario(TumblingEventTimeWindows.of(1_000), 1, {
    keys: 100_000,
  }),
  "tumbling aggregate + process": countScenario(TumblingEventTimeWindows.of(1_000), 1, {
    process: true,
  }),
  "sliding aggregate": countScenario(SlidingEventTimeWindows.of(1_000, 200), 5),
  "session aggregate": countScenario(EventTimeSessionWindows.withGap(100), 1),
};

/** The window spec and key selector a job built with `scenario` runs. */
function windowSpec(scenario: Scenario): { spec: WindowOperatorSpec; keySelector: KeySelector } {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  scenario.build(env);
  const node = env.streamGraph.nodes.find((n) => n.spec.kind === "window");
  if (node === undefined || node.spec.kind !== "window" || node.keySelector === undefined) {
    throw new Error("the scenario built no keyed window operator");
  }
  return { spec: node.spec.window, keySelector: node.keySelector };
}

const inputs = new Map<number, Input>();

/** What one run of a scenario did. */
export interface ScenarioRun {
  /** Records processed. */
  readonly records: number;
  /** Records the operator emitted (window results). */
  readonly outputs: number;
}

/**
 * Runs scenario `name` once over {@linkcode RECORDS} records and checks its
 * output (see the module docs).
 * @throws {RangeError} for an unknown scenario name.
 * @throws {Error} when the outputs' total differs from the records' (a lost or
 *   duplicated record), naming both.
 */
export async function runWindowScenario(name: string): Promise<ScenarioRun> {
  const scenario = WINDOW_SCENARIOS[name];
  if (scenario === undefined) {
    throw new RangeError(
      `Unknown window scenario: current value is ${JSON.stringify(name)}, expected one of ${
        Object.keys(WINDOW_SCENARIOS).join(", ")
      }`,
    );
  }
  const numKeys = scenario.keys ?? KEYS;
  let input = inputs.get(numKeys);
  if (input === undefined) inputs.set(numKeys, input = makeInput(RECORDS, numKeys));
  const { spec, keySelector } = windowSpec(scenario);
  let outputs = 0;
  let total = 0;
  const output: Output = {
    collect: (value) => {
      outputs++;
      total += scenario.total(value);
    },
    collectSide: () => {},
    emitWatermark: () => {},
    emitWatermarkStatus: () => {},
  };
  const operator = new WindowOperator({
    uid: "window",
    name: "Window",
    spec,
    env: {
      jobId: "bench",
      jobName: "window operator bench",
      vertexId: "v1",
      subtaskIndex: 0,
      parallelism: 1,
      maxParallelism: MAX_PARALLELISM,
      keyGroupRange: new KeyGroupRange(0, MAX_PARALLELISM - 1),
      attempt: 0,
      clock: new ManualClock(),
      checkpointingMode: "exactly-once",
      requestWakeup: () => {},
    },
    output,
    keySelector,
  });
  await operator.initializeState(undefined);
  await operator.open();
  const values: readonly unknown[] = scenario.keysOnly ? input.keys : input.records;
  const { timestamps, keyGroups } = input;
  const n = values.length;
  for (let i = 0; i < n; i++) {
    operator.processElement(values[i], timestamps[i], keyGroups[i]);
    if ((i + 1) % WATERMARK_EVERY === 0) operator.processWatermark(timestamps[i]! - 1);
  }
  operator.processWatermark(MAX_WATERMARK);
  await operator.close();
  let expected = 0;
  for (const r of input.records) expected += scenario.perRecord(r);
  expected *= scenario.windowsPerRecord;
  if (total !== expected) {
    throw new Error(
      `Window scenario '${name}' emitted windows totalling ${total}, expected ${expected} (${n} records)`,
    );
  }
  return { records: n, outputs };
}

const options = { ...(SMOKE ? { n: 1, warmup: 1 } : {}), group: "window operator" };
for (const name of Object.keys(WINDOW_SCENARIOS)) {
  Deno.bench(name, options, async () => {
    await runWindowScenario(name);
  });
}
