/**
 * Event-time windows under a failure, in the shape of Flink's
 * `EventTimeWindowCheckpointingITCase`: parallelism 4, a checkpoint every
 * 100 ms, a source that emits per key an increasing sequence with event
 * timestamps and fails once after at least 2 completed checkpoints, and an
 * exactly-once sink. Tumbling, sliding and session windows, each with
 * `reduce`, `aggregate` and `process`: every window must be committed
 * exactly once, with the sum and count computed independently of Weir (see
 * `_window_kit.ts`), and none may be missing.
 *
 * What makes it a test of window checkpointing: windows span the
 * checkpoints (a window holds 40 ticks of a key; a split waits for a
 * checkpoint every 100 of its records), so the checkpoint restored holds
 * open windows (reduced values, accumulators or element lists, merging
 * window sets for sessions) and their timers. The failure comes 50 records
 * of split 0 after its third checkpoint, and the watermarks are punctuated
 * (one per tick, as Flink's `FailingSource` emits them), so windows fire
 * between the checkpoint and the failure: their results must be discarded
 * and fired again after the restore. Lost window state gives a wrong sum; a
 * lost timer, a missing window; output of the failed attempt committed, a
 * window twice.
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, StreamExecutionEnvironment } from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { withTempDir } from "./_job_kit.ts";
import {
  assertEveryWindowOnce,
  ASSIGNER_KINDS,
  type AssignerKind,
  assignerOf,
  expectedWindows,
  type FiringLog,
  FiringProbe,
  FUNCTION_KINDS,
  type FunctionKind,
  PUNCTUATED_TICKS,
  type RestoreLog,
  RestoreProbe,
  type Tick,
  tickSplits,
  type TickSplitsOptions,
  type WindowSum,
  windowSums,
} from "./_window_kit.ts";

const PARALLELISM = 4;
const INPUT: TickSplitsOptions = {
  splits: PARALLELISM,
  keys: 8,
  recordsPerKey: 400,
  awaitCheckpointEvery: 100,
  failAfterCheckpoints: 3,
  failDelayRecords: 50,
};

/** Runs the windowed job once, failing once after `INPUT.failAfterCheckpoints` checkpoints. */
async function runWindowedJob(assigner: AssignerKind, fn: FunctionKind) {
  return await withTempDir(async (directory) => {
    const sink = new CollectingSink<WindowSum>();
    const restores: RestoreLog = { starts: [] };
    const firings: FiringLog = { byAttempt: [] };
    const env = StreamExecutionEnvironment.getExecutionEnvironment()
      .setParallelism(PARALLELISM)
      .enableCheckpointing(100, { directory })
      .setRestartStrategy(RestartStrategies.fixedDelay(3, 0));
    const ticks = env.fromSource(
      TestSource.perSubtask<Tick>(tickSplits(INPUT)),
      PUNCTUATED_TICKS,
      "ticks",
    ).uid("ticks")
      .map(new RestoreProbe(restores)).uid("restore-probe");
    const windowUid = `${assigner}-${fn}`;
    windowSums(ticks, assignerOf(assigner), fn, windowUid)
      .map(new FiringProbe(firings))
      .sinkTo(sink).uid("window-sums");
    const result = await env.execute(`${assigner} windows with ${fn}`);
    return { result, committed: sink.committed(), restores, firings };
  });
}

Deno.test("event-time windows fire exactly once with their exact sums after a failure and restore", async (t) => {
  for (const assigner of ASSIGNER_KINDS) {
    const expected = expectedWindows(assigner, INPUT.keys, INPUT.recordsPerKey);
    for (const fn of FUNCTION_KINDS) {
      await t.step(`${assigner} windows with ${fn}`, async () => {
        const { result, committed, restores, firings } = await runWindowedJob(assigner, fn);
        const context = `${assigner}/${fn}`;
        assert.equal(result.restarts, 1, `${context}: restarts (${result.summary})`);
        const restored = restores.starts.filter((s) => s.attempt === 1);
        assert.equal(restored.length, PARALLELISM, `${context}: restored subtasks`);
        for (const start of restored) {
          assert.ok(
            start.restoredFrom !== undefined && start.restoredFrom >= 2,
            `${context}: attempt 1 restored from checkpoint ${start.restoredFrom}, expected >= 2`,
          );
        }
        // Windows fired on both sides of the failure: the restore fell amid firing windows.
        assert.ok(
          (firings.byAttempt[0] ?? 0) > 0 && (firings.byAttempt[1] ?? 0) > 0,
          `${context}: window results per attempt ${JSON.stringify(firings.byAttempt)}`,
        );
        assertEveryWindowOnce(committed, expected, context);
      });
    }
  }
});
