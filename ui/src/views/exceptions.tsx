/// <reference lib="dom" />
/** @jsx h */
/**
 * The job page's exceptions tab (`#/jobs/<id>/exceptions`), Flink's web
 * UI's Exceptions: the root exception and the failure history, newest
 * first, each with its time, exception, failed subtask, the worker slot it
 * ran on and the failover it caused (scope, region, attempts). Polls
 * `/jobs/:jobid/exceptions` every second.
 *
 * @module
 */

import { h, useState } from "../deps.ts";
import type { VNode } from "../deps.ts";
import { request } from "../api.ts";
import { SHAPES } from "../model/answer_shape.ts";
import type { ExceptionEntry, JobExceptions } from "../model/api_types.ts";
import { formatTimestamp } from "../model/format.ts";
import { Empty, ErrorBanner, Panel } from "./common.tsx";
import { usePoll } from "./hooks.ts";

/** The exceptions tab of a job. */
export function ExceptionsTab(props: { readonly jobId: string }): VNode {
  const poll = usePoll(
    `exceptions:${props.jobId}`,
    () =>
      request<JobExceptions>(`/jobs/${encodeURIComponent(props.jobId)}/exceptions`, {
        expect: SHAPES.exceptions,
      }),
  );
  const d = poll.data;
  const entries = d?.exceptionHistory.entries ?? [];
  return (
    <div>
      <ErrorBanner error={poll.error} />
      <Panel title="Root exception">
        {d === undefined
          ? <Empty>Loading…</Empty>
          : d["root-exception"] === null
          ? <Empty>The job has not failed.</Empty>
          : (
            <div>
              <div class="muted">{formatTimestamp(d.timestamp)}</div>
              <pre class="trace" data-testid="root-exception">{d["root-exception"]}</pre>
            </div>
          )}
      </Panel>
      <Panel title={`Failure history${d?.exceptionHistory.truncated ? " (truncated)" : ""}`}>
        {d !== undefined && entries.length === 0
          ? <Empty>No failures.</Empty>
          : (
            <table class="grid">
              <thead>
                <tr>
                  <th>Time</th>
                  <th>Exception</th>
                  <th>Subtask</th>
                  <th>Location</th>
                  <th>Failover</th>
                  <th class="num">Attempt</th>
                </tr>
              </thead>
              <tbody>
                {entries.map((e, i) => <ExceptionRow key={`${e.timestamp}-${i}`} entry={e} />)}
              </tbody>
            </table>
          )}
      </Panel>
    </div>
  );
}

function ExceptionRow(props: { readonly entry: ExceptionEntry }): VNode {
  const e = props.entry;
  const [open, setOpen] = useState(false);
  const f = e.failover;
  const message = e.stacktrace.startsWith(`${e.exceptionName}:`)
    ? e.stacktrace.slice(e.exceptionName.length + 1).trim()
    : e.stacktrace;
  const firstLine = message.split("\n")[0] ?? "";
  return (
    <tr data-testid="exception-row" class="clickable-row" onClick={() => setOpen(!open)}>
      <td class="nowrap">{formatTimestamp(e.timestamp)}</td>
      <td class="exception-cell">
        <b>{e.exceptionName}</b>
        {open
          ? <pre class="trace">{message}</pre>
          : <div class="ellipsis" title={message}>{firstLine}</div>}
      </td>
      <td class="mono">{e.taskName ?? "-"}</td>
      <td class="mono">{e.location ?? "-"}</td>
      <td>
        {f === undefined
          ? "-"
          : f.scope === "region"
          ? <span title={f.regionDescription ?? ""}>region {f.region ?? "?"}</span>
          : "full"}
      </td>
      <td class="num nowrap">
        {f === undefined ? "-" : `${f.failedAttempt} → ${f.attempt ?? "-"}`}
      </td>
    </tr>
  );
}
