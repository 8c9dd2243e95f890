/**
 * A keyed job whose checkpoints go to a NATS Object Store bucket (the
 * cluster-mode default), run in this process with `executeLocally` and a
 * fault injected once after a snapshot: it restores from a checkpoint in the
 * bucket and commits exactly the failure-free output, key by key. Runs
 * against the shared server (`WEIR_TEST_NATS_URL`, see `_nats_server.ts`),
 * in a bucket of its own, destroyed in `finally`.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  type FunctionInitializationContext,
  RestartStrategies,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { TestSource } from "../testing.ts";
import { connect, jetstreamApi } from "../runtime/actor/nats_deps.ts";
import { TEST_NATS_URL } from "./_nats_server.ts";
import { ObjectStoreCheckpointStorage } from "../runtime/checkpoint/object_store_storage.ts";
import { executeLocally } from "../runtime/cluster/local_executor.ts";
import { systemClock } from "../runtime/time/clock.ts";
import {
  assertSameOutput,
  expectedSums,
  type KeyedRecord,
  keyedSplits,
  type KeyedSplitsOptions,
  listTree,
  SequenceCheck,
  SlowCollectingSink,
  SplitCounter,
  type SumRecord,
  withTempDir,
} from "./_job_kit.ts";

const SPLITS: KeyedSplitsOptions = {
  splits: 2,
  keysPerSplit: 2,
  recordsPerKey: 500,
  awaitCheckpointEvery: 200,
};

/** A counting identity map that records the checkpoint each of its subtasks restored from. */
class RestoreRecorder extends SplitCounter {
  readonly restored: (number | undefined)[];
  constructor(restored: (number | undefined)[]) {
    super(undefined);
    this.restored = restored;
  }
  override initializeState(context: FunctionInitializationContext): void {
    super.initializeState(context);
    this.restored.push(context.restoredCheckpointId);
  }
}

Deno.test("a keyed job restores from a checkpoint in a NATS Object Store bucket and commits exactly once", async () => {
  const nc = await connect({ servers: TEST_NATS_URL });
  const bucket = `weir-test-job-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await withTempDir(async (dir) => {
      const storage = await ObjectStoreCheckpointStorage.open({ connection: nc, bucket });
      const restored: (number | undefined)[] = [];
      const sink = new SlowCollectingSink<SumRecord>(0);
      const env = StreamExecutionEnvironment.getExecutionEnvironment();
      env.fromSource(
        TestSource.perSubtask<KeyedRecord>(keyedSplits(SPLITS), { batchSize: 16 }),
        WatermarkStrategy.noWatermarks(),
        "records",
      ).uid("records").setParallelism(2)
        .map(new RestoreRecorder(restored)).uid("identity").setParallelism(2)
        .keyBy((r) => r.key)
        .process(new SequenceCheck()).uid("sums").setParallelism(2)
        .sinkTo(sink).uid("committed").setParallelism(2);
      const graph = env.getJobGraph("object-store checkpoints");
      const sums = graph.vertices.find((v) => v.operators.some((o) => o.uid === "sums"));
      assert.ok(sums, "a vertex runs 'sums'");
      let fired = 0;
      const result = await executeLocally(graph, {
        checkpointing: {
          intervalMs: 10,
          timeoutMs: 60_000,
          minPauseBetweenCheckpointsMs: 0,
          maxConcurrentCheckpoints: 1,
          retainedCheckpoints: 1,
          retainOnFinish: true,
        },
        checkpointDirectory: dir,
        storage,
        restartStrategy: RestartStrategies.fixedDelay(3, 0),
        taskConfig: {
          bufferSize: 64,
          bufferTimeoutMs: 10,
          initialCredits: 4,
          autoWatermarkIntervalMs: 200,
          checkpointingMode: "exactly-once",
        },
        clock: systemClock,
        faults: (point, site) => {
          if (
            fired === 0 && point === "after-snapshot" && site.attempt === 0 &&
            site.checkpointId >= 2 && site.vertexId === sums.id && site.subtask === 1
          ) {
            fired++;
            throw new Error(
              `induced failure after the snapshot of checkpoint ${site.checkpointId}`,
            );
          }
        },
      });

      assert.equal(fired, 1, "the fault fired once");
      assert.equal(result.restarts, 1);
      const fromCheckpoint = restored.filter((id) => id !== undefined);
      assert.equal(fromCheckpoint.length, 2, `both map subtasks restored: ${restored.join(", ")}`);
      assert.ok(fromCheckpoint.every((id) => id >= 1), `restored from ${fromCheckpoint}`);
      assertSameOutput(sink.committed(), [...expectedSums(SPLITS).values()].flat(), "run");
      const completed = await storage.listCompleted(result.jobId);
      assert.ok(completed.length >= 1, "the job's checkpoints are in the bucket");
      assert.ok(completed.at(-1)! > fromCheckpoint[0]!, "later checkpoints followed the restore");
      assert.deepEqual(await listTree(dir), [], "nothing went to the local directory");
    });
  } finally {
    await (await jetstreamApi.jetstreamManager(nc)).streams.delete(`OBJ_${bucket}`);
    await nc.close();
  }
});
