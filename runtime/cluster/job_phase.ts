/**
 * The phase of a job coordinator (a coarse form of Flink's `JobStatus`
 * as the scheduler sees it): `deploying` (the current attempt's subtasks
 * are being deployed, not all ready yet), `running` (all started;
 * checkpoints are triggered), `restarting` (the attempt failed: it is
 * being cancelled and the restart strategy decides what next), `done`
 * (the job finished, failed for good or was cancelled; final).
 *
 * @module
 */

/** The phase of a `JobCoordinator`; see the module docs for each value. */
export type JobPhase = "deploying" | "running" | "restarting" | "done";
