/**
 * The job graph the dashboard draws: vertices (each a chain of operators,
 * Flink's `JobVertex`) and the edges between them labelled with their ship
 * strategy (FORWARD, HASH, REBALANCE, ...), from `GET /jobs/:jobid` and its
 * `plan` (Flink's `JobPlanInfo`). Pure.
 *
 * A coordinator that does not send `plan` yields vertices without edges;
 * a plan node whose vertex is missing from `vertices` (or the reverse) is
 * still drawn, so the graph never loses a vertex the API names.
 *
 * @module
 */

import type { JobDetails } from "./api_types.ts";

/** A vertex to draw: its id, name, the chain's operator names (head first) and its parallelism. */
export interface GraphVertex {
  /** The vertex id, e.g. `v1`. */
  readonly id: string;
  /** The vertex name (the chain's operators joined with " -> "). */
  readonly name: string;
  /** The chain's operator names, head first. */
  readonly operators: readonly string[];
  /** Its subtasks. */
  readonly parallelism: number;
}

/** An edge to draw from the upstream vertex to the downstream one. */
export interface GraphEdge {
  /** The upstream vertex id. */
  readonly from: string;
  /** The downstream vertex id. */
  readonly to: string;
  /** Flink's ship strategy name, e.g. `HASH`; "" when the plan names none. */
  readonly shipStrategy: string;
}

/** A job's graph: vertices in the API's order (sources first) and edges. */
export interface JobGraphModel {
  /** The vertices, in the API's order. */
  readonly vertices: readonly GraphVertex[];
  /** The edges, from the plan's inputs. */
  readonly edges: readonly GraphEdge[];
}

/**
 * The graph of a job's details: vertices from `vertices` (their chain from
 * `operators`, else the plan node's `description` split at " -> ", else
 * the name) and edges from the plan's `inputs`.
 * @example
 * ```ts
 * import { jobGraph } from "./graph.ts";
 * const g = jobGraph({
 *   jid: "j", name: "j", state: "RUNNING", "start-time": 0, "end-time": -1, duration: 0, now: 0,
 *   vertices: [{ id: "v0", name: "src", parallelism: 1, status: "RUNNING" }],
 * });
 * g.vertices[0]?.operators; // ["src"]
 * ```
 */
export function jobGraph(job: JobDetails): JobGraphModel {
  const nodes = new Map((job.plan?.nodes ?? []).map((n) => [n.id, n]));
  const vertices: GraphVertex[] = job.vertices.map((v) => {
    const node = nodes.get(v.id);
    const operators = v.operators !== undefined && v.operators.length > 0
      ? v.operators.map((o) => o.name)
      : node !== undefined && node.description !== ""
      ? splitChain(node.description)
      : [v.name];
    return { id: v.id, name: v.name, operators, parallelism: v.parallelism };
  });
  const known = new Set(vertices.map((v) => v.id));
  for (const n of nodes.values()) {
    if (known.has(n.id)) continue;
    known.add(n.id);
    const operators = splitChain(n.description);
    vertices.push({
      id: n.id,
      name: n.description || n.id,
      operators: operators.length > 0 ? operators : [n.id],
      parallelism: n.parallelism,
    });
  }
  const edges: GraphEdge[] = [];
  for (const n of nodes.values()) {
    for (const input of n.inputs ?? []) {
      if (!known.has(input.id)) continue;
      edges.push({ from: input.id, to: n.id, shipStrategy: input.ship_strategy ?? "" });
    }
  }
  return { vertices, edges };
}

/**
 * The ids of vertices no edge leads into: the sources. Without edges (no
 * plan) the first vertex, as the API lists vertices sources first.
 */
export function sourceVertexIds(g: JobGraphModel): readonly string[] {
  if (g.edges.length === 0) return g.vertices.slice(0, 1).map((v) => v.id);
  const targets = new Set(g.edges.map((e) => e.to));
  return g.vertices.filter((v) => !targets.has(v.id)).map((v) => v.id);
}

function splitChain(description: string): string[] {
  return description.split(" -> ").map((s) => s.trim()).filter((s) => s !== "");
}
