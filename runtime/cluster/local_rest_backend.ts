/**
 * The REST API's backend for a job run in this process (local mode with
 * `--ui` or `WEIR_UI_PORT`, `local_dashboard.ts`): one job and one worker,
 * `local`, served from the run's own `JobCoordinator` as the cluster
 * coordinator serves its jobs (`ClusterCoordinator`'s `jobFacts`,
 * `overview`, `cancelJob`, `savepoint`). Flink's MiniCluster likewise
 * serves its web UI for a job run in the IDE.
 *
 * ## States
 *
 * Before {@linkcode LocalRestBackend.attach} the overview lists the worker
 * and no job (the server binds its port before the job starts, so a taken
 * port fails the run before anything is deployed). Once attached the job is
 * `RUNNING` until its result settles, then `FINISHED` (it finished, or
 * stopped with a savepoint), `CANCELED` (cancelled) or `FAILED`, with its
 * end time and error, as {@linkcode localJobEnd} decides.
 *
 * The worker has one slot, `local` (every subtask of a local run runs in
 * it), and no heartbeats: its time since the last one is 0.
 *
 * @module
 */

import { hostname } from "node:os";
import type { JobFacts, RestBackend, SavepointOrder } from "./rest/job_facts.ts";
import type { CancelReply, ClusterOverview, JobStatus, WorkerStatus } from "./cluster_protocol.ts";
import type { JobGraphSummary } from "../graph/job_graph_summary.ts";
import type { CheckpointConfig } from "../api/executor.ts";
import type { LocalJob } from "./local_executor.ts";
import { JobFailedError } from "./job_result.ts";

/** A local run as the backend serves it. */
export interface LocalRun {
  /** The started job (`startLocally`). */
  readonly job: LocalJob;
  /** Its graph (`summarizeJobGraph`). */
  readonly graph: JobGraphSummary;
  /** Its checkpointing settings. */
  readonly checkpointing: CheckpointConfig;
  /** The job module's URL (`Deno.mainModule`). */
  readonly moduleUrl: string;
  /** The job module's arguments. */
  readonly args?: readonly string[] | undefined;
  /** The run's default parallelism (`WEIR_PARALLELISM`), if any. */
  readonly defaultParallelism?: number | undefined;
}

/** How a local job ended: its final state and, unless it finished, its error. */
export interface LocalJobEnd {
  /** `FINISHED`, `CANCELED` or `FAILED`. */
  readonly status: "FINISHED" | "CANCELED" | "FAILED";
  /** `name: message` of the error, unless it finished. */
  readonly error?: string | undefined;
}

/**
 * The final state of a local job from how its result settled: resolved is
 * `FINISHED`; a `JobFailedError` saying the job `was cancelled` is
 * `CANCELED` (as the cluster coordinator decides); any other rejection is
 * `FAILED`. Pure.
 * @param outcome `{ ok: true }` when the result resolved, else the rejection.
 */
export function localJobEnd(
  outcome: { readonly ok: true } | { readonly ok: false; readonly error: unknown },
): LocalJobEnd {
  if (outcome.ok) return { status: "FINISHED" };
  const e = outcome.error;
  const cancelled = e instanceof JobFailedError && / was cancelled$/.test(e.message);
  return {
    status: cancelled ? "CANCELED" : "FAILED",
    error: e instanceof Error ? `${e.name}: ${e.message}` : String(e),
  };
}

/** Options of {@linkcode LocalRestBackend}. */
export interface LocalRestBackendOptions {
  /** The clock, epoch ms; default `Date.now`. */
  readonly now?: (() => number) | undefined;
  /** The host name the worker is listed with; default the machine's (`localhost` without `--allow-sys`). */
  readonly host?: string | undefined;
  /** The process id it is listed with; default `Deno.pid`. */
  readonly pid?: number | undefined;
}

/** The REST backend of one local run (see the module docs). */
export class LocalRestBackend implements RestBackend {
  readonly #now: () => number;
  readonly #host: string;
  readonly #pid: number;
  #run: LocalRun | undefined;
  #end: (LocalJobEnd & { readonly at: number }) | undefined;

