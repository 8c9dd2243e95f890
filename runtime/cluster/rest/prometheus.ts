/**
 * `GET /metrics`: the coordinator's metrics in the Prometheus text format
 * (through `prom-client`), named as Flink's `PrometheusReporter` names them:
 * `flink_<scope>_<metric>`, every value a gauge (Flink exports counters as
 * gauges too).
 *
 * | Name | Labels | Meaning |
 * |---|---|---|
 * | `flink_jobmanager_numRegisteredTaskManagers` | | live workers |
 * | `flink_jobmanager_taskSlotsTotal`, `flink_jobmanager_taskSlotsAvailable` | | slots of live workers; without a running job's subtask |
 * | `flink_jobmanager_numRunningJobs` | | running jobs |
 * | `flink_jobmanager_job_<m>` | `job_id`, `job_name` | per running job: `uptime` (ms), `numRestarts`, `totalNumberOfCheckpoints`, `numberOfInProgressCheckpoints`, `numberOfCompletedCheckpoints`, `numberOfFailedCheckpoints`, `lastCheckpointDuration` (ms), `lastCheckpointSize` (bytes written), `lastCheckpointFullSize` (bytes referred to), `lastCheckpointRestoreTimestamp` (epoch ms, -1 for none) |
 * | `flink_taskmanager_job_task_<m>` | `job_id`, `job_name`, `task_id` (vertex id), `task_name`, `subtask_index`, `task_attempt_num`, `tm_id` (slot) | per subtask of a running job that reported: `numRecordsIn`, `numRecordsOut`, `numRecordsInPerSecond`, `numRecordsOutPerSecond`, `busyTimeMsPerSecond`, `idleTimeMsPerSecond`, `backPressuredTimeMsPerSecond`, `currentInputWatermark`, `currentOutputWatermark` (ms; Flink's `Long.MIN_VALUE` for none) |
 *
 * `currentOutputWatermark` is an operator metric in Flink; Weir reports it
 * per subtask (its network output). Values are those of the latest sample
 * (each subtask samples once a second); metrics of ended jobs are dropped,
 * as Flink unregisters them.
 *
 * @module
 */

import client from "npm:prom-client@15.1.3";
import type { RestBackend } from "./job_facts.ts";
import { isEnded, SUBTASK_METRIC_NAMES } from "./job_views.ts";

/** Flink's `Long.MIN_VALUE` watermark, as a float (what its Prometheus reporter shows for none). */
const NO_WATERMARK_VALUE = -9223372036854775808;

const JOB_LABELS = ["job_id", "job_name"] as const;
const TASK_LABELS = [
  "job_id",
  "job_name",
  "task_id",
  "task_name",
  "subtask_index",
  "task_attempt_num",
  "tm_id",
] as const;

const JOB_METRICS: Readonly<Record<string, string>> = {
  uptime: "Time since the job started, in ms",
  numRestarts: "Restarts of the job",
  totalNumberOfCheckpoints: "Checkpoints and savepoints triggered",
  numberOfInProgressCheckpoints: "Checkpoints in progress",
  numberOfCompletedCheckpoints: "Completed checkpoints and savepoints",
  numberOfFailedCheckpoints: "Failed checkpoints and savepoints",
  lastCheckpointDuration: "Duration of the latest completed checkpoint, in ms",
  lastCheckpointSize: "Bytes the latest completed checkpoint wrote",
  lastCheckpointFullSize: "Bytes of state the latest completed checkpoint refers to",
  lastCheckpointRestoreTimestamp: "When the job last restored a checkpoint, epoch ms (-1: never)",
};

const TASK_HELP: Readonly<Record<string, string>> = {
  numRecordsIn: "Records the subtask consumed",
  numRecordsOut: "Records the subtask wrote to its network outputs",
  numRecordsInPerSecond: "Records in per second",
  numRecordsOutPerSecond: "Records out per second",
  busyTimeMsPerSecond: "Time busy, in ms per second",
  idleTimeMsPerSecond: "Time waiting for input, in ms per second",
  backPressuredTimeMsPerSecond: "Time waiting for credit to emit, in ms per second",
  currentInputWatermark: "The subtask's input watermark, event-time ms",
  currentOutputWatermark: "The subtask's output watermark, event-time ms",
};

/** The Prometheus registry of one coordinator (see the module docs). */
export class PrometheusMetrics {
  readonly #backend: RestBackend;
  readonly #registry = new client.Registry();
  readonly #cluster: Record<string, client.Gauge>;
  readonly #job: Record<string, client.Gauge<(typeof JOB_LABELS)[number]>>;
  readonly #task: Record<string, client.Gauge<(typeof TASK_LABELS)[number]>>;

