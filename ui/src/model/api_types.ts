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
  /** Slots of all live workers. */
  readonly "slots-total": number;
  /** Slots no running job's subtask uses. */
  readonly "slots-available": number;
  /** Jobs not ended (running or waiting for resources). */
  readonly "jobs-running": number;
  /** Jobs ended FINISHED. */
  readonly "jobs-finished": number;
  /** Jobs ended CANCELED. */
  readonly "jobs-cancelled": number;
  /** Jobs ended FAILED. */
  readonly "jobs-failed": number;
  /** Weir's version. */
  readonly "flink-version"?: string;
}

/** One line of `GET /jobs/overview` (Flink's `JobDetails` of `MultipleJobsDetails`). */
export interface JobOverview {
  /** The job's id. */
  readonly jid: string;
  /** The job's name. */
  readonly name: string;
  /** The job's state. */
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
  /** One line per job the coordinator knows. */
  readonly jobs: readonly JobOverview[];
}

/** An input edge of a plan node (Flink's `JobPlanInfo` input). */
export interface PlanInput {
  /** The input's index at the downstream vertex. */
  readonly num: number;
  /** The upstream vertex id. */
  readonly id: string;
  /** FORWARD, HASH, REBALANCE, BROADCAST, RESCALE, GLOBAL, ... */
  readonly ship_strategy: string;
  /** Flink's result partition type, `pipelined_bounded`. */
  readonly exchange?: string;
}

/** A node of a job's plan (Flink's `JobPlanInfo` node): one vertex, a chain of operators. */
export interface PlanNode {
  /** The vertex id. */
  readonly id: string;
  /** The vertex's subtasks. */
  readonly parallelism: number;
  /** Flink's operator field (empty in Weir). */
  readonly operator?: string;
  /** Flink's operator strategy field (empty in Weir). */
  readonly operator_strategy?: string;
  /** The chain's operator names joined with " -> ". */
  readonly description: string;
  /** The edges into this vertex; absent for a source. */
  readonly inputs?: readonly PlanInput[];
}

/** A job's plan (Flink's `JobPlanInfo.Plan`). */
export interface JobPlan {
  /** The job's id. */
  readonly jid: string;
  /** The job's name. */
  readonly name: string;
  /** `STREAMING`. */
  readonly type?: string;
  /** One node per vertex. */
  readonly nodes: readonly PlanNode[];
}

/** Record counters of a vertex or subtask (Flink's `IOMetricsInfo`). */
export interface IoMetrics {
  /** Records the vertex or subtask received. */
  readonly "read-records"?: number;
  /** Records it emitted. */
  readonly "write-records"?: number;
  /** Whether `read-records` is final (the job ended). */
  readonly "read-records-complete"?: boolean;
  /** Whether `write-records` is final (the job ended). */
  readonly "write-records-complete"?: boolean;
}

/** A vertex of `GET /jobs/:jobid`. */
export interface JobVertex {
  /** The vertex id, e.g. `v1`. */
  readonly id: string;
  /** The chain's name (its operators joined with " -> "). */
  readonly name: string;
  /** Its subtasks. */
  readonly parallelism: number;
  /** Its key groups. */
  readonly maxParallelism?: number;
  /** The job's state (a vertex takes its job's). */
  readonly status: string;
  /** Subtasks by state. */
  readonly tasks?: Readonly<Record<string, number>>;
  /** Records in and out of all its subtasks. */
  readonly metrics?: IoMetrics;
  /** Weir: the chain's operators (uid and name), head first. */
  readonly operators?: readonly { readonly uid: string; readonly name: string }[];
  /** Weir: each subtask's attempt, by subtask index; null while its region restarts. */
  readonly "subtask-attempts"?: readonly (number | null)[];
}

/** `GET /jobs/:jobid` (Flink's `JobDetailsInfo`). */
export interface JobDetails {
  /** The job's id. */
  readonly jid: string;
  /** The job's name. */
  readonly name: string;
  /** The job's state. */
  readonly state: JobState;
  /** Epoch ms. */
  readonly "start-time": number;
  /** Epoch ms; -1 while running. */
  readonly "end-time": number;
  /** ms since the start, or until the end. */
  readonly duration: number;
  /** The coordinator's clock when it answered, epoch ms. */
  readonly now: number;
  /** The job graph's vertices, sources first. */
  readonly vertices: readonly JobVertex[];
  /** Subtasks by state. */
  readonly "status-counts"?: Readonly<Record<string, number>>;
  /** Weir: the current attempt (0 first). */
  readonly attempt?: number;
  /** Weir: restarts so far. */
  readonly numRestarts?: number;
  /** The job's plan (vertices and edges); absent from an older coordinator. */
  readonly plan?: JobPlan;
}

