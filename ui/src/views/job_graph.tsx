/// <reference lib="dom" />
/** @jsx h */
/**
 * The job page's graph tab (`#/jobs/<id>`), Flink's web UI's job overview:
 * the job graph laid out left to right (dagre), one box per vertex with
 * its chain of operators, parallelism, records in/out per second and back
 * pressure coloured OK/LOW/HIGH, edges labelled with their ship strategy,
 * a throughput chart of the last two minutes, and the detail of the vertex
 * clicked. Polls each vertex's `subtasks/metrics` (sums of
 * `numRecordsInPerSecond`, `numRecordsOutPerSecond`) and `backpressure`
 * every second.
 *
 * @module
 */

import { h, useMemo, useState } from "../deps.ts";
import type { VNode } from "../deps.ts";
import { request } from "../api.ts";
import { SHAPES } from "../model/answer_shape.ts";
import type { AggregatedMetric, BackPressureInfo, JobDetails } from "../model/api_types.ts";
import {
  BACKPRESSURE_COLOURS,
  type BackPressureLevel,
  levelOfJson,
  maxRatio,
} from "../model/backpressure.ts";
import { formatPercent, formatRate } from "../model/format.ts";
import { type GraphVertex, jobGraph, type JobGraphModel, sourceVertexIds } from "../model/graph.ts";
import { edgePath, layoutGraph } from "../model/layout.ts";
import { aggregate } from "../model/metrics.ts";
import { emptySeries, pushSample, type Series } from "../model/ring.ts";
import { Chart } from "./chart.tsx";
import { Empty, ErrorBanner, Panel } from "./common.tsx";
import { usePoll } from "./hooks.ts";
import { VertexDetail } from "./vertex_detail.tsx";

/** What the graph shows of a vertex, from its latest poll. */
export interface VertexLive {
  /** Records received per second, summed over the subtasks. */
  readonly inPerSecond: number | undefined;
  /** Records emitted per second, summed over the subtasks. */
  readonly outPerSecond: number | undefined;
  /** The REST API's back-pressure level. */
  readonly level: BackPressureLevel;
  /** The busiest subtask's back-pressured share, 0 to 1; undefined before any report. */
  readonly ratio: number | undefined;
}

const RATE_METRICS = "numRecordsInPerSecond,numRecordsOutPerSecond";

async function loadVertexLive(jobId: string, vertexId: string): Promise<VertexLive> {
  const base = `/jobs/${encodeURIComponent(jobId)}/vertices/${encodeURIComponent(vertexId)}`;
  const [rates, bp] = await Promise.all([
    request<AggregatedMetric[]>(`${base}/subtasks/metrics?get=${RATE_METRICS}&agg=sum`, {
      expect: SHAPES.metrics,
    }),
    request<BackPressureInfo>(`${base}/backpressure`, { expect: SHAPES.backPressure }),
  ]);
  const reported = bp.status !== "deprecated" && bp.subtasks.length > 0;
  return {
    inPerSecond: aggregate(rates, "numRecordsInPerSecond", "sum"),
    outPerSecond: aggregate(rates, "numRecordsOutPerSecond", "sum"),
    level: levelOfJson(bp["backpressure-level"]),
    ratio: reported ? maxRatio(bp.subtasks) : undefined,
  };
}

/** Props of {@linkcode JobGraphTab}. */
export interface JobGraphTabProps {
  /** The job's details, from the page's poll. */
  readonly job: JobDetails;
}

