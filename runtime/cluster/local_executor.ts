/**
 * Local mode: the coordinator, one worker and every subtask in this process,
 * on an in-process transport, with checkpoints in a local directory. It
 * needs nothing but Deno, and runs the same actors and protocol as a
 * cluster.
 *
 * @module
 */

import { InProcessBus } from "../actor/in_process.ts";
import type { Transport } from "../actor/types.ts";
import type { JobGraph } from "../graph/job_graph.ts";
import type { JobGraphShape } from "../graph/job_graph_summary.ts";
import { type CheckpointStorage, LocalDirectoryCheckpointStorage } from "../checkpoint/storage.ts";
import type { RestartStrategyConfig } from "./restart_strategy.ts";
import type { FailoverStrategy } from "../api/restart_strategy_config.ts";
import type { Clock } from "../time/clock.ts";
import type { FaultInjector, TaskConfig } from "../task/stream_task.ts";
import {
  type CheckpointConfig,
  type CoordinatorFaultPoint,
  JobCoordinator,
} from "./coordinator.ts";
import type { JobExecutionResult } from "./job_result.ts";
import { Worker } from "./worker.ts";
import type { RestorePoint } from "../task/messages.ts";
import type { RestoreMode } from "../api/executor.ts";
import {
  localSavepointStorage,
  parseSavepointPath,
  readSavepointMetadata,
  savepointReadingStorage,
} from "../checkpoint/savepoint_storage.ts";
import type { CheckpointMetadata } from "../checkpoint/types.ts";
import type { StopWithSavepointOptions } from "./savepoints.ts";
import { join } from "node:path";

/** Where local mode stores savepoints unless told otherwise. */
export const DEFAULT_LOCAL_SAVEPOINT_DIRECTORY = ".weir/savepoints";

/** Everything a local run needs besides the graph. */
export interface LocalExecutionOptions {
  readonly checkpointing: CheckpointConfig;
  /** Directory of checkpoint storage (unused when `storage` is given). */
  readonly checkpointDirectory: string;
  /**
   * Checkpoint storage to use instead of a `LocalDirectoryCheckpointStorage`
   * on `checkpointDirectory`, e.g. an `ObjectStoreCheckpointStorage`; the
   * caller keeps owning it (and its connection).
   */
  readonly storage?: CheckpointStorage | undefined;
  readonly restartStrategy: RestartStrategyConfig;
  /** Which subtasks a failure restarts (Flink's `jobmanager.execution.failover-strategy`). Default `"region"`. */
  readonly failoverStrategy?: FailoverStrategy | undefined;
  readonly taskConfig: TaskConfig;
  readonly clock: Clock;
  /**
   * Resume from a completed checkpoint of the earlier job `jobId` (its latest
   * one when `checkpointId` is omitted). The run gets a new job id; the
   * restored checkpoint is left as it is.
   */
  readonly resume?: ResumeRequest | undefined;
  /**
   * Default directory of savepoints; default `savepoints` beside the
   * checkpoint directory (`.weir/savepoints` for the default one).
   */
  readonly savepointDirectory?: string | undefined;
  readonly faults?: FaultInjector | undefined;
  readonly coordinatorFaults?:
    | ((point: CoordinatorFaultPoint, checkpointId: number, attempt: number) => void)
    | undefined;
  /** The in-process bus to run on (tests use its drop filter); default: a new bus. */
  readonly bus?: InProcessBus | undefined;
  /**
   * Makes the transports to run on instead of `bus` (then ignored), e.g.
   * `NatsTransport`s, to run a whole job over NATS in this process. Called
   * once for the coordinator and once for the worker; the run closes both
   * when it ends. The worker then has an id of its own, `local-<jobId>`, so
   * that runs sharing a NATS server never take each other's deployments.
   */
  readonly transports?: (() => Transport | Promise<Transport>) | undefined;
}

