/**
 * The job graph's layout, left to right (Flink's web UI draws its plan the
 * same way), computed by dagre (`rankdir: "LR"`). Pure: a graph model and
 * box sizes in, positions out; the view draws vertices as boxes at `x, y`
 * and edges as polylines through `points`.
 *
 * Coordinates are CSS pixels from the top left of the drawing; a vertex's
 * `x, y` is its box's top left corner.
 *
 * @module
 */

import { dagre } from "../deps.ts";
import type { JobGraphModel } from "./graph.ts";

/** The size of a vertex box in px. */
export interface BoxSize {
  /** px. */
  readonly width: number;
  /** px. */
  readonly height: number;
}

/** A vertex placed: its box's top left, width and height (px). */
export interface PlacedVertex extends BoxSize {
  /** The vertex id. */
  readonly id: string;
  /** The box's left edge, px. */
  readonly x: number;
  /** The box's top edge, px. */
  readonly y: number;
}

/** An edge placed: the polyline from the upstream box to the downstream one and its label's centre. */
export interface PlacedEdge {
  /** The upstream vertex id. */
  readonly from: string;
  /** The downstream vertex id. */
  readonly to: string;
  /** The ship strategy, "" for none. */
  readonly label: string;
  /** The polyline, from the upstream box's border to the downstream one's, px. */
  readonly points: readonly { readonly x: number; readonly y: number }[];
  /** The label's centre, px. */
  readonly labelX: number;
  /** The label's centre, px. */
  readonly labelY: number;
}

/** A laid out graph and the size of its drawing (px). */
export interface GraphLayout {
  /** The drawing's width with margins, px. */
  readonly width: number;
  /** The drawing's height with margins, px. */
  readonly height: number;
  /** The vertices placed, in the model's order. */
  readonly vertices: readonly PlacedVertex[];
  /** The edges placed, in the model's order. */
  readonly edges: readonly PlacedEdge[];
}

/** Width of a vertex box (px). */
export const BOX_WIDTH = 240;

/**
 * A vertex box's size: fixed width; the height grows with the operators of
 * its chain (one line each, at most 4 shown, then "+n more").
 */
export function boxSize(operatorCount: number): BoxSize {
  const lines = Math.min(Math.max(operatorCount, 1), 5);
  return { width: BOX_WIDTH, height: 76 + lines * 16 };
}

/**
 * Lays out `g` left to right. Vertex sizes come from {@linkcode boxSize}
 * unless `size` is given.
 */
export function layoutGraph(
  g: JobGraphModel,
  size: (operatorCount: number) => BoxSize = boxSize,
): GraphLayout {
  const dg = new dagre.graphlib.Graph({ multigraph: true });
  dg.setGraph({ rankdir: "LR", nodesep: 30, ranksep: 90, edgesep: 20, marginx: 16, marginy: 16 });
  dg.setDefaultEdgeLabel(() => ({}));
  for (const v of g.vertices) {
    const s = size(v.operators.length);
    dg.setNode(v.id, { width: s.width, height: s.height });
  }
  g.edges.forEach((e, i) => {
    dg.setEdge(e.from, e.to, {
      label: e.shipStrategy,
      width: e.shipStrategy.length * 7 + 8,
      height: 16,
      labelpos: "c",
    }, `e${i}`);
  });
  dagre.layout(dg);
  const vertices: PlacedVertex[] = g.vertices.map((v) => {
    const n = dg.node(v.id);
    return {
      id: v.id,
      x: n.x - n.width / 2,
      y: n.y - n.height / 2,
      width: n.width,
      height: n.height,
    };
  });
  const edges: PlacedEdge[] = g.edges.map((e, i) => {
    const d = dg.edge({ v: e.from, w: e.to, name: `e${i}` });
    const points = (d.points ?? []).map((p: { x: number; y: number }) => ({ x: p.x, y: p.y }));
    const mid = points[Math.floor(points.length / 2)] ?? { x: 0, y: 0 };
    return {
      from: e.from,
      to: e.to,
      label: e.shipStrategy,
      points,
      labelX: typeof d.x === "number" ? d.x : mid.x,
      labelY: typeof d.y === "number" ? d.y : mid.y,
    };
  });
  const info = dg.graph();
  return {
    width: Math.ceil(info.width ?? 0),
    height: Math.ceil(info.height ?? 0),
    vertices,
    edges,
  };
}

/** An SVG path (`M x y L x y ...`) through the points. */
export function edgePath(points: readonly { readonly x: number; readonly y: number }[]): string {
  return points.map((p, i) => `${i === 0 ? "M" : "L"}${round(p.x)} ${round(p.y)}`).join(" ");
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}
