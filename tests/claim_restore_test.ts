/**
 * The CLAIM restore mode end to end (Flink's `RestoreMode.CLAIM`, FLIP-193;
 * decided in `runtime/cluster/savepoints.ts`, carried out by
 * `CheckpointCoordinatorSavepoints.afterCompleted`): a job resumed from
 * another job's retained checkpoint with `restoreMode: "CLAIM"` owns it and
 * discards it once it completed `retainedCheckpoints` checkpoints of its
 * own; with `"NO_CLAIM"` (the default) it is kept. Either way the resumed
 * job commits the failure-free running sums.
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, type RestoreMode, StreamExecutionEnvironment } from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { LocalDirectoryCheckpointStorage } from "../runtime/checkpoint/local_directory_storage.ts";
import { withTempDir } from "./_job_kit.ts";
import {
  addRunningSums,
  byKey,
  expectedRunningSums,
  type Numbered,
  numbered,
  resumeHint,
} from "./_running_sum_kit.ts";
import { waitUntil } from "./_wait.ts";

const KEYS = ["a", "b", "c"];
const COUNT = 240;

/** The running-sum job, holding after record 80 until a checkpoint covers it; it fails at `failAt`. */
function build(directory: string, sink: CollectingSink<Numbered>, failAt: number) {
  const env = StreamExecutionEnvironment.getExecutionEnvironment()
    .enableCheckpointing(20, { directory })
    .setRestartStrategy(RestartStrategies.noRestart())
    .setParallelism(2);
  addRunningSums(env, {
    items: numbered(KEYS, COUNT, (n) => n === 80 ? TestSource.awaitCheckpoint() : undefined),
    batchSize: 40,
    failAt,
    sink,
  });
  return env;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

for (const restoreMode of ["CLAIM", "NO_CLAIM"] as const satisfies readonly RestoreMode[]) {
  Deno.test(
    `a job resumed with restoreMode ${restoreMode} ${
      restoreMode === "CLAIM" ? "discards" : "keeps"
    } the checkpoint it resumed from, and commits the failure-free sums`,
    async () => {
      await withTempDir(async (directory) => {
        const sink = new CollectingSink<Numbered>();
        const error = await build(directory, sink, 160).execute("claimable").then(
          () => assert.fail("the first run should fail for good"),
          (e: unknown) => e,
        );
        const { jobId, checkpointId } = resumeHint(error);
        const restored = new LocalDirectoryCheckpointStorage({ directory })
          .checkpointDirectory(jobId, checkpointId);
        assert.ok(await exists(restored), `the failed job retained ${restored}`);

        const resumed = build(directory, sink, 0);
        resumed.resumeFrom({ jobId, checkpointId, restoreMode });
        const result = await resumed.execute("claimable");
        assert.ok(result.checkpoints.completed >= 1, "the resumed job completed a checkpoint");
        assert.deepEqual(byKey(sink.committed()), expectedRunningSums(KEYS, COUNT));
        if (restoreMode === "CLAIM") {
          await waitUntil(async () => !(await exists(restored)), {
            timeoutMs: 5_000,
            missing: () => `${restored} is still there`,
          });
        } else {
          assert.ok(await exists(restored), "NO_CLAIM never deletes what it resumed from");
        }
      });
    },
  );
}
