/// <reference lib="dom" />
/** @jsx h */
/**
 * The detail of a vertex clicked in the job graph (Flink's web UI's
 * vertex panel): one row per subtask with its status, attempt, worker,
 * records, rates, busy/idle/back-pressured shares, input and output
 * watermarks and its state size in the latest completed checkpoint, plus
 * the vertex's in/out rate chart. Polls `/jobs/:jobid/vertices/:vid`, its
 * `metrics`, `backpressure` and `watermarks`, and the latest completed
 * checkpoint's `/checkpoints/details/:cid/subtasks/:vid` every second.
 *
 * @module
 */

import { h } from "../deps.ts";
import type { VNode } from "../deps.ts";
import { request } from "../api.ts";
import { SHAPES } from "../model/answer_shape.ts";
import type {
  BackPressureInfo,
  CheckpointingStatistics,
  CheckpointSubtasks,
  MetricValue,
  VertexDetails,
} from "../model/api_types.ts";
import { BACKPRESSURE_COLOURS, backPressureLevel } from "../model/backpressure.ts";
import {
  formatBytes,
  formatCount,
  formatPercent,
  formatRate,
  formatWatermark,
} from "../model/format.ts";
import type { GraphVertex } from "../model/graph.ts";
import { lowWatermark, metricIds, subtaskRows } from "../model/metrics.ts";
import type { Series } from "../model/ring.ts";
import { Chart } from "./chart.tsx";
import { ErrorBanner, Panel, StatusBadge } from "./common.tsx";
import { usePoll } from "./hooks.ts";

const SUBTASK_METRICS = [
  "numRecordsIn",
  "numRecordsOut",
  "numRecordsInPerSecond",
  "numRecordsOutPerSecond",
];

interface DetailData {
  readonly details: VertexDetails;
  readonly metrics: readonly MetricValue[];
  readonly backpressure: BackPressureInfo | undefined;
  readonly watermarks: readonly MetricValue[];
  readonly stateSizes: ReadonlyMap<number, number> | undefined;
  readonly checkpointId: number | undefined;
}

async function loadDetail(jobId: string, v: GraphVertex, ended: boolean): Promise<DetailData> {
  const job = `/jobs/${encodeURIComponent(jobId)}`;
  const base = `${job}/vertices/${encodeURIComponent(v.id)}`;
  const optional = <T,>(p: Promise<T>) => p.catch(() => undefined);
  const [details, metrics, backpressure, watermarks, checkpoints] = await Promise.all([
    request<VertexDetails>(base, { expect: SHAPES.vertex }),
    ended
      ? Promise.resolve([])
      : request<MetricValue[]>(`${base}/metrics?get=${metricIds(v.parallelism, SUBTASK_METRICS)}`, {
        expect: SHAPES.metrics,
      }),
    ended ? undefined : optional(
      request<BackPressureInfo>(`${base}/backpressure`, { expect: SHAPES.backPressure }),
    ),
    optional(request<MetricValue[]>(`${base}/watermarks`, { expect: SHAPES.metrics })),
    optional(
      request<CheckpointingStatistics>(`${job}/checkpoints`, { expect: SHAPES.checkpoints }),
    ),
  ]);
  const cid = checkpoints?.latest.completed?.id;
  let stateSizes: Map<number, number> | undefined;
  if (cid !== undefined) {
    const acks = await optional(
      request<CheckpointSubtasks>(
        `${job}/checkpoints/details/${cid}/subtasks/${encodeURIComponent(v.id)}`,
        { expect: SHAPES.checkpointSubtasks },
      ),
    );
    if (acks !== undefined) {
      stateSizes = new Map();
      for (const s of acks.subtasks) {
        if (s.state_size !== undefined) stateSizes.set(s.index, s.state_size);
      }
    }
  }
  return {
    details,
    metrics,
    backpressure,
    watermarks: watermarks ?? [],
    stateSizes,
    checkpointId: cid,
  };
}

/** Props of {@linkcode VertexDetail}. */
export interface VertexDetailProps {
  /** The job's id. */
  readonly jobId: string;
  /** The vertex clicked. */
  readonly vertex: GraphVertex;
  /** The vertex's in/out rates, kept by the graph tab. */
  readonly series: Series;
  /** Whether the job has ended: its rates and back pressure are then not live and not shown. */
  readonly ended: boolean;
  /** Called when the panel's Close is clicked. */
  readonly onClose: () => void;
}

