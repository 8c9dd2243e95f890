/**
 * What the coordinator reports about a job while it runs, for the cluster
 * client to print: that it waits for slots (and for how many), and, after a
 * restart, which attempt failed and why (the failed attempt, not the new one).
 *
 * @module
 */

import assert from "node:assert/strict";
import { RestartStrategies, type RuntimeContext, StreamExecutionEnvironment } from "../mod.ts";
import { WatermarkStrategy } from "../mod.ts";
import { LocalDirectoryCheckpointStorage } from "../runtime/checkpoint/storage.ts";
import { InProcessBus } from "../runtime/actor/in_process.ts";
import { JobCoordinator } from "../runtime/cluster/coordinator.ts";
import { Worker } from "../runtime/cluster/worker.ts";
import { systemClock } from "../runtime/time/clock.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { waitUntil } from "./_wait.ts";
import { type KeyedRecord, keyedSplits, withTempDir } from "./_job_kit.ts";

const WAIT_MS = 20_000;

Deno.test("the coordinator says it waits for slots until one registers, then names the failed attempt a restart followed", async () => {
  await withTempDir(async (dir) => {
    const sink = new CollectingSink<KeyedRecord>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(2);
    env.fromSource(
      TestSource.perSubtask<KeyedRecord>(
        keyedSplits({ splits: 2, keysPerSplit: 2, recordsPerKey: 5, awaitCheckpointEvery: 1e9 }),
      ),
      WatermarkStrategy.noWatermarks(),
      "records",
    ).uid("records")
      .map({
        open(context: RuntimeContext) {
          if (context.attempt === 0) {
            throw new Error(`induced failure of subtask ${context.subtaskIndex} in attempt 0`);
          }
        },
        map: (r: KeyedRecord) => r,
      }).uid("fails-once")
      .sinkTo(sink).uid("committed");
    const graph = env.getJobGraph("coordinator status");

    const bus = new InProcessBus();
    const coordinatorTransport = bus.connect();
    const workerTransport = bus.connect();
    const slots: string[] = [];
    const worker = new Worker({
      transport: workerTransport,
      workerId: "slot-0",
      resolveJob: () => ({
        graph,
        storage: new LocalDirectoryCheckpointStorage({ directory: dir }),
        config: {
          bufferSize: 1024,
          bufferTimeoutMs: 10,
          initialCredits: 8,
          autoWatermarkIntervalMs: 200,
          checkpointingMode: "exactly-once",
        },
        clock: systemClock,
      }),
    });
    const coordinator = new JobCoordinator({
      transport: coordinatorTransport,
      jobId: "status-probe",
      graph,
      storage: new LocalDirectoryCheckpointStorage({ directory: dir }),
      checkpointing: {
        intervalMs: 0,
        timeoutMs: 60_000,
        minPauseBetweenCheckpointsMs: 0,
        maxConcurrentCheckpoints: 1,
        retainedCheckpoints: 1,
        retainOnFinish: false,
      },
      restartStrategy: RestartStrategies.fixedDelay(1, 0),
      workers: () => slots,
      restoreFrom: null,
      deployTimeoutMs: WAIT_MS,
    });
    try {
      const run = coordinator.run();
      await waitUntil(() => coordinator.waitingForSlots !== undefined, {
        timeoutMs: WAIT_MS,
        missing: () => "the coordinator never said it waits for slots",
      });
      assert.equal(
        coordinator.waitingForSlots,
        `waiting for slots to deploy attempt 0 (${graph.vertices.length * 2} subtasks) on: ` +
          `0 registered, at least 1 needed; the attempt fails after ${WAIT_MS} ms without one ` +
          "(start a worker: `deno run -A cli.ts worker --nats <url>`)",
      );
      assert.equal(coordinator.restartedAfter, undefined);
      worker.start();
      slots.push("slot-0");
      const result = await run;
      assert.equal(result.restarts, 1, result.summary);
      assert.equal(coordinator.attempt, 1);
      assert.equal(coordinator.waitingForSlots, undefined);
      const after = coordinator.restartedAfter ?? "";
      assert.match(after, /^attempt 0 failed: TaskFailedError: Subtask /, after);
      assert.match(after, /induced failure of subtask \d in attempt 0/, after);
      assert.doesNotMatch(after, /attempt 1/, after);
      assert.equal(sink.committed().length, 2 * 2 * 5);
    } finally {
      worker.close();
      await coordinatorTransport.close();
      await workerTransport.close();
    }
  });
});
