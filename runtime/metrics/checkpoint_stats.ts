/**
 * The statistics of a job's checkpoints, as the REST API, `weir info` and
 * the Prometheus endpoint show them (Flink's `CheckpointStatsTracker`,
 * `CheckpointStatsHistory` and `CompletedCheckpointStatsSummary`).
 *
 * The checkpoint coordinator reports each event as it happens: a trigger
 * (`reportPending`), every accepted acknowledgement (`reportAck`), the
 * completion (`reportCompleted`), an abort (`reportFailed`) and a restore
 * (`reportRestored`). The tracker keeps:
 *
 * - counts since the job started (restored, total, in progress, completed,
 *   failed), as `CheckpointStatsCounts`;
 * - the latest `historySize` checkpoints (default 10, Flink's
 *   `web.checkpoints.history`), each with its per-subtask acknowledgements;
 * - the latest completed checkpoint, savepoint, failed checkpoint and
 *   restore, also when they fell out of the history;
 * - a summary (min, max, average and percentiles) of the duration,
 *   checkpointed size and full state size of the latest `summaryWindow`
 *   completed checkpoints (default 1000; Flink keeps a window too).
 *
 * Sizes: `checkpointedSize` is what a checkpoint wrote (the acks'
 * `stateBytes`; an incremental checkpoint's shared blobs written earlier are
 * not in it); `stateSize` is the full state it refers to (the sum of the
 * sizes of every handle the acks list, shared ones included). Flink's
 * `checkpointed_size` and `state_size` have these meanings.
 *
 * Pure: no I/O, no clock (every time is passed in, epoch ms).
 *
 * @example
 * ```ts
 * import { CheckpointStatsTracker } from "./checkpoint_stats.ts";
 * const t = new CheckpointStatsTracker();
 * t.reportPending({ checkpointId: 1, kind: "checkpoint", triggeredAt: 1000, numSubtasks: 1 });
 * t.reportAck({
 *   vertexId: "v0", subtask: 0, attempt: 0, checkpointId: 1, handles: [], stateUids: [],
 *   syncDurationMs: 1, asyncDurationMs: 4, alignmentDurationMs: 0, stateBytes: 10,
 * }, 1010);
 * t.reportCompleted(1, 1012, "chk-1");
 * const s = t.snapshot();
 * console.assert(s.counts.completed === 1 && s.latestCompleted?.endToEndDurationMs === 12);
 * ```
 *
 * @module
 */

import type { CheckpointId, SubtaskAck } from "../checkpoint/types.ts";

/** What a checkpoint was for. */
export type CheckpointStatsKind = "checkpoint" | "savepoint";

/** Where a checkpoint stands (Flink's `CheckpointStatsStatus`). */
export type CheckpointStatsStatus = "IN_PROGRESS" | "COMPLETED" | "FAILED";

/** One subtask's acknowledgement of a checkpoint (Flink's `SubtaskStateStats`). Times in ms, sizes in bytes. */
export interface SubtaskCheckpointStats {
  /** The subtask index. */
  readonly subtask: number;
  /** When the coordinator received the ack, epoch ms. */
  readonly ackTimestamp: number;
  /** `ackTimestamp - triggeredAt`. */
  readonly endToEndDurationMs: number;
  /** Bytes this subtask wrote for the checkpoint. */
  readonly checkpointedSize: number;
  /** Bytes of every handle the subtask's state refers to. */
  readonly stateSize: number;
  /** The snapshot's synchronous part. */
  readonly syncDurationMs: number;
  /** The snapshot's asynchronous part. */
  readonly asyncDurationMs: number;
  /** Barrier alignment. */
  readonly alignmentDurationMs: number;
  /** Trigger to the snapshot's start, less alignment (0 when the sender did not say). */
  readonly startDelayMs: number;
}

