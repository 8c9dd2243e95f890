/**
 * What the local dashboard tests share: an endless keyed job (a paced
 * sequence at parallelism 2, a keyed map, a sink that drops) started in this
 * process with checkpoints every 200 ms, ready to attach to a dashboard.
 *
 * @module
 */

import { join } from "node:path";
import { type LocalJob, startLocally } from "./local_executor.ts";
import {
  RestartStrategies,
  SequenceSource,
  type SinkFunction,
  StreamExecutionEnvironment,
  WatermarkStrategy,
} from "../../mod.ts";
import type { JobGraph } from "../graph/job_graph.ts";
import type { CheckpointConfig } from "./coordinator.ts";
import { systemClock } from "../time/clock.ts";

/** A started endless job, with what `LocalDashboard.attach` needs of it. */
export interface EndlessLocalJob {
  /** The running job. */
  readonly job: LocalJob;
  /** Its graph. */
  readonly graph: JobGraph;
  /** Its checkpointing settings. */
  readonly checkpointing: CheckpointConfig;
}

/**
 * Starts the endless job named `name`, with checkpoints and savepoints
 * under `dir`. It runs until cancelled or stopped.
 */
export async function startEndlessLocalJob(dir: string, name: string): Promise<EndlessLocalJob> {
  const env = StreamExecutionEnvironment.getExecutionEnvironment();
  const drop: SinkFunction<number> = { kind: "simple", invoke() {} };
  env.fromSource(
    new SequenceSource(1, 1_000_000_000, { recordsPerSecond: 500 }),
    WatermarkStrategy.noWatermarks(),
    "numbers",
  ).uid("numbers").setParallelism(2)
    .keyBy((n) => n % 4).map((n) => n + 1).uid("inc").name("inc").setParallelism(1)
    .sinkTo(drop).uid("drop").name("drop").setParallelism(1);
  const graph = env.getJobGraph(name);
  const checkpointing: CheckpointConfig = {
    intervalMs: 200,
    timeoutMs: 60_000,
    minPauseBetweenCheckpointsMs: 0,
    maxConcurrentCheckpoints: 1,
    retainedCheckpoints: 1,
    retainOnFinish: false,
  };
  const job = await startLocally(graph, {
    checkpointing,
    checkpointDirectory: join(dir, "checkpoints"),
    savepointDirectory: join(dir, "savepoints"),
    restartStrategy: RestartStrategies.noRestart(),
    taskConfig: {
      bufferSize: 64,
      bufferTimeoutMs: 10,
      initialCredits: 4,
      autoWatermarkIntervalMs: 200,
      checkpointingMode: "exactly-once",
    },
    clock: systemClock,
  });
  return { job, graph, checkpointing };
}
