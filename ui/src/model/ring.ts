/**
 * Time series kept in the browser for the dashboard's charts: a fixed
 * number of the latest samples (the dashboard keeps 120, two minutes at one
 * poll a second), oldest first. Pure and immutable: `push` answers a new
 * series, so a view re-renders when its series changes.
 *
 * @module
 */

/** The samples kept per series by default: two minutes at one poll per second. */
export const DEFAULT_CAPACITY = 120;

/**
 * A time series: `times` (epoch seconds, as uPlot wants them) and one array
 * of values per line, all of the same length, oldest first. A value is
 * `null` where the line had no sample (uPlot leaves a gap).
 */
export interface Series {
  /** The samples kept at most. */
  readonly capacity: number;
  /** Sample times, epoch seconds (or any x values), oldest first. */
  readonly times: readonly number[];
  /** One array of values per line, as long as `times`. */
  readonly lines: readonly (readonly (number | null)[])[];
}

/**
 * An empty series of `lines` lines keeping at most `capacity` samples.
 * @throws {RangeError} when `capacity` is not a positive integer or `lines` is negative.
 */
export function emptySeries(lines: number, capacity: number = DEFAULT_CAPACITY): Series {
  if (!Number.isInteger(capacity) || capacity < 1) {
    throw new RangeError(
      `a series' capacity must be a positive integer: current value is ${capacity}`,
    );
  }
  if (!Number.isInteger(lines) || lines < 0) {
    throw new RangeError(
      `a series' line count must be a non-negative integer: current value is ${lines}`,
    );
  }
  return { capacity, times: [], lines: Array.from({ length: lines }, () => []) };
}

/**
 * The series with one more sample at `timeMs` (epoch ms), the oldest
 * dropped past the capacity. A sample at or before the latest time replaces
 * the latest (a poll answered twice within the same instant).
 * @throws {RangeError} when `values` has not one value per line.
 */
export function pushSample(
  s: Series,
  timeMs: number,
  values: readonly (number | null | undefined)[],
): Series {
  if (values.length !== s.lines.length) {
    throw new RangeError(
      `a sample needs one value per line (${s.lines.length}): current value has ${values.length}`,
    );
  }
  const t = timeMs / 1000;
  const last = s.times[s.times.length - 1];
  const replace = last !== undefined && t <= last;
  const keep = <T>(xs: readonly T[]): readonly T[] => {
    const base = replace ? xs.slice(0, -1) : xs;
    return base.length >= s.capacity ? base.slice(base.length - s.capacity + 1) : base;
  };
  const clean = (v: number | null | undefined) =>
    typeof v === "number" && Number.isFinite(v) ? v : null;
  return {
    capacity: s.capacity,
    times: [...keep(s.times), replace && last !== undefined ? last : t],
    lines: s.lines.map((xs, i) => [...keep(xs), clean(values[i])]),
  };
}

/** The latest value of line `i`, or `undefined` when the series is empty or the value missing. */
export function latest(s: Series, i: number): number | undefined {
  const xs = s.lines[i];
  const v = xs?.[xs.length - 1];
  return v === null ? undefined : v;
}

/**
 * A per-second rate from two readings of a counter (records), as the
 * dashboard derives job throughput from `write-records`: `undefined` for
 * the first reading, a counter that went down (a restart reset it) or no
 * time between the readings.
 */
export function counterRate(
  previous: { readonly count: number; readonly timeMs: number } | undefined,
  count: number,
  timeMs: number,
): number | undefined {
  if (previous === undefined) return undefined;
  const dt = timeMs - previous.timeMs;
  const dc = count - previous.count;
  if (dt <= 0 || dc < 0) return undefined;
  return (dc * 1000) / dt;
}
