/**
 * The JSON bodies of the REST API's checkpoint routes, in the shapes of
 * Flink's REST API: `/jobs/:jobid/checkpoints` (`CheckpointingStatistics`),
 * `/jobs/:jobid/checkpoints/details/:checkpointid`
 * (`CheckpointStatistics` with `tasks`),
 * `/jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid`
 * (`TaskCheckpointStatisticsWithSubtaskDetails`) and
 * `/jobs/:jobid/checkpoints/config` (`CheckpointConfigInfo`). Pure.
 *
 * Sizes are bytes, times ms, timestamps epoch ms. Flink's
 * `alignment_buffered`, `processed_data` and `persisted_data` are not
 * measured by Weir and are left out, as are the config's `mode` and
 * `state_backend` (set in the job module, not known to the coordinator).
 *
 * @module
 */

import type {
  CheckpointStatsEntry,
  StatsSummary,
  SubtaskCheckpointStats,
} from "../../metrics/checkpoint_stats.ts";
import type { JobFacts } from "./job_facts.ts";
import type { Json, JsonObject } from "./job_views.ts";

/** `GET /jobs/:jobid/checkpoints`: counts, summary, latest and history. */
export function checkpointsView(f: JobFacts): JsonObject {
  const s = f.checkpoints.snapshot();
  const r = s.latestRestored;
  return {
    counts: {
      restored: s.counts.restored,
      total: s.counts.total,
      in_progress: s.counts.inProgress,
      completed: s.counts.completed,
      failed: s.counts.failed,
    },
    summary: {
      checkpointed_size: summaryJson(s.summary.checkpointedSize),
      state_size: summaryJson(s.summary.stateSize),
      end_to_end_duration: summaryJson(s.summary.endToEndDurationMs),
    },
    latest: {
      completed: s.latestCompleted ? checkpointJson(s.latestCompleted, false) : null,
      savepoint: s.latestSavepoint ? checkpointJson(s.latestSavepoint, false) : null,
      failed: s.latestFailed ? checkpointJson(s.latestFailed, false) : null,
      restored: r === undefined ? null : {
        id: r.checkpointId,
        restore_timestamp: r.restoredAt,
        is_savepoint: r.kind === "savepoint",
        external_path: null,
        // Weir: the job whose storage holds it (a savepoint's id for a savepoint).
        job_id: r.jobId,
      },
    },
    history: s.history.map((e) => checkpointJson(e, false)),
  };
}

/**
 * `GET /jobs/:jobid/checkpoints/details/:checkpointid`: one checkpoint with
 * its per-vertex statistics.
 * @returns `undefined` when the checkpoint is no longer (or never was) tracked.
 */
export function checkpointDetailsView(f: JobFacts, checkpointId: number): JsonObject | undefined {
  const e = f.checkpoints.details(checkpointId);
  return e === undefined ? undefined : checkpointJson(e, true, f);
}

/**
 * `GET /jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid`:
 * each subtask's acknowledgement (sync, async, alignment, start delay, sizes).
 * @returns `undefined` when the checkpoint or the vertex is unknown.
 */
export function checkpointSubtasksView(
  f: JobFacts,
  checkpointId: number,
  vertexId: string,
): JsonObject | undefined {
  const e = f.checkpoints.details(checkpointId);
  const v = f.graph.vertices.find((x) => x.id === vertexId);
  if (e === undefined || v === undefined) return undefined;
  const acks = e.subtasks[vertexId] ?? [];
  const byIndex = new Map(acks.map((a) => [a.subtask, a]));
  return {
    ...taskJson(e, vertexId, v.parallelism),
    summary: {
      checkpointed_size: summaryJson(summ(acks, (a) => a.checkpointedSize)),
      state_size: summaryJson(summ(acks, (a) => a.stateSize)),
      end_to_end_duration: summaryJson(summ(acks, (a) => a.endToEndDurationMs)),
      checkpoint_duration: {
        sync: summaryJson(summ(acks, (a) => a.syncDurationMs)),
        async: summaryJson(summ(acks, (a) => a.asyncDurationMs)),
      },
      alignment: { duration: summaryJson(summ(acks, (a) => a.alignmentDurationMs)) },
      start_delay: summaryJson(summ(acks, (a) => a.startDelayMs)),
    },
    subtasks: Array.from({ length: v.parallelism }, (_, i) => {
      const a = byIndex.get(i);
      if (a === undefined) return { index: i, status: "pending_or_failed" };
      return {
        index: i,
        status: "completed",
        ack_timestamp: a.ackTimestamp,
        end_to_end_duration: a.endToEndDurationMs,
        checkpointed_size: a.checkpointedSize,
        state_size: a.stateSize,
        checkpoint: { sync: a.syncDurationMs, async: a.asyncDurationMs },
        alignment: { duration: a.alignmentDurationMs },
        start_delay: a.startDelayMs,
        aborted: false,
      } satisfies JsonObject;
    }),
  };
}