/** The graph tab of a job. */
export function JobGraphTab(props: JobGraphTabProps): VNode {
  const job = props.job;
  const graph = useMemo(() => jobGraph(job), [graphKey(job)]);
  const [selected, setSelected] = useState<string | null>(null);
  const history = historyOf(job.jid);
  const running = job.state === "RUNNING" || job.state === "WAITING_FOR_RESOURCES";
  const ids = graph.vertices.map((v) => v.id);
  // An ended job's metrics are its last samples, not live: not polled.
  const live = usePoll<ReadonlyMap<string, VertexLive>>(
    running ? `live:${job.jid}:${ids.join(",")}` : null,
    async () => {
      const entries = await Promise.all(
        ids.map(async (id) => [id, await loadVertexLive(job.jid, id)] as const),
      );
      const map = new Map(entries);
      record(history, graph, map, Date.now());
      return map;
    },
  );
  const selectedVertex = graph.vertices.find((v) => v.id === selected);
  return (
    <div>
      <ErrorBanner error={live.error} />
      <Panel title="Job graph">
        {graph.vertices.length === 0 ? <Empty>The job has no vertices.</Empty> : (
          <GraphView
            graph={graph}
            live={live.data}
            selected={selected}
            onSelect={(id) => setSelected(id === selected ? null : id)}
          />
        )}
        <div class="graph-legend">
          <span>Back pressure:</span>
          {(["OK", "LOW", "HIGH"] as const).map((l) => (
            <span key={l}>
              <span class="bp-dot" style={{ background: BACKPRESSURE_COLOURS[l] }} />
              {l} {l === "OK" ? "≤ 10%" : l === "LOW" ? "≤ 50%" : "> 50%"}
            </span>
          ))}
          {!running && <span class="muted">The job has ended: no live metrics.</span>}
        </div>
      </Panel>
      {selectedVertex !== undefined && (
        <VertexDetail
          jobId={job.jid}
          vertex={selectedVertex}
          ended={!running}
          series={history.vertices.get(selectedVertex.id) ?? emptySeries(2)}
          onClose={() => setSelected(null)}
        />
      )}
      <Panel title="Throughput">
        {running || history.job.times.length > 0
          ? (
            <Chart
              series={history.job}
              labels={["sources out", "sinks in"]}
              unit="rate"
              testId="job-throughput"
            />
          )
          : <Empty>No live metrics: the job has ended.</Empty>}
      </Panel>
    </div>
  );
}

/** The rates kept for a job's charts: the job's (sources out, sinks in) and each vertex's (in, out). */
interface RateHistory {
  job: Series;
  readonly vertices: Map<string, Series>;
}

/** Jobs whose chart history the page keeps across tab changes (the latest opened). */
const KEPT_HISTORIES = 8;

const histories = new Map<string, RateHistory>();

/** The chart history of job `jobId`, kept while the page lives (the latest {@linkcode KEPT_HISTORIES} jobs). */
function historyOf(jobId: string): RateHistory {
  let h = histories.get(jobId);
  if (h === undefined) {
    h = { job: emptySeries(2), vertices: new Map() };
    if (histories.size >= KEPT_HISTORIES) {
      const oldest = histories.keys().next().value;
      if (oldest !== undefined) histories.delete(oldest);
    }
  }
  histories.delete(jobId);
  histories.set(jobId, h);
  return h;
}

/** A key that changes only when the graph's shape does (so the layout is not recomputed every poll). */
function graphKey(job: JobDetails): string {
  const vs = job.vertices.map((v) =>
    `${v.id}:${v.parallelism}:${v.name}:${(v.operators ?? []).map((o) => o.name).join(">")}`
  );
  const ps = (job.plan?.nodes ?? []).map((n) =>
    `${n.id}:${n.description}:${
      (n.inputs ?? []).map((i) => `${i.id}/${i.ship_strategy}`).join("+")
    }`
  );
  return `${job.jid}|${vs.join(";")}|${ps.join(";")}`;
}

/** Adds the latest rates to the job's and each vertex's series. */
function record(
  h: RateHistory,
  graph: JobGraphModel,
  live: ReadonlyMap<string, VertexLive>,
  now: number,
): void {
  const sources = new Set(sourceVertexIds(graph));
  const targets = new Set(graph.edges.map((e) => e.from));
  let srcOut: number | undefined;
  let sinkIn: number | undefined;
  for (const v of graph.vertices) {
    const l = live.get(v.id);
    if (l === undefined) continue;
    h.vertices.set(
      v.id,
      pushSample(h.vertices.get(v.id) ?? emptySeries(2), now, [l.inPerSecond, l.outPerSecond]),
    );
    if (sources.has(v.id) && l.outPerSecond !== undefined) {
      srcOut = (srcOut ?? 0) + l.outPerSecond;
    }
    const isSink = graph.edges.length > 0 ? !targets.has(v.id) : v === graph.vertices.at(-1);
    if (isSink && l.inPerSecond !== undefined) sinkIn = (sinkIn ?? 0) + l.inPerSecond;
  }
  h.job = pushSample(h.job, now, [srcOut, sinkIn]);
}

