/// <reference lib="dom" />
/** @jsx h */
/**
 * A job's page (`#/jobs/<id>[/checkpoints|/exceptions]`): its header
 * (name, id, status, start, uptime, attempt, restarts), the actions, the
 * tabs and the tab's content. Polls `/jobs/:jobid` every second; the tabs
 * poll their own routes.
 *
 * @module
 */

import { h, useEffect } from "../deps.ts";
import type { VNode } from "../deps.ts";
import { request } from "../api.ts";
import { SHAPES } from "../model/answer_shape.ts";
import type { JobDetails } from "../model/api_types.ts";
import { formatDuration, formatTimestamp } from "../model/format.ts";
import { jobHash, type JobTab } from "../model/route.ts";
import { JobActions } from "./actions.tsx";
import { CheckpointsTab } from "./checkpoints.tsx";
import { Empty, ErrorBanner, StatusBadge } from "./common.tsx";
import { ExceptionsTab } from "./exceptions.tsx";
import { usePoll } from "./hooks.ts";
import { JobGraphTab } from "./job_graph.tsx";

const TABS: readonly (readonly [JobTab, string])[] = [
  ["graph", "Overview"],
  ["checkpoints", "Checkpoints"],
  ["exceptions", "Exceptions"],
];

/** The page of job `jobId`, showing tab `tab`. */
export function JobPage(props: { readonly jobId: string; readonly tab: JobTab }): VNode {
  const poll = usePoll(
    `job:${props.jobId}`,
    () => request<JobDetails>(`/jobs/${encodeURIComponent(props.jobId)}`, { expect: SHAPES.job }),
  );
  const job = poll.data;
  const title = job === undefined ? undefined : `${job.name} (${job.state}) · Weir`;
  useEffect(() => {
    if (title === undefined) return;
    document.title = title;
    return () => {
      document.title = "Weir dashboard";
    };
  }, [title]);
  if (job === undefined) {
    return (
      <div class="page">
        <div class="breadcrumb">
          <a href="#/">Jobs</a> / <span class="mono">{props.jobId}</span>
        </div>
        <ErrorBanner error={poll.error} />
        {poll.error === undefined && <Empty>Loading job…</Empty>}
      </div>
    );
  }
  const ended = job["end-time"] >= 0;
  return (
    <div class="page">
      <div class="breadcrumb">
        <a href="#/">Jobs</a> / {job.name}
      </div>
      <ErrorBanner error={poll.error} />
      <div class="job-header">
        <div class="job-title">
          <h1>{job.name}</h1>
          <StatusBadge status={job.state} testId="job-status" />
        </div>
        <div class="job-facts">
          <span>
            ID <b class="mono">{job.jid}</b>
          </span>
          <span>
            Started <b>{formatTimestamp(job["start-time"])}</b>
          </span>
          {ended && (
            <span>
              Ended <b>{formatTimestamp(job["end-time"])}</b>
            </span>
          )}
          <span>
            {ended ? "Duration" : "Uptime"} <b>{formatDuration(job.duration)}</b>
          </span>
          <span>
            Attempt <b>{job.attempt ?? "-"}</b>
          </span>
          <span>
            Restarts <b>{job.numRestarts ?? "-"}</b>
          </span>
        </div>
        <JobActions key={job.jid} jobId={job.jid} jobName={job.name} state={job.state} />
      </div>
      <nav class="tabs">
        {TABS.map(([tab, label]) => (
          <a
            key={tab}
            href={jobHash(job.jid, tab)}
            class={`tab${props.tab === tab ? " tab-active" : ""}`}
            data-testid={`tab-${tab}`}
          >
            {label}
          </a>
        ))}
      </nav>
      {props.tab === "graph" && <JobGraphTab key={job.jid} job={job} />}
      {props.tab === "checkpoints" && <CheckpointsTab key={job.jid} job={job} />}
      {props.tab === "exceptions" && <ExceptionsTab key={job.jid} jobId={job.jid} />}
    </div>
  );
}
