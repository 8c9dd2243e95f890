/**
 * A region fails while another region's subtask is in the asynchronous
 * phase of a checkpoint (its state upload in flight). Two forward pipelines
 * at parallelism 2 (two regions) run on a job coordinator and a worker over
 * the in-process bus, with checkpoint storage that holds the upload of
 * region 1's sink subtask for checkpoint 3 or later. While it is held, the
 * map of region 0 fails: region 0 restarts and the pending checkpoint is
 * aborted. Then the upload is released: region 1's late acknowledgement of
 * the aborted checkpoint must count for nothing, region 1 keeps running on
 * attempt 0, later checkpoints complete, and the exactly-once sink commits
 * each split's records once, in order, as a run without the failure does.
 * No folder of the aborted checkpoint may stay behind.
 *
 * The order of events is forced by the held upload and by flags the
 * functions read, not by clocks.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  RestartStrategies,
  type RuntimeContext,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../mod.ts";
import { CollectingSink, TestSource } from "../testing.ts";
import { LocalDirectoryCheckpointStorage } from "../runtime/checkpoint/storage.ts";
import type { StoredBlob } from "../runtime/checkpoint/types.ts";
import { InProcessBus } from "../runtime/actor/in_process.ts";
import { JobCoordinator } from "../runtime/cluster/coordinator.ts";
import { Worker } from "../runtime/cluster/worker.ts";
import { systemClock } from "../runtime/time/clock.ts";
import { withTempDir } from "./_job_kit.ts";

const RECORDS = 400;

interface Rec {
  readonly split: number;
  readonly seq: number;
}

/** What the functions and the storage share (one process). */
interface Scene {
  /** Region 1's upload is held: region 0's map fails on its next record. */
  held: boolean;
  /** Region 0's map failed. */
  failed: boolean;
  /** The checkpoint whose upload was held. */
  heldCheckpoint: number;
  /** `subtask@attempt` of each map open. */
  readonly opens: string[];
  /** Releases the held upload. */
  release: () => void;
}

/** Fails region 0's map once, on the first record after region 1's upload was held. */
class FailWhileHeld {
  context: RuntimeContext | undefined;
  constructor(private readonly scene: Scene) {}
  open(context: RuntimeContext): void {
    this.context = context;
    this.scene.opens.push(`${context.subtaskIndex}@${context.attempt}`);
    // Region 0 runs again: let region 1's upload finish.
    if (context.subtaskIndex === 0 && context.attempt > 0) this.scene.release();
  }
  map(r: Rec): Rec {
    if (this.scene.held && !this.scene.failed && this.context!.subtaskIndex === 0) {
      this.scene.failed = true;
      throw new Error(`induced failure of map#0 at ${r.seq} while region 1 uploads`);
    }
    return r;
  }
}

/** Local storage that holds the first upload of `prefix` for a checkpoint >= 3 until released. */
class HoldingStorage extends LocalDirectoryCheckpointStorage {
  constructor(
    directory: string,
    private readonly prefix: () => string,
    private readonly scene: Scene,
  ) {
    super({ directory });
  }
  override async writeState(
    jobId: string,
    checkpointId: number,
    name: string,
    data: Uint8Array,
  ): Promise<StoredBlob> {
    if (!this.scene.held && checkpointId >= 3 && name.startsWith(this.prefix())) {
      this.scene.heldCheckpoint = checkpointId;
      const released = new Promise<void>((resolve) => this.scene.release = resolve);
      this.scene.held = true;
      await released;
    }
    return await super.writeState(jobId, checkpointId, name, data);
  }
}

function split(s: number): Rec[] {
  return Array.from({ length: RECORDS }, (_, seq) => ({ split: s, seq }));
}

