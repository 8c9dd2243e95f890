/**
 * Region failover (Flink's `RestartPipelinedRegionFailoverStrategy`, with
 * `jobmanager.execution.failover-strategy: region`): a failure restarts only
 * the pipelined region of the failed subtask (`failover_regions.ts`); the
 * other regions keep running, with their attempt numbers, threads and
 * state untouched.
 *
 * ## Which failover a failure gets
 *
 * {@linkcode decideFailoverScope} is pure. It restarts one region only when
 * all of these hold, and otherwise every subtask (correctness first):
 *
 * - the job's failover strategy is `"region"`;
 * - the failure names the subtask it happened in (a reported task failure;
 *   a lost worker, a deployment or checkpoint timeout, a NATS outage seen by
 *   the coordinator or any coordinator-side error names none);
 * - the job is running: every subtask of the current attempt started, no
 *   other region is being restarted, and the job is not finishing (its final
 *   checkpoint completed, so subtasks of other regions may have ended);
 * - no stop-with-savepoint is in progress: every source was told to stop,
 *   and the failover fails the stop, so every source must resume (a region
 *   failover would leave the other regions' sources stopped, and the job
 *   would finish without the rest of their input);
 * - a restart can fix it (no `SuppressRestartsError` in its cause chain)
 *   and the restart strategy would restart;
 * - the region is not the whole job.
 *
 * ## The sequence
 *
 * {@linkcode restartRegion} runs it, after the coordinator fenced the
 * region's subtasks (their messages are dropped from then on):
 *
 * 1. every pending checkpoint is aborted (not counted as a failed
 *    checkpoint) and every running subtask is told so;
 * 2. the region's subtasks are cancelled, and the sequence waits for them to
 *    end (`cancellation_wait.ts`) while the restart strategy's delay runs;
 * 3. the restore decision is the full failover's (`failover_restart.ts`):
 *    the latest checkpoint whose metadata this coordinator wrote;
 * 4. the coordinator starts the next attempt number for the region's
 *    subtasks only, and they are deployed restoring their own state from
 *    that checkpoint. Sources rewind to its offsets; two-phase-commit sinks
 *    commit what it pre-committed and abort later transactions, per subtask;
 * 5. once they are all ready, they start, and periodic checkpoints (of every
 *    subtask of the job) resume.
 *
 * Why the output stays exactly-once: no channel joins two regions, so the
 * region's records depend on nothing outside it; it replays from a
 * checkpoint every subtask of the job took; and the next checkpoint is
 * again taken by every subtask, the restarted ones after their restore.
 *
 * Any failure while the sequence runs escalates to a full failover (which
 * also cancels the region's new subtasks, their attempt being below the
 * next one).
 *
 * @module
 */

import type { SubtaskRef } from "../checkpoint/types.ts";
import type { RestorePoint } from "../task/messages.ts";
import type { FailoverStrategy } from "../api/restart_strategy_config.ts";
import { classifyFailure } from "../failure.ts";
import { logger } from "../log.ts";
import type { FailoverRegions, PipelinedRegion } from "./failover_regions.ts";
import { planRestart, type RestartPlanOptions } from "./failover_restart.ts";
import type { JobFailedError } from "./job_result.ts";
import { describeError, describeRestorePoint } from "./restore_decision.ts";

const log = logger("coordinator");

/** The facts {@linkcode decideFailoverScope} decides on. */
export interface FailoverScopeFacts {
  /** The job's failover strategy. */
  readonly strategy: FailoverStrategy;
  /** The job's pipelined regions. */
  readonly regions: FailoverRegions;
  /** The failure. A `TaskFailureError` (or any error with `vertexId` and `subtask`) names its subtask. */
  readonly error: unknown;
  /** Every subtask of the current attempt started and no region is being restarted. */
  readonly running: boolean;
  /** The final checkpoint completed: subtasks are finishing (some may have ended). */
  readonly finishing: boolean;
  /** A stop-with-savepoint is in progress: the sources were told to stop. */
  readonly stopping: boolean;
  /** The restart strategy would restart after this failure. */
  readonly wouldRestart: boolean;
}

/** How much of the job a failure restarts, and why. */
export type FailoverScope =
  /** Every subtask; `why` says why not a region, for the log (`""` with the `full` strategy). */
  | { readonly kind: "full"; readonly why: string }
  /** Only `region`, whose subtask `failed` failed. */
  | { readonly kind: "region"; readonly region: PipelinedRegion; readonly failed: SubtaskRef };

/**
 * Decides between a region and a full failover (see the module docs). Pure.
 */
