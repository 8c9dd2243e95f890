/**
 * The coordinator's bookkeeping of checkpoints, as pure state machines:
 * {@linkcode PendingCheckpoint} collects the acknowledgements of one
 * checkpoint; `CheckpointTracker` (`tracker.ts`) decides when to trigger,
 * which checkpoints expire, and which completed ones to discard; and
 * `CheckpointFailureManager` (`failure_manager.ts`) decides when failed
 * checkpoints fail the job.
 *
 * This module performs no I/O and reads no clock: every time is passed in as
 * `nowMs` (epoch ms), and every method returns a decision that the
 * coordinator actor executes (send trigger messages, write `_metadata`,
 * notify tasks, delete directories). It replaces the bookkeeping half of
 * Flink's `CheckpointCoordinator`, `CheckpointRequestDecider`,
 * `PendingCheckpoint`, `CheckpointStatsTracker` and `CheckpointFailureManager`.
 *
 * ## Design
 *
 * One round of the protocol, from the coordinator's side:
 *
 * 1. `decideTrigger(now)` says `trigger` with the next id;
 *    `startCheckpoint(id, now, plan)` registers it; the coordinator sends the
 *    trigger to the source subtasks.
 * 2. Each `acknowledge(ack)` returns Flink's `TaskAcknowledgeResult`; the one
 *    that completes the set returns `completed`.
 * 3. The coordinator writes the metadata (`toMetadata`, then the storage's
 *    `writeMetadata`, the commit point), then calls
 *    `completed(id, location, now)` and notifies the tasks. If the write fails
 *    it calls `decline(id, FINALIZE_FAILED)` instead.
 * 4. It deletes the checkpoints listed in `discard` and notifies aborts for
 *    `subsumed`, `expire(now)`, `decline(...)` and `abortAll(...)`.
 * 5. It tells a `CheckpointFailureManager` about every checkpoint
 *    that failed while the attempt was running (`onFailure`) and every one
 *    that completed (`onSuccess`); an `EXCEEDED` verdict fails the attempt.
 *
 * ## Invariants
 *
 * - Checkpoint ids handed out are strictly increasing, starting at 1 or after
 *   the id given to `restoreCounter`.
 * - A checkpoint is in exactly one of: pending, completed, aborted. An aborted
 *   {@linkcode PendingCheckpoint} answers every later ack with `DISCARDED`.
 * - Savepoints are never subsumed and never listed in `discard`.
 * - With `minPauseBetweenCheckpointsMs > 0` at most one periodic checkpoint is
 *   in progress, as in Flink.
 * - The failure manager counts each checkpoint at most once, only for the
 *   reasons in `COUNTED_FAILURE_CODES`, only for checkpoints newer
 *   than the latest success, and never savepoints.
 *
 * @module
 */

import { CheckpointFailureReason, subtaskKey } from "./types.ts";
import type {
  CheckpointId,
  CheckpointMetadata,
  SnapshotType,
  SubtaskAck,
  SubtaskRef,
  SubtaskStateMetadata,
  VertexStateMetadata,
} from "./types.ts";

/**
 * Outcome of one acknowledgement (Flink's `TaskAcknowledgeResult`):
 *
 * - `SUCCESS`: recorded;
 * - `DUPLICATE`: this subtask already acknowledged this checkpoint (keep its
 *   state, it is referenced by the first ack);
 * - `UNKNOWN`: the checkpoint or the subtask (or its attempt) is not part of
 *   this checkpoint;
 * - `DISCARDED`: the checkpoint was aborted; the ack's state may be deleted.
 */
export type TaskAcknowledgeResult = "SUCCESS" | "DUPLICATE" | "UNKNOWN" | "DISCARDED";

/** What kind of checkpoint is taken. Savepoints are user-triggered and kept until deleted. */
export type CheckpointKind = SnapshotType;

