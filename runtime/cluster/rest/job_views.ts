/**
 * The JSON bodies of the REST API's cluster, job and vertex routes, in the
 * shapes of Flink's REST API (`/overview`, `/jobs`, `/jobs/overview`,
 * `/jobs/:jobid`, `/jobs/:jobid/exceptions`,
 * `/jobs/:jobid/vertices/:vertexid` and its `backpressure`, `watermarks`,
 * `metrics` and `subtasks/metrics`). `runtime/cluster/rest/openapi.yaml`
 * documents each. Pure: facts and the time in, plain JSON out; the server
 * (`rest_server.ts`) and `weir info` (`job_info.ts`) call the same functions.
 *
 * Where Weir differs from Flink:
 *
 * - Job states are Weir's four (`RUNNING`, `FINISHED`, `FAILED`,
 *   `CANCELED`); a job restarting is `RUNNING` with a higher `attempt`.
 * - A subtask is `RUNNING` once it reported metrics in the current attempt,
 *   `DEPLOYING` before; its vertex takes the job's state.
 * - Bytes are not measured: the `read-bytes`/`write-bytes` metrics are
 *   left out, not reported as 0.
 * - Job details add `attempt` and `numRestarts`, and each vertex its
 *   chained `operators` (`uid`, `name`); the job overview adds `attempt`
 *   and `numRestarts` to each job. The `plan` is `plan_view.ts`'s.
 * - A vertex's metrics add vertex-wide ids without the `<subtask>.`
 *   prefix ({@linkcode VERTEX_METRIC_AGGREGATES}).
 * - `/taskmanagers` lists the live workers: `path` is `host:pid`, there is
 *   no data port (`-1`) and no hardware description (`{}`).
 *
 * @module
 */

import type { ClusterOverview } from "../cluster_protocol.ts";
import type { JobFacts } from "./job_facts.ts";
import type { SubtaskMetricsSample } from "../../metrics/task_io_metrics.ts";
import type { VertexSummary } from "../../graph/job_graph_summary.ts";
import { planView } from "./plan_view.ts";

/** Flink's value for "no watermark" (`Long.MIN_VALUE`), as its REST API writes it. */
export const NO_WATERMARK = "-9223372036854775808";

/**
 * Whether a job state is final (`FINISHED`, `FAILED`, `CANCELED`); any
 * other (`RUNNING`, `WAITING_FOR_RESOURCES`) is a job still going.
 */
export function isEnded(status: string): boolean {
  return status === "FINISHED" || status === "FAILED" || status === "CANCELED";
}

/** A JSON value the views return. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON object. */
export type JsonObject = { [key: string]: Json };

/** The name of a metric a subtask reports (a field of its sample, but its time). */
export type SubtaskMetricName = Exclude<keyof SubtaskMetricsSample, "sampledAt">;

/** The metric names a subtask reports, as `/jobs/:jobid/vertices/:vertexid/metrics` lists them per subtask. */
export const SUBTASK_METRIC_NAMES: readonly SubtaskMetricName[] = [
  "numRecordsIn",
  "numRecordsOut",
  "numRecordsInPerSecond",
  "numRecordsOutPerSecond",
  "busyTimeMsPerSecond",
  "idleTimeMsPerSecond",
  "backPressuredTimeMsPerSecond",
  "currentInputWatermark",
  "currentOutputWatermark",
];

/**
 * How `/jobs/:jobid/vertices/:vertexid/metrics` aggregates each metric over
 * the vertex's subtasks for its vertex-wide id (the name without the
 * `<subtask>.` prefix; Weir's addition, so a dashboard reads a vertex's
 * rates in one request): counts and rates are summed over the subtasks
 * that reported; busy, idle and back-pressured time per second are the
 * maximum (Flink's web UI shows a vertex by its busiest, most
 * back-pressured subtask); watermarks are the minimum, or no watermark
 * ({@linkcode NO_WATERMARK}) while any subtask has none.
 */
export const VERTEX_METRIC_AGGREGATES: Readonly<
  Record<SubtaskMetricName, "sum" | "max" | "min">
