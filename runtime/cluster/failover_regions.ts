/**
 * Pipelined regions of a JobGraph at subtask level (Flink's
 * `SchedulingPipelinedRegion`, as `RestartPipelinedRegionFailoverStrategy`
 * uses them): the sets of subtasks that exchange records with each other,
 * directly or through others. A failure restarts the failed subtask's
 * region; the other regions keep running (DESIGN §6.6, §14).
 *
 * Every edge of a streaming job is pipelined, so a region is a connected
 * component of the subtask graph:
 *
 * - a `forward` edge (pointwise, equal parallelism) joins upstream subtask
 *   `i` with downstream subtask `i` only;
 * - every other partitioner (`hash` for keyBy, `rebalance`, `broadcast`,
 *   `rescale`) joins every subtask of both vertices. Flink treats `rescale`
 *   as pointwise; here it joins all, which gives larger regions than
 *   needed but never too small ones (a region that is too large restarts
 *   more than necessary; one that is too small would lose exactly-once).
 *
 * Operators chained into one vertex share its subtasks, so chaining does
 * not change the regions; compute them from the JobGraph after chaining.
 *
 * ## Invariants
 *
 * - Every subtask of the graph is in exactly one region.
 * - No edge of the graph connects subtasks of two regions.
 * - Region ids are stable for a graph: regions are numbered 0, 1, … in the
 *   order of their first subtask, with subtasks ordered by vertex (the
 *   graph's topological order) and then subtask index. A region lists its
 *   subtasks in that order too.
 *
 * Pure: no I/O.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { FailoverRegions } from "./failover_regions.ts";
 *
 * // Two vertices at parallelism 2 joined by a forward edge: two regions.
 * const vertex = (index: number, id: string) => ({ index, id, parallelism: 2 });
 * const forward = FailoverRegions.of({
 *   vertices: [vertex(0, "src"), vertex(1, "sink")],
 *   edges: [{ source: 0, target: 1, partitioner: "forward" }],
 * });
 * assert.equal(forward.regions.length, 2);
 * assert.equal(forward.regionOf("sink", 1).id, 1);
 * assert.equal(forward.describe(forward.regionOf("src", 0)), "region 0 (src#0, sink#0)");
 *
 * // A keyBy (hash) joins every subtask of both vertices: one region.
 * const keyed = FailoverRegions.of({
 *   vertices: [vertex(0, "src"), vertex(1, "sums")],
 *   edges: [{ source: 0, target: 1, partitioner: "hash" }],
 * });
 * assert.equal(keyed.regions.length, 1);
 * assert.ok(keyed.isWholeJob(keyed.regionOf("src", 0)));
 * ```
 *
 * @module
 */

import type { SubtaskRef } from "../checkpoint/types.ts";
import type { Partitioner } from "../graph/stream_graph.ts";

/** The parts of a JobGraph vertex the regions depend on. */
export interface RegionVertex {
  /** Position in the graph's vertex list (what edges refer to). */
  readonly index: number;
  /** The vertex id (`SubtaskRef.vertexId`). */
  readonly id: string;
  /** Its parallelism, an integer >= 1. */
  readonly parallelism: number;
}

/** The parts of a JobGraph edge the regions depend on. */
export interface RegionEdge {
  /** The producing vertex's `index`. */
  readonly source: number;
  /** The consuming vertex's `index`. */
  readonly target: number;
  /** The resolved partitioner. */
  readonly partitioner: Partitioner;
}

/** The parts of a JobGraph the regions depend on (a `JobGraph` fits). */
export interface RegionGraph {
  /** The vertices, in topological order. */
  readonly vertices: readonly RegionVertex[];
  /** The network edges. */
  readonly edges: readonly RegionEdge[];
}

/** One pipelined region: subtasks that exchange records only among themselves. */
export interface PipelinedRegion {
  /** Its id: 0, 1, … in the order of its first subtask (see the module docs). */
  readonly id: number;
  /** Its subtasks, by vertex (graph order) then subtask index. */
  readonly subtasks: readonly SubtaskRef[];
  /** Its subtasks as `vertexId#subtask` keys, for lookups. */
  readonly keys: ReadonlySet<string>;
}

/** The pipelined regions of one JobGraph and the subtask -> region lookup. */
export class FailoverRegions {
  /** Every region, by id. */
  readonly regions: readonly PipelinedRegion[];
  /** Subtasks of the whole graph. */
  readonly subtaskCount: number;
  readonly #byKey: ReadonlyMap<string, PipelinedRegion>;

  private constructor(regions: PipelinedRegion[], subtaskCount: number) {
    this.regions = regions;
    this.subtaskCount = subtaskCount;
    const byKey = new Map<string, PipelinedRegion>();
    for (const r of regions) for (const k of r.keys) byKey.set(k, r);
    this.#byKey = byKey;
  }

