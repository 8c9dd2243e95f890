/// <reference lib="dom" />
/** @jsx h */
/**
 * The job page's checkpoints tab (`#/jobs/<id>/checkpoints`), Flink's web
 * UI's Checkpoints: counts, the latest completed, savepoint, failed and
 * restored checkpoints, a chart of durations and sizes, the history (click
 * one for its per-vertex and per-subtask statistics: sync, async,
 * alignment, start delay, sizes) and the checkpointing configuration.
 * Polls `/jobs/:jobid/checkpoints` and `.../checkpoints/config` every
 * second, and the selected checkpoint's `details` and `details/.../subtasks/:vid`.
 *
 * @module
 */

import { h, useRef, useState } from "../deps.ts";
import type { VNode } from "../deps.ts";
import { request } from "../api.ts";
import { SHAPES } from "../model/answer_shape.ts";
import type {
  Checkpoint,
  CheckpointConfig,
  CheckpointingStatistics,
  CheckpointSubtasks,
  JobDetails,
} from "../model/api_types.ts";
import {
  type CheckpointTimings,
  checkpointTimings,
  configRows,
  durationSizeSeries,
} from "../model/checkpoint_view.ts";
import { formatBytes, formatDuration, formatTimestamp } from "../model/format.ts";
import { Chart } from "./chart.tsx";
import { Empty, ErrorBanner, KeyValues, Panel, StatusBadge } from "./common.tsx";
import { usePoll } from "./hooks.ts";

