/// <reference lib="dom" />
/** @jsx h */
/**
 * The overview page (`#/`), Flink's web UI's Overview and Task Managers in
 * one: the cluster's slots and job counts, one row per job (status, uptime,
 * attempt, restarts, subtasks, a throughput sparkline) and one row per
 * worker (slots, heartbeat). Polls `/overview`, `/jobs/overview`,
 * `/taskmanagers` and, per running job, `/jobs/:jobid` every second.
 *
 * @module
 */

import { h, useRef } from "../deps.ts";
import type { VNode } from "../deps.ts";
import { request } from "../api.ts";
import { SHAPES } from "../model/answer_shape.ts";
import type {
  ClusterOverview,
  JobDetails,
  JobOverview,
  JobsOverview,
  TaskManagers,
} from "../model/api_types.ts";
import { formatDuration, formatRate, formatTimestamp } from "../model/format.ts";
import { jobGraph, sourceVertexIds } from "../model/graph.ts";
import { counterRate, emptySeries, latest, pushSample, type Series } from "../model/ring.ts";
import { jobHash } from "../model/route.ts";
import { ApiError } from "../model/api_error.ts";
import { Sparkline } from "./chart.tsx";
import { Empty, ErrorBanner, Panel, StatusBadge } from "./common.tsx";
import { useNow, usePoll } from "./hooks.ts";

/** The running jobs whose throughput the overview follows (each costs a request a second). */
const MAX_SPARKLINES = 20;

