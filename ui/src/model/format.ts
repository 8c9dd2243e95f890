/**
 * Readable units for the dashboard: durations (ms), byte sizes, rates
 * (records per second), counts, timestamps and watermarks. Pure; every
 * function answers "-" for a value that is absent or not a finite number,
 * so a finished job's missing metrics render as a dash, not "NaN".
 *
 * @module
 */

/** Flink's "no watermark" (`Long.MIN_VALUE`) as the REST API writes it. */
export const NO_WATERMARK = "-9223372036854775808";

const DASH = "-";

function finite(x: number | null | undefined): x is number {
  return typeof x === "number" && Number.isFinite(x);
}

/**
 * A duration in ms, in its largest sensible units: `850 ms`, `1.25 s`,
 * `3m 05s`, `2h 03m`, `4d 01h`. Negative durations (Flink's -1 for "not
 * yet") answer "-".
 * @example
 * ```ts
 * import { formatDuration } from "./format.ts";
 * formatDuration(1250); // "1.25 s"
 * ```
 */
export function formatDuration(ms: number | null | undefined): string {
  if (!finite(ms) || ms < 0) return DASH;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${trim(ms / 1000, ms < 10_000 ? 2 : 1)} s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${pad(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86_400)}d ${pad(Math.floor(s / 3600) % 24)}h`;
}

/**
 * A size in bytes with binary prefixes: `512 B`, `1.5 KiB`, `12.3 MiB`.
 * @example
 * ```ts
 * import { formatBytes } from "./format.ts";
 * formatBytes(1536); // "1.5 KiB"
 * ```
 */
export function formatBytes(bytes: number | null | undefined): string {
  if (!finite(bytes) || bytes < 0) return DASH;
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  const units = ["KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = bytes / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${trim(v, v < 10 ? 2 : v < 100 ? 1 : 0)} ${units[i]}`;
}

/**
 * A count with SI suffixes: `950`, `12.5K`, `3.2M`, `1.1G`.
 * @example
 * ```ts
 * import { formatCount } from "./format.ts";
 * formatCount(12_500); // "12.5K"
 * ```
 */
export function formatCount(n: number | null | undefined): string {
  if (!finite(n)) return DASH;
  const a = Math.abs(n);
  if (a < 1000) return trim(n, a < 10 && !Number.isInteger(n) ? 2 : a < 100 ? 1 : 0);
  const units: readonly [number, string][] = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "K"]];
  for (const [scale, suffix] of units) {
    if (a >= scale) {
      const v = n / scale;
      return `${trim(v, Math.abs(v) < 10 ? 2 : Math.abs(v) < 100 ? 1 : 0)}${suffix}`;
    }
  }
  return String(n);
}

/**
 * A rate in records per second: `12.5K/s`.
 * @example
 * ```ts
 * import { formatRate } from "./format.ts";
 * formatRate(1500); // "1.5K/s"
 * ```
 */
export function formatRate(perSecond: number | null | undefined): string {
  return finite(perSecond) ? `${formatCount(perSecond)}/s` : DASH;
}

/**
 * A ratio (0 to 1) as a whole percentage: `0.237` -> `24%`.
 */
export function formatPercent(ratio: number | null | undefined): string {
  return finite(ratio) ? `${Math.round(ratio * 100)}%` : DASH;
}

/**
 * An epoch-ms timestamp as local `YYYY-MM-DD HH:MM:SS`; "-" for absent or
 * negative (Flink's -1).
 */
export function formatTimestamp(epochMs: number | null | undefined): string {
  if (!finite(epochMs) || epochMs < 0) return DASH;
  const d = new Date(epochMs);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${timeOfDay(d)}`;
}

/** An epoch-ms timestamp as local `HH:MM:SS`; "-" for absent or negative. */
export function formatTime(epochMs: number | null | undefined): string {
  if (!finite(epochMs) || epochMs < 0) return DASH;
  return timeOfDay(new Date(epochMs));
}

/**
 * A watermark as the REST API writes it (event-time ms as a string): "No
 * watermark" for Flink's `Long.MIN_VALUE` or absent; otherwise the UTC
 * time `YYYY-MM-DD HH:MM:SS.mmm` (event time is not local time).
 * @example
 * ```ts
 * import { formatWatermark } from "./format.ts";
 * formatWatermark("0"); // "1970-01-01 00:00:00.000"
 * ```
 */
export function formatWatermark(value: string | null | undefined): string {
  if (value === null || value === undefined || value === NO_WATERMARK || value === "") {
    return "No watermark";
  }
  const n = Number(value);
  if (!Number.isFinite(n) || n <= -8.64e15 || n >= 8.64e15) return value;
  return new Date(n).toISOString().replace("T", " ").replace("Z", "");
}

function timeOfDay(d: Date): string {
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function pad(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** `v` with at most `digits` decimals, trailing zeros dropped. */
function trim(v: number, digits: number): string {
  return String(Number(v.toFixed(digits)));
}