/** The checkpoints tab of a job. */
export function CheckpointsTab(props: { readonly job: JobDetails }): VNode {
  const jobId = props.job.jid;
  const base = `/jobs/${encodeURIComponent(jobId)}/checkpoints`;
  const timings = useRef(new Map<number, CheckpointTimings | null>());
  const vertexIds = props.job.vertices.map((v) => v.id);
  const stats = usePoll(`checkpoints:${jobId}`, async () => {
    const s = await request<CheckpointingStatistics>(base, { expect: SHAPES.checkpoints });
    await loadTimings(base, s.history, vertexIds, timings.current);
    return s;
  });
  const config = usePoll(
    `checkpoint-config:${jobId}`,
    () => request<CheckpointConfig>(`${base}/config`, { expect: SHAPES.checkpointConfig }),
    5000,
  );
  const seen = useRef(new Map<number, Checkpoint>());
  const [selected, setSelected] = useState<number | null>(null);
  const s = stats.data;
  if (s !== undefined) { for (const c of s.history) seen.current.set(c.id, c); }
  const chart = durationSizeSeries([...seen.current.values()]);
  return (
    <div>
      <ErrorBanner error={stats.error} />
      {s === undefined ? <Empty>Loading checkpoint statistics…</Empty> : (
        <div>
          <div class="two-col">
            <Panel title="Counts" testId="checkpoint-counts">
              <KeyValues
                rows={[
                  ["Triggered", s.counts.total],
                  ["In progress", s.counts.in_progress],
                  ["Completed", s.counts.completed],
                  ["Failed", s.counts.failed],
                  ["Restored", s.counts.restored],
                ]}
              />
            </Panel>
            <Panel title="Latest">
              <KeyValues
                testId="checkpoint-latest"
                rows={[
                  ["Completed", latestText(s.latest.completed)],
                  ["Savepoint", latestText(s.latest.savepoint ?? null)],
                  [
                    "Failed",
                    s.latest.failed === null
                      ? "None"
                      : `#${s.latest.failed.id} at ${
                        formatTimestamp(s.latest.failed.failure_timestamp)
                      }: ${s.latest.failed.failure_message ?? "no reason given"}`,
                  ],
                  [
                    "Restored",
                    s.latest.restored === null
                      ? "None"
                      : `#${s.latest.restored.id}${
                        s.latest.restored.is_savepoint ? " (savepoint)" : ""
                      } at ${formatTimestamp(s.latest.restored.restore_timestamp)}`,
                  ],
                ]}
              />
            </Panel>
          </div>
          <Panel title="Duration and size">
            {chart.times.length === 0
              ? <Empty>No completed checkpoint yet.</Empty>
              : (
                <div class="charts">
                  <Chart
                    series={{ ...chart, lines: [chart.lines[0] ?? []] }}
                    labels={["end to end duration"]}
                    unit="ms"
                    x="index"
                    height={160}
                  />
                  <Chart
                    series={{ ...chart, lines: [chart.lines[1] ?? [], chart.lines[2] ?? []] }}
                    labels={["checkpointed size", "full size"]}
                    unit="bytes"
                    x="index"
                    height={160}
                  />
                </div>
              )}
          </Panel>
          <Panel title="History">
            {s.history.length === 0
              ? <Empty>No checkpoints yet.</Empty>
              : (
                <table class="grid clickable">
                  <thead>
                    <tr>
                      <th class="num">ID</th>
                      <th>Status</th>
                      <th>Type</th>
                      <th class="num">Acknowledged</th>
                      <th>Trigger time</th>
                      <th>Latest ack</th>
                      <th class="num">End to end</th>
                      <th class="num" title="the longest barrier alignment of any subtask">
                        Alignment
                      </th>
                      <th class="num" title="the longest start delay of any subtask">
                        Start delay
                      </th>
                      <th class="num">Checkpointed size</th>
                      <th class="num">Full size</th>
                    </tr>
                  </thead>
                  <tbody>
                    {s.history.map((c) => (
                      <tr
                        key={c.id}
                        data-testid="checkpoint-row"
                        data-checkpoint-id={c.id}
                        data-status={c.status}
                        class={selected === c.id ? "selected" : ""}
                        onClick={() => setSelected(selected === c.id ? null : c.id)}
                      >
                        <td class="num">{c.id}</td>
                        <td>
                          <StatusBadge status={c.status} />
                        </td>
                        <td>{c.is_savepoint ? "Savepoint" : "Checkpoint"}</td>
                        <td class="num">{c.num_acknowledged_subtasks} / {c.num_subtasks}</td>
                        <td>{formatTimestamp(c.trigger_timestamp)}</td>
                        <td>{formatTimestamp(c.latest_ack_timestamp)}</td>
                        <td class="num">{formatDuration(c.end_to_end_duration)}</td>
                        <td class="num">
                          {formatDuration(timings.current.get(c.id)?.alignmentMs)}
                        </td>
                        <td class="num">
                          {formatDuration(timings.current.get(c.id)?.startDelayMs)}
                        </td>
                        <td class="num">{formatBytes(c.checkpointed_size)}</td>
                        <td class="num">{formatBytes(c.state_size)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
          </Panel>
          {selected !== null && (
            <CheckpointDetail jobId={jobId} checkpointId={selected} job={props.job} />
          )}
        </div>
      )}
      <Panel title="Configuration" testId="checkpoint-config">
        <ErrorBanner error={config.error} />
        {config.data === undefined
          ? <Empty>Loading…</Empty>
          : <KeyValues rows={configRows(config.data)} />}
      </Panel>
    </div>
  );
}

/** Completed checkpoints whose timings one poll fetches at most (each costs a request per vertex). */
const TIMINGS_PER_POLL = 3;

/**
 * Fetches the alignment and start delay of completed checkpoints of the
 * history not yet known (they do not change once completed) into `cache`;
 * `null` for one whose statistics are gone.
 */
async function loadTimings(
  base: string,
  history: readonly Checkpoint[],
  vertexIds: readonly string[],
  cache: Map<number, CheckpointTimings | null>,
): Promise<void> {
  const todo = history.filter((c) => c.status === "COMPLETED" && !cache.has(c.id))
    .slice(0, TIMINGS_PER_POLL);
  await Promise.all(todo.map(async (c) => {
    try {
      const answers = await Promise.all(
        vertexIds.map((v) =>
          request<CheckpointSubtasks>(
            `${base}/details/${c.id}/subtasks/${encodeURIComponent(v)}`,
            { expect: SHAPES.checkpointSubtasks },
          )
        ),
      );
      cache.set(c.id, checkpointTimings(answers));
    } catch {
      cache.set(c.id, null);
    }
  }));
}

function latestText(c: Checkpoint | null): string {
  if (c === null) return "None";
  const where = c.external_path ? ` at ${c.external_path}` : "";
  return `#${c.id}, ${formatTimestamp(c.latest_ack_timestamp)}, ${
    formatDuration(c.end_to_end_duration)
  }, ${formatBytes(c.checkpointed_size)}${where}`;
}

interface DetailData {
  readonly checkpoint: Checkpoint;
  readonly subtasks: ReadonlyMap<string, CheckpointSubtasks>;
}

/** Per-vertex and per-subtask statistics of one checkpoint. */
function CheckpointDetail(props: {
  readonly jobId: string;
  readonly checkpointId: number;
  readonly job: JobDetails;
}): VNode {
  const base = `/jobs/${encodeURIComponent(props.jobId)}/checkpoints/details/${props.checkpointId}`;
  const poll = usePoll<DetailData>(`checkpoint:${props.jobId}:${props.checkpointId}`, async () => {
    const checkpoint = await request<Checkpoint>(base, { expect: SHAPES.checkpoint });
    const ids = Object.keys(checkpoint.tasks ?? {});
    const subs = await Promise.all(
      ids.map(async (id) =>
        [
          id,
          await request<CheckpointSubtasks>(`${base}/subtasks/${encodeURIComponent(id)}`, {
            expect: SHAPES.checkpointSubtasks,
          }),
        ] as const
      ),
    );
    return { checkpoint, subtasks: new Map(subs) };
  });
  const names = new Map(props.job.vertices.map((v) => [v.id, v.name]));
  const d = poll.data;
  return (
    <Panel title={`Checkpoint ${props.checkpointId}`} testId="checkpoint-detail">
      <ErrorBanner error={poll.error} />
      {d === undefined ? <Empty>Loading…</Empty> : (
        <div>
          {d.checkpoint.failure_message && (
            <div class="banner banner-error">{d.checkpoint.failure_message}</div>
          )}
          {[...d.subtasks.entries()].map(([vid, t]) => (
            <div key={vid} class="checkpoint-vertex">
              <h3>
                {names.get(vid) ?? vid} <span class="muted mono">{vid}</span>{" "}
                <span class="muted">
                  {t.num_acknowledged_subtasks} / {t.num_subtasks} acknowledged,{" "}
                  {formatBytes(t.checkpointed_size)} checkpointed, {formatBytes(t.state_size)} full,
                  {" "}
                  {formatDuration(t.end_to_end_duration)}
                </span>
              </h3>
              <table class="grid">
                <thead>
                  <tr>
                    <th class="num">Subtask</th>
                    <th>Status</th>
                    <th>Acknowledged</th>
                    <th class="num">End to end</th>
                    <th class="num">Sync</th>
                    <th class="num">Async</th>
                    <th class="num">Alignment</th>
                    <th class="num">Start delay</th>
                    <th class="num">Checkpointed size</th>
                    <th class="num">Full size</th>
                  </tr>
                </thead>
                <tbody>
                  {t.subtasks.map((st) => (
                    <tr
                      key={st.index}
                      data-testid="checkpoint-subtask-row"
                      data-vertex-id={vid}
                      data-subtask={st.index}
                    >
                      <td class="num">{st.index}</td>
                      <td>{st.status === "completed" ? "Completed" : "Pending or failed"}</td>
                      <td>{formatTimestamp(st.ack_timestamp)}</td>
                      <td class="num">{formatDuration(st.end_to_end_duration)}</td>
                      <td class="num">{formatDuration(st.checkpoint?.sync)}</td>
                      <td class="num">{formatDuration(st.checkpoint?.async)}</td>
                      <td class="num">{formatDuration(st.alignment?.duration)}</td>
                      <td class="num">{formatDuration(st.start_delay)}</td>
                      <td class="num">{formatBytes(st.checkpointed_size)}</td>
                      <td class="num">{formatBytes(st.state_size)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ))}
        </div>
      )}
    </Panel>
  );
}
