/**
 * The JSON shapes the dashboard reads from Weir's REST API
 * (`runtime/cluster/rest/openapi.yaml` is the reference; the shapes are
 * Flink's REST API's). Only the fields the dashboard uses are typed, and
 * fields a coordinator of an earlier Weir may leave out (`plan`,
 * `operators`, `attempt` in `/jobs/overview`, `/taskmanagers`) are optional.
 *
 * Units: times in ms, timestamps in ms since the epoch, sizes in bytes.
 *
 * @module
 */

/** Weir's job states (Flink's `JobStatus` subset). */
export type JobState =
  | "WAITING_FOR_RESOURCES"
  | "RUNNING"
  | "FINISHED"
  | "FAILED"
  | "CANCELED"
  | string;

/** `GET /overview` (Flink's `ClusterOverviewWithVersion`). */
export interface ClusterOverview {
  /** Live workers. */
  readonly taskmanagers: number;
  readonly "slots-total": number;
  readonly "slots-available": number;
  readonly "jobs-running": number;
  readonly "jobs-finished": number;
  readonly "jobs-cancelled": number;
  readonly "jobs-failed": number;
  /** Weir's version. */
  readonly "flink-version"?: string;
}

/** One line of `GET /jobs/overview` (Flink's `JobDetails` of `MultipleJobsDetails`). */
export interface JobOverview {
  readonly jid: string;
  readonly name: string;
  readonly state: JobState;
  /** Epoch ms. */
  readonly "start-time": number;
  /** Epoch ms; -1 while running. */
  readonly "end-time": number;
  /** ms. */
  readonly duration: number;
  /** Total subtasks and subtasks by state. */
  readonly tasks: Readonly<Record<string, number>>;
  /** Weir: the current attempt (0 first). */
  readonly attempt?: number;
  /** Weir: restarts so far. */
  readonly numRestarts?: number;
}

/** `GET /jobs/overview`. */
export interface JobsOverview {
  readonly jobs: readonly JobOverview[];
}

/** An input edge of a plan node (Flink's `JobPlanInfo` input). */
export interface PlanInput {
  readonly num: number;
  /** The upstream vertex id. */
  readonly id: string;
  /** FORWARD, HASH, REBALANCE, BROADCAST, RESCALE, GLOBAL, ... */
  readonly ship_strategy: string;
  readonly exchange?: string;
}

/** A node of a job's plan (Flink's `JobPlanInfo` node): one vertex, a chain of operators. */
export interface PlanNode {
  readonly id: string;
  readonly parallelism: number;
  readonly operator?: string;
  readonly operator_strategy?: string;
  /** The chain's operator names joined with " -> ". */
  readonly description: string;
  readonly inputs?: readonly PlanInput[];
}

/** A job's plan (Flink's `JobPlanInfo.Plan`). */
export interface JobPlan {
  readonly jid: string;
  readonly name: string;
  readonly type?: string;
  readonly nodes: readonly PlanNode[];
}

/** Record counters of a vertex or subtask (Flink's `IOMetricsInfo`). */
export interface IoMetrics {
  readonly "read-records"?: number;
  readonly "write-records"?: number;
  readonly "read-records-complete"?: boolean;
  readonly "write-records-complete"?: boolean;
}

/** A vertex of `GET /jobs/:jobid`. */
export interface JobVertex {
  readonly id: string;
  readonly name: string;
  readonly parallelism: number;
  readonly maxParallelism?: number;
  readonly status: string;
  readonly tasks?: Readonly<Record<string, number>>;
  readonly metrics?: IoMetrics;
  /** Weir: the chain's operators (uid and name), head first. */
  readonly operators?: readonly { readonly uid: string; readonly name: string }[];
  /** Weir: each subtask's attempt, by subtask index; null while its region restarts. */
  readonly "subtask-attempts"?: readonly (number | null)[];
}