/** A job id from its name: the name's safe characters plus 8 random hex digits. */
export function newJobId(name: string): string {
  const slug = name.replace(/[^A-Za-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40) || "job";
  const random = crypto.getRandomValues(new Uint8Array(4));
  return `${slug}-${[...random].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * Which checkpoint or savepoint a run resumes from (see `ResumeOptions` and
 * `SavepointRestoreSettings` of the environment).
 */
export interface ResumeRequest {
  /** The earlier job's id; for a savepoint, its savepoint id (`savepoint-<job>-<id>`). */
  readonly jobId: string;
  /** The completed checkpoint; default the latest one. */
  readonly checkpointId?: number | undefined;
  /** Drop state of operators whose uid is not in the new job, instead of refusing to resume. */
  readonly allowNonRestoredState?: boolean | undefined;
  /**
   * Restore the savepoint at this path (`jobId` and `checkpointId` are then
   * taken from it). See `savepoint_storage.ts` for the paths.
   */
  readonly savepointPath?: string | undefined;
  /** Who owns the restored checkpoint's files; default `"NO_CLAIM"` (see `RestoreMode`). */
  readonly restoreMode?: RestoreMode | undefined;
}

/** A resume request names a checkpoint that does not exist or cannot be read. */
export class ResumeError extends Error {
  /** The error class name. */
  override name = "ResumeError";
}

/**
 * Finds and checks the checkpoint to resume from, before anything is
 * deployed (local mode, and the cluster coordinator on submission).
 * @throws {ResumeError} when it does not exist, cannot be read, or holds state of unknown uids.
 */
export async function resolveResume(
  storage: CheckpointStorage,
  resume: ResumeRequest,
  graph: JobGraphShape,
): Promise<RestorePoint> {
  const where = storage.jobLocation(resume.jobId);
  let completed: number[];
  try {
    completed = await storage.listCompleted(resume.jobId);
  } catch (error) {
    throw new ResumeError(
      `Cannot resume job ${resume.jobId}: cannot list its checkpoints in ${where}`,
      {
        cause: error,
      },
    );
  }
  const id = resume.checkpointId ?? completed.at(-1);
  if (id === undefined || !completed.includes(id)) {
    throw new ResumeError(
      `Cannot resume job ${resume.jobId} from ${
        resume.checkpointId === undefined
          ? "its latest checkpoint"
          : `checkpoint ${resume.checkpointId}`
      }: ${where} has ${
        completed.length === 0
          ? "no completed checkpoint"
          : `completed checkpoints ${completed.join(", ")}`
      }`,
    );
  }
  const meta = await storage.readMetadata(resume.jobId, id); // fails early, naming the path
  checkRestorable(meta, graph, {
    what: `job ${resume.jobId} from checkpoint ${id}`,
    allowNonRestoredState: resume.allowNonRestoredState ?? false,
  });
  return { jobId: resume.jobId, checkpointId: id };
}

/**
 * Checks a snapshot against the job restoring it. Like Flink, it refuses to
 * drop state silently: every operator that had state must find an operator
 * with its uid, unless `allowNonRestoredState`. A checkpoint must have been
 * taken with the job's max parallelism of each vertex; a savepoint may not
 * (its keys are re-hashed, `runtime/state/rehash.ts`).
 * @throws {ResumeError} naming the uids or the vertex and both max parallelisms.
 */
export function checkRestorable(
  meta: CheckpointMetadata,
  graph: JobGraphShape,
  options: { readonly what: string; readonly allowNonRestoredState: boolean },
): void {
  const uids = new Set(graph.vertices.flatMap((v) => v.operators.map((o) => o.uid)));
  const orphaned = [
    ...new Set(meta.vertices.flatMap((v) => v.subtasks.flatMap((s) => s.stateUids))),
  ].filter((uid) => !uids.has(uid)).sort();
  if (orphaned.length > 0 && !options.allowNonRestoredState) {
    throw new ResumeError(
      `Cannot resume ${options.what}: it holds state of operator uids ` +
        `[${orphaned.join(", ")}] that no operator of this job has. Give the operators their ` +
        `former uids, or resume with allowNonRestoredState: true to drop that state ` +
        `(Flink's --allowNonRestoredState)`,
    );
  }
  if (meta.kind === "savepoint") return;
  for (const old of meta.vertices) {
    const now = graph.vertices.find((v) =>
      v.operators.some((o) => old.operatorUids.includes(o.uid))
    );
    if (now !== undefined && now.maxParallelism !== old.maxParallelism) {
      throw new ResumeError(
        `Cannot resume ${options.what}: vertex ${now.id} has max parallelism ${now.maxParallelism}, ` +
          `the checkpoint was taken with ${old.maxParallelism}; only a savepoint can be restored ` +
          `with another max parallelism (take one with triggerSavepoint, or keep ${old.maxParallelism})`,
      );
    }
  }
}

/** A resolved savepoint restore: where to restore from, and the storage to read it with. */
export interface SavepointRestore {
  /** The restore point (`jobId` is the savepoint id). */
  readonly point: RestorePoint;
  /** The job's storage combined with the savepoint's (reads of the savepoint go there). */
  readonly storage: CheckpointStorage;
}

/**
 * Finds and checks the savepoint at `path` for a local run (a directory
 * path). The job's `storage` is combined with the savepoint directory's, so
 * subtasks read the savepoint where it is and never write or delete it.
 * @throws {ResumeError} when the path names no readable savepoint (a
 *   `nats-object-store://` path needs cluster mode), or as {@linkcode checkRestorable}.
 */