  /** Registers every gauge; values are read from `backend` at each scrape. */
  constructor(backend: RestBackend) {
    this.#backend = backend;
    const registers = [this.#registry];
    const gauge = (name: string, help: string) => new client.Gauge({ name, help, registers });
    this.#cluster = {
      numRegisteredTaskManagers: gauge(
        "flink_jobmanager_numRegisteredTaskManagers",
        "Live workers",
      ),
      taskSlotsTotal: gauge("flink_jobmanager_taskSlotsTotal", "Slots of live workers"),
      taskSlotsAvailable: gauge(
        "flink_jobmanager_taskSlotsAvailable",
        "Slots without a subtask of a running job",
      ),
      numRunningJobs: gauge("flink_jobmanager_numRunningJobs", "Running jobs"),
    };
    this.#job = Object.fromEntries(
      Object.entries(JOB_METRICS).map(([m, help]) => [
        m,
        new client.Gauge({
          name: `flink_jobmanager_job_${m}`,
          help,
          labelNames: JOB_LABELS,
          registers,
        }),
      ]),
    );
    this.#task = Object.fromEntries(
      SUBTASK_METRIC_NAMES.map((m) => [
        m,
        new client.Gauge({
          name: `flink_taskmanager_job_task_${m}`,
          help: TASK_HELP[m]!,
          labelNames: TASK_LABELS,
          registers,
        }),
      ]),
    );
  }

  /** The `Content-Type` of {@linkcode PrometheusMetrics.scrape}'s text. */
  get contentType(): string {
    return this.#registry.contentType;
  }

  /**
   * Reads the current values and renders them.
   * @returns the exposition text (Prometheus text format 0.0.4).
   */
  async scrape(): Promise<string> {
    this.#refresh(Date.now());
    return await this.#registry.metrics();
  }

  #refresh(now: number): void {
    for (
      const g of [
        ...Object.values(this.#cluster),
        ...Object.values(this.#job),
        ...Object.values(this.#task),
      ]
    ) g.reset();
    const overview = this.#backend.overview();
    const running = overview.jobs.filter((j) => !isEnded(j.status));
    const usedSlots = new Set<string>();
    for (const j of running) {
      const f = this.#backend.jobFacts(j.jobId);
      if (f === undefined) continue;
      for (const slot of f.placement.values()) usedSlots.add(slot);
      const jobLabels = { job_id: j.jobId, job_name: j.name };
      const s = f.checkpoints.snapshot();
      const latest = s.latestCompleted;
      const values: Record<string, number> = {
        uptime: now - j.startedAt,
        numRestarts: f.restarts,
        totalNumberOfCheckpoints: s.counts.total,
        numberOfInProgressCheckpoints: s.counts.inProgress,
        numberOfCompletedCheckpoints: s.counts.completed,
        numberOfFailedCheckpoints: s.counts.failed,
        lastCheckpointDuration: latest?.endToEndDurationMs ?? -1,
        lastCheckpointSize: latest?.checkpointedSize ?? -1,
        lastCheckpointFullSize: latest?.stateSize ?? -1,
        lastCheckpointRestoreTimestamp: s.latestRestored?.restoredAt ?? -1,
      };
      for (const [m, v] of Object.entries(values)) this.#job[m]!.set(jobLabels, v);
      for (const v of f.graph.vertices) {
        for (let i = 0; i < v.parallelism; i++) {
          const sample = f.metrics.subtask(v.id, i);
          if (sample === undefined) continue;
          const labels = {
            ...jobLabels,
            task_id: v.id,
            task_name: v.name,
            subtask_index: String(i),
            task_attempt_num: String(f.metrics.attempt),
            tm_id: f.placement.get(`${v.id}#${i}`) ?? "",
          };
          for (const m of SUBTASK_METRIC_NAMES) {
            const value = sample[m];
            this.#task[m]!.set(labels, value ?? NO_WATERMARK_VALUE);
          }
        }
      }
    }
    const slotsTotal = overview.workers.reduce((n, w) => n + w.slots, 0);
    this.#cluster.numRegisteredTaskManagers!.set(overview.workers.length);
    this.#cluster.taskSlotsTotal!.set(slotsTotal);
    this.#cluster.taskSlotsAvailable!.set(Math.max(0, slotsTotal - usedSlots.size));
    this.#cluster.numRunningJobs!.set(running.length);
  }
}
