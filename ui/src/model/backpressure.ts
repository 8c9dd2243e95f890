/**
 * Back-pressure levels and their colours, as Flink's web UI shows them.
 * A ratio is the share of time a subtask was back-pressured
 * (`backPressuredTimeMsPerSecond / 1000`, 0 to 1); a vertex takes its
 * busiest subtask's level. Thresholds are Flink's
 * (`JobVertexBackPressureHandler`): OK up to 10%, LOW up to 50%, HIGH above.
 *
 * @module
 */

/** A back-pressure level as the dashboard shows it (`data-backpressure`). */
export type BackPressureLevel = "OK" | "LOW" | "HIGH";

/** Colours of the levels: Flink's green, amber and red. */
export const BACKPRESSURE_COLOURS: Readonly<Record<BackPressureLevel, string>> = {
  OK: "#2e9d4f",
  LOW: "#e8a317",
  HIGH: "#d9363e",
};

/**
 * The level of a back-pressure ratio (0 to 1): OK at or below 0.10, LOW at
 * or below 0.5, HIGH above. A missing or non-finite ratio (no sample yet, a
 * finished job) is OK.
 * @example
 * ```ts
 * import { backPressureLevel } from "./backpressure.ts";
 * backPressureLevel(0.3); // "LOW"
 * ```
 */
export function backPressureLevel(ratio: number | null | undefined): BackPressureLevel {
  if (typeof ratio !== "number" || !Number.isFinite(ratio)) return "OK";
  return ratio <= 0.1 ? "OK" : ratio <= 0.5 ? "LOW" : "HIGH";
}

/**
 * The level the REST API wrote (`ok`, `low`, `high`), upper-cased; an
 * unknown or absent value is OK.
 */
export function levelOfJson(level: string | null | undefined): BackPressureLevel {
  return level === "high" ? "HIGH" : level === "low" ? "LOW" : "OK";
}

/** The highest ratio of the subtasks (0 when there are none). */
export function maxRatio(subtasks: readonly { readonly ratio: number }[]): number {
  let max = 0;
  for (const s of subtasks) if (Number.isFinite(s.ratio) && s.ratio > max) max = s.ratio;
  return max;
}