/** `GET /jobs/:jobid/vertices/:vertexid` subtask entry (Flink's `SubtaskExecutionAttemptDetailsInfo`). */
export interface VertexSubtask {
  /** The subtask index. */
  readonly subtask: number;
  /** DEPLOYING before its first metrics, RUNNING after, the job's state once ended. */
  readonly status: string;
  /** The attempt it runs as; null while its region restarts. */
  readonly attempt: number | null;
  /** The slot it runs on. */
  readonly "taskmanager-id"?: string | null;
  /** The slot it runs on. */
  readonly host?: string | null;
  /** ms it has run. */
  readonly duration?: number;
  /** Its records in and out. */
  readonly metrics?: IoMetrics;
}

/** `GET /jobs/:jobid/vertices/:vertexid` (Flink's `JobVertexDetailsInfo`). */
export interface VertexDetails {
  /** The vertex id. */
  readonly id: string;
  /** The vertex name. */
  readonly name: string;
  /** Its subtasks. */
  readonly parallelism: number;
  /** The coordinator's clock, epoch ms. */
  readonly now: number;
  /** One entry per subtask. */
  readonly subtasks: readonly VertexSubtask[];
}

/** Flink's back-pressure levels as the REST API writes them. */
export type BackPressureLevelJson = "ok" | "low" | "high";

/** `GET /jobs/:jobid/vertices/:vertexid/backpressure` (Flink's `JobVertexBackPressureInfo`). */
export interface BackPressureInfo {
  /** `deprecated` while no subtask has reported. */
  readonly status: "ok" | "deprecated" | string;
  /** The busiest subtask's level. */
  readonly "backpressure-level": BackPressureLevelJson;
  /** When it was measured, epoch ms. */
  readonly "end-timestamp"?: number;
  /** Each subtask's share of time back-pressured, busy and idle (0 to 1). */
  readonly subtasks: readonly {
    readonly subtask: number;
    /** The busiest subtask's level. */
    readonly "backpressure-level": BackPressureLevelJson;
    /** Time back-pressured, 0 to 1. */
    readonly ratio: number;
    readonly idleRatio: number;
    readonly busyRatio: number;
  }[];
}

/** A metric of `.../metrics` or `.../watermarks` (Flink's `MetricCollectionResponseBody`): values are strings. */
export interface MetricValue {
  /** `<subtask>.<name>`, e.g. `0.numRecordsInPerSecond`. */
  readonly id: string;
  /** The value as a string, as Flink writes it. */
  readonly value?: string;
}

/** A metric of `.../subtasks/metrics` (Flink's `AggregatedMetricsResponseBody`). */
export interface AggregatedMetric {
  /** The metric name. */
  readonly id: string;
  /** Lowest over the subtasks. */
  readonly min?: number;
  /** Highest over the subtasks. */
  readonly max?: number;
  /** Mean over the subtasks. */
  readonly avg?: number;
  /** Sum over the subtasks. */
  readonly sum?: number;
}

/** An entry of `exceptionHistory.entries` of `GET /jobs/:jobid/exceptions`. */
export interface ExceptionEntry {
  /** The error's class name. */
  readonly exceptionName: string;
  /** The failure, `name: message`. */
  readonly stacktrace: string;
  /** When it failed, epoch ms. */
  readonly timestamp: number;
  /** The failed subtask, `vertexId#subtask`; null when none is named. */
  readonly taskName?: string | null;
  /** The slot the failed subtask is placed on. */
  readonly location?: string | null;
  /** Weir: what the failure restarted (scope, region, attempts). */
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
  /** The job's error, else its latest failure; null when it never failed. */
  readonly "root-exception": string | null;
  /** When, epoch ms; null with no root exception. */
  readonly timestamp: number | null;
  /** The latest failovers, newest first. */
  readonly exceptionHistory: {
    readonly entries: readonly ExceptionEntry[];
    readonly truncated?: boolean;
  };
}

/** Per-vertex statistics of a checkpoint (Flink's `TaskCheckpointStatistics`). */
export interface TaskCheckpoint {
  /** The checkpoint id. */
  readonly id: number;
  /** IN_PROGRESS, COMPLETED or FAILED. */
  readonly status: string;
  /** The latest subtask's acknowledgement, epoch ms; -1 before any. */
  readonly latest_ack_timestamp: number;
  /** Bytes its subtasks wrote. */
  readonly checkpointed_size: number;
  /** Bytes of all state its subtasks refer to. */
  readonly state_size: number;
  /** ms from the trigger to the latest acknowledgement. */
  readonly end_to_end_duration: number;
  /** The vertex's subtasks. */
  readonly num_subtasks: number;
  /** Subtasks that acknowledged. */
  readonly num_acknowledged_subtasks: number;
}

