/**
 * Pure decisions behind the dashboard's charts: whether a series has enough
 * points to draw a line, and the labels of a time axis without repeats.
 *
 * @module
 */

import type { Series } from "./ring.ts";

/** The points a line needs before a chart draws it (one point is no line). */
export const MIN_POINTS = 2;

/**
 * How many samples of `s` have a value on at least one line (a `null` on
 * every line is a gap, not a point).
 * @example
 * ```ts
 * import { drawablePoints } from "./chart_axis.ts";
 * drawablePoints({ capacity: 4, times: [1, 2, 3], lines: [[1, null, 2], [null, null, 3]] }); // 2
 * ```
 */
export function drawablePoints(s: Series): number {
  let n = 0;
  for (let i = 0; i < s.times.length; i++) {
    if (s.lines.some((l) => l[i] !== null && l[i] !== undefined)) n++;
  }
  return n;
}

/**
 * Whether a chart of `s` has a line to draw: at least {@linkcode MIN_POINTS}
 * samples with a value; until then the chart shows "Waiting for data…"
 * over its axes.
 */
export function hasLine(s: Series): boolean {
  return drawablePoints(s) >= MIN_POINTS;
}

/**
 * Axis labels with each repeat of the label before it blanked (`""`), so
 * ticks that format alike (two ticks within the same second, printed as
 * `HH:MM:SS`) do not print the same text twice. Pure; the input is not
 * changed.
 * @example
 * ```ts
 * import { distinctLabels } from "./chart_axis.ts";
 * distinctLabels(["03:26:38", "03:26:38", "03:26:39"]); // ["03:26:38", "", "03:26:39"]
 * ```
 */
export function distinctLabels(labels: readonly string[]): string[] {
  let previous: string | undefined;
  return labels.map((label) => {
    const shown = label === previous ? "" : label;
    previous = label;
    return shown;
  });
}

/**
 * `s` without its leading samples that have no value on any line (the
 * polls before the first metric arrived), so a chart's time axis starts at
 * its first point rather than at a stretch of empty plot. Gaps after the
 * first point stay (uPlot leaves them blank). Answers `s` itself when
 * nothing is dropped.
 * @example
 * ```ts
 * import { trimLeadingGaps } from "./chart_axis.ts";
 * trimLeadingGaps({ capacity: 4, times: [1, 2, 3], lines: [[null, 5, null]] }).times; // [2, 3]
 * ```
 */
export function trimLeadingGaps(s: Series): Series {
  let first = 0;
  while (
    first < s.times.length && s.lines.every((l) => l[first] === null || l[first] === undefined)
  ) first++;
  if (first === 0) return s;
  return {
    capacity: s.capacity,
    times: s.times.slice(first),
    lines: s.lines.map((l) => l.slice(first)),
  };
}