> = {
  numRecordsIn: "sum",
  numRecordsOut: "sum",
  numRecordsInPerSecond: "sum",
  numRecordsOutPerSecond: "sum",
  busyTimeMsPerSecond: "max",
  idleTimeMsPerSecond: "max",
  backPressuredTimeMsPerSecond: "max",
  currentInputWatermark: "min",
  currentOutputWatermark: "min",
};

/**
 * `GET /overview` (Flink's `ClusterOverviewWithVersion`): workers, slots and
 * jobs by state. A slot counts as used while a running job has a subtask on it.
 */
export function overviewView(
  overview: ClusterOverview,
  usedSlots: ReadonlySet<string>,
  version: string,
): JsonObject {
  const slotsTotal = overview.workers.reduce((n, w) => n + w.slots, 0);
  const count = (s: string) => overview.jobs.filter((j) => j.status === s).length;
  return {
    taskmanagers: overview.workers.length,
    "slots-total": slotsTotal,
    "slots-available": Math.max(0, slotsTotal - usedSlots.size),
    "jobs-running": overview.jobs.filter((j) => !isEnded(j.status)).length,
    "jobs-finished": count("FINISHED"),
    "jobs-cancelled": count("CANCELED"),
    "jobs-failed": count("FAILED"),
    "flink-version": version,
    "flink-commit": "",
  };
}

/** `GET /jobs` (Flink's `JobIdsWithStatusOverview`). */
export function jobsView(overview: ClusterOverview): JsonObject {
  return { jobs: overview.jobs.map((j) => ({ id: j.jobId, status: j.status })) };
}

/** `GET /jobs/overview` (Flink's `MultipleJobsDetails`): one line per job. */
export function jobsOverviewView(facts: readonly JobFacts[], now: number): JsonObject {
  return {
    jobs: facts.map((f) => {
      const s = f.status;
      const counts: Record<string, number> = {};
      let total = 0;
      for (const v of f.graph.vertices) {
        total += v.parallelism;
        for (const [state, n] of Object.entries(subtaskStates(f, v))) {
          counts[state] = (counts[state] ?? 0) + n;
        }
      }
      return {
        jid: s.jobId,
        name: s.name,
        state: s.status,
        "start-time": s.startedAt,
        "end-time": s.endedAt ?? -1,
        duration: (s.endedAt ?? now) - s.startedAt,
        "last-modification": s.endedAt ?? s.startedAt,
        tasks: { total, ...counts },
        attempt: s.attempt,
        numRestarts: f.restarts,
      } satisfies JsonObject;
    }),
  };
}

/**
 * `GET /jobs/:jobid` (Flink's `JobDetailsInfo`, with its `plan`; see the module docs).
 * @throws {RangeError} when the graph's edges name vertex positions it does not have.
 */
export function jobDetailsView(f: JobFacts, now: number): JsonObject {
  const s = f.status;
  const end = s.endedAt ?? -1;
  const statusCounts: Record<string, number> = {};
  const vertices = f.graph.vertices.map((v) => {
    const tasks = subtaskStates(f, v);
    for (const [state, n] of Object.entries(tasks)) {
      statusCounts[state] = (statusCounts[state] ?? 0) + n;
    }
    const m = f.metrics.vertex(v.id, v.parallelism);
    const complete = isEnded(s.status);
    return {
      id: v.id,
      name: v.name,
      maxParallelism: v.maxParallelism,
      parallelism: v.parallelism,
      "subtask-attempts": subtaskAttempts(f, v),
      operators: v.operators.map((o) => ({ uid: o.uid, name: o.name })),
      status: s.status,
      "start-time": s.startedAt,
      "end-time": end,
      duration: (s.endedAt ?? now) - s.startedAt,
      tasks,
      metrics: {
        "read-records": m.numRecordsIn,
        "read-records-complete": complete,
        "write-records": m.numRecordsOut,
        "write-records-complete": complete,
      },
    } satisfies JsonObject;
  });
  const timestamps: JsonObject = { INITIALIZING: s.startedAt, CREATED: s.startedAt };
  timestamps.RUNNING = s.startedAt;
  if (s.endedAt !== undefined) timestamps[s.status] = s.endedAt;
  return {
    jid: s.jobId,
    name: s.name,
    isStoppable: false,
    state: s.status,
    "job-type": "STREAMING",
    "start-time": s.startedAt,
    "end-time": end,
    duration: (s.endedAt ?? now) - s.startedAt,
    maxParallelism: -1,
    now,
    timestamps,
    vertices,
    "status-counts": statusCounts,
    attempt: s.attempt,
    numRestarts: f.restarts,
    plan: planView(s.jobId, f.graph),
  };
}