  /**
   * Computes the regions of `graph` (union-find over its subtasks).
   * @throws {RangeError} when a vertex's parallelism is not an integer >= 1,
   *   an edge names a vertex index the graph does not have, or a `forward`
   *   edge joins vertices of unequal parallelism (`buildJobGraph` refuses
   *   such graphs too).
   */
  static of(graph: RegionGraph): FailoverRegions {
    const offsets = new Map<number, { vertex: RegionVertex; offset: number }>();
    const refs: SubtaskRef[] = [];
    for (const v of graph.vertices) {
      if (!Number.isInteger(v.parallelism) || v.parallelism < 1) {
        throw new RangeError(
          `failover regions: vertex '${v.id}' must have an integer parallelism >= 1: ` +
            `current value is ${v.parallelism}`,
        );
      }
      offsets.set(v.index, { vertex: v, offset: refs.length });
      for (let s = 0; s < v.parallelism; s++) refs.push({ vertexId: v.id, subtask: s });
    }
    const parent = refs.map((_, i) => i);
    const find = (i: number): number => {
      while (parent[i] !== i) {
        parent[i] = parent[parent[i]!]!;
        i = parent[i]!;
      }
      return i;
    };
    // The smaller root wins, so a region's root is its first subtask.
    const union = (a: number, b: number) => {
      const ra = find(a);
      const rb = find(b);
      if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
    };
    graph.edges.forEach((e, i) => {
      const up = offsets.get(e.source);
      const down = offsets.get(e.target);
      if (up === undefined || down === undefined) {
        throw new RangeError(
          `failover regions: edge ${i} (${e.source} -> ${e.target}) names vertex index ` +
            `${up === undefined ? e.source : e.target}, which the graph does not have`,
        );
      }
      const p = up.vertex.parallelism;
      const q = down.vertex.parallelism;
      if (e.partitioner === "forward") {
        if (p !== q) {
          throw new RangeError(
            `failover regions: forward edge ${i} joins '${up.vertex.id}' (parallelism ${p}) ` +
              `and '${down.vertex.id}' (parallelism ${q}); a forward edge needs equal parallelism`,
          );
        }
        for (let s = 0; s < p; s++) union(up.offset + s, down.offset + s);
        return;
      }
      // All-to-all: every subtask of both vertices in one region.
      for (let s = 0; s < p; s++) union(up.offset, up.offset + s);
      for (let s = 0; s < q; s++) union(up.offset, down.offset + s);
    });
    const byRoot = new Map<number, SubtaskRef[]>();
    refs.forEach((ref, i) => {
      const root = find(i);
      const list = byRoot.get(root) ?? byRoot.set(root, []).get(root)!;
      list.push(ref);
    });
    // Map iteration follows insertion, i.e. the order of each region's first subtask.
    const regions = [...byRoot.values()].map((subtasks, id): PipelinedRegion => ({
      id,
      subtasks,
      keys: new Set(subtasks.map((s) => subtaskKey(s.vertexId, s.subtask))),
    }));
    return new FailoverRegions(regions, refs.length);
  }

  /**
   * The regions of a job as its coordinator knows it (a `JobGraph` or its
   * summary, whose vertices' positions are their indexes). A summary
   * without `edges` (written before regions existed) shows no regions: the
   * whole job is then one region, so every failure restarts all of it.
   * @throws {RangeError} as {@linkcode FailoverRegions.of}.
   */
  static ofJob(job: {
    readonly vertices: readonly { readonly id: string; readonly parallelism: number }[];
    readonly edges?: readonly RegionEdge[] | undefined;
  }): FailoverRegions {
    const vertices = job.vertices.map((v, index) => ({
      id: v.id,
      parallelism: v.parallelism,
      index,
    }));
    const edges = job.edges ??
      vertices.map((_, i) => ({
        source: Math.max(0, i - 1),
        target: i,
        partitioner: "hash" as const,
      }));
    return FailoverRegions.of({ vertices, edges });
  }

  /**
   * The region of subtask `vertexId#subtask`.
   * @throws {RangeError} when the graph has no such subtask.
   */
  regionOf(vertexId: string, subtask: number): PipelinedRegion {
    const region = this.#byKey.get(subtaskKey(vertexId, subtask));
    if (region === undefined) {
      throw new RangeError(
        `failover regions: the job has no subtask ${vertexId}#${subtask}`,
      );
    }
    return region;
  }

  /** Whether `region` holds every subtask of the job (then a region failover is a full one). */
  isWholeJob(region: PipelinedRegion): boolean {
    return region.subtasks.length === this.subtaskCount;
  }

  /** `region <id> (<vertexId>#<subtask>, …)`, for log lines and failure reports. */
  describe(region: PipelinedRegion): string {
    return `region ${region.id} (${
      region.subtasks.map((s) => `${s.vertexId}#${s.subtask}`).join(", ")
    })`;
  }
}

/** The key of subtask `vertexId#subtask` (as the coordinator keys subtasks). */
export function subtaskKey(vertexId: string, subtask: number): string {
  return `${vertexId}#${subtask}`;
}
