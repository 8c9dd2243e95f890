/**
 * The plain-data face of a {@linkcode JobGraph}: what a coordinator needs to
 * schedule, checkpoint and restore a job, without the user's functions.
 *
 * In cluster mode the client sends this summary to the coordinator (as
 * Flink's client submits a JobGraph to the JobManager), and each worker
 * rebuilds the full graph by importing the job module. The fingerprint
 * proves the two are the same dataflow: a worker whose rebuilt graph has
 * another fingerprint refuses to run it (a job module must build the same
 * graph from the same arguments everywhere).
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { JobGraph } from "./job_graph.ts";
import type { Partitioner } from "./stream_graph.ts";

/** One vertex as the coordinator sees it. */
export interface VertexSummary {
  /** The vertex id (stable: derived from the head operator's uid). */
  readonly id: string;
  /** Display name. */
  readonly name: string;
  /** Number of subtasks. */
  readonly parallelism: number;
  /** Number of key groups. */
  readonly maxParallelism: number;
  /** Whether the vertex's head is a source (checkpoints are triggered there). */
  readonly isSource: boolean;
  /** The chained operators' uids and names, head first. */
  readonly operators: readonly { readonly uid: string; readonly name: string }[];
}

/** What a coordinator needs of a job's graph: plain, MessagePack-encodable data. */
export interface JobGraphShape {
  /** The job's name. */
  readonly name: string;
  /** Vertices in topological order. */
  readonly vertices: readonly VertexSummary[];
  /**
   * The network edges (vertex positions in `vertices` and the resolved
   * partitioner), from which the coordinator computes the failover regions.
   * Absent in a summary written before regions existed: then every failure
   * restarts the whole job.
   */
  readonly edges?: readonly EdgeSummary[] | undefined;
}

/** One network edge as the coordinator sees it. */
export interface EdgeSummary {
  /** The producing vertex's position in `vertices`. */
  readonly source: number;
  /** The consuming vertex's position in `vertices`. */
  readonly target: number;
  /** The resolved partitioner. */
  readonly partitioner: Partitioner;
}

/** A {@linkcode JobGraphShape} with the fingerprint of the full graph. */
export interface JobGraphSummary extends JobGraphShape {
  /**
   * Hex SHA-256 over the vertices (ids, parallelism, max parallelism, operator
   * uids and kinds) and edges (ends, partitioner, side output) of the graph.
   */
  readonly fingerprint: string;
}

/** Summarizes `graph` (see the module docs). */
export function summarizeJobGraph(graph: JobGraph): JobGraphSummary {
  const vertices = graph.vertices.map((v) => ({
    id: v.id,
    name: v.name,
    parallelism: v.parallelism,
    maxParallelism: v.maxParallelism,
    isSource: v.isSource,
    operators: v.operators.map((o) => ({ uid: o.uid, name: o.name })),
  }));
  const edges = graph.edges.map((e) => ({
    source: e.source,
    target: e.target,
    partitioner: e.partitioner,
  }));
  return { name: graph.name, vertices, edges, fingerprint: jobGraphFingerprint(graph) };
}

/** The fingerprint of {@linkcode JobGraphSummary.fingerprint}. */
export function jobGraphFingerprint(graph: JobGraph): string {
  const canonical = JSON.stringify({
    vertices: graph.vertices.map((v) => [
      v.id,
      v.parallelism,
      v.maxParallelism,
      v.isSource,
      v.operators.map((o) => [o.uid, o.spec.kind, o.outputs.length]),
    ]),
    edges: graph.edges.map((e) => [
      e.source,
      e.sourceOperator,
      e.target,
      e.partitioner,
      e.sideOutput ?? null,
      e.keySelector === undefined,
    ]),
  });
  return createHash("sha256").update(canonical).digest("hex");
}
