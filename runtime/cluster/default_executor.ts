/**
 * The default {@linkcode JobExecutor}: what `execute()` does in each role
 * (see `role.ts`). On a worker's slot thread it hands the graph to the slot
 * and never resolves; with `--nats <url>` (or `WEIR_NATS_URL`) it submits the
 * job to the cluster's coordinator and waits for its end; otherwise it runs
 * the job in this process (`executeLocally`), serving the web dashboard
 * meanwhile when asked with `--ui` or `WEIR_UI_PORT` (`local_dashboard.ts`).
 * Importing this module registers it (Flink finds its `PipelineExecutorFactory`s through a service loader;
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
import { type JobExecutionResult, JobFailedError } from "./job_result.ts";
import {
  type LocalExecutionOptions,
  type LocalJob,
  type ResumeRequest,
  startLocally,
} from "./local_executor.ts";
import { type LocalDashboard, startLocalDashboardIfAsked } from "./local_dashboard.ts";
import { summarizeJobGraph } from "../graph/job_graph_summary.ts";
import { executionRole, slotLaunch, wantsCluster } from "./role.ts";
import { displayModule, resumeCommand } from "./resume_command.ts";
import { onInterrupt } from "./interrupt.ts";
import { reportUncaughtJobFailures } from "./job_failure_report.ts";

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
 * More environment variables `weir run` and `weir resume` set for the job
 * module they start (Flink's `flink run -p N` / `--detached` put into the
 * job's configuration):
 *
 * | variable | meaning |
 * |---|---|
 * | `WEIR_PARALLELISM` | the default parallelism (Flink's `parallelism.default`): operators run at it unless they, or the job's `env.setParallelism`, set one |
 * | `WEIR_RESUME_JOB_ID` | resume the latest retained checkpoint of this earlier job (as `resumeFrom({ jobId })`), unless the job chose a restore itself; `WEIR_ALLOW_NON_RESTORED_STATE` and `WEIR_RESTORE_MODE` apply |
 * | `WEIR_DETACHED` | `"true"`: in cluster mode, `execute()` submits the job, prints its id and the commands to follow it, and ends the process with exit code 0; code after `execute()` does not run |
 */
export const RUN_ENV = {
  /** A positive integer. */
  parallelism: "WEIR_PARALLELISM",
  /** A job id. */
  resumeJobId: "WEIR_RESUME_JOB_ID",
  /** `"true"` for a detached submission. */
  detached: "WEIR_DETACHED",
} as const;

/** `name`'s value, or `""` when unset or unreadable (no `--allow-env`). */
function envValue(name: string): string {
  try {
    return Deno.env.get(name) ?? "";
  } catch {
    return "";
  }
}

/**
 * The default parallelism of this run: on a slot thread the one its job was
 * submitted with, else `WEIR_PARALLELISM` (`weir run -p N`).
 * @returns a positive integer, or `undefined` when none was given.
 * @throws {RangeError} when `WEIR_PARALLELISM` is not a positive integer.
 */
export function defaultParallelism(): number | undefined {
  const launch = slotLaunch();
  if (launch !== undefined) return launch.defaultParallelism;
  const text = envValue(RUN_ENV.parallelism);
  if (text === "") return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1) {
    throw new RangeError(
      `${RUN_ENV.parallelism} must be a positive integer: current value is ${JSON.stringify(text)}`,
    );
  }
  return n;
}

/**
 * What the run resumes from: the job's own `resumeFrom` / `fromSavepoint`,
 * else the savepoint `weir run -s` named in the environment, else the
 * earlier job `weir resume` named there (its latest retained checkpoint).
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
  const path = envValue(SAVEPOINT_ENV.path);
  const jobId = envValue(RUN_ENV.resumeJobId);
  if (path === "" && jobId === "") return undefined;
  const mode = Deno.env.get(SAVEPOINT_ENV.restoreMode) ?? "NO_CLAIM";
  if (mode !== "CLAIM" && mode !== "NO_CLAIM") {
    throw new RangeError(
      `${SAVEPOINT_ENV.restoreMode} must be CLAIM or NO_CLAIM: current value is ${
        JSON.stringify(mode)
      }`,
    );
  }
  const allowNonRestoredState = envValue(SAVEPOINT_ENV.allowNonRestoredState) === "true";
  if (path === "") return { jobId, allowNonRestoredState, restoreMode: mode };
  return { jobId: "", savepointPath: path, allowNonRestoredState, restoreMode: mode };
}

/**
 * Starts the job in this process, with the local dashboard when asked for
 * (`--ui`, `WEIR_UI_PORT`): the dashboard binds its port first, so a bad
 * or taken port fails the run before anything is deployed; it closes when
 * the job ends.
 * @throws {RangeError} when `WEIR_UI_PORT` is not a port number.
 * @throws {Deno.errors.AddrInUse} when the dashboard's port is taken.
 */