/** One checkpoint (Flink's `CheckpointStatistics`). */
export interface Checkpoint {
  /** `completed`, `failed` or `in_progress`. */
  readonly className?: string;
  /** The checkpoint id. */
  readonly id: number;
  /** IN_PROGRESS, COMPLETED or FAILED. */
  readonly status: "IN_PROGRESS" | "COMPLETED" | "FAILED" | string;
  /** Whether it is a savepoint. */
  readonly is_savepoint: boolean;
  /** When it was triggered, epoch ms. */
  readonly trigger_timestamp: number;
  /** -1 before the first ack. */
  readonly latest_ack_timestamp: number;
  /** Bytes this checkpoint wrote. */
  readonly checkpointed_size: number;
  /** Bytes of all state it refers to. */
  readonly state_size: number;
  /** ms from the trigger to the latest acknowledgement. */
  readonly end_to_end_duration: number;
  /** Subtasks of the job. */
  readonly num_subtasks: number;
  /** Subtasks that acknowledged. */
  readonly num_acknowledged_subtasks: number;
  /** CHECKPOINT or SAVEPOINT. */
  readonly checkpoint_type?: string;
  /** Where a completed one is stored. */
  readonly external_path?: string | null;
  /** When a failed one failed, epoch ms. */
  readonly failure_timestamp?: number;
  /** Why a failed one failed. */
  readonly failure_message?: string | null;
  /** By vertex id (details route only). */
  readonly tasks?: Readonly<Record<string, TaskCheckpoint>>;
}

/** min/max/avg (and percentiles) of a statistic. */
export interface StatsSummary {
  /** Lowest. */
  readonly min: number;
  /** Highest. */
  readonly max: number;
  /** Mean. */
  readonly avg: number;
  /** Median. */
  readonly p50?: number;
  /** 90th percentile. */
  readonly p90?: number;
  /** 99th percentile. */
  readonly p99?: number;
}

/** `GET /jobs/:jobid/checkpoints` (Flink's `CheckpointingStatistics`). */
export interface CheckpointingStatistics {
  /** Checkpoints triggered, in progress, completed, failed and restored. */
  readonly counts: {
    readonly restored: number;
    readonly total: number;
    readonly in_progress: number;
    readonly completed: number;
    readonly failed: number;
  };
  /** Sizes and durations over the latest completed checkpoints. */
  readonly summary?: {
    readonly checkpointed_size?: StatsSummary;
    readonly state_size?: StatsSummary;
    readonly end_to_end_duration?: StatsSummary;
  };
  /** The latest completed, savepoint, failed and restored checkpoints. */
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
  /** The latest checkpoints, newest first. */
  readonly history: readonly Checkpoint[];
}

/** A subtask's acknowledgement of a checkpoint (Flink's `SubtaskCheckpointStatistics`). */
export interface SubtaskCheckpoint {
  /** The subtask index. */
  readonly index: number;
  /** `completed` or `pending_or_failed`. */
  readonly status: "completed" | "pending_or_failed" | string;
  /** When it acknowledged, epoch ms. */
  readonly ack_timestamp?: number;
  /** ms from the trigger to its acknowledgement. */
  readonly end_to_end_duration?: number;
  /** Bytes it wrote. */
  readonly checkpointed_size?: number;
  /** Bytes of all state it refers to. */
  readonly state_size?: number;
  /** The synchronous and asynchronous parts of its snapshot, ms. */
  readonly checkpoint?: { readonly sync?: number; readonly async?: number };
  /** ms from the first barrier to the last (barrier alignment). */
  readonly alignment?: { readonly duration?: number };
  /** ms from the trigger to its first barrier. */
  readonly start_delay?: number;
}

/** `GET /jobs/:jobid/checkpoints/details/:cid/subtasks/:vid` (Flink's `TaskCheckpointStatisticsWithSubtaskDetails`). */
export interface CheckpointSubtasks extends TaskCheckpoint {
  /** One entry per subtask. */
  readonly subtasks: readonly SubtaskCheckpoint[];
}

/** `GET /jobs/:jobid/checkpoints/config` (Flink's `CheckpointConfigInfo`). */
export type CheckpointConfig = Readonly<Record<string, unknown>>;

/** A worker of `GET /taskmanagers` (Flink's `TaskManagerInfo`). */
export interface TaskManager {
  /** The worker's id. */
  readonly id: string;
  /** host:pid. */
  readonly path?: string;
  /** -1 (Weir's data goes over NATS). */
  readonly dataPort?: number;
  /** ms since its last heartbeat. */
  readonly timeSinceLastHeartbeat?: number;
  /** Its slots. */
  readonly slotsNumber: number;
  /** Slots no running subtask uses. */
  readonly freeSlots: number;
}

/** `GET /taskmanagers` (Flink's `TaskManagersInfo`). */
export interface TaskManagers {
  /** The live workers. */
  readonly taskmanagers: readonly TaskManager[];
}

/** `202` of `POST /jobs/:jobid/savepoints` and `/stop` (Flink's `TriggerResponse`). */
export interface TriggerResponse {
  /** The operation's trigger id, for `GET /jobs/:jobid/savepoints/:triggerid`. */
  readonly "request-id": string;
}

/** `GET /jobs/:jobid/savepoints/:triggerid` (Flink's `AsynchronousOperationResult`). */
export interface SavepointStatus {
  /** IN_PROGRESS or COMPLETED (completed also when it failed). */
  readonly status: { readonly id: "IN_PROGRESS" | "COMPLETED" | string };
  /** A completed operation's savepoint location or failure cause. */
  readonly operation?: {
    readonly location?: string;
    readonly "failure-cause"?: { readonly class?: string; readonly "stack-trace"?: string };
  };
}