/** The vertex panel below the graph. */
export function VertexDetail(props: VertexDetailProps): VNode {
  const v = props.vertex;
  const poll = usePoll(
    `vertex:${props.jobId}:${v.id}:${v.parallelism}:${props.ended}`,
    () => loadDetail(props.jobId, v, props.ended),
  );
  const d = poll.data;
  const rows = subtaskRows({
    parallelism: v.parallelism,
    ...(d === undefined ? {} : {
      subtasks: d.details.subtasks,
      metrics: d.metrics,
      watermarks: d.watermarks,
      ...(d.backpressure === undefined ? {} : { backpressure: d.backpressure }),
      ...(d.stateSizes === undefined ? {} : { stateSizes: d.stateSizes }),
    }),
  });
  const low = d === undefined ? undefined : lowWatermark(d.watermarks);
  return (
    <Panel
      title={
        <span>
          {v.name} <span class="muted mono">{v.id}</span>
        </span>
      }
      testId="vertex-detail"
      actions={<button type="button" class="btn btn-small" onClick={props.onClose}>Close</button>}
    >
      <ErrorBanner error={poll.error} />
      <div class="detail-summary">
        <span>
          Parallelism <b>{v.parallelism}</b>
        </span>
        <span>
          Operators <b>{v.operators.join(" → ")}</b>
        </span>
        <span>
          Low watermark <b>{formatWatermark(low)}</b>
        </span>
        <span>
          State size (checkpoint {d?.checkpointId ?? "-"}){" "}
          <b>{d?.stateSizes === undefined ? "-" : formatBytes(sum(d.stateSizes.values()))}</b>
        </span>
      </div>
      <div class="detail-grid">
        <table class="grid">
          <thead>
            <tr>
              <th class="num">Subtask</th>
              <th>Status</th>
              <th class="num">Attempt</th>
              <th>Worker slot</th>
              <th class="num">Records in</th>
              <th class="num">Records out</th>
              <th class="num">In/s</th>
              <th class="num">Out/s</th>
              <th class="num">Busy</th>
              <th class="num">Idle</th>
              <th class="num">Backpressured</th>
              <th>Input watermark</th>
              <th>Output watermark</th>
              <th class="num">State size</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => {
              const level = backPressureLevel(r.backPressureRatio);
              return (
                <tr key={r.subtask} data-testid="subtask-row" data-subtask={r.subtask}>
                  <td class="num">{r.subtask}</td>
                  <td>
                    <StatusBadge status={r.status} />
                  </td>
                  <td class="num">{r.attempt ?? "-"}</td>
                  <td class="mono">{r.host ?? "-"}</td>
                  <td class="num">{formatCount(r.recordsIn)}</td>
                  <td class="num">{formatCount(r.recordsOut)}</td>
                  <td class="num">{formatRate(r.inPerSecond)}</td>
                  <td class="num">{formatRate(r.outPerSecond)}</td>
                  <td class="num">{formatPercent(r.busyRatio)}</td>
                  <td class="num">{formatPercent(r.idleRatio)}</td>
                  <td class="num">
                    <span class="bp-dot" style={{ background: BACKPRESSURE_COLOURS[level] }} />
                    {formatPercent(r.backPressureRatio)}{" "}
                    {r.backPressureRatio === undefined ? "" : level}
                  </td>
                  <td class="mono">
                    {r.inputWatermark === undefined ? "-" : formatWatermark(r.inputWatermark)}
                  </td>
                  <td class="mono">
                    {r.outputWatermark === undefined ? "-" : formatWatermark(r.outputWatermark)}
                  </td>
                  <td class="num">{formatBytes(r.stateSize)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {props.series.times.length > 0 && (
        <Chart series={props.series} labels={["in/s", "out/s"]} unit="rate" height={150} />
      )}
    </Panel>
  );
}

function sum(xs: Iterable<number>): number {
  let s = 0;
  for (const x of xs) s += x;
  return s;
}