/**
 * `GET /taskmanagers` (Flink's `TaskManagersInfo`): one entry per live
 * worker. `freeSlots` counts its slots no running job's subtask is placed on.
 * @param usedSlots the slot ids running jobs' subtasks are placed on.
 */
export function taskManagersView(
  overview: ClusterOverview,
  usedSlots: ReadonlySet<string>,
): JsonObject {
  return {
    taskmanagers: overview.workers.map((w) => {
      const used = (w.slotIds ?? []).filter((id) => usedSlots.has(id)).length;
      return {
        id: w.workerId,
        path: `${w.host}:${w.pid}`,
        dataPort: -1,
        timeSinceLastHeartbeat: w.lastHeartbeatAgoMs,
        slotsNumber: w.slots,
        freeSlots: Math.max(0, w.slots - used),
        hardware: {},
      } satisfies JsonObject;
    }),
  };
}

/**
 * The attempt each subtask of `v` runs as, by subtask index (a region
 * failover renumbers only its region's subtasks); `null` for one whose
 * region is being restarted.
 */
function subtaskAttempts(f: JobFacts, v: { readonly id: string; readonly parallelism: number }) {
  return range(v.parallelism).map((i) => f.subtaskAttempts.get(`${v.id}#${i}`) ?? null);
}

/**
 * `GET /jobs/:jobid/exceptions` (Flink's `JobExceptionsInfoWithHistory`):
 * the root exception (the job's error, timed at the job's end, but none
 * for a cancellation, else the
 * latest failure, timed at the latest failover) and the
 * history of failovers, newest first, each with a `failover` object (Weir's
 * addition): `scope` (`region` or `full`), the `region` id and its
 * `regionDescription`, the `failedAttempt` and the `attempt` it restarted
 * as (`null` before the redeployment, or when the job ended). A job served
 * from the job store has no failovers: its history is its last failure.
 */
export function exceptionsView(f: JobFacts): JsonObject {
  const s = f.status;
  // A cancellation is no failure (Flink shows no root exception for it).
  const error = s.status === "CANCELED" ? undefined : s.error;
  const cause = error ?? s.lastFailure;
  // The job's end for its error; the latest failover for a running job's latest failure.
  const timestamp = error === undefined
    ? f.failovers.at(-1)?.timestamp ?? s.endedAt ?? s.startedAt
    : s.endedAt ?? s.startedAt;
  const entries: JsonObject[] = f.failovers.length > 0
    ? [...f.failovers].reverse().map((r) => ({
      exceptionName: exceptionName(r.failure),
      stacktrace: r.failure,
      timestamp: r.timestamp,
      taskName: r.subtask ?? null,
      location: r.subtask === undefined ? null : f.placement.get(r.subtask) ?? null,
      concurrentExceptions: [],
      failover: {
        scope: r.scope,
        region: r.region?.id ?? null,
        regionDescription: r.region?.description ?? null,
        failedAttempt: r.failedAttempt,
        attempt: r.attempt ?? null,
      },
    }))
    : cause === undefined
    ? []
    : [{
      exceptionName: exceptionName(cause),
      stacktrace: cause,
      timestamp,
      taskName: null,
      location: null,
      concurrentExceptions: [],
    }];
  return {
    "root-exception": cause ?? null,
    timestamp: cause === undefined ? null : timestamp,
    "all-exceptions": [],
    truncated: false,
    exceptionHistory: { entries, truncated: false },
  };
}

/** The class name of a `name: message` failure text. */
function exceptionName(failure: string): string {
  return failure.split(":")[0] ?? "Error";
}

/**
 * `GET /jobs/:jobid/vertices/:vertexid` (Flink's `JobVertexDetailsInfo`).
 * @returns `undefined` when the job has no such vertex.
 */