/** One checkpoint in the history (Flink's `AbstractCheckpointStats`). */
export interface CheckpointStatsEntry {
  /** The checkpoint id. */
  readonly checkpointId: CheckpointId;
  /** Checkpoint or savepoint. */
  readonly kind: CheckpointStatsKind;
  /** Where it stands. */
  readonly status: CheckpointStatsStatus;
  /** Trigger time, epoch ms. */
  readonly triggeredAt: number;
  /** Latest ack received, epoch ms; `undefined` before the first. */
  readonly latestAckTimestamp: number | undefined;
  /** Subtasks that must acknowledge. */
  readonly numSubtasks: number;
  /** Subtasks that did. */
  readonly numAcknowledged: number;
  /** Sum of the acks' checkpointed sizes, bytes. */
  readonly checkpointedSize: number;
  /** Sum of the acks' state sizes, bytes. */
  readonly stateSize: number;
  /** Trigger to completion (or failure; for one in progress, to the latest ack), ms. */
  readonly endToEndDurationMs: number;
  /** Completion time, epoch ms (completed only). */
  readonly completedAt?: number | undefined;
  /** Where its metadata is (completed only). */
  readonly externalPath?: string | undefined;
  /** Failure time, epoch ms (failed only). */
  readonly failedAt?: number | undefined;
  /** Why it failed (failed only). */
  readonly failureMessage?: string | undefined;
  /** Acks by vertex id, each sorted by subtask. */
  readonly subtasks: Readonly<Record<string, readonly SubtaskCheckpointStats[]>>;
}

/** The latest restore (Flink's `RestoredCheckpointStats`). */
export interface RestoredCheckpointStats {
  /** The restored checkpoint's id. */
  readonly checkpointId: CheckpointId;
  /** The job whose storage held it (another job for a resume or savepoint). */
  readonly jobId: string;
  /** A savepoint or a checkpoint. */
  readonly kind: CheckpointStatsKind;
  /** When the restore was decided, epoch ms. */
  readonly restoredAt: number;
}

/** Min, max, average and percentiles of a value over completed checkpoints (Flink's `StatsSummaryDto`). */
export interface StatsSummary {
  /** Smallest value (0 with no data). */
  readonly min: number;
  /** Largest value. */
  readonly max: number;
  /** Mean. */
  readonly avg: number;
  /** Median. */
  readonly p50: number;
  /** 90th percentile. */
  readonly p90: number;
  /** 95th percentile. */
  readonly p95: number;
  /** 99th percentile. */
  readonly p99: number;
  /** 99.9th percentile. */
  readonly p999: number;
}

/** Counts since the job started (Flink's `CheckpointStatsCounts`). */
export interface CheckpointStatsCounts {
  /** Restores (failovers from a checkpoint, and a start from one). */
  readonly restored: number;
  /** Checkpoints and savepoints triggered. */
  readonly total: number;
  /** In progress now. */
  readonly inProgress: number;
  /** Completed. */
  readonly completed: number;
  /** Failed (declined, expired, subsumed, aborted by a failover). */
  readonly failed: number;
}

/** Everything the tracker knows, at one moment. */
export interface CheckpointStatsSnapshot {
  /** Counts. */
  readonly counts: CheckpointStatsCounts;
  /** Summary of the completed checkpoints in the window. */
  readonly summary: {
    readonly endToEndDurationMs: StatsSummary;
    readonly checkpointedSize: StatsSummary;
    readonly stateSize: StatsSummary;
  };
  /** Latest completed checkpoint (not savepoint). */
  readonly latestCompleted: CheckpointStatsEntry | undefined;
  /** Latest completed savepoint. */
  readonly latestSavepoint: CheckpointStatsEntry | undefined;
  /** Latest failed checkpoint or savepoint. */
  readonly latestFailed: CheckpointStatsEntry | undefined;
  /** Latest restore. */
  readonly latestRestored: RestoredCheckpointStats | undefined;
  /** The latest checkpoints, newest first. */
  readonly history: readonly CheckpointStatsEntry[];
}

/** Options of {@linkcode CheckpointStatsTracker}. */
export interface CheckpointStatsTrackerOptions {
  /** Checkpoints kept in the history. Default 10 (Flink's `web.checkpoints.history`). */
  readonly historySize?: number;
  /** Completed checkpoints the summary covers. Default 1000. */
  readonly summaryWindow?: number;
}

/** A triggered checkpoint, as `reportPending` takes it. */
export interface PendingCheckpointReport {
  /** Its id. */
  readonly checkpointId: CheckpointId;
  /** Checkpoint or savepoint. */
  readonly kind: CheckpointStatsKind;
  /** Trigger time, epoch ms. */
  readonly triggeredAt: number;
  /** Subtasks that must acknowledge. */
  readonly numSubtasks: number;
}

interface MutableEntry {
  checkpointId: CheckpointId;
  kind: CheckpointStatsKind;
  status: CheckpointStatsStatus;
  triggeredAt: number;
  latestAckTimestamp: number | undefined;
  numSubtasks: number;
  checkpointedSize: number;
  stateSize: number;
  completedAt?: number;
  externalPath?: string;
  failedAt?: number;
  failureMessage?: string;
  acks: Map<string, SubtaskCheckpointStats[]>;
}