/** The drawing: edges in an SVG, vertices as boxes over it. */
function GraphView(props: {
  readonly graph: JobGraphModel;
  readonly live: ReadonlyMap<string, VertexLive> | undefined;
  readonly selected: string | null;
  readonly onSelect: (id: string) => void;
}): VNode {
  const layout = useMemo(() => layoutGraph(props.graph), [props.graph]);
  const byId = new Map(props.graph.vertices.map((v) => [v.id, v]));
  return (
    <div class="graph-scroll">
      <div
        class="graph"
        data-testid="job-graph"
        style={{ width: `${layout.width}px`, height: `${layout.height}px` }}
      >
        <svg width={layout.width} height={layout.height} class="graph-edges">
          <defs>
            <marker
              id="arrow"
              viewBox="0 0 10 10"
              refX="9"
              refY="5"
              markerWidth="7"
              markerHeight="7"
              orient="auto-start-reverse"
            >
              <path d="M0 0 L10 5 L0 10 z" fill="#8a949e" />
            </marker>
          </defs>
          {layout.edges.map((e) => (
            <g
              key={`${e.from}-${e.to}-${e.label}`}
              data-testid="edge"
              data-from={e.from}
              data-to={e.to}
              data-ship-strategy={e.label}
            >
              <path d={edgePath(e.points)} class="edge-line" marker-end="url(#arrow)" />
              {e.label !== "" && (
                <g transform={`translate(${e.labelX} ${e.labelY})`}>
                  <rect
                    x={-(e.label.length * 3.6 + 5)}
                    y={-8}
                    width={e.label.length * 7.2 + 10}
                    height={16}
                    rx={3}
                    class="edge-label-bg"
                  />
                  <text class="edge-label" text-anchor="middle" dominant-baseline="central">
                    {e.label}
                  </text>
                </g>
              )}
            </g>
          ))}
        </svg>
        {layout.vertices.map((p) => {
          const v = byId.get(p.id);
          if (v === undefined) return null;
          return (
            <VertexBox
              key={p.id}
              vertex={v}
              live={props.live?.get(p.id)}
              selected={props.selected === p.id}
              style={{
                left: `${p.x}px`,
                top: `${p.y}px`,
                width: `${p.width}px`,
                height: `${p.height}px`,
              }}
              onClick={() => props.onSelect(p.id)}
            />
          );
        })}
      </div>
    </div>
  );
}

/** The operator lines a box shows before "+n more". */
const SHOWN_OPERATORS = 4;

function VertexBox(props: {
  readonly vertex: GraphVertex;
  readonly live: VertexLive | undefined;
  readonly selected: boolean;
  readonly style: Record<string, string>;
  readonly onClick: () => void;
}): VNode {
  const v = props.vertex;
  const l = props.live;
  const level = l?.level ?? "OK";
  // Grey until a back-pressure sample exists: the level defaults to OK, but nothing was measured.
  const colour = l?.ratio === undefined ? "#a8b0b9" : BACKPRESSURE_COLOURS[level];
  const ops = v.operators;
  const shown = ops.length > SHOWN_OPERATORS + 1 ? ops.slice(0, SHOWN_OPERATORS) : ops;
  return (
    <div
      class={`vertex${props.selected ? " vertex-selected" : ""}`}
      data-testid="vertex"
      data-vertex-id={v.id}
      data-backpressure={level}
      style={{ ...props.style, borderLeftColor: colour }}
      onClick={props.onClick}
      onKeyDown={(e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          props.onClick();
        }
      }}
      role="button"
      tabIndex={0}
      title={`${v.name} (${v.id})`}
    >
      <div class="vertex-head">
        <span class="vertex-name">{v.name}</span>
        <span class="vertex-vid mono">{v.id}</span>
      </div>
      {ops.length === 1 && ops[0] === v.name
        ? <div class="vertex-id muted">1 operator</div>
        : (
          <ol class="vertex-ops">
            {shown.map((o, i) => <li key={i}>{o}</li>)}
            {shown.length < ops.length && <li class="muted">+{ops.length - shown.length} more</li>}
          </ol>
        )}
      <div class="vertex-metrics">
        <span>In {formatRate(l?.inPerSecond)}</span>
        <span>Out {formatRate(l?.outPerSecond)}</span>
        <span class="vertex-par" title="parallelism">Parallelism: {v.parallelism}</span>
      </div>
      <div class="vertex-bp">
        {l?.ratio === undefined
          // Before the first sample (or once the job ended) no level is claimed.
          ? <span class="muted">Back pressure not sampled</span>
          : (
            <span>
              <span class="bp-badge" style={{ background: colour }}>{level}</span>
              <span title="back-pressured share of time (busiest subtask)">
                {" "}
                {formatPercent(l.ratio)} back-pressured
              </span>
            </span>
          )}
      </div>
    </div>
  );
}
