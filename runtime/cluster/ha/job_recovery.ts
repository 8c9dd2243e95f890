/**
 * What a new leader does with one stored job (Flink's `JobMaster` recovery
 * after a JobManager failover): a pure decision over the job's record and
 * the completed checkpoints its storage lists. Performs no I/O.
 *
 * - An ended job (FINISHED, FAILED, CANCELED) is only served: its status
 *   and outcome answer `list` and waiting clients.
 * - A running job resumes with the same job id and attempt number
 *   `stored attempt + 1` (the old leader wrote each attempt before deploying
 *   it, so the new one is above any the old leader deployed; transactional
 *   sinks fence producers by attempt), from:
 *   - the latest completed checkpoint in storage (the checkpoint metadata
 *     is the truth: the old leader may have completed checkpoints it had
 *     not written to the store yet), recovering every completed checkpoint
 *     storage holds (Flink's `CompletedCheckpointStore` read back on
 *     recovery): the job's retention registers their shared blobs and
 *     discards the ones beyond its retained number, so an older checkpoint
 *     the old leader had not discarded yet (it died in between) is neither
 *     left behind nor left missing blobs;
 *   - else the point it was submitted with (a savepoint, a resumed
 *     checkpoint, or from scratch), when the store knows of no completed
 *     checkpoint either;
 *   - and fails, without resuming, when the store names a completed
 *     checkpoint but storage has none: its checkpoints were discarded (the
 *     job finished and discarded them just before the leader died, before
 *     it could record the end) or lost; starting from scratch would
 *     commit its output twice.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { planJobRecovery } from "./job_recovery.ts";
 *
 * const plan = planJobRecovery({
 *   jobId: "j1",
 *   status: "RUNNING",
 *   attempt: 4,
 *   latestCheckpointId: 7,
 *   restoreFrom: null,
 *   completedCheckpoints: [7, 8],
 * });
 * assert.deepEqual(plan, {
 *   kind: "resume",
 *   attempt: 5,
 *   restoreFrom: { jobId: "j1", checkpointId: 8 },
 *   fromSubmission: false,
 *   recoveredCheckpoints: [7, 8],
 * });
 * ```
 *
 * @module
 */

import type { RestorePoint } from "../../task/messages.ts";
import type { JobStatusName } from "../cluster_protocol.ts";

/** The facts {@linkcode planJobRecovery} decides on. */
export interface JobRecoveryFacts {
  /** The job's id. */
  readonly jobId: string;
  /** Its stored status. */
  readonly status: JobStatusName;
  /** The highest attempt the store says was deployed. */
  readonly attempt: number;
  /** The latest completed checkpoint the store knew of, if any. */
  readonly latestCheckpointId?: number | undefined;
  /** The restore point the job was submitted with (`null`: from scratch). */
  readonly restoreFrom: RestorePoint | null;
  /** The job's completed checkpoints in storage, in ascending order. */
  readonly completedCheckpoints: readonly number[];
}

/** What to do with a stored job. */
export type JobRecoveryPlan =
  | { readonly kind: "serve-ended" }
  | {
    readonly kind: "resume";
    /** The first attempt number of the resumed job. */
    readonly attempt: number;
    /** Where its first attempt restores from (`null`: from scratch). */
    readonly restoreFrom: RestorePoint | null;
    /** True when `restoreFrom` is the submission's point, not one of the job's own checkpoints. */
    readonly fromSubmission: boolean;
    /**
     * The job's completed checkpoints in storage, ascending, the last being
     * `restoreFrom` (empty when `fromSubmission`): the job's retention
     * registers them all and discards those beyond its retained number.
     */
    readonly recoveredCheckpoints: readonly number[];
  }
  | { readonly kind: "fail"; readonly reason: string };

/** Decides what a new leader does with a stored job; see the module docs. */
export function planJobRecovery(facts: JobRecoveryFacts): JobRecoveryPlan {
  if (facts.status !== "RUNNING") return { kind: "serve-ended" };
  const attempt = facts.attempt + 1;
  const latest = facts.completedCheckpoints.at(-1);
  if (latest !== undefined) {
    return {
      kind: "resume",
      attempt,
      restoreFrom: { jobId: facts.jobId, checkpointId: latest },
      fromSubmission: false,
      recoveredCheckpoints: [...facts.completedCheckpoints],
    };
  }
  if (facts.latestCheckpointId !== undefined) {
    return {
      kind: "fail",
      reason: `job ${facts.jobId} completed checkpoint ${facts.latestCheckpointId} under the ` +
        `previous leader, but its checkpoint storage holds no completed checkpoint of it now ` +
        `(discarded when the job finished just before the leader changed, or lost); ` +
        `it is not restarted from scratch, which would repeat its output`,
    };
  }
  return {
    kind: "resume",
    attempt,
    restoreFrom: facts.restoreFrom,
    fromSubmission: true,
    recoveredCheckpoints: [],
  };
}