export function vertexView(f: JobFacts, vertexId: string, now: number): JsonObject | undefined {
  const v = vertexOf(f, vertexId);
  if (v === undefined) return undefined;
  const s = f.status;
  const subtasks = range(v.parallelism).map((i) => {
    const m = f.metrics.subtask(v.id, i);
    const slot = f.placement.get(`${v.id}#${i}`) ?? null;
    return {
      subtask: i,
      status: subtaskState(f, m),
      // A region failover renumbers only its region's subtasks.
      attempt: f.subtaskAttempts.get(`${v.id}#${i}`) ?? null,
      "taskmanager-id": slot,
      host: slot,
      "start-time": s.startedAt,
      "end-time": s.endedAt ?? -1,
      duration: (s.endedAt ?? now) - s.startedAt,
      metrics: {
        "read-records": m?.numRecordsIn ?? 0,
        "read-records-complete": isEnded(s.status),
        "write-records": m?.numRecordsOut ?? 0,
        "write-records-complete": isEnded(s.status),
      },
    } satisfies JsonObject;
  });
  return {
    id: v.id,
    name: v.name,
    parallelism: v.parallelism,
    maxParallelism: v.maxParallelism,
    now,
    subtasks,
  };
}

/**
 * Flink's back-pressure level of a ratio of time back-pressured (0 to 1):
 * `ok` up to 0.10, `low` up to 0.5, `high` above.
 */
export function backPressureLevel(ratio: number): "ok" | "low" | "high" {
  return ratio <= 0.1 ? "ok" : ratio <= 0.5 ? "low" : "high";
}

/**
 * `GET /jobs/:jobid/vertices/:vertexid/backpressure` (Flink's
 * `JobVertexBackPressureInfo`, from `backPressuredTimeMsPerSecond` as Flink
 * 1.13+ computes it). `status` is `deprecated` while no subtask reported.
 * @returns `undefined` when the job has no such vertex.
 */
export function backPressureView(
  f: JobFacts,
  vertexId: string,
  now: number,
): JsonObject | undefined {
  const v = vertexOf(f, vertexId);
  if (v === undefined) return undefined;
  let max = 0;
  let reported = 0;
  const subtasks = range(v.parallelism).map((i) => {
    const m = f.metrics.subtask(v.id, i);
    if (m !== undefined) reported++;
    const ratio = (m?.backPressuredTimeMsPerSecond ?? 0) / 1000;
    max = Math.max(max, ratio);
    return {
      subtask: i,
      "attempt-number": f.status.attempt,
      "backpressure-level": backPressureLevel(ratio),
      ratio,
      idleRatio: (m?.idleTimeMsPerSecond ?? 0) / 1000,
      busyRatio: (m?.busyTimeMsPerSecond ?? 0) / 1000,
    } satisfies JsonObject;
  });
  return {
    status: reported > 0 ? "ok" : "deprecated",
    "backpressure-level": backPressureLevel(max),
    "end-timestamp": now,
    subtasks,
  };
}

/**
 * `GET /jobs/:jobid/vertices/:vertexid/watermarks` (Flink's
 * `MetricCollectionResponseBody`): `<subtask>.currentInputWatermark` and
 * `<subtask>.currentOutputWatermark` of every subtask, values as strings,
 * {@linkcode NO_WATERMARK} for none.
 * @returns `undefined` when the job has no such vertex.
 */
export function watermarksView(f: JobFacts, vertexId: string): Json[] | undefined {
  const v = vertexOf(f, vertexId);
  if (v === undefined) return undefined;
  const out: Json[] = [];
  for (const i of range(v.parallelism)) {
    const m = f.metrics.subtask(v.id, i);
    for (const name of ["currentInputWatermark", "currentOutputWatermark"] as const) {
      const wm = m?.[name] ?? null;
      out.push({ id: `${i}.${name}`, value: wm === null ? NO_WATERMARK : String(wm) });
    }
  }
  return out;
}

/**
 * `GET /jobs/:jobid/vertices/:vertexid/metrics[?get=a,b]` (Flink's
 * `MetricCollectionResponseBody`): without `get`, the available metric ids
 * (`<subtask>.<name>`, then each `<name>` alone for the vertex-wide value,
 * {@linkcode VERTEX_METRIC_AGGREGATES}); with it, those metrics' values as
 * strings (unknown ids, and ids no subtask reported yet, are left out, as
 * in Flink).
 * @returns `undefined` when the job has no such vertex.
 */
