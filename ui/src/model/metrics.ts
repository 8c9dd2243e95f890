/**
 * Reading the REST API's metric answers into what the dashboard shows: the
 * per-subtask values of `.../metrics` and `.../watermarks` (ids
 * `<subtask>.<name>`, values strings, Flink's `MetricCollectionResponseBody`)
 * and the sums of `.../subtasks/metrics` (Flink's
 * `AggregatedMetricsResponseBody`). Pure; absent metrics (a finished job, a
 * subtask not yet reporting) stay absent rather than becoming 0.
 *
 * @module
 */

import type { AggregatedMetric, BackPressureInfo, IoMetrics, MetricValue } from "./api_types.ts";
import { NO_WATERMARK } from "./format.ts";

/** Values by subtask index, then metric name; strings as the API wrote them. */
export type SubtaskMetricValues = ReadonlyMap<number, Readonly<Record<string, string>>>;

/**
 * The values of `<subtask>.<name>` ids by subtask and name. Ids without a
 * subtask prefix or without a value are skipped.
 * @example
 * ```ts
 * import { bySubtask } from "./metrics.ts";
 * bySubtask([{ id: "0.numRecordsIn", value: "5" }]).get(0)?.numRecordsIn; // "5"
 * ```
 */
export function bySubtask(values: readonly MetricValue[]): SubtaskMetricValues {
  const out = new Map<number, Record<string, string>>();
  for (const m of values) {
    const dot = m.id.indexOf(".");
    if (dot < 1 || m.value === undefined) continue;
    const subtask = Number(m.id.slice(0, dot));
    if (!Number.isInteger(subtask) || subtask < 0) continue;
    const row = out.get(subtask) ?? {};
    row[m.id.slice(dot + 1)] = m.value;
    out.set(subtask, row);
  }
  return out;
}

/** The `?get=` ids of `names` for subtasks `0..parallelism-1` (`0.a,0.b,1.a,...`). */
export function metricIds(parallelism: number, names: readonly string[]): string {
  const ids: string[] = [];
  for (let i = 0; i < parallelism; i++) for (const n of names) ids.push(`${i}.${n}`);
  return ids.join(",");
}

/** A metric string as a number; `undefined` when absent or not a finite number. */
export function metricNumber(value: string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}

/** The aggregate `agg` (`sum`, `max`, ...) of metric `id`, `undefined` when not reported. */
export function aggregate(
  metrics: readonly AggregatedMetric[],
  id: string,
  agg: "min" | "max" | "avg" | "sum",
): number | undefined {
  const v = metrics.find((m) => m.id === id)?.[agg];
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/**
 * A vertex's watermark, Flink's web UI's "low watermark": the lowest input
 * watermark over the subtasks that have one; `undefined` when none has.
 */
export function lowWatermark(watermarks: readonly MetricValue[]): string | undefined {
  let low: bigint | undefined;
  for (const m of watermarks) {
    if (!m.id.endsWith(".currentInputWatermark")) continue;
    if (m.value === undefined || m.value === NO_WATERMARK) continue;
    let v: bigint;
    try {
      v = BigInt(m.value);
    } catch {
      continue;
    }
    if (low === undefined || v < low) low = v;
  }
  return low === undefined ? undefined : String(low);
}

/** A subtask row of the vertex detail: its metrics, back pressure and watermarks. */
export interface SubtaskRow {
  /** The subtask index. */
  readonly subtask: number;
  /** Its state (`UNKNOWN` until the vertex details answer). */
  readonly status: string;
  /** The attempt it runs as; null while its region restarts. */
  readonly attempt: number | null;
  /** The worker slot it runs on. */
  readonly host: string | null;
  /** Records received. */
  readonly recordsIn: number | undefined;
  /** Records emitted. */
  readonly recordsOut: number | undefined;
  /** Records received per second. */
  readonly inPerSecond: number | undefined;
  /** Records emitted per second. */
  readonly outPerSecond: number | undefined;
  /** 0 to 1. */
  readonly busyRatio: number | undefined;
  /** 0 to 1. */
  readonly idleRatio: number | undefined;
  /** 0 to 1: the share of time it waited to emit. */
  readonly backPressureRatio: number | undefined;
  /** Event-time ms as a string; undefined for none. */
  readonly inputWatermark: string | undefined;
  /** Event-time ms as a string; undefined for none. */
  readonly outputWatermark: string | undefined;
  /** Bytes of state in the latest completed checkpoint. */
  readonly stateSize: number | undefined;
}

/**
 * One row per subtask `0..parallelism-1`, joining what each route knows of
 * it. A route that failed or has not answered yet is passed as `undefined`
 * and leaves its columns absent. Record counts come from the metrics, else
 * from the vertex details' `read-records`/`write-records` (an ended job).
 */
export function subtaskRows(input: {
  readonly parallelism: number;
  readonly subtasks?: readonly {
    /** The subtask index. */
    readonly subtask: number;
    /** Its state (`UNKNOWN` until the vertex details answer). */
    readonly status: string;
    /** The attempt it runs as; null while its region restarts. */
    readonly attempt: number | null;
    /** The worker slot it runs on. */
    readonly host?: string | null;
    readonly metrics?: IoMetrics;
  }[];
  readonly metrics?: readonly MetricValue[];
  readonly backpressure?: BackPressureInfo;
  readonly watermarks?: readonly MetricValue[];
  readonly stateSizes?: ReadonlyMap<number, number>;
}): SubtaskRow[] {
  const m = bySubtask(input.metrics ?? []);
  const w = bySubtask(input.watermarks ?? []);
  const bp = new Map((input.backpressure?.subtasks ?? []).map((s) => [s.subtask, s]));
  const st = new Map((input.subtasks ?? []).map((s) => [s.subtask, s]));
  return Array.from({ length: input.parallelism }, (_, i) => {
    const mi = m.get(i) ?? {};
    const wi = w.get(i) ?? {};
    const b = bp.get(i);
    const s = st.get(i);
    const wm = (x: string | undefined) => x === undefined || x === NO_WATERMARK ? undefined : x;
    return {
      subtask: i,
      status: s?.status ?? "UNKNOWN",
      attempt: s?.attempt ?? null,
      host: s?.host ?? null,
      recordsIn: metricNumber(mi.numRecordsIn) ?? s?.metrics?.["read-records"],
      recordsOut: metricNumber(mi.numRecordsOut) ?? s?.metrics?.["write-records"],
      inPerSecond: metricNumber(mi.numRecordsInPerSecond),
      outPerSecond: metricNumber(mi.numRecordsOutPerSecond),
      busyRatio: b?.busyRatio,
      idleRatio: b?.idleRatio,
      backPressureRatio: b?.ratio,
      inputWatermark: wm(wi.currentInputWatermark),
      outputWatermark: wm(wi.currentOutputWatermark),
      stateSize: input.stateSizes?.get(i),
    };
  });
}