/** The tasks that must acknowledge a checkpoint, and under which attempt. */
export interface CheckpointPlan {
  /** The job attempt the checkpoint is taken in; acks from other attempts are `UNKNOWN`. */
  readonly attempt: number;
  /** Every subtask that must acknowledge (all running subtasks of the job). Must not be empty. */
  readonly tasks: Iterable<SubtaskRef>;
  /**
   * The attempt of each subtask (`vertexId#subtask`) when they differ, after
   * a region failover restarted some of them as a later attempt (Flink's
   * per-`Execution` attempt numbers); a subtask missing here acknowledges
   * under `attempt`. Absent: every subtask under `attempt`.
   */
  readonly taskAttempts?: ReadonlyMap<string, number> | undefined;
  /** Default `"checkpoint"`. */
  readonly kind?: CheckpointKind;
}

/** Options of {@linkcode PendingCheckpoint}. */
export interface PendingCheckpointOptions extends CheckpointPlan {
  /** The checkpoint's id, a positive integer. */
  readonly checkpointId: CheckpointId;
  /** When it was triggered, in epoch ms. */
  readonly triggeredAt: number;
}

/** Static facts about a vertex, needed to build {@linkcode CheckpointMetadata}. */
export interface VertexInfo {
  /** The JobGraph vertex id. */
  readonly vertexId: string;
  /** Stable `uid`s of the operators chained in the vertex, head first. */
  readonly operatorUids: readonly string[];
  /** Parallelism the vertex runs with. */
  readonly parallelism: number;
  /** Max parallelism (number of key groups). */
  readonly maxParallelism: number;
}

/** Arguments of {@linkcode PendingCheckpoint.toMetadata}. */
export interface ToMetadataOptions {
  /** The job's id. */
  readonly jobId: string;
  /** The job's name. */
  readonly jobName: string;
  /** Completion time, in epoch ms. */
  readonly completedAt: number;
  /** Every vertex of the job (vertices without acks get an empty `subtasks` list). */
  readonly vertices: readonly VertexInfo[];
}

/** Sizes and durations of one checkpoint, as Flink's web UI shows them. */
export interface CheckpointStats {
  /** The checkpoint's id. */
  readonly checkpointId: CheckpointId;
  /** Checkpoint or savepoint. */
  readonly kind: CheckpointKind;
  /** When it was triggered, in epoch ms. */
  readonly triggeredAt: number;
  /** How many subtasks must acknowledge. */
  readonly numberOfTasks: number;
  /** How many have. */
  readonly numberOfAcknowledged: number;
  /** Sum of the acknowledged `stateBytes`, in bytes. */
  readonly totalBytes: number;
  /** Longest synchronous snapshot part among the acks, in ms. */
  readonly maxSyncDurationMs: number;
  /** Longest asynchronous upload among the acks, in ms. */
  readonly maxAsyncDurationMs: number;
  /** Longest barrier alignment among the acks, in ms. */
  readonly maxAlignmentDurationMs: number;
}

/** Stats of a completed checkpoint. */
export interface CompletedCheckpointStats extends CheckpointStats {
  /** When it completed, in epoch ms. */
  readonly completedAt: number;
  /** `completedAt - triggeredAt`, in ms. */
  readonly durationMs: number;
  /** Where its metadata was written (the storage's external pointer). */
  readonly location: string;
}

/** Stats of the latest failed checkpoint. */
export interface FailedCheckpointStats extends CheckpointStats {
  /** Why it failed. */
  readonly reason: CheckpointFailureReason;
}

/**
 * One checkpoint waiting for its acknowledgements (Flink's
 * `PendingCheckpoint`). Pure state: no I/O, no clock.
 *
 * @example
 * ```ts
 * import { PendingCheckpoint } from "./pending.ts";
 * const p = new PendingCheckpoint({
 *   checkpointId: 1, triggeredAt: 0, attempt: 0,
 *   tasks: [{ vertexId: "src", subtask: 0 }],
 * });
 * const ack = {
 *   vertexId: "src", subtask: 0, attempt: 0, checkpointId: 1, handles: [],
 *   stateUids: [], syncDurationMs: 1, asyncDurationMs: 2,
 *   alignmentDurationMs: 0, stateBytes: 0,
 * };
 * console.assert(p.acknowledge(ack) === "SUCCESS");
 * console.assert(p.acknowledge(ack) === "DUPLICATE");
 * console.assert(p.isFullyAcknowledged);
 * ```
 */