export function decideFailoverScope(facts: FailoverScopeFacts): FailoverScope {
  if (facts.strategy === "full") return { kind: "full", why: "" };
  const failed = failedSubtask(facts.error);
  if (failed === undefined) return { kind: "full", why: "the failure names no subtask" };
  if (!facts.running) {
    return { kind: "full", why: "not every subtask was running (or a region was restarting)" };
  }
  if (facts.finishing) return { kind: "full", why: "the job was finishing" };
  if (facts.stopping) {
    return { kind: "full", why: "a stop-with-savepoint was in progress: every source resumes" };
  }
  if (classifyFailure(facts.error).type === "NonRecoverableError" || !facts.wouldRestart) {
    return { kind: "full", why: "the job ends" };
  }
  let region: PipelinedRegion;
  try {
    region = facts.regions.regionOf(failed.vertexId, failed.subtask);
  } catch {
    return {
      kind: "full",
      why: `the job has no subtask ${failed.vertexId}#${failed.subtask}`,
    };
  }
  if (facts.regions.isWholeJob(region)) {
    return { kind: "full", why: "its region is the whole job" };
  }
  return { kind: "region", region, failed };
}

/** The subtask an error says it happened in, if any (`TaskFailureError`'s `vertexId`, `subtask`). */
export function failedSubtask(error: unknown): SubtaskRef | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { vertexId, subtask } = error as { vertexId?: unknown; subtask?: unknown };
  if (typeof vertexId !== "string" || typeof subtask !== "number") return undefined;
  return { vertexId, subtask };
}

/**
 * What {@linkcode restartRegion} needs from the job coordinator: the facts a
 * full failover's `planRestart` reads (job, storage, restart strategy,
 * checkpoints written), and the steps it takes.
 */
export interface RegionRestartOptions extends Omit<RestartPlanOptions, "cancelled" | "restarting"> {
  /** The region to restart. */
  readonly region: PipelinedRegion;
  /** `region <id> (<vertex>#<subtask>, …)`. */
  readonly describe: string;
  /** The failure. */
  readonly error: unknown;
  /** The job-wide attempt number when it failed. */
  readonly attempt: number;
  /** Fences the region's subtasks (`ExecutionAttempt.fence`): nothing they send counts any more. */
  readonly fence: () => void;
  /** Aborts the pending checkpoints (`CheckpointCoordinator.regionFailingOver`). */
  readonly abortCheckpoints: (failure: string, cancelled: Promise<void>) => void;
  /** Cancels the region's subtasks (`AttemptCancellation.cancelSubtasks`). */
  readonly cancel: (subtasks: ReadonlySet<string>) => void;
  /** Resolves once the cancelled subtasks ended or the wait timed out; never rejects. */
  readonly awaitCancelled: () => Promise<void>;
  /** False once this region failover was superseded (a full failover, the job ended). */
  readonly stillCurrent: () => boolean;
  /**
   * Starts the region's next attempt and deploys it restoring `point`
   * (`null`: from scratch).
   * @returns the region's new attempt number and the job's restarts so far.
   */
  readonly redeploy: (point: RestorePoint | null) => { attempt: number; restarts: number };
  /** The restart strategy gave up, or the checkpoint to restore is unusable: the job fails. */
  readonly fail: (error: JobFailedError) => void;
}

/**
 * Runs a region failover's sequence (see the module docs) up to the
 * redeployment; the coordinator starts the region once it is ready.
 * Resolves when it redeployed, failed the job, or was superseded; never
 * rejects.
 */
export async function restartRegion(o: RegionRestartOptions): Promise<void> {
  const failure = describeError(o.error);
  o.fence();
  log.warn(
    `job ${o.jobId}: region failover of ${o.describe} (${o.region.subtasks.length} subtasks) ` +
      `after attempt ${o.attempt} failed: ${failure}; the other regions keep running`,
    { name: "region-failover", jobId: o.jobId, attempt: o.attempt, region: o.describe },
  );
  o.cancel(o.region.keys);
  const cancelled = o.awaitCancelled();
  o.abortCheckpoints(`${o.describe} of job ${o.jobId} failed (${failure})`, cancelled);
  const plan = await planRestart(o.error, { ...o, cancelled, restarting: o.stillCurrent });
  if (plan.kind === "abandoned" || !o.stillCurrent()) return;
  if (plan.kind === "fail") {
    log.info(`job ${o.jobId}: the region failover of ${o.describe} ends the job`);
    o.fail(plan.error);
    return;
  }
  const { attempt, restarts } = o.redeploy(plan.point);
  log.warn(
    `job ${o.jobId}: restarted ${o.describe} as attempt ${attempt} (restart ${restarts}) from ` +
      (plan.point === null ? "scratch" : describeRestorePoint(plan.point, o.jobId)),
    { name: "region-restarted", jobId: o.jobId, attempt, region: o.describe },
  );
}