/** `GET /jobs/:jobid` (Flink's `JobDetailsInfo`). */
export interface JobDetails {
  readonly jid: string;
  readonly name: string;
  readonly state: JobState;
  readonly "start-time": number;
  readonly "end-time": number;
  readonly duration: number;
  readonly now: number;
  readonly vertices: readonly JobVertex[];
  readonly "status-counts"?: Readonly<Record<string, number>>;
  readonly attempt?: number;
  readonly numRestarts?: number;
  readonly plan?: JobPlan;
}

/** `GET /jobs/:jobid/vertices/:vertexid` subtask entry (Flink's `SubtaskExecutionAttemptDetailsInfo`). */
export interface VertexSubtask {
  readonly subtask: number;
  readonly status: string;
  readonly attempt: number | null;
  readonly "taskmanager-id"?: string | null;
  readonly host?: string | null;
  readonly duration?: number;
  readonly metrics?: IoMetrics;
}

/** `GET /jobs/:jobid/vertices/:vertexid` (Flink's `JobVertexDetailsInfo`). */
export interface VertexDetails {
  readonly id: string;
  readonly name: string;
  readonly parallelism: number;
  readonly now: number;
  readonly subtasks: readonly VertexSubtask[];
}

/** Flink's back-pressure levels as the REST API writes them. */
export type BackPressureLevelJson = "ok" | "low" | "high";

/** `GET /jobs/:jobid/vertices/:vertexid/backpressure` (Flink's `JobVertexBackPressureInfo`). */
export interface BackPressureInfo {
  readonly status: "ok" | "deprecated" | string;
  readonly "backpressure-level": BackPressureLevelJson;
  readonly "end-timestamp"?: number;
  readonly subtasks: readonly {
    readonly subtask: number;
    readonly "backpressure-level": BackPressureLevelJson;
    /** Time back-pressured, 0 to 1. */
    readonly ratio: number;
    readonly idleRatio: number;
    readonly busyRatio: number;
  }[];
}

/** A metric of `.../metrics` or `.../watermarks` (Flink's `MetricCollectionResponseBody`): values are strings. */
export interface MetricValue {
  readonly id: string;
  readonly value?: string;
}

/** A metric of `.../subtasks/metrics` (Flink's `AggregatedMetricsResponseBody`). */
export interface AggregatedMetric {
  readonly id: string;
  readonly min?: number;
  readonly max?: number;
  readonly avg?: number;
  readonly sum?: number;
}

/** An entry of `exceptionHistory.entries` of `GET /jobs/:jobid/exceptions`. */
export interface ExceptionEntry {
  readonly exceptionName: string;
  /** The failure, `name: message`. */
  readonly stacktrace: string;
  readonly timestamp: number;
  /** The failed subtask, `vertexId#subtask`; null when none is named. */
  readonly taskName?: string | null;
  readonly location?: string | null;
  readonly failover?: {
    readonly scope: "region" | "full" | string;
    readonly region: number | null;
    readonly regionDescription: string | null;
    readonly failedAttempt: number;
    readonly attempt: number | null;
  };
}

/** `GET /jobs/:jobid/exceptions` (Flink's `JobExceptionsInfoWithHistory`). */
export interface JobExceptions {
  readonly "root-exception": string | null;
  readonly timestamp: number | null;
  readonly exceptionHistory: {
    readonly entries: readonly ExceptionEntry[];
    readonly truncated?: boolean;
  };
}

/** Per-vertex statistics of a checkpoint (Flink's `TaskCheckpointStatistics`). */
export interface TaskCheckpoint {
  readonly id: number;
  readonly status: string;
  readonly latest_ack_timestamp: number;
  readonly checkpointed_size: number;
  readonly state_size: number;
  readonly end_to_end_duration: number;
  readonly num_subtasks: number;
  readonly num_acknowledged_subtasks: number;
}

