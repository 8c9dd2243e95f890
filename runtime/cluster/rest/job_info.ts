/**
 * What `weir info <job>` asks the coordinator over NATS
 * (`weir.cluster.info`, see `cluster_protocol.ts`) and how it prints it. The
 * answer is built by the same view functions as the REST API's
 * `GET /jobs/:jobid`, `GET /jobs/:jobid/checkpoints` and
 * `GET /jobs/:jobid/exceptions`, so the two always agree.
 *
 * @module
 */

import type { RestBackend } from "./job_facts.ts";
import { exceptionsView, jobDetailsView, type JsonObject } from "./job_views.ts";
import { checkpointsView } from "./checkpoint_views.ts";

/** A job's details, checkpoint statistics and exceptions, each in its REST route's shape. */
export interface JobInfo {
  /** `GET /jobs/:jobid`. */
  readonly job: JsonObject;
  /** `GET /jobs/:jobid/checkpoints`. */
  readonly checkpoints: JsonObject;
  /** `GET /jobs/:jobid/exceptions`. */
  readonly exceptions: JsonObject;
}

/** The coordinator's answer to an info request. */
export type JobInfoReply =
  | { readonly ok: true; readonly info: JobInfo }
  | { readonly ok: false; readonly error: string };

/**
 * Answers an info request for `jobId`.
 * @returns the job's info, or `ok: false` naming the job when it is unknown.
 */
export function answerJobInfo(backend: RestBackend, jobId: unknown, now: number): JobInfoReply {
  if (typeof jobId !== "string") {
    return { ok: false, error: `an info request needs a job id: got ${JSON.stringify(jobId)}` };
  }
  const f = backend.jobFacts(jobId);
  if (f === undefined) return { ok: false, error: `no job ${jobId}` };
  return {
    ok: true,
    info: {
      job: jobDetailsView(f, now),
      checkpoints: checkpointsView(f),
      exceptions: exceptionsView(f),
    },
  };
}

/**
 * Renders a {@linkcode JobInfo} as `weir info` prints it: status and
 * attempt, each vertex with its parallelism, its subtasks' attempts (a
 * region failover renumbers only its region's) and records, the latest
 * checkpoints (id, status, duration, size), the last failure and the latest
 * failovers (region or full, attempt before and after, failed subtask).
 * @param latest how many checkpoints of the history to show. Default 5.
 * @returns the lines, without a trailing newline.
 */
export function formatJobInfo(info: JobInfo, latest = 5): string {
  const j = info.job as Record<string, unknown>;
  const lines: string[] = [];
  lines.push(`job ${j.jid} '${j.name}'`);
  lines.push(
    `status: ${j.state}, attempt ${j.attempt}, restarts ${j.numRestarts}, ` +
      `${j.state === "RUNNING" ? "running for" : "ran for"} ${formatMs(j.duration as number)}`,
  );
  lines.push("");
  lines.push("VERTEX\tPARALLELISM\tATTEMPTS\tRECORDS IN\tRECORDS OUT\tNAME");
  for (const v of (j.vertices ?? []) as Record<string, unknown>[]) {
    const m = v.metrics as Record<string, unknown>;
    // Each subtask's attempt, by index; `-` while its region is being restarted.
    const attempts = ((v["subtask-attempts"] ?? []) as (number | null)[])
      .map((a) => a ?? "-").join(",");
    lines.push(
      `${v.id}\t${v.parallelism}\t${attempts}\t${m["read-records"]}\t${m["write-records"]}\t` +
        `${v.name}`,
    );
  }
  const cp = info.checkpoints as Record<string, Record<string, unknown>>;
  const counts = cp.counts!;
  lines.push("");
  lines.push(
    `checkpoints: ${counts.total} triggered, ${counts.completed} completed, ` +
      `${counts.failed} failed, ${counts.in_progress} in progress, ${counts.restored} restored`,
  );
  const history = (cp.history ?? []) as unknown as Record<string, unknown>[];
  if (history.length > 0) {
    lines.push("ID\tSTATUS\tTYPE\tDURATION\tSIZE\tFULL SIZE");
    for (const c of history.slice(0, latest)) {
      lines.push(
        `${c.id}\t${c.status}\t${c.checkpoint_type}\t${
          formatMs(c.end_to_end_duration as number)
        }\t` +
          `${c.checkpointed_size} B\t${c.state_size} B`,
      );
    }
  }
  const exceptions = info.exceptions as Record<string, unknown>;
  const failure = exceptions["root-exception"];
  lines.push("");
  lines.push(`last failure: ${failure ?? "none"}`);
  const entries = ((exceptions.exceptionHistory as Record<string, unknown> | undefined)?.entries ??
    []) as Record<string, unknown>[];
  const failovers = entries.filter((e) => e.failover !== undefined).slice(0, latest);
  if (failovers.length > 0) {
    lines.push("");
    lines.push("FAILOVER\tTIME\tATTEMPT\tSUBTASK\tFAILURE");
    for (const e of failovers) {
      const f = e.failover as Record<string, unknown>;
      const scope = f.scope === "region" ? String(f.regionDescription) : "full";
      // No attempt: not redeployed (yet, or superseded by a later failover, or the job ended).
      const next = f.attempt === null ? "-" : String(f.attempt);
      lines.push(
        `${scope}\t${new Date(e.timestamp as number).toISOString()}\t` +
          `${f.failedAttempt} -> ${next}\t${e.taskName ?? "-"}\t${firstLine(e.stacktrace)}`,
      );
    }
  }
  return lines.join("\n");
}

/** The first line of a failure text, at most 160 characters. */
function firstLine(text: unknown): string {
  const line = String(text).split("\n")[0] ?? "";
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

function formatMs(ms: number): string {
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}