  /** A backend with no job yet (see {@linkcode attach}). */
  constructor(options: LocalRestBackendOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#host = options.host ?? machineName();
    this.#pid = options.pid ?? Deno.pid;
  }

  /**
   * Serves `run` from now on, and records its end when its result settles.
   * @throws {Error} when a run is already attached (one job per backend).
   */
  attach(run: LocalRun): void {
    if (this.#run !== undefined) {
      throw new Error(
        `the local REST backend already serves job ${this.#run.job.jobId}; ` +
          `it cannot also serve job ${run.job.jobId}`,
      );
    }
    this.#run = run;
    run.job.result.then(
      () => this.#ended({ ok: true }),
      (error) => this.#ended({ ok: false, error }),
    );
  }

  #ended(outcome: { ok: true } | { ok: false; error: unknown }): void {
    this.#end = { ...localJobEnd(outcome), at: this.#now() };
  }

  /** The job's status now (`undefined` before {@linkcode attach}). */
  status(): JobStatus | undefined {
    const run = this.#run;
    if (run === undefined) return undefined;
    const c = run.job.coordinator;
    const end = this.#end;
    return {
      jobId: run.job.jobId,
      name: run.graph.name,
      status: end?.status ?? "RUNNING",
      attempt: c.attempt,
      startedAt: c.startedAt,
      endedAt: end?.at,
      moduleUrl: run.moduleUrl,
      args: run.args,
      defaultParallelism: run.defaultParallelism,
      parallelism: Math.max(0, ...run.graph.vertices.map((v) => v.parallelism)),
      error: end?.error,
      lastFailure: c.lastFailure,
      restartedAfter: c.restartedAfter,
    };
  }

  /** The job (none before {@linkcode attach}) and the worker. */
  overview(): ClusterOverview {
    const status = this.status();
    const workerId = this.#run?.job.workerId ?? "local";
    const worker: WorkerStatus = {
      workerId,
      host: this.#host,
      pid: this.#pid,
      slots: 1,
      slotIds: [workerId],
      lastHeartbeatAgoMs: 0,
    };
    return { jobs: status === undefined ? [] : [status], workers: [worker] };
  }

  /** The facts of the job, when `jobId` is its id. */
  jobFacts(jobId: string): JobFacts | undefined {
    const run = this.#run;
    const status = this.status();
    if (run === undefined || status === undefined || jobId !== run.job.jobId) return undefined;
    const c = run.job.coordinator;
    return {
      status,
      graph: run.graph,
      checkpointing: run.checkpointing,
      metrics: c.liveMetrics,
      checkpoints: c.checkpointStats,
      placement: c.placement,
      restarts: c.restarts,
      subtaskAttempts: c.subtaskAttempts,
      failovers: c.failovers,
    };
  }

  /** Cancels the job; the reply says why not (another id, or it ended). */
  cancelJob(jobId: string): CancelReply {
    const status = this.status();
    if (status === undefined || status.jobId !== jobId) {
      return { ok: false, error: `no job ${jobId}` };
    }
    if (status.status !== "RUNNING") {
      return { ok: false, error: `job ${jobId} is already ${status.status}` };
    }
    this.#run!.job.cancel();
    return { ok: true };
  }

  /**
   * Takes a savepoint of the job, or stops it with one.
   * @returns the savepoint's path, once stored.
   * @throws (rejects) when `order.jobId` is not the job or it ended, or the savepoint fails.
   */
  savepoint(order: SavepointOrder): Promise<string> {
    const status = this.status();
    if (status === undefined || status.jobId !== order.jobId) {
      return Promise.reject(new Error(`no job ${order.jobId}`));
    }
    if (status.status !== "RUNNING") {
      return Promise.reject(new Error(`job ${order.jobId} is ${status.status}`));
    }
    const job = this.#run!.job;
    return order.stop
      ? job.stopWithSavepoint({ directory: order.directory, drain: order.drain })
      : job.triggerSavepoint(order.directory);
  }
}

function machineName(): string {
  try {
    return hostname();
  } catch {
    return "localhost"; // no --allow-sys
  }
}
