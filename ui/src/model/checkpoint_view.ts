/**
 * The checkpoints tab's pure parts: the configuration's rows with Flink's
 * web UI labels and readable values, and the duration/size chart's series
 * over the completed checkpoints seen. Pure.
 *
 * @module
 */

import type { Checkpoint, CheckpointConfig } from "./api_types.ts";
import { formatDuration } from "./format.ts";
import type { Series } from "./ring.ts";

/** The chart keeps the latest this many completed checkpoints. */
export const CHART_CHECKPOINTS = 120;

/**
 * Series over the completed checkpoints (x: checkpoint id) with three
 * lines: end-to-end duration (ms), checkpointed size and full size
 * (bytes). Savepoints are included; in-progress and failed ones are not.
 */
export function durationSizeSeries(checkpoints: readonly Checkpoint[]): Series {
  const done = checkpoints
    .filter((c) => c.status === "COMPLETED")
    .sort((a, b) => a.id - b.id)
    .slice(-CHART_CHECKPOINTS);
  return {
    capacity: CHART_CHECKPOINTS,
    times: done.map((c) => c.id),
    lines: [
      done.map((c) => c.end_to_end_duration),
      done.map((c) => c.checkpointed_size),
      done.map((c) => c.state_size),
    ],
  };
}

const LABELS: readonly (readonly [string, string, "ms" | "bool" | "plain"])[] = [
  ["interval", "Checkpoint interval", "ms"],
  ["timeout", "Checkpoint timeout", "ms"],
  ["min_pause", "Minimum pause between checkpoints", "ms"],
  ["max_concurrent", "Maximum concurrent checkpoints", "plain"],
  ["unaligned_checkpoints", "Unaligned checkpoints", "bool"],
  ["aligned_checkpoint_timeout", "Aligned checkpoint timeout", "ms"],
  ["tolerable_failed_checkpoints", "Tolerable failed checkpoints", "plain"],
  ["checkpoint_storage", "Checkpoint storage", "plain"],
  ["retained_checkpoints", "Retained checkpoints", "plain"],
  ["retain_on_finish", "Retain on finish", "bool"],
  ["checkpoints_after_tasks_finish", "Checkpoints after tasks finish", "bool"],
  ["state_changelog_enabled", "Incremental (changelog) checkpoints", "bool"],
  ["changelog_periodic_materialization_interval", "Materialization interval", "ms"],
];

/**
 * The configuration's rows `[label, value]`: known keys first with Flink's
 * labels (interval 0 reads "Off (periodic checkpoints disabled)"), the
 * externalization as one row, any other key as `key: JSON`.
 */
export function configRows(config: CheckpointConfig): [string, string][] {
  const rows: [string, string][] = [];
  const known = new Set<string>();
  for (const [key, label, kind] of LABELS) {
    known.add(key);
    if (!(key in config)) continue;
    const v = config[key];
    if (key === "interval" && v === 0) {
      rows.push([label, "Off (periodic checkpoints disabled)"]);
      continue;
    }
    rows.push([
      label,
      kind === "ms" && typeof v === "number"
        ? formatDuration(v)
        : kind === "bool" && typeof v === "boolean"
        ? (v ? "Enabled" : "Disabled")
        : String(v),
    ]);
  }
  const ext = config.externalization;
  known.add("externalization");
  if (typeof ext === "object" && ext !== null) {
    const e = ext as { enabled?: boolean; delete_on_cancellation?: boolean };
    rows.push([
      "Persist checkpoints externally",
      e.enabled
        ? `Enabled (${e.delete_on_cancellation ? "deleted" : "retained"} on cancellation)`
        : "Disabled",
    ]);
  }
  for (const [k, v] of Object.entries(config)) {
    if (!known.has(k)) rows.push([k, typeof v === "string" ? v : JSON.stringify(v)]);
  }
  return rows;
}

/** A checkpoint's slowest barrier alignment and start delay over all subtasks (ms). */
export interface CheckpointTimings {
  /** The longest alignment (first barrier to last) of any subtask, ms. */
  readonly alignmentMs: number | undefined;
  /** The longest start delay (trigger to first barrier) of any subtask, ms. */
  readonly startDelayMs: number | undefined;
}

/**
 * The longest alignment and start delay of a checkpoint from the
 * per-subtask answers of each of its vertices (Flink's web UI shows the
 * same maxima in a checkpoint's summary); `undefined` when no subtask
 * acknowledged with the value.
 * @example
 * ```ts
 * import { checkpointTimings } from "./checkpoint_view.ts";
 * checkpointTimings([{ subtasks: [{ alignment: { duration: 4 }, start_delay: 9 }] }]).alignmentMs; // 4
 * ```
 */
export function checkpointTimings(
  vertices: readonly {
    readonly subtasks: readonly {
      readonly alignment?: { readonly duration?: number };
      readonly start_delay?: number;
    }[];
  }[],
): CheckpointTimings {
  let alignment: number | undefined;
  let delay: number | undefined;
  for (const v of vertices) {
    for (const s of v.subtasks) {
      const a = s.alignment?.duration;
      if (typeof a === "number" && Number.isFinite(a)) alignment = Math.max(alignment ?? a, a);
      const d = s.start_delay;
      if (typeof d === "number" && Number.isFinite(d)) delay = Math.max(delay ?? d, d);
    }
  }
  return { alignmentMs: alignment, startDelayMs: delay };
}
