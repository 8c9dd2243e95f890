/**
 * Local mode: the coordinator, one worker and every subtask in this process,
 * on an in-process transport, with checkpoints in a local directory. It
 * needs nothing but Deno, and runs the same actors and protocol as a
 * cluster.
 *
 * @module
 */

import { InProcessBus } from "../actor/in_process.ts";
import type { JobGraph } from "../graph/job_graph.ts";
import { LocalDirectoryCheckpointStorage } from "../checkpoint/storage.ts";
import type { RestartStrategyConfig } from "./restart_strategy.ts";
import type { Clock } from "../time/clock.ts";
import type { FaultInjector, TaskConfig } from "../task/stream_task.ts";
import {
  type CheckpointConfig,
  type CoordinatorFaultPoint,
  JobCoordinator,
  type JobExecutionResult,
} from "./coordinator.ts";
import { Worker } from "./worker.ts";

/** Everything a local run needs besides the graph. */
export interface LocalExecutionOptions {
  readonly checkpointing: CheckpointConfig;
  /** Directory of checkpoint storage. */
  readonly checkpointDirectory: string;
  readonly restartStrategy: RestartStrategyConfig;
  readonly taskConfig: TaskConfig;
  readonly clock: Clock;
  /** Resume from this checkpoint of `jobId` (both must be given to resume). */
  readonly resume?: { readonly jobId: string; readonly checkpointId: number } | undefined;
  readonly faults?: FaultInjector | undefined;
  readonly coordinatorFaults?:
    | ((point: CoordinatorFaultPoint, checkpointId: number) => void)
    | undefined;
  /** The in-process bus to run on (tests use its drop filter); default: a new bus. */
  readonly bus?: InProcessBus | undefined;
}

/** A job id from its name: the name's safe characters plus 8 random hex digits. */
export function newJobId(name: string): string {
  const slug = name.replace(/[^A-Za-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40) || "job";
  const random = crypto.getRandomValues(new Uint8Array(4));
  return `${slug}-${[...random].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Runs `graph` in this process until it finishes.
 * @throws {JobFailedError} when the job fails for good.
 */
export async function executeLocally(
  graph: JobGraph,
  options: LocalExecutionOptions,
): Promise<JobExecutionResult> {
  const bus = options.bus ?? new InProcessBus();
  const coordinatorTransport = bus.connect();
  const workerTransport = bus.connect();
  const storage = new LocalDirectoryCheckpointStorage({ directory: options.checkpointDirectory });
  const jobId = options.resume?.jobId ?? newJobId(graph.name);
  const worker = new Worker({
    transport: workerTransport,
    workerId: "local",
    resolveJob: () => ({
      graph,
      storage,
      config: options.taskConfig,
      clock: options.clock,
      faults: options.faults,
    }),
  });
  worker.start();
  const coordinator = new JobCoordinator({
    transport: coordinatorTransport,
    jobId,
    graph,
    storage,
    checkpointing: options.checkpointing,
    restartStrategy: options.restartStrategy,
    workers: () => ["local"],
    restoreCheckpointId: options.resume?.checkpointId ?? null,
    deployTimeoutMs: 60_000,
    faults: options.coordinatorFaults,
  });
  try {
    return await coordinator.run();
  } finally {
    worker.close();
    await coordinatorTransport.close();
    await workerTransport.close();
  }
}
