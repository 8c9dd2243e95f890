/**
 * A resume at another parallelism in the middle of open windows loses
 * none: a windowed job at parallelism 2 fails for good right after a
 * checkpoint taken while windows are open, and `env.resumeFrom({ jobId })`
 * runs it again at parallelism 3. Every window must then be committed
 * exactly once over both runs, with the sum and count computed
 * independently of Weir (`_window_kit.ts`).
 *
 * At the new parallelism, key groups (with their window contents, merging
 * window sets and timers) move between subtasks, the four source splits are
 * dealt again over three source subtasks, and each window subtask starts
 * from the minimum of its predecessors' watermark floors. The session cases
 * check that a session open at the checkpoint merges, after the rescale,
 * with the records that extend it: the merging-window set that maps it to
 * its state window must have moved with its key group.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  JobFailedError,
  RestartStrategies,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";
import {
  assertEveryWindowOnce,
  type AssignerKind,
  assignerOf,
  expectedWindows,
  type FunctionKind,
  type Tick,
  tickSplits,
  type TickSplitsOptions,
  type WindowSum,
  windowSums,
} from "./_window_kit.ts";

const INPUT: TickSplitsOptions = {
  splits: 4,
  keys: 12,
  recordsPerKey: 240,
  awaitCheckpointEvery: 100,
  failAfterCheckpoints: 4,
  failDelayRecords: 50,
};

/** Builds the windowed job at `parallelism`, committing to `sink`. */
function build(options: {
  directory: string;
  sink: CollectingSink<WindowSum>;
  parallelism: number;
  assigner: AssignerKind;
  fn: FunctionKind;
  /** Whether split 0 fails (the first run); the resumed run's input has no fail marker. */
  fail: boolean;
}): StreamExecutionEnvironment {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .setParallelism(options.parallelism)
    .enableCheckpointing(50, { directory: options.directory })
    .setRestartStrategy(RestartStrategies.noRestart())
    .setAutoWatermarkInterval(20);
  const ticks = env.fromSource(
    TestSource.perSubtask<Tick>(
      tickSplits(options.fail ? INPUT : { ...INPUT, failAfterCheckpoints: undefined }),
    ),
    WatermarkStrategy.forMonotonousTimestamps<Tick>().withTimestampAssigner((t) => t.ts),
    "ticks",
  ).uid("ticks");
  windowSums(ticks, assignerOf(options.assigner), options.fn, "windows")
    .sinkTo(options.sink).uid("window-sums");
  return env;
}

/** Runs the job at parallelism 2 until its induced failure; returns the job id to resume. */
async function failForGood(options: Parameters<typeof build>[0]): Promise<string> {
  const error = await build(options).execute("windows before the rescale").then(
    () => assert.fail("the first run should fail for good"),
    (e: unknown) => e,
  );
  assert.ok(error instanceof JobFailedError, String(error));
  const jobId = /resumeFrom\(\{ jobId: "([^"]+)"/.exec(error.message)?.[1];
  assert.ok(jobId, `the error says how to resume: ${error.message}`);
  return jobId;
}

const CASES: readonly [AssignerKind, FunctionKind][] = [
  ["tumbling", "aggregate"],
  ["sliding", "reduce"],
  ["session", "process"],
  ["session", "aggregate"],
];

Deno.test("a resume at parallelism 3 in the middle of open windows fires every window exactly once", async (t) => {
  for (const [assigner, fn] of CASES) {
    await t.step(`${assigner} windows with ${fn}, from parallelism 2 to 3`, async () => {
      await withTempDir(async (directory) => {
        const context = `${assigner}/${fn}`;
        const expected = expectedWindows(assigner, INPUT.keys, INPUT.recordsPerKey);
        const sink = new CollectingSink<WindowSum>();
        const jobId = await failForGood({
          directory,
          sink,
          parallelism: 2,
          assigner,
          fn,
          fail: true,
        });
        const before = sink.committed().length;
        assert.ok(
          before > 0 && before < expected.size,
          `${context}: the first run committed ${before} of ${expected.size} windows, so the resume starts amid them`,
        );
        const env = build({ directory, sink, parallelism: 3, assigner, fn, fail: false });
        env.resumeFrom({ jobId });
        const result = await env.execute("windows after the rescale");
        assert.equal(result.restarts, 0, `${context}: ${result.summary}`);
        assertEveryWindowOnce(sink.committed(), expected, context);
      });
    });
  }
});
