/**
 * A job's metrics by vertex, summed from the metrics its subtasks report
 * when they finish (Flink's `MetricStore` aggregating subtask metrics for
 * the REST API's vertex view). Pure.
 *
 * Records in/out and operator counters are summed over the vertex's
 * subtasks; `backPressuredTimeMsPerSecond` is their mean (a subtask that
 * reported nothing counts as 0).
 *
 * @module
 */

import type { JobGraphShape } from "../graph/job_graph_summary.ts";
import type { SubtaskMetrics } from "../task/messages.ts";
import type { VertexMetrics } from "./job_result.ts";

/**
 * Sums subtask metrics per vertex of `graph`.
 * @param subtaskMetrics by subtask key `vertexId#subtask`.
 * @returns the metrics by vertex id, one entry per vertex.
 */
export function aggregateVertexMetrics(
  graph: JobGraphShape,
  subtaskMetrics: ReadonlyMap<string, SubtaskMetrics>,
): Record<string, VertexMetrics> {
  const out: Record<string, VertexMetrics> = {};
  for (const v of graph.vertices) {
    let numRecordsIn = 0;
    let numRecordsOut = 0;
    let backPressured = 0;
    const operators = new Map<string, Map<string, number>>();
    for (let s = 0; s < v.parallelism; s++) {
      const m = subtaskMetrics.get(`${v.id}#${s}`);
      if (!m) continue;
      numRecordsIn += m.numRecordsIn;
      numRecordsOut += m.numRecordsOut;
      backPressured += m.backPressuredTimeMsPerSecond;
      for (const [uid, counters] of Object.entries(m.operators ?? {})) {
        const sums = operators.get(uid) ?? operators.set(uid, new Map()).get(uid)!;
        for (const [name, n] of Object.entries(counters)) {
          sums.set(name, (sums.get(name) ?? 0) + n);
        }
      }
    }
    out[v.id] = {
      name: v.name,
      numRecordsIn,
      numRecordsOut,
      backPressuredTimeMsPerSecond: backPressured / v.parallelism,
      operators: Object.fromEntries(
        [...operators].map(([uid, sums]) => [uid, Object.fromEntries(sums)]),
      ),
    };
  }
  return out;
}