export async function resolveLocalSavepoint(
  storage: CheckpointStorage,
  resume: ResumeRequest & { readonly savepointPath: string },
  graph: JobGraphShape,
): Promise<SavepointRestore> {
  let where;
  try {
    where = parseSavepointPath(resume.savepointPath);
  } catch (error) {
    throw new ResumeError(`Cannot restore savepoint: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (where.kind !== "directory") {
    throw new ResumeError(
      `Cannot restore savepoint ${resume.savepointPath} in local mode: it is in a NATS Object ` +
        `Store bucket; run the job on the cluster (--nats <url>), or give a directory path`,
    );
  }
  const spStorage = localSavepointStorage(where.directory);
  let meta: CheckpointMetadata;
  try {
    meta = await readSavepointMetadata(spStorage, where.savepointId);
  } catch (error) {
    throw new ResumeError(
      `Cannot restore savepoint ${resume.savepointPath}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  checkRestorable(meta, graph, {
    what: `savepoint ${resume.savepointPath}`,
    allowNonRestoredState: resume.allowNonRestoredState ?? false,
  });
  return {
    point: { jobId: where.savepointId, checkpointId: meta.checkpointId },
    storage: savepointReadingStorage(storage, where.savepointId, spStorage),
  };
}

/** A job started in this process (see {@linkcode startLocally}). */
export interface LocalJob {
  /** The job's id. */
  readonly jobId: string;
  /** The id of the run's one worker: `local`, or `local-<jobId>` with `transports`. */
  readonly workerId: string;
  /**
   * The job's coordinator, to read what it knows (live metrics, checkpoint
   * statistics, placement, attempts, restarts, failovers: what the local
   * dashboard shows, `local_rest_backend.ts`). Act on the job through this
   * handle's methods, not the coordinator's.
   */
  readonly coordinator: JobCoordinator;
  /** Settles when the job ended, as `executeLocally`. */
  readonly result: Promise<JobExecutionResult>;
  /** See `JobCoordinator.triggerSavepoint`. */
  triggerSavepoint(directory?: string): Promise<string>;
  /** See `JobCoordinator.stopWithSavepoint`. */
  stopWithSavepoint(options?: StopWithSavepointOptions): Promise<string>;
  /** Cancels the job; `result` rejects. */
  cancel(): void;
}

/**
 * Runs `graph` in this process until it finishes.
 * @throws {ResumeError} when `resume` names no readable completed checkpoint.
 * @throws {JobFailedError} when the job fails for good.
 */
export async function executeLocally(
  graph: JobGraph,
  options: LocalExecutionOptions,
): Promise<JobExecutionResult> {
  return await (await startLocally(graph, options)).result;
}

/**
 * Starts `graph` in this process and returns once it is deploying, with a
 * handle on it (savepoints, stop, cancel, the result).
 * @throws {ResumeError} when `resume` names no readable completed checkpoint or savepoint.
 */
export async function startLocally(
  graph: JobGraph,
  options: LocalExecutionOptions,
): Promise<LocalJob> {
  const jobStorage = options.storage ??
    new LocalDirectoryCheckpointStorage({ directory: options.checkpointDirectory });
  let storage = jobStorage;
  let restoreFrom: RestorePoint | null = null;
  const resume = options.resume;
  if (resume?.savepointPath !== undefined) {
    const restore = await resolveLocalSavepoint(
      jobStorage,
      { ...resume, savepointPath: resume.savepointPath },
      graph,
    );
    restoreFrom = restore.point;
    storage = restore.storage;
  } else if (resume) {
    restoreFrom = await resolveResume(jobStorage, resume, graph);
  }
  const jobId = newJobId(graph.name);
  const bus = options.bus ?? new InProcessBus();
  const makeTransport = options.transports ?? (() => bus.connect());
  const workerId = options.transports === undefined ? "local" : `local-${jobId}`;
  const coordinatorTransport = await makeTransport();
  const workerTransport = await Promise.resolve().then(makeTransport).catch(async (error) => {
    await coordinatorTransport.close();
    throw error;
  });
  const worker = new Worker({
    transport: workerTransport,
    workerId,
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
    failoverStrategy: options.failoverStrategy,
    workers: () => [workerId],
    restoreFrom,
    deployTimeoutMs: 60_000,
    local: true,
    faults: options.coordinatorFaults,
    savepointStorage: (directory) =>
      localSavepointStorage(
        directory ?? options.savepointDirectory ??
          join(options.checkpointDirectory, "..", "savepoints"),
      ),
    restoreSettings: {
      kind: resume?.savepointPath !== undefined ? "savepoint" : "checkpoint",
      mode: resume?.restoreMode ?? "NO_CLAIM",
    },
  });
  const run = async () => {
    try {
      // Over NATS, the server must know the worker's subscription before the
      // coordinator (another connection) deploys to it.
      await workerTransport.flush();
      return await coordinator.run();
    } finally {
      worker.close();
      await coordinatorTransport.close();
      await workerTransport.close();
    }
  };
  return {
    jobId,
    workerId,
    coordinator,
    result: run(),
    triggerSavepoint: (directory) => coordinator.triggerSavepoint(directory),
    stopWithSavepoint: (o) => coordinator.stopWithSavepoint(o),
    cancel: () => coordinator.cancel(),
  };
}