export function vertexMetricsView(
  f: JobFacts,
  vertexId: string,
  get: readonly string[] | undefined,
): Json[] | undefined {
  const v = vertexOf(f, vertexId);
  if (v === undefined) return undefined;
  const ids = range(v.parallelism).flatMap((i) => SUBTASK_METRIC_NAMES.map((n) => `${i}.${n}`));
  if (get === undefined) return [...ids, ...SUBTASK_METRIC_NAMES].map((id) => ({ id }));
  const out: Json[] = [];
  for (const id of get) {
    if ((SUBTASK_METRIC_NAMES as readonly string[]).includes(id)) {
      const value = vertexMetric(f, v, id as SubtaskMetricName);
      if (value !== undefined) out.push({ id, value });
      continue;
    }
    const dot = id.indexOf(".");
    const subtask = Number(id.slice(0, dot));
    const name = id.slice(dot + 1) as keyof SubtaskMetricsSample;
    if (dot < 1 || !ids.includes(id)) continue;
    const m = f.metrics.subtask(v.id, subtask);
    if (m === undefined) continue;
    out.push({ id, value: metricString(name, m[name]) });
  }
  return out;
}

/**
 * `GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics?get=a,b[&agg=min,max,avg,sum]`
 * (Flink's `AggregatedMetricsResponseBody`): each metric aggregated over the
 * subtasks that reported it (`null` watermarks are left out).
 * @returns `undefined` when the job has no such vertex.
 */
export function aggregatedSubtaskMetricsView(
  f: JobFacts,
  vertexId: string,
  get: readonly string[] | undefined,
  agg: readonly string[] | undefined,
): Json[] | undefined {
  const v = vertexOf(f, vertexId);
  if (v === undefined) return undefined;
  const names = get ?? [];
  const kinds = agg ?? ["min", "max", "avg", "sum"];
  if (get === undefined) return SUBTASK_METRIC_NAMES.map((id) => ({ id }));
  const out: Json[] = [];
  for (const name of names) {
    if (!(SUBTASK_METRIC_NAMES as readonly string[]).includes(name)) continue;
    const values: number[] = [];
    for (const i of range(v.parallelism)) {
      const x = f.metrics.subtask(v.id, i)?.[name as keyof SubtaskMetricsSample];
      if (typeof x === "number") values.push(x);
    }
    if (values.length === 0) continue;
    const row: JsonObject = { id: name };
    const sum = values.reduce((a, b) => a + b, 0);
    if (kinds.includes("min")) row.min = Math.min(...values);
    if (kinds.includes("max")) row.max = Math.max(...values);
    if (kinds.includes("avg")) row.avg = sum / values.length;
    if (kinds.includes("sum")) row.sum = sum;
    out.push(row);
  }
  return out;
}

/** The vertex-wide value of metric `name` as a string, `undefined` while no subtask reported. */
function vertexMetric(
  f: JobFacts,
  v: VertexSummary,
  name: SubtaskMetricName,
): string | undefined {
  const samples = range(v.parallelism).map((i) => f.metrics.subtask(v.id, i));
  if (samples.every((m) => m === undefined)) return undefined;
  const values = samples.map((m) => m?.[name] ?? null);
  const how = VERTEX_METRIC_AGGREGATES[name];
  if (how === "min") {
    return values.includes(null) ? NO_WATERMARK : String(Math.min(...values as number[]));
  }
  const reported = values.filter((x) => x !== null);
  return String(how === "sum" ? reported.reduce((a, b) => a + b, 0) : Math.max(...reported));
}

function metricString(name: keyof SubtaskMetricsSample, value: number | null): string {
  if (value === null) return name.endsWith("Watermark") ? NO_WATERMARK : "0";
  return String(value);
}

function subtaskState(f: JobFacts, m: SubtaskMetricsSample | undefined): string {
  if (isEnded(f.status.status)) return f.status.status;
  return m === undefined ? "DEPLOYING" : "RUNNING";
}

function subtaskStates(f: JobFacts, v: VertexSummary): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of range(v.parallelism)) {
    const state = subtaskState(f, f.metrics.subtask(v.id, i));
    out[state] = (out[state] ?? 0) + 1;
  }
  return out;
}

function vertexOf(f: JobFacts, vertexId: string): VertexSummary | undefined {
  return f.graph.vertices.find((v) => v.id === vertexId);
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
