/**
 * The default {@linkcode JobExecutor}: what `execute()` does in each role
 * (see `role.ts`). On a worker's slot thread it hands the graph to the slot
 * and never resolves; with `--nats <url>` (or `WEIR_NATS_URL`) it submits the
 * job to the cluster's coordinator and waits for its end; otherwise it runs
 * the job in this process (`executeLocally`). Importing this module registers
 * it (Flink finds its `PipelineExecutorFactory`s through a service loader;
 * here `mod.ts` imports this module).
 *
 * @module
 */

import {
  type ExecutionRole,
  type JobExecutionRequest,
  type JobExecutor,
  registerJobExecutor,
} from "../api/executor.ts";
import type { JobExecutionResult } from "./job_result.ts";
import { executeLocally } from "./local_executor.ts";
import { executionRole, slotLaunch, wantsCluster } from "./role.ts";

async function removeEmptyDefaultDirectories(directory: string): Promise<void> {
  for (const dir of [directory, ".weir"]) {
    try {
      await Deno.remove(dir);
    } catch {
      return; // not empty, or not there
    }
  }
}

/** Runs jobs locally, on the cluster, or on a slot thread, by this thread's role. */
export const defaultJobExecutor: JobExecutor = Object.freeze({
  role(): ExecutionRole {
    return executionRole();
  },
  async execute(request: JobExecutionRequest): Promise<JobExecutionResult> {
    const launch = slotLaunch();
    if (launch !== undefined) {
      // A worker's slot thread: hand the graph over; this never resolves.
      const { runSlot } = await import("./slot.ts");
      return await runSlot(launch, request.graph, {
        config: { ...request.taskConfig },
        clock: request.clock,
        faults: request.faults,
      });
    }
    if (wantsCluster()) {
      const { executeOnCluster } = await import("./client.ts");
      return await executeOnCluster(request.graph, {
        moduleUrl: Deno.mainModule,
        args: Deno.args,
        checkpointing: request.checkpointing,
        restartStrategy: request.restartStrategy,
        resume: request.resume,
      });
    }
    const result = await executeLocally(request.graph, {
      checkpointing: request.checkpointing,
      checkpointDirectory: request.checkpointDirectory,
      restartStrategy: request.restartStrategy,
      taskConfig: { ...request.taskConfig },
      clock: request.clock,
      resume: request.resume,
      faults: request.faults,
      coordinatorFaults: request.coordinatorFaults,
    });
    if (request.defaultCheckpointDirectory) {
      await removeEmptyDefaultDirectories(request.checkpointDirectory);
    }
    return result;
  },
});

registerJobExecutor(defaultJobExecutor);