export class PendingCheckpoint {
  /** The checkpoint's id. */
  readonly checkpointId: CheckpointId;
  /** When it was triggered, in epoch ms. */
  readonly triggeredAt: number;
  /** The job attempt it belongs to. */
  readonly attempt: number;
  /** Checkpoint or savepoint. */
  readonly kind: CheckpointKind;
  readonly #numberOfTasks: number;
  readonly #notYetAcknowledged: Set<string>;
  readonly #taskAttempts: ReadonlyMap<string, number> | undefined;
  readonly #acks = new Map<string, SubtaskAck>();
  #failure: CheckpointFailureReason | undefined;

  /**
   * Creates a checkpoint that waits for every task of the plan.
   *
   * @param options id, trigger time, attempt, kind and the tasks that must acknowledge.
   * @throws {RangeError} when `checkpointId` is not a positive integer or `tasks` is empty.
   */
  constructor(options: PendingCheckpointOptions) {
    if (!Number.isSafeInteger(options.checkpointId) || options.checkpointId < 1) {
      throw new RangeError(
        `Cannot create a pending checkpoint: 'checkpointId' must be a positive integer: current value is ${options.checkpointId}`,
      );
    }
    this.checkpointId = options.checkpointId;
    this.triggeredAt = options.triggeredAt;
    this.attempt = options.attempt;
    this.#taskAttempts = options.taskAttempts;
    this.kind = options.kind ?? "checkpoint";
    this.#notYetAcknowledged = new Set();
    for (const t of options.tasks) this.#notYetAcknowledged.add(subtaskKey(t.vertexId, t.subtask));
    this.#numberOfTasks = this.#notYetAcknowledged.size;
    if (this.#numberOfTasks === 0) {
      throw new RangeError(
        `Cannot create pending checkpoint ${this.checkpointId}: 'tasks' must not be empty`,
      );
    }
  }

