/**
 * Accepting a job submission on the coordinator process (Flink's
 * `Dispatcher.submitJob`): the request is checked, its restore point
 * resolved (a savepoint path, or a job and checkpoint to resume), its
 * {@linkcode JobCoordinator} built, and, with high availability, the job
 * recorded in the job store before the client hears of it. The outcome is a
 * union: `accepted` with the job's table entry, or `refused` with the reply
 * text. `ClusterCoordinator` answers the client, adds the entry to its job
 * table and runs the job.
 *
 * The checks, the initial status and the coordinator's options are pure
 * ({@linkcode checkSubmission}, {@linkcode submittedJobStatus},
 * {@linkcode jobRestoreSettings}, {@linkcode jobCoordinatorOptions}); reading
 * storage and writing the job store are the I/O at the edges of
 * {@linkcode acceptSubmission}.
 *
 * ## Invariants
 *
 * - A refused submission leaves nothing behind: no table entry, no record
 *   in the job store, no coordinator started.
 * - With high availability, a job is recorded before the client is told it
 *   was accepted, so a new leader knows every job a client was told of.
 *
 * @module
 */

import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { RestorePoint } from "../task/messages.ts";
import type { RestoreMode } from "../api/executor.ts";
import { InvalidConfigurationError } from "../failure.ts";
import type { JobCoordinator } from "./coordinator.ts";
import type { ClusterJob } from "./cluster_jobs.ts";
import type { JobSpecReply, JobStatus, SubmitRequest } from "./cluster_protocol.ts";
import type { LeaderJobRecords } from "./ha/leader_job_records.ts";
import { resolveResume } from "./local_executor.ts";
import { clusterSavepointStorage, resolveClusterSavepoint } from "./cluster_savepoint_location.ts";
import type { Transport } from "../actor/types.ts";
import type { JobCoordinatorOptions } from "./job_coordinator_options.ts";
import { describeError as describe } from "./restore_decision.ts";

/** Job ids: letters, digits, `_` and `-` (they name NATS subjects and storage paths). */
const JOB_ID = /^[A-Za-z0-9_-]+$/;

/** What {@linkcode checkSubmission} makes of a decoded submission. */
export type SubmissionCheck =
  | { readonly ok: true; readonly request: SubmitRequest }
  | { readonly ok: false; readonly error: string };

/**
 * Checks a decoded submission: its job id is valid and not taken. Pure.
 * @param request the decoded body.
 * @param known whether a job with this id is in the job table.
 * @returns the request, or the reply text naming what was wrong.
 */
export function checkSubmission(
  request: unknown,
  known: (jobId: string) => boolean,
): SubmissionCheck {
  const jobId = (request as { jobId?: unknown } | null)?.jobId;
  if (typeof jobId !== "string" || !JOB_ID.test(jobId)) {
    return { ok: false, error: `TypeError: invalid job id ${JSON.stringify(jobId)}` };
  }
  if (known(jobId)) {
    return { ok: false, error: `Error: a job with id ${jobId} was already submitted` };
  }
  return { ok: true, request: request as SubmitRequest };
}

/** How a submission's restore point is restored: its kind and restore mode. Pure. */
export function jobRestoreSettings(
  request: SubmitRequest,
): { kind: "checkpoint" | "savepoint"; mode: RestoreMode } {
  return {
    kind: request.resume?.savepointPath !== undefined ? "savepoint" : "checkpoint",
    mode: request.resume?.restoreMode ?? "NO_CLAIM",
  };
}

/**
 * The status of a job just submitted: RUNNING on attempt 0, started at
 * `now` (epoch ms), with the module, its args and the largest vertex
 * parallelism. Pure.
 */
export function submittedJobStatus(request: SubmitRequest, now: number): JobStatus {
  return {
    jobId: request.jobId,
    name: request.graph.name,
    status: "RUNNING",
    attempt: 0,
    startedAt: now,
    moduleUrl: request.moduleUrl,
    args: request.args,
    defaultParallelism: request.defaultParallelism,
    parallelism: Math.max(...request.graph.vertices.map((v) => v.parallelism)),
  };
}

/** What {@linkcode acceptSubmission} needs from the coordinator process. */
export interface SubmissionContext {
  /** Checkpoint storage shared with every worker (savepoints and resumed checkpoints are read there). */
  readonly storage: CheckpointStorage;
  /** The Object Store bucket behind `storage`. */
  readonly checkpointBucket: string;
  /** High availability: the job store as this leader term writes it. */
  readonly records?: LeaderJobRecords | undefined;
  /**
   * Builds the job's coordinator restoring `restoreFrom` (`null`: from scratch).
   * @throws {RangeError} for settings the coordinator refuses.
   */
  readonly jobCoordinator: (
    request: SubmitRequest,
    restoreFrom: RestorePoint | null,
  ) => JobCoordinator;
  /** Now, epoch ms. */
  readonly now: () => number;
}

/** How a submission ends: `accepted` with the job's entry, or `refused` with the reply text. */
export type SubmissionOutcome =
  /** The job is accepted (and recorded, with high availability): add `entry` and run it. */
  | { readonly kind: "accepted"; readonly entry: ClusterJob }
  /** The submission is refused; `error` is the reply's text. */
  | { readonly kind: "refused"; readonly error: string };

