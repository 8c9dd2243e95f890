/**
 * A job's `plan` as Flink's REST API writes it (`JobPlanInfo`, made by
 * Flink's `JsonPlanGenerator` from the JobGraph): one node per vertex, with
 * its inputs and their ship strategies. `GET /jobs/:jobid` carries it as
 * `plan`, `GET /jobs/:jobid/plan` as `{ plan }`; the dashboard draws the job
 * graph from it. Pure: the graph summary in, plain JSON out.
 *
 * Where Weir differs from Flink:
 *
 * - `operator` is the vertex name and `description` its chained operators'
 *   names joined with ` -> ` (Flink writes its chain's names, with HTML
 *   line breaks, there); `operator_strategy` is empty (Weir has no batch
 *   operator strategies) and `optimizer_properties` is `{}`.
 * - Every exchange is `pipelined_bounded` (Weir's channels are bounded and
 *   pipelined; there are no blocking exchanges).
 * - A graph summary written before edges were recorded has nodes without
 *   `inputs`.
 *
 * @example
 * ```ts
 * import { planView } from "./plan_view.ts";
 * import assert from "node:assert/strict";
 *
 * const plan = planView("j1", {
 *   name: "word count",
 *   vertices: [
 *     { id: "v0", name: "Source: lines", parallelism: 2, maxParallelism: 128, isSource: true,
 *       operators: [{ uid: "lines", name: "Source: lines" }, { uid: "split", name: "split" }] },
 *     { id: "v1", name: "counts", parallelism: 1, maxParallelism: 128, isSource: false,
 *       operators: [{ uid: "counts", name: "counts" }] },
 *   ],
 *   edges: [{ source: 0, target: 1, partitioner: "hash" }],
 * });
 * assert.equal(plan.nodes[0]!.description, "Source: lines -> split");
 * assert.deepEqual(plan.nodes[1]!.inputs, [
 *   { num: 0, id: "v0", ship_strategy: "HASH", exchange: "pipelined_bounded" },
 * ]);
 * ```
 *
 * @module
 */

import type { JobGraphShape } from "../../graph/job_graph_summary.ts";
import type { Partitioner } from "../../graph/stream_graph.ts";

/** Flink's ship strategy name (a `StreamPartitioner`'s `toString`) of each Weir partitioner. */
export const SHIP_STRATEGIES: Readonly<Record<Partitioner, string>> = {
  forward: "FORWARD",
  hash: "HASH",
  rebalance: "REBALANCE",
  broadcast: "BROADCAST",
  rescale: "RESCALE",
};

/** One input of a {@linkcode PlanNode}: an edge from another vertex. */
export type PlanInput = {
  /** The input's position among the node's inputs, from 0. */
  readonly num: number;
  /** The producing vertex's id. */
  readonly id: string;
  /** How records are distributed: FORWARD, HASH, REBALANCE, BROADCAST or RESCALE. */
  readonly ship_strategy: string;
  /** The result partition type, lower case: always `pipelined_bounded`. */
  readonly exchange: "pipelined_bounded";
};

/** One vertex of a {@linkcode JobPlan}. */
export type PlanNode = {
  /** The vertex id. */
  readonly id: string;
  /** Its number of subtasks. */
  readonly parallelism: number;
  /** The vertex name. */
  readonly operator: string;
  /** Empty: Weir has no batch operator strategies. */
  readonly operator_strategy: string;
  /** The chained operators' names, head first, joined with ` -> `. */
  readonly description: string;
  /** The edges into the vertex, absent for a vertex without any (a source). */
  readonly inputs?: PlanInput[];
  /** Empty. */
  readonly optimizer_properties: Record<string, never>;
};

/** Flink's `JobPlanInfo.RawJson`: the job's dataflow. */
export type JobPlan = {
  /** The job id. */
  readonly jid: string;
  /** The job name. */
  readonly name: string;
  /** Always `STREAMING`. */
  readonly type: "STREAMING";
  /** One per vertex, in topological order. */
  readonly nodes: PlanNode[];
};

/**
 * The plan of job `jobId` with graph `graph` (see the module docs).
 * @throws {RangeError} when an edge names a vertex position the graph does not have.
 */
export function planView(jobId: string, graph: JobGraphShape): JobPlan {
  const inputs = new Map<number, PlanInput[]>();
  for (const [i, e] of (graph.edges ?? []).entries()) {
    const source = graph.vertices[e.source];
    if (source === undefined || graph.vertices[e.target] === undefined) {
      throw new RangeError(
        `edge ${i} of job ${jobId}'s graph joins vertex positions ${e.source} -> ${e.target}, ` +
          `but the graph has ${graph.vertices.length} vertices`,
      );
    }
    const list = inputs.get(e.target) ?? inputs.set(e.target, []).get(e.target)!;
    list.push({
      num: list.length,
      id: source.id,
      ship_strategy: SHIP_STRATEGIES[e.partitioner] ?? e.partitioner.toUpperCase(),
      exchange: "pipelined_bounded",
    });
  }
  const nodes = graph.vertices.map((v, i): PlanNode => {
    const ins = inputs.get(i);
    return {
      id: v.id,
      parallelism: v.parallelism,
      operator: v.name,
      operator_strategy: "",
      description: v.operators.length === 0 ? v.name : v.operators.map((o) => o.name).join(" -> "),
      ...(ins === undefined ? {} : { inputs: ins }),
      optimizer_properties: {},
    };
  });
  return { jid: jobId, name: graph.name, type: "STREAMING", nodes };
}