/** `GET /jobs/:jobid/checkpoints/config`: the job's checkpointing settings. */
export function checkpointConfigView(f: JobFacts): JsonObject {
  const c = f.checkpointing;
  return {
    interval: c.intervalMs,
    timeout: c.timeoutMs,
    min_pause: c.minPauseBetweenCheckpointsMs,
    max_concurrent: c.maxConcurrentCheckpoints,
    // Weir keeps retained checkpoints when a job fails or is cancelled.
    externalization: { enabled: true, delete_on_cancellation: false },
    checkpoint_storage: "ObjectStoreCheckpointStorage",
    unaligned_checkpoints: c.unalignedCheckpoints ?? false,
    tolerable_failed_checkpoints: c.tolerableCheckpointFailures ?? 0,
    aligned_checkpoint_timeout: c.alignedCheckpointTimeoutMs ?? 0,
    checkpoints_after_tasks_finish: true,
    state_changelog_enabled: c.incrementalCheckpoints ?? false,
    changelog_periodic_materialization_interval: c.materializationIntervalMs ?? 600_000,
    retained_checkpoints: c.retainedCheckpoints,
    retain_on_finish: c.retainOnFinish,
  };
}

function checkpointJson(e: CheckpointStatsEntry, withTasks: boolean, f?: JobFacts): JsonObject {
  const className = e.status === "COMPLETED"
    ? "completed"
    : e.status === "FAILED"
    ? "failed"
    : "in_progress";
  const out: JsonObject = {
    className,
    id: e.checkpointId,
    status: e.status,
    is_savepoint: e.kind === "savepoint",
    savepointFormat: e.kind === "savepoint" ? "CANONICAL" : null,
    trigger_timestamp: e.triggeredAt,
    latest_ack_timestamp: e.latestAckTimestamp ?? -1,
    checkpointed_size: e.checkpointedSize,
    state_size: e.stateSize,
    end_to_end_duration: e.endToEndDurationMs,
    num_subtasks: e.numSubtasks,
    num_acknowledged_subtasks: e.numAcknowledged,
    checkpoint_type: e.kind === "savepoint" ? "SAVEPOINT" : "CHECKPOINT",
    tasks: {},
  };
  if (e.status === "COMPLETED") {
    out.external_path = e.externalPath ?? null;
    out.discarded = false;
  }
  if (e.status === "FAILED") {
    out.failure_timestamp = e.failedAt ?? -1;
    out.failure_message = e.failureMessage ?? null;
  }
  if (withTasks && f !== undefined) {
    const tasks: JsonObject = {};
    for (const v of f.graph.vertices) tasks[v.id] = taskJson(e, v.id, v.parallelism);
    out.tasks = tasks;
  }
  return out;
}

function taskJson(e: CheckpointStatsEntry, vertexId: string, parallelism: number): JsonObject {
  const acks = e.subtasks[vertexId] ?? [];
  let checkpointed = 0, state = 0, latest = -1, endToEnd = 0;
  for (const a of acks) {
    checkpointed += a.checkpointedSize;
    state += a.stateSize;
    latest = Math.max(latest, a.ackTimestamp);
    endToEnd = Math.max(endToEnd, a.endToEndDurationMs);
  }
  return {
    id: e.checkpointId,
    status: e.status,
    latest_ack_timestamp: latest,
    checkpointed_size: checkpointed,
    state_size: state,
    end_to_end_duration: endToEnd,
    num_subtasks: parallelism,
    num_acknowledged_subtasks: acks.length,
  };
}

function summ(
  acks: readonly SubtaskCheckpointStats[],
  pick: (a: SubtaskCheckpointStats) => number,
): { min: number; max: number; avg: number } {
  if (acks.length === 0) return { min: 0, max: 0, avg: 0 };
  const values = acks.map(pick);
  return {
    min: Math.min(...values),
    max: Math.max(...values),
    avg: values.reduce((a, b) => a + b, 0) / values.length,
  };
}

function summaryJson(s: Partial<StatsSummary> & { min: number; max: number; avg: number }): Json {
  const out: JsonObject = { min: s.min, max: s.max, avg: s.avg };
  for (const k of ["p50", "p90", "p95", "p99", "p999"] as const) {
    if (s[k] !== undefined) out[k] = s[k];
  }
  return out;
}