/** The overview page. */
export function OverviewPage(
  props: { readonly overview: ClusterOverview | undefined },
): VNode {
  const jobs = usePoll(
    "jobs",
    () => request<JobsOverview>("/jobs/overview", { expect: SHAPES.jobsOverview }),
  );
  const workers = usePoll(
    "taskmanagers",
    () => request<TaskManagers>("/taskmanagers", { expect: SHAPES.taskManagers }),
  );
  const now = useNow();
  const o = props.overview;
  const list = [...(jobs.data?.jobs ?? [])].sort((a, b) => b["start-time"] - a["start-time"]);
  const running = new Set(
    list.filter((j) => !ended(j.state)).slice(0, MAX_SPARKLINES).map((j) => j.jid),
  );
  const workersMissing = workers.error instanceof ApiError && workers.error.status === 404;
  return (
    <div class="page">
      <ErrorBanner error={jobs.error} />
      <div class="cards">
        <Card label="Workers" value={o?.taskmanagers} />
        <Card
          label="Slots available / total"
          value={o === undefined ? undefined : `${o["slots-available"]} / ${o["slots-total"]}`}
        />
        <Card label="Running jobs" value={o?.["jobs-running"]} />
        <Card label="Finished" value={o?.["jobs-finished"]} />
        <Card label="Cancelled" value={o?.["jobs-cancelled"]} />
        <Card label="Failed" value={o?.["jobs-failed"]} />
      </div>
      <Panel title="Jobs">
        {jobs.data === undefined
          ? <Empty>Loading jobs…</Empty>
          : list.length === 0
          ? <Empty>No jobs.</Empty>
          : (
            <table class="grid" data-testid="jobs-table">
              <thead>
                <tr>
                  <th>Job name</th>
                  <th>Start time</th>
                  <th class="num">Duration</th>
                  <th class="num">Attempt</th>
                  <th class="num">Restarts</th>
                  <th class="num">Subtasks</th>
                  <th>Throughput</th>
                  <th>Status</th>
                </tr>
              </thead>
              <tbody>
                {list.map((j) => (
                  <JobRow key={j.jid} job={j} now={now} follow={running.has(j.jid)} />
                ))}
              </tbody>
            </table>
          )}
      </Panel>
      <Panel title="Workers">
        {workersMissing
          ? <Empty>This coordinator does not list its workers (no /taskmanagers route).</Empty>
          : (
            <div>
              <ErrorBanner error={workers.error} />
              {workers.data === undefined
                ? <Empty>Loading workers…</Empty>
                : workers.data.taskmanagers.length === 0
                ? <Empty>No workers registered.</Empty>
                : (
                  <table class="grid" data-testid="workers-table">
                    <thead>
                      <tr>
                        <th>Worker</th>
                        <th>Path</th>
                        <th class="num">Slots</th>
                        <th class="num">Free slots</th>
                        <th class="num">Last heartbeat</th>
                      </tr>
                    </thead>
                    <tbody>
                      {workers.data.taskmanagers.map((w) => (
                        <tr key={w.id} data-testid="worker-row" data-worker-id={w.id}>
                          <td class="mono">{w.id}</td>
                          <td class="mono">{w.path ?? "-"}</td>
                          <td class="num">{w.slotsNumber}</td>
                          <td class="num">{w.freeSlots}</td>
                          <td class="num">
                            {w.timeSinceLastHeartbeat === undefined
                              ? "-"
                              : `${formatDuration(w.timeSinceLastHeartbeat)} ago`}
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                )}
            </div>
          )}
      </Panel>
    </div>
  );
}

function Card(
  props: { readonly label: string; readonly value: string | number | undefined },
): VNode {
  return (
    <div class="card">
      <div class="card-value">{props.value ?? "-"}</div>
      <div class="card-label">{props.label}</div>
    </div>
  );
}

function ended(state: string): boolean {
  return state === "FINISHED" || state === "FAILED" || state === "CANCELED";
}

function JobRow(
  props: { readonly job: JobOverview; readonly now: number; readonly follow: boolean },
): VNode {
  const j = props.job;
  const duration = ended(j.state) ? j.duration : Math.max(j.duration, props.now - j["start-time"]);
  const subtasks = j.tasks.total ?? 0;
  const runningSubtasks = j.tasks.RUNNING ?? 0;
  return (
    <tr data-testid="job-row" data-job-id={j.jid}>
      <td>
        <a href={jobHash(j.jid)} class="job-link">{j.name}</a>
        <div class="sub mono">{j.jid}</div>
      </td>
      <td>{formatTimestamp(j["start-time"])}</td>
      <td class="num">{formatDuration(duration)}</td>
      <td class="num">{j.attempt ?? "-"}</td>
      <td class="num">{j.numRestarts ?? "-"}</td>
      <td class="num">{ended(j.state) ? subtasks : `${runningSubtasks} / ${subtasks}`}</td>
      <td>{props.follow ? <Throughput jobId={j.jid} /> : <span class="muted">-</span>}</td>
      <td>
        <StatusBadge status={j.state} testId="job-status" />
      </td>
    </tr>
  );
}

/**
 * A running job's source throughput (records/s): the rate of its source
 * vertices' `write-records` between two polls of `/jobs/:jobid`.
 */
function Throughput(props: { readonly jobId: string }): VNode {
  const state = useRef<{ series: Series; previous?: { count: number; timeMs: number } }>({
    series: emptySeries(1),
  });
  usePoll(`throughput:${props.jobId}`, async () => {
    const job = await request<JobDetails>(`/jobs/${encodeURIComponent(props.jobId)}`, {
      expect: SHAPES.job,
    });
    const sources = new Set(sourceVertexIds(jobGraph(job)));
    let count = 0;
    for (const v of job.vertices) if (sources.has(v.id)) count += v.metrics?.["write-records"] ?? 0;
    const t = job.now ?? Date.now();
    const rate = counterRate(state.current.previous, count, t);
    state.current.previous = { count, timeMs: t };
    if (rate !== undefined) state.current.series = pushSample(state.current.series, t, [rate]);
    return state.current.series;
  });
  const s = state.current.series;
  return (
    <div class="throughput">
      <Sparkline series={s} />
      <span class="num">{formatRate(latest(s, 0))}</span>
    </div>
  );
}
