/**
 * Where the latency benchmark's slow updates fall in time: the sinks'
 * {@linkcode LatencyTimeline}s (windows of 50 ms of arrival time) merged and
 * overlaid with the trigger times of the checkpoints that the coordinator
 * logged, so a tail caused by checkpoints shows as slow updates clustering
 * in the windows that follow a trigger.
 *
 * Pure: it parses text and sums numbers; `latency.ts` reads the files and
 * the coordinator's output.
 *
 * @module
 */

import { type LatencyTimeline, TIMELINE_WINDOW_MS } from "./latency_job.ts";

/** The merged timeline of one run and how its slow updates relate to checkpoints. */
export interface TimelineOverlay {
  /** Windows with updates. */
  readonly windows: number;
  /** Updates in all windows. */
  readonly updates: number;
  /** Updates slower than the timeline's threshold (20 ms). */
  readonly slow: number;
  /** Windows starting within `spanMs` after a checkpoint trigger. */
  readonly windowsAfterCheckpoint: number;
  /** Slow updates in those windows. */
  readonly slowAfterCheckpoint: number;
  /** The `top` windows with the most slow updates, worst first. */
  readonly worst: readonly {
    /** Window start, wall-clock ms. */
    readonly startMs: number;
    readonly updates: number;
    /** Max latency in the window, µs. */
    readonly maxUs: number;
    readonly slow: number;
    /** ms since the latest checkpoint trigger at or before the window's start (`undefined`: none). */
    readonly sinceTriggerMs: number | undefined;
  }[];
}

/**
 * The trigger times (wall-clock ms) of the checkpoints the coordinator's
 * output says completed: each `<ISO time> ... latest #N in D ms` line gives
 * `time - D`. A checkpoint logged twice counts once per job (the job id is
 * part of the key).
 */
export function checkpointTriggerTimes(coordinatorOutput: string): number[] {
  const re = /^(\S+Z) INFO coordinator job (\S+?):? .*?latest #(\d+) in (\d+) ms/gm;
  const seen = new Map<string, number>();
  for (const m of coordinatorOutput.matchAll(re)) {
    const at = Date.parse(m[1]!);
    if (Number.isNaN(at)) continue;
    const key = `${m[2]}#${m[3]}`;
    if (!seen.has(key)) seen.set(key, at - Number(m[4])); // the first line is the completion's
  }
  return [...seen.values()].sort((a, b) => a - b);
}

/**
 * Merges the sinks' timelines (windows of equal start are summed, their
 * max kept) and counts the slow updates in windows that start within
 * `spanMs` after a trigger of `triggers` (sorted, wall-clock ms).
 * @param top how many of the worst windows to return.
 */
export function overlayTimeline(
  timelines: readonly LatencyTimeline[],
  triggers: readonly number[],
  spanMs: number,
  top = 8,
): TimelineOverlay {
  const merged = new Map<number, [number, number, number, number]>();
  for (const t of timelines) {
    for (const [start, n, max, slow] of t.windows) {
      const w = merged.get(start);
      if (w === undefined) merged.set(start, [start, n, max, slow]);
      else {
        w[1] += n;
        w[2] = Math.max(w[2], max);
        w[3] += slow;
      }
    }
  }
  const sinceTrigger = (start: number): number | undefined => {
    let latest: number | undefined;
    for (const t of triggers) {
      if (t <= start) latest = t;
      else break;
    }
    return latest === undefined ? undefined : start - latest;
  };
  let updates = 0, slow = 0, windowsAfter = 0, slowAfter = 0;
  const all = [...merged.values()];
  for (const [start, n, , s] of all) {
    updates += n;
    slow += s;
    // A window overlapping [trigger, trigger + span) counts as after it.
    const d = sinceTrigger(start + 49.999);
    if (d !== undefined && d < spanMs + 50) {
      windowsAfter++;
      slowAfter += s;
    }
  }
  const worst = all
    .filter((w) => w[3] > 0)
    .sort((a, b) => b[3] - a[3] || b[2] - a[2])
    .slice(0, top)
    .map(([startMs, n, maxUs, s]) => ({
      startMs,
      updates: n,
      maxUs,
      slow: s,
      sinceTriggerMs: sinceTrigger(startMs),
    }));
  return {
    windows: all.length,
    updates,
    slow,
    windowsAfterCheckpoint: windowsAfter,
    slowAfterCheckpoint: slowAfter,
    worst,
  };
}

/**
 * One line: the share of windows within the span after a trigger against the
 * share of slow updates in them (equal shares: checkpoints are not the
 * cause), then the worst windows as `+<ms since trigger>: <slow>/<updates>
 * max <ms>`.
 */
export function describeOverlay(o: TimelineOverlay, spanMs: number): string {
  const pct = (a: number, b: number) => b === 0 ? "-" : `${(100 * a / b).toFixed(0)}%`;
  const worst = o.worst.map((w) =>
    `${w.sinceTriggerMs === undefined ? "before any" : `+${Math.round(w.sinceTriggerMs)}`}: ` +
    `${w.slow}/${w.updates} max ${(w.maxUs / 1000).toFixed(0)}`
  ).join(", ");
  return `slow (> 20 ms) updates ${o.slow} of ${o.updates} (${pct(o.slow, o.updates)}); ` +
    `windows within ${spanMs} ms after a checkpoint trigger: ${
      pct(o.windowsAfterCheckpoint, o.windows)
    } of the time, ${pct(o.slowAfterCheckpoint, o.slow)} of the slow updates; worst 50-ms ` +
    `windows (ms after the latest trigger: slow/updates max ms): ${worst || "none"}`;
}

/**
 * The rate at which the sinks received updates after their warm-up, in
 * updates (records) per second: the updates of every window strictly
 * between the first and the last (both partial) over the time between
 * them. Unlike a run's overall rate (records over first record made to last
 * update sunk), it leaves out deployment, JIT warm-up and the drain at the
 * end; `undefined` with fewer than three windows.
 */
export function steadyRate(timelines: readonly LatencyTimeline[]): number | undefined {
  const counts = new Map<number, number>();
  for (const t of timelines) {
    for (const [start, n] of t.windows) counts.set(start, (counts.get(start) ?? 0) + n);
  }
  const starts = [...counts.keys()].sort((a, b) => a - b);
  if (starts.length < 3) return undefined;
  const first = starts[0]!, last = starts[starts.length - 1]!;
  let updates = 0;
  for (const s of starts) if (s > first && s < last) updates += counts.get(s)!;
  const spanMs = last - first - TIMELINE_WINDOW_MS;
  return spanMs > 0 ? updates / (spanMs / 1000) : undefined;
}
