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
  type JobClient,
  type JobExecutionRequest,
  type JobExecutor,
  registerJobExecutor,
} from "../api/executor.ts";
import type { JobExecutionResult } from "./job_result.ts";
import { type LocalExecutionOptions, type ResumeRequest, startLocally } from "./local_executor.ts";
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

/**
 * Environment variables `weir run` sets for the job module it starts (Flink's
 * `flink run -s <path> --allowNonRestoredState` put into the job's
 * configuration): restore that savepoint unless the job chose a restore itself.
 */
export const SAVEPOINT_ENV = {
  /** The savepoint path. */
  path: "WEIR_SAVEPOINT_PATH",
  /** `"true"` to drop state of uids the job lacks. */
  allowNonRestoredState: "WEIR_ALLOW_NON_RESTORED_STATE",
  /** `"CLAIM"` or `"NO_CLAIM"`. */
  restoreMode: "WEIR_RESTORE_MODE",
} as const;

/**
 * What the run resumes from: the job's own `resumeFrom` / `fromSavepoint`,
 * else the savepoint `weir run -s` named in the environment.
 * @throws {RangeError} when `WEIR_RESTORE_MODE` is neither CLAIM nor NO_CLAIM.
 */
export function resumeOf(request: JobExecutionRequest): ResumeRequest | undefined {
  if (request.resume !== undefined) return request.resume;
  const sp = request.savepoint;
  if (sp !== undefined) {
    return {
      jobId: "",
      savepointPath: sp.path,
      allowNonRestoredState: sp.allowNonRestoredState,
      restoreMode: sp.restoreMode,
    };
  }
  const path = Deno.env.get(SAVEPOINT_ENV.path) ?? "";
  if (path === "") return undefined;
  const mode = Deno.env.get(SAVEPOINT_ENV.restoreMode) ?? "NO_CLAIM";
  if (mode !== "CLAIM" && mode !== "NO_CLAIM") {
    throw new RangeError(
      `${SAVEPOINT_ENV.restoreMode} must be CLAIM or NO_CLAIM: current value is ${
        JSON.stringify(mode)
      }`,
    );
  }
  return {
    jobId: "",
    savepointPath: path,
    allowNonRestoredState: Deno.env.get(SAVEPOINT_ENV.allowNonRestoredState) === "true",
    restoreMode: mode,
  };
}

function localOptions(request: JobExecutionRequest): LocalExecutionOptions {
  return {
    checkpointing: request.checkpointing,
    checkpointDirectory: request.checkpointDirectory,
    restartStrategy: request.restartStrategy,
    taskConfig: { ...request.taskConfig },
    clock: request.clock,
    resume: resumeOf(request),
    faults: request.faults,
    coordinatorFaults: request.coordinatorFaults,
  };
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
        resume: resumeOf(request),
      });
    }
    const job = await startLocally(request.graph, localOptions(request));
    console.error(
      `weir: running job ${job.jobId} '${request.graph.name}' locally`,
    );
    const result = await job.result;
    if (request.defaultCheckpointDirectory) {
      await removeEmptyDefaultDirectories(request.checkpointDirectory);
    }
    return result;
  },
  async submit(request: JobExecutionRequest): Promise<JobClient> {
    if (wantsCluster()) {
      const { submitOnCluster } = await import("./client.ts");
      return await submitOnCluster(request.graph, {
        moduleUrl: Deno.mainModule,
        args: Deno.args,
        checkpointing: request.checkpointing,
        restartStrategy: request.restartStrategy,
        resume: resumeOf(request),
      });
    }
    const job = await startLocally(request.graph, localOptions(request));
    const result = job.result.finally(async () => {
      if (request.defaultCheckpointDirectory) {
        await removeEmptyDefaultDirectories(request.checkpointDirectory);
      }
    });
    result.catch(() => {}); // observed through result()
    return {
      jobId: job.jobId,
      triggerSavepoint: (directory) => job.triggerSavepoint(directory),
      stopWithSavepoint: (options) => job.stopWithSavepoint(options),
      cancel: () => Promise.resolve(job.cancel()),
      result: () => result,
    };
  },
});

registerJobExecutor(defaultJobExecutor);