/** Tracks checkpoint statistics (see the module docs). */
export class CheckpointStatsTracker {
  readonly #historySize: number;
  readonly #summaryWindow: number;
  /** History, oldest first (pending ones included). */
  readonly #entries: MutableEntry[] = [];
  readonly #byId = new Map<CheckpointId, MutableEntry>();
  #restored = 0;
  #total = 0;
  #completed = 0;
  #failed = 0;
  #latestCompleted: MutableEntry | undefined;
  #latestSavepoint: MutableEntry | undefined;
  #latestFailed: MutableEntry | undefined;
  #latestRestored: RestoredCheckpointStats | undefined;
  readonly #durations: number[] = [];
  readonly #checkpointedSizes: number[] = [];
  readonly #stateSizes: number[] = [];

  /**
   * Creates an empty tracker.
   * @throws {RangeError} when `historySize` or `summaryWindow` is not a positive integer.
   */
  constructor(options: CheckpointStatsTrackerOptions = {}) {
    const historySize = options.historySize ?? 10;
    const summaryWindow = options.summaryWindow ?? 1000;
    for (const [name, value] of [["historySize", historySize], ["summaryWindow", summaryWindow]]) {
      if (!Number.isSafeInteger(value) || (value as number) < 1) {
        throw new RangeError(
          `Cannot create a CheckpointStatsTracker: '${name}' must be a positive integer: ` +
            `current value is ${value}`,
        );
      }
    }
    this.#historySize = historySize;
    this.#summaryWindow = summaryWindow;
  }

  /** A checkpoint or savepoint was triggered. */
  reportPending(report: PendingCheckpointReport): void {
    this.#total++;
    const entry: MutableEntry = {
      checkpointId: report.checkpointId,
      kind: report.kind,
      status: "IN_PROGRESS",
      triggeredAt: report.triggeredAt,
      latestAckTimestamp: undefined,
      numSubtasks: report.numSubtasks,
      checkpointedSize: 0,
      stateSize: 0,
      acks: new Map(),
    };
    this.#entries.push(entry);
    this.#byId.set(entry.checkpointId, entry);
    this.#trimHistory();
  }

  /**
   * An acknowledgement the checkpoint coordinator accepted (`SUCCESS`).
   * Acks of checkpoints no longer in the history, or no longer in progress,
   * are ignored.
   * @param receivedAt when it arrived, epoch ms.
   */
  reportAck(ack: SubtaskAck, receivedAt: number): void {
    const entry = this.#byId.get(ack.checkpointId);
    if (entry === undefined || entry.status !== "IN_PROGRESS") return;
    let stateSize = 0;
    for (const h of ack.handles) stateSize += h.bytes;
    const stats: SubtaskCheckpointStats = {
      subtask: ack.subtask,
      ackTimestamp: receivedAt,
      endToEndDurationMs: Math.max(0, receivedAt - entry.triggeredAt),
      checkpointedSize: ack.stateBytes,
      stateSize,
      syncDurationMs: ack.syncDurationMs,
      asyncDurationMs: ack.asyncDurationMs,
      alignmentDurationMs: ack.alignmentDurationMs,
      startDelayMs: ack.startDelayMs ?? 0,
    };
    const list = entry.acks.get(ack.vertexId) ?? [];
    if (list.some((s) => s.subtask === ack.subtask)) return;
    list.push(stats);
    list.sort((a, b) => a.subtask - b.subtask);
    entry.acks.set(ack.vertexId, list);
    entry.latestAckTimestamp = receivedAt;
    entry.checkpointedSize += stats.checkpointedSize;
    entry.stateSize += stateSize;
  }

  /**
   * A checkpoint completed (its metadata is written).
   * @param completedAt epoch ms.
   * @param externalPath where its metadata is.
   */
  reportCompleted(checkpointId: CheckpointId, completedAt: number, externalPath: string): void {
    const entry = this.#byId.get(checkpointId);
    if (entry === undefined || entry.status !== "IN_PROGRESS") return;
    entry.status = "COMPLETED";
    entry.completedAt = completedAt;
    entry.externalPath = externalPath;
    this.#completed++;
    if (entry.kind === "savepoint") this.#latestSavepoint = entry;
    else this.#latestCompleted = entry;
    this.#window(this.#durations, completedAt - entry.triggeredAt);
    this.#window(this.#checkpointedSizes, entry.checkpointedSize);
    this.#window(this.#stateSizes, entry.stateSize);
  }