/**
 * Accepts a checked submission (see the module docs): resolves its restore
 * point, builds its coordinator and, with high availability, records it in
 * the job store. Never rejects: every failure is a `refused` outcome
 * naming it (a restore point that cannot be resolved, a configuration the
 * coordinator refuses, a job store out of reach).
 */
export async function acceptSubmission(
  request: SubmitRequest,
  context: SubmissionContext,
): Promise<SubmissionOutcome> {
  let restoreFrom: RestorePoint | null = null;
  try {
    if (request.resume?.savepointPath !== undefined) {
      restoreFrom = await resolveClusterSavepoint(
        context.storage,
        context.checkpointBucket,
        request,
      );
    } else if (request.resume) {
      restoreFrom = await resolveResume(context.storage, request.resume, request.graph);
    }
  } catch (error) {
    return { kind: "refused", error: describe(error) };
  }
  let coordinator: JobCoordinator;
  try {
    coordinator = context.jobCoordinator(request, restoreFrom);
  } catch (error) {
    // Settings a client should have refused (a job that bypassed its checks).
    const invalid = new InvalidConfigurationError(
      `job ${request.jobId} '${request.graph.name}' has an invalid configuration: ` +
        describe(error),
      { cause: error },
    );
    return { kind: "refused", error: describe(invalid) };
  }
  const entry: ClusterJob = {
    request,
    coordinator,
    status: submittedJobStatus(request, context.now()),
  };
  if (context.records !== undefined) {
    try {
      // Before the client hears of the job: a new leader must know it.
      await context.records.submitted({
        request,
        restoreFrom,
        restoreSettings: jobRestoreSettings(request),
        submittedAt: entry.status.startedAt,
      });
    } catch (error) {
      return {
        kind: "refused",
        error: `cannot record job ${request.jobId} in the job store: ${describe(error)}`,
      };
    }
  }
  return { kind: "accepted", entry };
}

/** A job a new leader takes over (`ClusterCoordinator.recover`): how it resumes. */
export interface ResumedJob {
  /** The attempt it resumes as. */
  readonly firstAttempt: number;
  /** Every completed checkpoint of the job found in storage. */
  readonly recoveredCheckpoints: readonly number[];
  /** How its restore point is restored. */
  readonly restoreSettings: { kind: "checkpoint" | "savepoint"; mode: RestoreMode };
}

/** What {@linkcode jobCoordinatorOptions} takes from the coordinator process. */
export interface CoordinatorProcessFacts {
  /** The transport (NATS in production). */
  readonly transport: Transport;
  /** Checkpoint storage shared with every worker. */
  readonly storage: CheckpointStorage;
  /** The Object Store bucket behind `storage` (savepoints are stored beside it). */
  readonly checkpointBucket: string;
  /** High availability: the job store as this leader term writes it (its epoch fences workers). */
  readonly records?: LeaderJobRecords | undefined;
  /** How long subtasks may take to become ready, in ms; default 60 000. */
  readonly deployTimeoutMs?: number | undefined;
  /** The slots a deployment may use now. */
  readonly workers: () => string[];
}

/**
 * The options of a submitted (or, with `resumed`, taken over) job's
 * {@linkcode JobCoordinator}: its graph and settings from the request, the
 * process's transport, storage and slots, and with high availability the
 * leader epoch and the job store write before each attempt deploys. Pure:
 * builds the options, starts nothing.
 */
export function jobCoordinatorOptions(
  request: SubmitRequest,
  restoreFrom: RestorePoint | null,
  process: CoordinatorProcessFacts,
  resumed?: ResumedJob,
): JobCoordinatorOptions {
  const records = process.records;
  return {
    ...(records === undefined ? {} : {
      leaderEpoch: records.epoch,
      beforeDeploy: (attempt: number) => records.attemptDeploying(request.jobId, attempt),
    }),
    firstAttempt: resumed?.firstAttempt ?? 0,
    transport: process.transport,
    jobId: request.jobId,
    graph: request.graph,
    storage: process.storage,
    checkpointing: request.checkpointing,
    restartStrategy: request.restartStrategy,
    failoverStrategy: request.failoverStrategy,
    workers: process.workers,
    restoreFrom,
    recoveredCheckpoints: resumed?.recoveredCheckpoints,
    deployTimeoutMs: process.deployTimeoutMs ?? 60_000,
    savepointStorage: (directory) =>
      clusterSavepointStorage(process.storage, process.checkpointBucket, directory),
    restoreSettings: resumed?.restoreSettings ?? jobRestoreSettings(request),
  };
}

/**
 * The answer to a worker asking for job `jobId`'s spec (to import its
 * module and rebuild its graph): the submitted module, args, graph
 * fingerprint, checkpoint bucket and default parallelism, while the job
 * runs; else an error naming the job. Pure.
 */
export function jobSpecReply(
  jobId: string,
  job: ClusterJob | undefined,
  checkpointBucket: string,
): JobSpecReply {
  if (!job || job.status.status !== "RUNNING") {
    return { ok: false, error: `no running job ${jobId}` };
  }
  const r = job.request;
  return {
    ok: true,
    spec: {
      jobId,
      moduleUrl: r.moduleUrl,
      args: r.args,
      fingerprint: r.graph.fingerprint,
      checkpointBucket,
      defaultParallelism: r.defaultParallelism,
    },
  };
}