Deno.test("a region failing while another region's checkpoint upload is in flight: the late ack counts for nothing, and the output is exactly-once", async () => {
  await withTempDir(async (dir) => {
    const scene: Scene = {
      held: false,
      failed: false,
      heldCheckpoint: 0,
      opens: [],
      release: () => {},
    };
    const sink = new CollectingSink<Rec>();
    const env = StreamExecutionEnvironment.getExecutionEnvironment().disableOperatorChaining();
    env.fromSource(
      // Region 1's split waits for checkpoints; region 0's flows without waiting for any
      // (pausing 5 ms every 2 records, so it is still running when checkpoint 3 is taken).
      TestSource.perSubtask<Rec>([
        split(0).flatMap((r) => r.seq % 2 === 0 ? [TestSource.pause(5), r] : [r]),
        split(1).flatMap((r) =>
          r.seq > 0 && r.seq % 40 === 0 ? [TestSource.awaitCheckpoint(), r] : [r]
        ),
      ], { batchSize: 1 }),
      WatermarkStrategy.noWatermarks(),
      "records",
    ).uid("records").setParallelism(2)
      .map(new FailWhileHeld(scene)).uid("failing").setParallelism(2)
      .sinkTo(sink).uid("committed").setParallelism(2);
    const jobId = "region-async-phase";
    const graph = env.getJobGraph(jobId);
    const sinkVertex = graph.vertices[2]!.id;
    const storage = new HoldingStorage(dir, () => `${sinkVertex}-1-`, scene);
    const bus = new InProcessBus();
    const coordinatorTransport = bus.connect();
    const workerTransport = bus.connect();
    const worker = new Worker({
      transport: workerTransport,
      workerId: "local",
      resolveJob: () => ({
        graph,
        storage,
        config: {
          bufferSize: 1024,
          bufferTimeoutMs: 5,
          initialCredits: 8,
          autoWatermarkIntervalMs: 200,
          checkpointingMode: "exactly-once",
          // Every state blob goes to storage (none inline), so each ack waits for an upload.
          memoryThresholdBytes: 0,
        },
        clock: systemClock,
      }),
    });
    worker.start();
    const coordinator = new JobCoordinator({
      transport: coordinatorTransport,
      jobId,
      graph,
      storage,
      checkpointing: {
        intervalMs: 10,
        timeoutMs: 60_000,
        minPauseBetweenCheckpointsMs: 0,
        maxConcurrentCheckpoints: 1,
        retainedCheckpoints: 1,
        retainOnFinish: true,
      },
      restartStrategy: RestartStrategies.fixedDelay(2, 0),
      failoverStrategy: "region",
      workers: () => ["local"],
      restoreFrom: null,
      deployTimeoutMs: 10_000,
      local: true,
    });
    try {
      const result = await coordinator.run();
      const context = `${result.summary}; held checkpoint ${scene.heldCheckpoint}; opens ${
        scene.opens.join(", ")
      }`;
      assert.ok(scene.held && scene.failed, context);
      assert.equal(result.restarts, 1, context);
      // Region 1 was never redeployed; region 0 once.
      assert.deepEqual(scene.opens.filter((o) => o.startsWith("1@")), ["1@0"], context);
      assert.deepEqual(scene.opens.filter((o) => o.startsWith("0@")), ["0@0", "0@1"], context);
      const every = Array.from({ length: RECORDS }, (_, i) => i);
      for (const s of [0, 1]) {
        assert.deepEqual(
          sink.committed().filter((r) => r.split === s).map((r) => r.seq),
          every,
          `split ${s}; ${context}`,
        );
      }
      // The aborted checkpoint left no folder behind (retained: only the latest one).
      const folders: string[] = [];
      for await (const e of Deno.readDir(`${dir}/${jobId}`)) {
        if (e.isDirectory && e.name.startsWith("chk-")) folders.push(e.name);
      }
      assert.ok(!folders.includes(`chk-${scene.heldCheckpoint}`), `${folders}; ${context}`);
    } finally {
      worker.close();
      await coordinatorTransport.close();
      await workerTransport.close();
    }
  });
});