async function startLocalRun(request: JobExecutionRequest): Promise<LocalJob> {
  const dashboard = startLocalDashboardIfAsked();
  let job: LocalJob;
  try {
    job = await startLocally(request.graph, localOptions(request));
  } catch (error) {
    await dashboard?.close();
    throw error;
  }
  console.error(`weir: running job ${job.jobId} '${request.graph.name}' locally`);
  if (dashboard !== undefined) serveLocalRun(dashboard, job, request);
  return job;
}

function serveLocalRun(dashboard: LocalDashboard, job: LocalJob, request: JobExecutionRequest) {
  dashboard.attach({
    job,
    graph: summarizeJobGraph(request.graph),
    checkpointing: request.checkpointing,
    moduleUrl: Deno.mainModule,
    args: Deno.args,
    defaultParallelism: defaultParallelism(),
  });
  const close = () => dashboard.close();
  job.result.then(close, close);
}

function localOptions(request: JobExecutionRequest): LocalExecutionOptions {
  return {
    checkpointing: request.checkpointing,
    checkpointDirectory: request.checkpointDirectory,
    restartStrategy: request.restartStrategy,
    failoverStrategy: request.failoverStrategy,
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
  prepare(): void {
    // Not on a slot thread: its failures go to the worker, not to a terminal.
    if (slotLaunch() === undefined) reportUncaughtJobFailures();
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
    // An expected failure the job module does not catch: one `error:` line, no stack.
    reportUncaughtJobFailures();
    if (wantsCluster()) {
      const { executeOnCluster, submitDetached } = await import("./client.ts");
      const options = {
        moduleUrl: Deno.mainModule,
        args: Deno.args,
        checkpointing: request.checkpointing,
        restartStrategy: request.restartStrategy,
        failoverStrategy: request.failoverStrategy,
        resume: resumeOf(request),
        defaultParallelism: defaultParallelism(),
      };
      if (envValue(RUN_ENV.detached) !== "true") {
        return await executeOnCluster(request.graph, options);
      }
      await submitDetached(request.graph, options);
      Deno.exit(0);
    }
    const job = await startLocalRun(request);
    const result = await awaitLocalJob(job, request);
    if (request.defaultCheckpointDirectory) {
      await removeEmptyDefaultDirectories(request.checkpointDirectory);
    }
    return result;
  },
  async submit(request: JobExecutionRequest): Promise<JobClient> {
    reportUncaughtJobFailures();
    if (wantsCluster()) {
      const { submitOnCluster } = await import("./client.ts");
      return await submitOnCluster(request.graph, {
        moduleUrl: Deno.mainModule,
        args: Deno.args,
        checkpointing: request.checkpointing,
        restartStrategy: request.restartStrategy,
        failoverStrategy: request.failoverStrategy,
        resume: resumeOf(request),
        defaultParallelism: defaultParallelism(),
      });
    }
    const job = await startLocalRun(request);
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
  defaultParallelism,
});

/**
 * Waits for a local job's end. The first Ctrl-C (SIGINT) cancels it and,
 * once it ended, prints the command that resumes it and exits with code 130
 * (a second Ctrl-C exits at once); a job that fails or is cancelled
 * otherwise gets the same command printed before its error propagates. The
 * command is printed only with periodic checkpointing on: without, there is
 * no checkpoint to resume from.
 */
async function awaitLocalJob(
  job: { readonly jobId: string; readonly result: Promise<JobExecutionResult>; cancel(): void },
  request: JobExecutionRequest,
): Promise<JobExecutionResult> {
  const hint = () => {
    let module = Deno.mainModule;
    try {
      module = displayModule(module, Deno.cwd());
    } catch {
      // no --allow-read: the module's URL as it is
    }
    return resumeCommand({
      jobId: job.jobId,
      module,
      args: Deno.args,
      defaultParallelism: defaultParallelism(),
    });
  };
  let interrupted = false;
  const stopListening = onInterrupt(() => {
    if (interrupted) Deno.exit(130);
    interrupted = true;
    console.error(`weir: Ctrl-C: cancelling job ${job.jobId} (Ctrl-C again to leave at once)`);
    job.cancel();
  });
  try {
    return await job.result;
  } catch (error) {
    const checkpointed = request.checkpointing.intervalMs > 0;
    const resumable = !(error instanceof JobFailedError && error.resumable === false);
    if (checkpointed && resumable && (interrupted || error instanceof JobFailedError)) {
      console.error(
        `weir: job ${job.jobId} did not finish; resume it from its latest retained checkpoint ` +
          `with: ${hint()}`,
      );
    } else if (interrupted || checkpointed) {
      console.error(
        `weir: job ${job.jobId} ${
          interrupted ? "cancelled" : "failed"
        }; it has no completed checkpoint to resume from`,
      );
    }
    if (interrupted) Deno.exit(130);
    throw error;
  } finally {
    stopListening();
  }
}

registerJobExecutor(defaultJobExecutor);
