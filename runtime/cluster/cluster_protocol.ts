/**
 * The cluster-level protocol between clients, the coordinator process and
 * worker processes, over NATS subjects (all messages are MessagePack maps):
 *
 * | Subject | Kind | From → to | Payload |
 * |---|---|---|---|
 * | `weir.cluster.submit` | request | client → coordinator | {@linkcode SubmitRequest} → {@linkcode SubmitReply} |
 * | `weir.cluster.list` | request | CLI → coordinator | `{}` → {@linkcode ClusterOverview} |
 * | `weir.cluster.cancel` | request | CLI → coordinator | `{ jobId }` → {@linkcode CancelReply} |
 * | `weir.cluster.savepoint` | request | CLI, client → coordinator | {@linkcode SavepointRequest} → {@linkcode SavepointReply} |
 * | `weir.cluster.stop` | request | CLI, client → coordinator | {@linkcode StopRequest} → {@linkcode SavepointReply} |
 * | `weir.cluster.job-spec` | request | worker → coordinator | `{ jobId }` → {@linkcode JobSpecReply} |
 * | `weir.cluster.job-status` | request | client → coordinator | `{ jobId }` → {@linkcode JobStatusReply} |
 * | `weir.cluster.heartbeat` | publish | worker → coordinator | {@linkcode Heartbeat}, every interval |
 * | `weir.cluster.info` | request | CLI → coordinator | `{ jobId }` → `JobInfoReply` (`rest/job_info.ts`: the REST API's job, checkpoints and exceptions bodies) |
 * | `weir.cluster.leader` | publish | new leader → workers | {@linkcode LeaderAnnouncement}, once per takeover |
 * | `weir.worker.<slotId>` | publish | job coordinator → worker | `WorkerMessage` (deploy, cancel, release) |
 *
 * Job ids come from {@linkcode newJobId} (the job name's `[A-Za-z0-9_-]`
 * characters and random hex digits) and slot ids from the worker id and
 * slot index, so no user text reaches a subject unescaped.
 *
 * @module
 */

import type { JobGraphSummary } from "../graph/job_graph_summary.ts";
import type { CheckpointConfig } from "./coordinator.ts";
import type { RestartStrategyConfig } from "./restart_strategy.ts";
import type { FailoverStrategy } from "../api/restart_strategy_config.ts";
import type { ResumeRequest } from "./local_executor.ts";
import type { JobExecutionResult } from "./job_result.ts";
import type { ErrorInfo } from "../task/messages.ts";

/** Subject of job submissions. */
export const SUBMIT_SUBJECT = "weir.cluster.submit";
/** Subject of job listings. */
export const LIST_SUBJECT = "weir.cluster.list";
/** Subject of cancellations. */
export const CANCEL_SUBJECT = "weir.cluster.cancel";
/** Subject of savepoint triggers (Flink's `POST /jobs/:id/savepoints`). */
export const SAVEPOINT_SUBJECT = "weir.cluster.savepoint";
/** Subject of stop-with-savepoint requests (Flink's `POST /jobs/:id/stop`). */
export const STOP_SUBJECT = "weir.cluster.stop";
/** Subject where slot threads fetch what they need to load a job. */
export const JOB_SPEC_SUBJECT = "weir.cluster.job-spec";
/** Subject where a client polls its job's status and outcome. */
export const JOB_STATUS_SUBJECT = "weir.cluster.job-status";
/** Subject of worker heartbeats. */
export const HEARTBEAT_SUBJECT = "weir.cluster.heartbeat";
/** Subject of `weir info` requests (answered from the REST API's views, `rest/job_info.ts`). */
export const INFO_SUBJECT = "weir.cluster.info";
/** Subject where a coordinator that became leader announces its epoch (high availability, `ha/`). */
export const LEADER_SUBJECT = "weir.cluster.leader";

/**
 * A new leader's announcement: workers end the slot threads an older epoch
 * started and heartbeat at once, registering with the new leader.
 */
export interface LeaderAnnouncement {
  /** The leader epoch (an integer >= 1, one above the previous leader's). */
  readonly epoch: number;
  /** The leading coordinator's candidate id. */
  readonly leader: string;
}

/** A job submission (Flink's client submitting a JobGraph). */
export interface SubmitRequest {
  /** The job's id, chosen by the client with `newJobId`. */
  readonly jobId: string;
  /** URL of the job module that workers import (`Deno.mainModule` of the client). */
  readonly moduleUrl: string;
  /** The job module's command-line arguments; workers see them as `Deno.args`. */
  readonly args: readonly string[];
  /** The graph the client built. */
  readonly graph: JobGraphSummary;
  /** Checkpointing settings. */
  readonly checkpointing: CheckpointConfig;
  /** Restart strategy. */
  readonly restartStrategy: RestartStrategyConfig;
  /** Which subtasks a failure restarts (`FailoverStrategy`); absent: `"region"`. */
  readonly failoverStrategy?: FailoverStrategy | undefined;
  /** The checkpoint to resume from, if any. */
  readonly resume?: ResumeRequest | undefined;
  /**
   * The client's default parallelism (`weir run -p N`, Flink's
   * `parallelism.default`), if it had one: slot threads rebuild the graph
   * with it, so it must reach them as the arguments do.
   */
  readonly defaultParallelism?: number | undefined;
}

/** The coordinator's answer to a {@linkcode SubmitRequest}. */
export type SubmitReply =
  | { readonly ok: true; readonly jobId: string }
  | { readonly ok: false; readonly error: string };

