/**
 * The coordinator's store of live subtask metrics (Flink's `MetricStore`
 * behind the REST API): the latest {@linkcode SubtaskMetricsSample} of every
 * subtask of the current attempt, and their aggregates per vertex.
 *
 * ## Invariants
 *
 * - Only samples of the current attempt are kept: a sample of an older
 *   attempt is refused, and a newer attempt drops every older sample
 *   (a restarted subtask counts from 0 again, as Flink's task metrics do).
 * - Per vertex, record counts and rates are sums over its subtasks;
 *   busy, idle and back-pressured times are means over the subtasks that
 *   reported (Flink's vertex view shows the max too); the vertex's input and
 *   output watermarks are the minimum over its subtasks, `null` while any
 *   subtask has none (Flink's `VertexWatermarksHandler` lists every subtask's).
 *
 * Pure: no I/O, no clock.
 *
 * @module
 */

import type { SubtaskMetricsSample } from "./task_io_metrics.ts";

/** A vertex's metrics, aggregated over the subtasks that reported. */
export interface VertexMetricsAggregate {
  /** Subtasks that reported a sample in the current attempt. */
  readonly reportingSubtasks: number;
  /** Sum of `numRecordsIn`. */
  readonly numRecordsIn: number;
  /** Sum of `numRecordsOut`. */
  readonly numRecordsOut: number;
  /** Sum of `numRecordsInPerSecond`. */
  readonly numRecordsInPerSecond: number;
  /** Sum of `numRecordsOutPerSecond`. */
  readonly numRecordsOutPerSecond: number;
  /** Mean `busyTimeMsPerSecond`. */
  readonly busyTimeMsPerSecond: number;
  /** Mean `idleTimeMsPerSecond`. */
  readonly idleTimeMsPerSecond: number;
  /** Mean `backPressuredTimeMsPerSecond`. */
  readonly backPressuredTimeMsPerSecond: number;
  /** Largest `backPressuredTimeMsPerSecond` of a subtask (Flink's back-pressure level uses it). */
  readonly maxBackPressuredTimeMsPerSecond: number;
  /** Largest `busyTimeMsPerSecond` of a subtask. */
  readonly maxBusyTimeMsPerSecond: number;
  /** Minimum input watermark over the subtasks, `null` while one has none. */
  readonly currentInputWatermark: number | null;
  /** Minimum output watermark over the subtasks, `null` while one has none. */
  readonly currentOutputWatermark: number | null;
}

/** Latest samples of the current attempt (see the module docs). */
export class MetricStore {
  #attempt = 0;
  readonly #samples = new Map<string, SubtaskMetricsSample>();

  /** The attempt whose samples are kept. */
  get attempt(): number {
    return this.#attempt;
  }

  /**
   * Records a sample.
   * @param attempt the attempt of the subtask that sent it.
   * @returns `false` when the sample is of an older attempt (refused).
   */
  update(
    attempt: number,
    vertexId: string,
    subtask: number,
    sample: SubtaskMetricsSample,
  ): boolean {
    if (attempt < this.#attempt) return false;
    if (attempt > this.#attempt) {
      this.#attempt = attempt;
      this.#samples.clear();
    }
    this.#samples.set(`${vertexId}#${subtask}`, sample);
    return true;
  }

  /**
   * Attempt `attempt` is deployed: the samples of earlier attempts are
   * dropped at once (not only when its first sample arrives).
   */
  startAttempt(attempt: number): void {
    if (attempt <= this.#attempt) return;
    this.#attempt = attempt;
    this.#samples.clear();
  }

  /** The latest sample of subtask `subtask` of `vertexId`, if it reported one in the current attempt. */
  subtask(vertexId: string, subtask: number): SubtaskMetricsSample | undefined {
    return this.#samples.get(`${vertexId}#${subtask}`);
  }

  /**
   * Aggregates the samples of a vertex's subtasks.
   * @param parallelism the vertex's number of subtasks.
   */
  vertex(vertexId: string, parallelism: number): VertexMetricsAggregate {
    let n = 0, inSum = 0, outSum = 0, inRate = 0, outRate = 0;
    let busy = 0, idle = 0, bp = 0, maxBp = 0, maxBusy = 0;
    let inWm: number | null = Infinity, outWm: number | null = Infinity;
    for (let s = 0; s < parallelism; s++) {
      const m = this.#samples.get(`${vertexId}#${s}`);
      if (m === undefined) {
        inWm = outWm = null;
        continue;
      }
      n++;
      inSum += m.numRecordsIn;
      outSum += m.numRecordsOut;
      inRate += m.numRecordsInPerSecond;
      outRate += m.numRecordsOutPerSecond;
      busy += m.busyTimeMsPerSecond;
      idle += m.idleTimeMsPerSecond;
      bp += m.backPressuredTimeMsPerSecond;
      maxBp = Math.max(maxBp, m.backPressuredTimeMsPerSecond);
      maxBusy = Math.max(maxBusy, m.busyTimeMsPerSecond);
      inWm = inWm === null || m.currentInputWatermark === null
        ? null
        : Math.min(inWm, m.currentInputWatermark);
      outWm = outWm === null || m.currentOutputWatermark === null
        ? null
        : Math.min(outWm, m.currentOutputWatermark);
    }
    const mean = (x: number) => n > 0 ? x / n : 0;
    return {
      reportingSubtasks: n,
      numRecordsIn: inSum,
      numRecordsOut: outSum,
      numRecordsInPerSecond: inRate,
      numRecordsOutPerSecond: outRate,
      busyTimeMsPerSecond: mean(busy),
      idleTimeMsPerSecond: mean(idle),
      backPressuredTimeMsPerSecond: mean(bp),
      maxBackPressuredTimeMsPerSecond: maxBp,
      maxBusyTimeMsPerSecond: maxBusy,
      currentInputWatermark: n === 0 || inWm === Infinity ? null : inWm,
      currentOutputWatermark: n === 0 || outWm === Infinity ? null : outWm,
    };
  }
}