  /**
   * Records a subtask's acknowledgement.
   *
   * @param ack the subtask's report.
   * @returns `DISCARDED` once aborted; `UNKNOWN` for another checkpoint id,
   *   another attempt or a subtask not in the plan; `DUPLICATE` for a second
   *   ack of the same subtask; otherwise `SUCCESS`.
   */
  acknowledge(ack: SubtaskAck): TaskAcknowledgeResult {
    if (this.#failure !== undefined) return "DISCARDED";
    const key = subtaskKey(ack.vertexId, ack.subtask);
    const attempt = this.#taskAttempts?.get(key) ?? this.attempt;
    if (ack.checkpointId !== this.checkpointId || ack.attempt !== attempt) return "UNKNOWN";
    if (this.#notYetAcknowledged.delete(key)) {
      this.#acks.set(key, ack);
      return "SUCCESS";
    }
    return this.#acks.has(key) ? "DUPLICATE" : "UNKNOWN";
  }

  /** `true` when every task acknowledged and the checkpoint was not aborted. */
  get isFullyAcknowledged(): boolean {
    return this.#failure === undefined && this.#notYetAcknowledged.size === 0;
  }

  /** `true` once {@linkcode PendingCheckpoint.abort} was called. */
  get isDiscarded(): boolean {
    return this.#failure !== undefined;
  }

  /** The reason given to the first {@linkcode PendingCheckpoint.abort}, if any. */
  get failureReason(): CheckpointFailureReason | undefined {
    return this.#failure;
  }

  /** How many subtasks must acknowledge. */
  get numberOfTasks(): number {
    return this.#numberOfTasks;
  }

  /** How many subtasks have acknowledged. */
  get numberOfAcknowledged(): number {
    return this.#acks.size;
  }

  /** Keys (`"<vertexId>#<subtask>"`) of the subtasks still to acknowledge, sorted. */
  notYetAcknowledged(): string[] {
    return [...this.#notYetAcknowledged].sort();
  }

  /** The acknowledgements received so far, in arrival order. */
  acknowledgements(): SubtaskAck[] {
    return [...this.#acks.values()];
  }

  /**
   * Aborts the checkpoint; later acks return `DISCARDED`. Idempotent: the
   * first reason is kept.
   *
   * @param reason why it is aborted.
   * @returns `true` if this call aborted it, `false` if it already was.
   */
  abort(reason: CheckpointFailureReason): boolean {
    if (this.#failure !== undefined) return false;
    this.#failure = reason;
    return true;
  }

  /** Sizes and durations summed or maxed over the acks received so far. */
  stats(): CheckpointStats {
    let totalBytes = 0, maxSync = 0, maxAsync = 0, maxAlign = 0;
    for (const a of this.#acks.values()) {
      totalBytes += a.stateBytes;
      maxSync = Math.max(maxSync, a.syncDurationMs);
      maxAsync = Math.max(maxAsync, a.asyncDurationMs);
      maxAlign = Math.max(maxAlign, a.alignmentDurationMs);
    }
    return {
      checkpointId: this.checkpointId,
      kind: this.kind,
      triggeredAt: this.triggeredAt,
      numberOfTasks: this.#numberOfTasks,
      numberOfAcknowledged: this.#acks.size,
      totalBytes,
      maxSyncDurationMs: maxSync,
      maxAsyncDurationMs: maxAsync,
      maxAlignmentDurationMs: maxAlign,
    };
  }

  /**
   * Builds the `_metadata` of this checkpoint from its acknowledgements.
   * Vertices are sorted by id, subtasks by index.
   *
   * @param options job id and name, completion time and every vertex of the job.
   * @returns the metadata to write with the checkpoint storage.
   * @throws {Error} when the checkpoint is not fully acknowledged, an ack
   *   names a vertex missing from `options.vertices`, or a savepoint's ack
   *   lists a shared handle (savepoints are self-contained).
   */
  toMetadata(options: ToMetadataOptions): CheckpointMetadata {
    if (!this.isFullyAcknowledged) {
      throw new Error(
        `Cannot build the metadata of checkpoint ${this.checkpointId} of job ${options.jobId}: ` +
          (this.#failure
            ? `it was aborted (${this.#failure.code})`
            : `still waiting for ${this.notYetAcknowledged().join(", ")}`),
      );
    }
    const byVertex = new Map<string, SubtaskStateMetadata[]>();
    for (const v of options.vertices) byVertex.set(v.vertexId, []);
    for (const a of this.#acks.values()) {
      const list = byVertex.get(a.vertexId);
      if (list === undefined) {
        throw new Error(
          `Cannot build the metadata of checkpoint ${this.checkpointId} of job ${options.jobId}: ` +
            `subtask ${
              subtaskKey(a.vertexId, a.subtask)
            } acknowledged, but vertex ${a.vertexId} is not among the job's vertices`,
        );
      }
      const shared = a.handles.find((h) => h.shared);
      if (this.kind === "savepoint" && shared !== undefined) {
        throw new Error(
          `Cannot build the metadata of savepoint ${this.checkpointId} of job ${options.jobId}: ` +
            `subtask ${subtaskKey(a.vertexId, a.subtask)} acknowledged shared state ` +
            `'${shared.path}' (kind ${shared.kind}, uid ${shared.uid}); a savepoint must be self-contained`,
        );
      }
      list.push({
        subtask: a.subtask,
        handles: [...a.handles],
        stateUids: a.stateUids,
      });
    }
    const vertices: VertexStateMetadata[] = [...options.vertices]
      .sort((a, b) => (a.vertexId < b.vertexId ? -1 : a.vertexId > b.vertexId ? 1 : 0))
      .map((v) => ({
        vertexId: v.vertexId,
        operatorUids: [...v.operatorUids],
        parallelism: v.parallelism,
        maxParallelism: v.maxParallelism,
        subtasks: (byVertex.get(v.vertexId) ?? []).sort((a, b) => a.subtask - b.subtask),
      }));
    return {
      version: 2,
      jobId: options.jobId,
      jobName: options.jobName,
      checkpointId: this.checkpointId,
      kind: this.kind,
      triggeredAt: this.triggeredAt,
      completedAt: options.completedAt,
      attempt: this.attempt,
      vertices,
      totalBytes: this.stats().totalBytes,
    };
  }
}