/** What a slot thread needs to load a job's module. */
export interface JobSpec {
  /** The job. */
  readonly jobId: string;
  /** The job module's URL. */
  readonly moduleUrl: string;
  /** Its arguments. */
  readonly args: readonly string[];
  /** The graph's fingerprint; the rebuilt graph must match it. */
  readonly fingerprint: string;
  /** The Object Store bucket of checkpoint storage. */
  readonly checkpointBucket: string;
  /** The submission's default parallelism, if it had one (see {@linkcode SubmitRequest}). */
  readonly defaultParallelism?: number | undefined;
}

/** The answer to a job-spec request. */
export type JobSpecReply =
  | { readonly ok: true; readonly spec: JobSpec }
  | { readonly ok: false; readonly error: string };

/** A worker's periodic sign of life. */
export interface Heartbeat {
  /** The worker's id (`[A-Za-z0-9_-]+`). */
  readonly workerId: string;
  /** Host name, for display. */
  readonly host: string;
  /** Process id, for display. */
  readonly pid: number;
  /**
   * Random per worker process: a new value under a known worker id means
   * the process was replaced (restarted faster than the heartbeat timeout).
   */
  readonly instance: string;
  /** The worker's slot ids; each is also a `weir.worker.<slotId>` subject. */
  readonly slots: readonly string[];
  /** Slot threads running, over all jobs. */
  readonly slotThreads: number;
  /** Wall-clock time of sending, in ms since the epoch. */
  readonly sentAt: number;
}

/**
 * The state of a job, as `cli.ts list` shows it (Flink's JobStatus names):
 * `WAITING_FOR_RESOURCES` while its current attempt waits for a slot to
 * deploy on (no worker registered; Flink's adaptive scheduler calls this
 * state `WaitingForResources`), `RUNNING` otherwise until it ends
 * `FINISHED`, `FAILED` or `CANCELED`.
 */
export type JobStatusName =
  | "WAITING_FOR_RESOURCES"
  | "RUNNING"
  | "FINISHED"
  | "FAILED"
  | "CANCELED";

/** One job in a {@linkcode ClusterOverview}. */
export interface JobStatus {
  /** The job's id. */
  readonly jobId: string;
  /** The job's name. */
  readonly name: string;
  /** Its state. */
  readonly status: JobStatusName;
  /** The current attempt (0 first). */
  readonly attempt: number;
  /** Submission time, in ms since the epoch. */
  readonly startedAt: number;
  /** End time, in ms since the epoch, once ended. */
  readonly endedAt?: number | undefined;
  /** The job module's URL. */
  readonly moduleUrl: string;
  /** The job module's arguments (what `weir resume JOB` runs it with again). */
  readonly args?: readonly string[] | undefined;
  /** The submission's default parallelism (`weir run -p N`), if it had one. */
  readonly defaultParallelism?: number | undefined;
  /** The largest parallelism of the job's vertices. */
  readonly parallelism?: number | undefined;
  /** Why it failed, when it did. */
  readonly error?: string | undefined;
  /** Why its latest attempt failed, when one did (the job may have restarted since). */
  readonly lastFailure?: string | undefined;
  /**
   * Why the current attempt exists once the job restarted: `attempt <n>
   * failed: <name>: <message>`, naming the failed attempt.
   */
  readonly restartedAfter?: string | undefined;
  /**
   * While the current attempt waits for slots to deploy on (`status` is then
   * `WAITING_FOR_RESOURCES`): what it waits for.
   */
  readonly waitingForSlots?: string | undefined;
}

/** One worker in a {@linkcode ClusterOverview}. */
export interface WorkerStatus {
  /** The worker's id. */
  readonly workerId: string;
  /** Host name. */
  readonly host: string;
  /** Process id. */
  readonly pid: number;
  /** Number of slots. */
  readonly slots: number;
  /** Its slots' ids (`<workerId>-s<i>`), which jobs' subtasks are placed on; absent from older coordinators. */
  readonly slotIds?: readonly string[] | undefined;
  /** Time since its last heartbeat, in ms. */
  readonly lastHeartbeatAgoMs: number;
}

/** What `weir.cluster.list` answers. */
export interface ClusterOverview {
  /** Jobs, running first, then the most recently ended. */
  readonly jobs: readonly JobStatus[];
  /** Live workers. */
  readonly workers: readonly WorkerStatus[];
}

/** The answer to a cancel request. */
export type CancelReply =
  | { readonly ok: true }
  | { readonly ok: false; readonly error: string };

/** How a job ended. */
export type JobOutcome =
  | { readonly t: "result"; readonly result: JobExecutionResult }
  | {
    readonly t: "failed";
    readonly error: ErrorInfo;
    /** Whether the job completed a checkpoint to resume from (`JobFailedError.resumable`). */
    readonly resumable?: boolean | undefined;
  };

/**
 * The answer to a job-status request: the status, and the outcome once the
 * job ended. Clients poll it, which survives NATS reconnects (a one-shot
 * message could be lost).
 */
export type JobStatusReply =
  | { readonly ok: true; readonly status: JobStatus; readonly outcome?: JobOutcome | undefined }
  | { readonly ok: false; readonly error: string };

/** Triggers a savepoint of a running job. */
export interface SavepointRequest {
  /** The job. */
  readonly jobId: string;
  /**
   * The savepoint directory; absent: the cluster's checkpoint bucket, the
   * only one a cluster accepts (`nats-object-store://<bucket>`).
   */
  readonly directory?: string | undefined;
}

/** Stops a running job with a savepoint (FLIP-34). */
export interface StopRequest extends SavepointRequest {
  /** Emit `MAX_WATERMARK` first, so event-time windows fire (Flink's `--drain`). */
  readonly drain: boolean;
}

/** The answer to a {@linkcode SavepointRequest} or {@linkcode StopRequest}, once the savepoint is stored. */
export type SavepointReply =
  | { readonly ok: true; readonly path: string }
  | { readonly ok: false; readonly error: string };
