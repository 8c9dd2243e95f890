/**
 * Why the coordinator process fails a job's attempt on its own (not a
 * subtask's failure): its NATS connection came back after an outage, or a
 * worker running the attempt's subtasks went silent. Both are recoverable:
 * the restart strategy restarts the job from its latest checkpoint (Flink's
 * `TaskManager` heartbeat timeout and JobManager connection loss).
 *
 * @module
 */

/**
 * The coordinator's NATS connection was lost and is back (a NATS outage):
 * messages of the job's attempt may have been lost, so the attempt fails
 * and the restart strategy restarts it (a retry can fix it).
 */
export class NatsConnectionLostError extends Error {
  /** The error class name. */
  override name = "NatsConnectionLostError";
}

/** A worker stopped heartbeating while it ran subtasks of a job. */
export class WorkerLostError extends Error {
  /** The error class name. */
  override name = "WorkerLostError";
}