/** One checkpoint (Flink's `CheckpointStatistics`). */
export interface Checkpoint {
  readonly className?: string;
  readonly id: number;
  readonly status: "IN_PROGRESS" | "COMPLETED" | "FAILED" | string;
  readonly is_savepoint: boolean;
  readonly trigger_timestamp: number;
  /** -1 before the first ack. */
  readonly latest_ack_timestamp: number;
  /** Bytes this checkpoint wrote. */
  readonly checkpointed_size: number;
  /** Bytes of all state it refers to. */
  readonly state_size: number;
  readonly end_to_end_duration: number;
  readonly num_subtasks: number;
  readonly num_acknowledged_subtasks: number;
  readonly checkpoint_type?: string;
  readonly external_path?: string | null;
  readonly failure_timestamp?: number;
  readonly failure_message?: string | null;
  /** By vertex id (details route only). */
  readonly tasks?: Readonly<Record<string, TaskCheckpoint>>;
}

/** min/max/avg (and percentiles) of a statistic. */
export interface StatsSummary {
  readonly min: number;
  readonly max: number;
  readonly avg: number;
  readonly p50?: number;
  readonly p90?: number;
  readonly p99?: number;
}

/** `GET /jobs/:jobid/checkpoints` (Flink's `CheckpointingStatistics`). */
export interface CheckpointingStatistics {
  readonly counts: {
    readonly restored: number;
    readonly total: number;
    readonly in_progress: number;
    readonly completed: number;
    readonly failed: number;
  };
  readonly summary?: {
    readonly checkpointed_size?: StatsSummary;
    readonly state_size?: StatsSummary;
    readonly end_to_end_duration?: StatsSummary;
  };
  readonly latest: {
    readonly completed: Checkpoint | null;
    readonly savepoint?: Checkpoint | null;
    readonly failed: Checkpoint | null;
    readonly restored: {
      readonly id: number;
      readonly restore_timestamp: number;
      readonly is_savepoint: boolean;
      readonly external_path?: string | null;
    } | null;
  };
  readonly history: readonly Checkpoint[];
}

/** A subtask's acknowledgement of a checkpoint (Flink's `SubtaskCheckpointStatistics`). */
export interface SubtaskCheckpoint {
  readonly index: number;
  readonly status: "completed" | "pending_or_failed" | string;
  readonly ack_timestamp?: number;
  readonly end_to_end_duration?: number;
  readonly checkpointed_size?: number;
  readonly state_size?: number;
  readonly checkpoint?: { readonly sync?: number; readonly async?: number };
  readonly alignment?: { readonly duration?: number };
  readonly start_delay?: number;
}

/** `GET /jobs/:jobid/checkpoints/details/:cid/subtasks/:vid` (Flink's `TaskCheckpointStatisticsWithSubtaskDetails`). */
export interface CheckpointSubtasks extends TaskCheckpoint {
  readonly subtasks: readonly SubtaskCheckpoint[];
}

/** `GET /jobs/:jobid/checkpoints/config` (Flink's `CheckpointConfigInfo`). */
export type CheckpointConfig = Readonly<Record<string, unknown>>;

/** A worker of `GET /taskmanagers` (Flink's `TaskManagerInfo`). */
export interface TaskManager {
  readonly id: string;
  /** host:pid. */
  readonly path?: string;
  readonly dataPort?: number;
  /** ms since its last heartbeat. */
  readonly timeSinceLastHeartbeat?: number;
  readonly slotsNumber: number;
  readonly freeSlots: number;
}

/** `GET /taskmanagers` (Flink's `TaskManagersInfo`). */
export interface TaskManagers {
  readonly taskmanagers: readonly TaskManager[];
}

/** `202` of `POST /jobs/:jobid/savepoints` and `/stop` (Flink's `TriggerResponse`). */
export interface TriggerResponse {
  readonly "request-id": string;
}

/** `GET /jobs/:jobid/savepoints/:triggerid` (Flink's `AsynchronousOperationResult`). */
export interface SavepointStatus {
  readonly status: { readonly id: "IN_PROGRESS" | "COMPLETED" | string };
  readonly operation?: {
    readonly location?: string;
    readonly "failure-cause"?: { readonly class?: string; readonly "stack-trace"?: string };
  };
}