  /**
   * A checkpoint failed (declined, expired, subsumed, aborted by a failover,
   * metadata not written). Ignored unless it is in progress.
   * @param failedAt epoch ms.
   * @param message why.
   */
  reportFailed(checkpointId: CheckpointId, failedAt: number, message: string): void {
    const entry = this.#byId.get(checkpointId);
    if (entry === undefined || entry.status !== "IN_PROGRESS") return;
    entry.status = "FAILED";
    entry.failedAt = failedAt;
    entry.failureMessage = message;
    this.#failed++;
    this.#latestFailed = entry;
  }

  /** The job (re)started from a checkpoint or savepoint. */
  reportRestored(restored: RestoredCheckpointStats): void {
    this.#restored++;
    this.#latestRestored = restored;
  }

  /** Statistics of checkpoint `checkpointId`, if it is still in the history or one of the latest. */
  details(checkpointId: CheckpointId): CheckpointStatsEntry | undefined {
    const entry = this.#byId.get(checkpointId) ??
      [this.#latestCompleted, this.#latestSavepoint, this.#latestFailed]
        .find((e) => e?.checkpointId === checkpointId);
    return entry && freeze(entry);
  }

  /** Everything the tracker knows now. */
  snapshot(): CheckpointStatsSnapshot {
    let inProgress = 0;
    for (const e of this.#entries) if (e.status === "IN_PROGRESS") inProgress++;
    return {
      counts: {
        restored: this.#restored,
        total: this.#total,
        inProgress,
        completed: this.#completed,
        failed: this.#failed,
      },
      summary: {
        endToEndDurationMs: summarize(this.#durations),
        checkpointedSize: summarize(this.#checkpointedSizes),
        stateSize: summarize(this.#stateSizes),
      },
      latestCompleted: this.#latestCompleted && freeze(this.#latestCompleted),
      latestSavepoint: this.#latestSavepoint && freeze(this.#latestSavepoint),
      latestFailed: this.#latestFailed && freeze(this.#latestFailed),
      latestRestored: this.#latestRestored,
      history: this.#entries.map(freeze).reverse(),
    };
  }

  #window(values: number[], value: number): void {
    values.push(value);
    if (values.length > this.#summaryWindow) values.shift();
  }

  /** Drops the oldest entries beyond the history size; in-progress ones stay until they end. */
  #trimHistory(): void {
    while (this.#entries.length > this.#historySize) {
      const oldest = this.#entries.findIndex((e) => e.status !== "IN_PROGRESS");
      if (oldest === -1) return;
      const [gone] = this.#entries.splice(oldest, 1);
      this.#byId.delete(gone!.checkpointId);
    }
  }
}

function freeze(e: MutableEntry): CheckpointStatsEntry {
  const end = e.completedAt ?? e.failedAt ?? e.latestAckTimestamp;
  return {
    checkpointId: e.checkpointId,
    kind: e.kind,
    status: e.status,
    triggeredAt: e.triggeredAt,
    latestAckTimestamp: e.latestAckTimestamp,
    numSubtasks: e.numSubtasks,
    numAcknowledged: [...e.acks.values()].reduce((n, l) => n + l.length, 0),
    checkpointedSize: e.checkpointedSize,
    stateSize: e.stateSize,
    endToEndDurationMs: end === undefined ? 0 : Math.max(0, end - e.triggeredAt),
    completedAt: e.completedAt,
    externalPath: e.externalPath,
    failedAt: e.failedAt,
    failureMessage: e.failureMessage,
    subtasks: Object.fromEntries([...e.acks].map(([v, l]) => [v, [...l]])),
  };
}

/**
 * Min, max, mean and nearest-rank percentiles of `values`; all 0 for none.
 * @param values the values, in any order.
 * @returns the summary.
 */
export function summarize(values: readonly number[]): StatsSummary {
  if (values.length === 0) {
    return { min: 0, max: 0, avg: 0, p50: 0, p90: 0, p95: 0, p99: 0, p999: 0 };
  }
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return {
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    avg: sorted.reduce((a, b) => a + b, 0) / sorted.length,
    p50: at(0.5),
    p90: at(0.9),
    p95: at(0.95),
    p99: at(0.99),
    p999: at(0.999),
  };
}
