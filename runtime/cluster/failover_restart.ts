/**
 * What a failover does after the failed attempt was told to cancel (Flink's
 * scheduler restart handling: `ExecutionFailureHandler` asks the
 * `RestartBackoffTimeStrategy`, waits the restart delay, then the
 * `CheckpointCoordinator` picks the checkpoint to restore): asks the
 * restart strategy, waits its delay and for the failed attempt's subtasks
 * to end (the two overlap), waits for metadata writes in flight, reads the
 * metadata of the checkpoint to restore and lets `decideRestore` judge it.
 * Storage that cannot be reached counts as another failure for the restart
 * strategy; anything else wrong with the checkpoint fails the job for good.
 *
 * `planRestart` does the waiting and the one storage read; the decisions
 * are pure (`RestartBackoff`, `restoreTarget`, `decideRestore`,
 * `resumeHint`).
 *
 * @module
 */

import { delay } from "../actor/async.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { CheckpointId } from "../checkpoint/types.ts";
import type { RestorePoint } from "../task/messages.ts";
import { logger } from "../log.ts";
import { JobFailedError } from "./job_result.ts";
import type { RestartBackoff } from "./restart_strategy.ts";
import { decideRestore, restoreTarget } from "./restore_decision.ts";
import { classifyFailure } from "../failure.ts";
import { appendToFirstLine } from "../error_chain.ts";

const log = logger("coordinator");

/** What `planRestart` needs: the job, its storage and restart strategy, and ways to wait. */
export interface RestartPlanOptions {
  /** The job's id, for error messages and the restore decision. */
  readonly jobId: string;
  /** The job's name, for error messages. */
  readonly jobName: string;
  /** Where the metadata of the checkpoint to restore is read. */
  readonly storage: CheckpointStorage;
  /** The checkpoint the job was started from, or `null`. */
  readonly restoreFrom: RestorePoint | null;
  /** The job's restart strategy, asked once per failure (restart errors included). */
  readonly backoff: RestartBackoff;
  /** The latest checkpoint whose metadata the coordinator wrote, read after each wait. */
  readonly latestWritten: () => CheckpointId | undefined;
  /** Resolves once no metadata write is in flight; never rejects. */
  readonly writesSettled: () => Promise<void>;
  /** Resolves once the failed attempt's subtasks ended (or the wait timed out); never rejects. */
  readonly cancelled: Promise<void>;
  /**
   * False once the job left the `restarting` phase (cancelled, suspended,
   * ended) or the region failover was superseded: planning stops, checked
   * after every wait (the restart delay, metadata writes, the read).
   */
  readonly restarting: () => boolean;
}

/** How a failover ends: `restart` from `point` (`null`: from scratch), `fail` the job, or `abandoned`. */
export type RestartPlan =
  /** Deploy the next attempt restoring `point` (`null`: from scratch). */
  | { readonly kind: "restart"; readonly point: RestorePoint | null }
  /** The job fails for good with `error` (its cause is the last failure). */
  | { readonly kind: "fail"; readonly error: JobFailedError }
  /** The job left the `restarting` phase while waiting: nothing more to do. */
  | { readonly kind: "abandoned" };

/**
 * Decides how the job goes on after attempt failure `error`, waiting the
 * restart delay and for the failed attempt to end on the way.
 * @returns the plan; never rejects.
 */
export async function planRestart(
  error: unknown,
  options: RestartPlanOptions,
): Promise<RestartPlan> {
  const o = options;
  let failure = error;
  for (;;) {
    const decision = o.backoff.onFailure(Date.now(), failure);
    if (decision.kind === "fail") {
      await o.writesSettled();
      if (!o.restarting()) return { kind: "abandoned" };
      const hint = resumeHint({
        jobId: o.jobId,
        latestWritten: o.latestWritten(),
        restoreFrom: o.restoreFrom,
      });
      return {
        kind: "fail",
        error: new JobFailedError(
          decision.suppressed
            ? failedWithoutRestarts(o, failure, hint)
            : `Job ${o.jobId} '${o.jobName}' failed: ${appendToFirstLine(decision.reason, hint)}`,
          { cause: failure, resumable: o.latestWritten() !== undefined },
        ),
      };
    }
    // The restart delay and the wait for the failed attempt to end overlap.
    await Promise.all([delay(decision.delayMs), o.cancelled]);
    if (!o.restarting()) return { kind: "abandoned" };
    await o.writesSettled();
    // Checked after every wait: a job suspended (leadership lost), cancelled or
    // ended meanwhile reads no checkpoint, warns of nothing and deploys nothing.
    if (!o.restarting()) return { kind: "abandoned" };
    const facts = {
      jobId: o.jobId,
      latestWritten: o.latestWritten(),
      restoreFrom: o.restoreFrom,
    };
    const target = restoreTarget(facts);
    let readError: { error: unknown } | undefined;
    if (target !== null) {
      try {
        await o.storage.readMetadata(target.jobId, target.checkpointId);
      } catch (e) {
        readError = { error: e };
      }
      if (!o.restarting()) return { kind: "abandoned" };
    }
    const restore = decideRestore({
      ...facts,
      jobName: o.jobName,
      target,
      readError,
      restartingAfter: error,
    });
    if (restore.kind === "restore") return { kind: "restart", point: restore.point };
    if (restore.kind === "retry") {
      log.warn(restore.warning);
      failure = restore.failure;
      continue;
    }
    return { kind: "fail", error: new JobFailedError(restore.message, { cause: restore.cause }) };
  }
}

/**
 * The message of a job that an error a retry cannot fix ended: `Job <id>
 * '<name>' failed without restarts (<its class><resume hint>): <the failure's
 * message>`.
 * The failure's message (where it happened: subtask and attempt, with the
 * unrecoverable error's text) is the message's body, and its `cause` chain
 * (the unrecoverable error, whose text it already holds) follows in
 * reports as `caused by … (message above)`: each text once. Pure.
 */
function failedWithoutRestarts(
  o: { readonly jobId: string; readonly jobName: string },
  failure: unknown,
  hint: string,
): string {
  const found = classifyFailure(failure);
  const name = found.type === "NonRecoverableError" ? found.by.name : "SuppressRestartsError";
  const text = failure instanceof Error ? failure.message : String(failure);
  // The failure's text stays whole (a relayed one may hold its own `caused by`
  // lines), so reports of the chain find it contained and do not repeat it.
  return `Job ${o.jobId} '${o.jobName}' failed without restarts (${name}${hint}): ${text}`;
}

/**
 * How to resume a job that failed for good (`; …`, appended to its error
 * message): from its latest written checkpoint, else from where it started,
 * else nothing to resume from. Pure.
 */
export function resumeHint(facts: {
  readonly jobId: string;
  readonly latestWritten: CheckpointId | undefined;
  readonly restoreFrom: RestorePoint | null;
}): string {
  const { jobId, latestWritten: latest, restoreFrom: from } = facts;
  return latest !== undefined
    ? `; its latest completed checkpoint is ${latest}: resume with ` +
      `resumeFrom({ jobId: "${jobId}", checkpointId: ${latest} })`
    : from !== null
    ? `; it completed no checkpoint of its own: resume again from where it started, with ` +
      `resumeFrom({ jobId: "${from.jobId}", checkpointId: ${from.checkpointId} })`
    : "; it has no completed checkpoint";
}
