/// <reference lib="dom" />
/** @jsx h */
/**
 * Time-series charts drawn with uPlot: a {@linkcode Chart} with axes and a
 * legend (the job page's throughput, checkpoint durations and sizes) and a
 * {@linkcode Sparkline} without them (the overview's job throughput). Both
 * take a {@linkcode Series} and redraw in place when it changes. A chart
 * with fewer than two points shows "Waiting for data…" over its axes; a
 * sparkline stays blank.
 *
 * @module
 */

import { h, uPlot, useEffect, useRef } from "../deps.ts";
import type { UPlot, UPlotOptions, VNode } from "../deps.ts";
import type { Series } from "../model/ring.ts";
import { formatBytes, formatDuration, formatRate, formatTime } from "../model/format.ts";
import { distinctLabels, hasLine, trimLeadingGaps } from "../model/chart_axis.ts";

/** How a chart's values read: records/s, ms or bytes. */
export type ChartUnit = "rate" | "ms" | "bytes";

/** Colours of a chart's lines, in order. */
export const LINE_COLOURS: readonly string[] = [
  "#1f6fd1",
  "#2e9d4f",
  "#d9363e",
  "#8a4fd1",
  "#e8a317",
];

/**
 * Dash patterns of a chart's lines, in order (px on, px off; empty: solid):
 * the second line is dashed so that two equal lines (in/s and out/s of a
 * vertex that neither drops nor adds records; checkpointed and full size of
 * a full checkpoint) both stay visible, the dashes over the solid line.
 */
export const LINE_DASHES: readonly (readonly number[])[] = [[], [8, 6], [2, 4], [10, 4, 2, 4]];

/** The first line of a {@linkcode Chart}: its colour, translucent, drawn wide. */
export const FIRST_LINE_BAND = "rgba(31,111,209,0.45)";

/** Time axis tick spacings, seconds. */
const TIME_INCREMENTS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];

function formatter(unit: ChartUnit): (v: number) => string {
  return unit === "rate" ? formatRate : unit === "ms" ? formatDuration : formatBytes;
}

// Leading samples without any value are dropped: the axis starts at the first point.
function toData(series: Series): uPlot.AlignedData {
  const s = trimLeadingGaps(series);
  return [s.times as number[], ...s.lines.map((l) => l as (number | null)[])];
}

/** Props of {@linkcode Chart}. */
export interface ChartProps {
  /** The samples to draw. */
  readonly series: Series;
  /** One label per line. */
  readonly labels: readonly string[];
  /** How the y values read. */
  readonly unit: ChartUnit;
  /** Width in px; without it, the container's width. */
  readonly width?: number;
  /** Height in px of the plotting area and axes (default 180). */
  readonly height?: number;
  /** `time` (default): x values are epoch seconds; `index`: x values are plain numbers (checkpoint ids). */
  readonly x?: "time" | "index";
  /** The chart's `data-testid`. */
  readonly testId?: string;
}

/** A uPlot chart with axes and a legend. */
export function Chart(props: ChartProps): VNode {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<UPlot | null>(null);
  const shape = `${props.labels.join("|")}|${props.unit}|${props.width}|${props.height}|${props.x}`;
  useEffect(() => {
    if (el.current === null) return;
    const fmt = formatter(props.unit);
    const container = el.current;
    const opts: UPlotOptions = {
      width: props.width ?? Math.max(200, container.clientWidth),
      height: props.height ?? 180,
      scales: { x: { time: props.x !== "index" } },
      // The legend names the lines; values show under the cursor only.
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      series: [
        {},
        ...props.labels.map((label, i) => ({
          label,
          // The first line is a wide translucent band, the others thin dashed lines with
          // points over it: a line equal to the first shows inside its band.
          // A chart of one line draws it plain.
          stroke: i === 0 && props.labels.length > 1
            ? FIRST_LINE_BAND
            : LINE_COLOURS[i % LINE_COLOURS.length] ?? "#1f6fd1",
          width: i === 0 ? (props.labels.length > 1 ? 5 : 2) : 1.5,
          dash: [...(LINE_DASHES[i % LINE_DASHES.length] ?? [])],
          spanGaps: false,
          // Lines after the first also mark their samples: a line equal to the first stays visible.
          points: i === 0 ? { show: false } : { show: true, size: 6, width: 1.5, fill: "#ffffff" },
          value: (_u: UPlot, v: number | null) => v === null ? "-" : fmt(v),
        })),
      ],
      axes: [
        {
          stroke: "#56606b",
          grid: { stroke: "#eef0f2" },
          space: 70,
          // Whole seconds at least: samples are a second apart.
          ...(props.x === "index" ? {} : { incrs: TIME_INCREMENTS }),
          // A label equal to the one before it (ticks within one second) is left blank.
          values: (_u: UPlot, vals: number[]) =>
            distinctLabels(
              vals.map((v) => props.x === "index" ? String(v) : formatTime(v * 1000)),
            ),
        },
        {
          stroke: "#56606b",
          grid: { stroke: "#eef0f2" },
          size: 70,
          values: (_u: UPlot, vals: number[]) => vals.map((v) => fmt(v)),
        },
      ],
    };
    const p = new uPlot(opts, toData(props.series), container);
    plot.current = p;
    // Without a fixed width the chart follows its container's width.
    const resize = props.width === undefined && typeof ResizeObserver === "function"
      ? new ResizeObserver(() => {
        const w = Math.max(200, container.clientWidth);
        if (w !== p.width) p.setSize({ width: w, height: p.height });
      })
      : undefined;
    resize?.observe(container);
    return () => {
      resize?.disconnect();
      p.destroy();
      plot.current = null;
    };
  }, [shape]);
  useEffect(() => {
    plot.current?.setData(toData(props.series));
  }, [props.series]);
  // Until two points exist uPlot draws bare axes: a placeholder says why.
  const waiting = !hasLine(props.series);
  return (
    <div class="chart-box" data-waiting={waiting ? "true" : "false"}>
      <div class="chart" ref={el} data-testid={props.testId} />
      {waiting && <div class="chart-waiting">Waiting for data…</div>}
    </div>
  );
}

/** Props of {@linkcode Sparkline}. */
export interface SparklineProps {
  /** The samples; its first line is drawn. */
  readonly series: Series;
  /** px (default 120). */
  readonly width?: number;
  /** px (default 28). */
  readonly height?: number;
}

/** A small uPlot line (the first line of the series) without axes, legend or cursor. */
export function Sparkline(props: SparklineProps): VNode {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<UPlot | null>(null);
  useEffect(() => {
    if (el.current === null) return;
    const opts: UPlotOptions = {
      width: props.width ?? 120,
      height: props.height ?? 28,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [{ show: false }, { show: false }],
      series: [{}, {
        stroke: LINE_COLOURS[0] ?? "#1f6fd1",
        width: 1.25,
        fill: "rgba(31,111,209,0.12)",
        points: { show: false },
      }],
    };
    plot.current = new uPlot(opts, sparkData(props.series), el.current);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, [props.width, props.height]);
  useEffect(() => {
    plot.current?.setData(sparkData(props.series));
  }, [props.series]);
  return <div class="sparkline" ref={el} />;
}

function sparkData(s: Series): uPlot.AlignedData {
  return [s.times as number[], (s.lines[0] ?? []) as (number | null)[]];
}
