/**
 * Tolerable checkpoint failures (Flink's `CheckpointFailureManager` and
 * `execution.checkpointing.tolerable-failed-checkpoints`): a pure counter of
 * consecutive failed checkpoints that tells the coordinator when to fail the
 * job's attempt. Performs no I/O.
 *
 * @module
 */

import type { CheckpointId } from "./types.ts";
import type { CheckpointKind } from "./pending.ts";
import { type CheckpointFailureCode, CheckpointFailureReason } from "./types.ts";

/**
 * The failure reasons that count towards the tolerable failures of a
 * {@linkcode CheckpointFailureManager}: those meaning the checkpoint could
 * not be taken (it expired, a task could not snapshot its state, or its state
 * or metadata could not be written). Every other reason is ignored: the
 * checkpoint was not triggered at all (pre-flight reasons), a newer one
 * replaced it (`SUBSUMED`, `BARRIER_SUBSUMED`), the input ended, or the
 * attempt is failing over or shutting down anyway (`TASK_FAILURE`,
 * `JOB_FAILING`, `ABORTED_BY_COORDINATOR`, `COORDINATOR_SHUTDOWN`).
 *
 * Flink counts `CHECKPOINT_EXPIRED`, `CHECKPOINT_DECLINED`,
 * `CHECKPOINT_ASYNC_EXCEPTION` and `IO_EXCEPTION`; Weir also counts
 * `FINALIZE_FAILED` (Flink ignores `FINALIZE_CHECKPOINT_FAILURE`), so metadata
 * that can never be written fails the job instead of being retried forever.
 */
export const COUNTED_FAILURE_CODES: ReadonlySet<CheckpointFailureCode> = new Set<
  CheckpointFailureCode
>(["TIMEOUT", "DECLINED", "FINALIZE_FAILED", "IO_ERROR"]);

/** Options of {@linkcode CheckpointFailureManager}. */
export interface CheckpointFailureManagerOptions {
  /**
   * How many consecutive failed checkpoints are tolerated: a non-negative
   * integer, or `Infinity` to never fail the job because of checkpoint
   * failures. Default 0: the first counted failure fails the job. Flink's
   * `execution.checkpointing.tolerable-failed-checkpoints`.
   */
  readonly tolerableFailures?: number;
}

/** One failed checkpoint, as reported to {@linkcode CheckpointFailureManager.onFailure}. */
export interface CheckpointFailure {
  /** The checkpoint's id. */
  readonly checkpointId: CheckpointId;
  /** Why it failed. */
  readonly reason: CheckpointFailureReason;
  /** Default `"checkpoint"`; savepoint failures are never counted (as in Flink). */
  readonly kind?: CheckpointKind;
  /**
   * What exactly went wrong, for the message (in parentheses after the
   * reason), e.g. who declined and why (`"by v1#0: ..."`) or a storage error.
   */
  readonly detail?: string;
}

/**
 * Verdict of {@linkcode CheckpointFailureManager.onFailure}:
 *
 * - `IGNORED`: not counted (reason not in {@linkcode COUNTED_FAILURE_CODES},
 *   a savepoint, already counted, or not newer than the latest success);
 * - `TOLERATED`: counted, still within the tolerance;
 * - `EXCEEDED`: counted, and more than `tolerableFailures` consecutive
 *   checkpoints failed: fail the attempt with `message`. The count restarts
 *   from 0.
 *
 * `consecutive` is the count after this failure (before the reset, for `EXCEEDED`).
 */
export type CheckpointFailureVerdict =
  | { readonly verdict: "IGNORED"; readonly consecutive: number }
  | { readonly verdict: "TOLERATED"; readonly consecutive: number }
  | { readonly verdict: "EXCEEDED"; readonly consecutive: number; readonly message: string };

/**
 * Decides when failed checkpoints fail the job (Flink's
 * `CheckpointFailureManager`): it counts consecutive failures of the reasons
 * in {@linkcode COUNTED_FAILURE_CODES}, and a completed checkpoint resets the
 * count. Pure: no I/O, no clock.
 *
 * @example
 * ```ts
 * import { CheckpointFailureManager } from "./failure_manager.ts";
 * import { CheckpointFailureReason } from "./types.ts";
 * const m = new CheckpointFailureManager({ tolerableFailures: 1 });
 * const timeout = CheckpointFailureReason.TIMEOUT;
 * console.assert(m.onFailure({ checkpointId: 3, reason: timeout }).verdict === "TOLERATED");
 * m.onSuccess(4);
 * console.assert(m.onFailure({ checkpointId: 5, reason: timeout }).verdict === "TOLERATED");
 * const v = m.onFailure({ checkpointId: 6, reason: timeout });
 * console.assert(v.verdict === "EXCEEDED");
 * console.assert(v.verdict === "EXCEEDED" && v.message ===
 *   "Exceeded checkpoint tolerable failure threshold (1): " +
 *     "2 consecutive checkpoints failed, the last one, checkpoint 6, expired before completing");
 * ```
 */
export class CheckpointFailureManager {
  readonly #tolerable: number;
  #consecutive = 0;
  readonly #counted = new Set<CheckpointId>();
  #lastSucceeded: CheckpointId = 0;

  /**
   * Creates a manager with no failure counted.
   *
   * @param options the tolerance.
   * @throws {RangeError} when `tolerableFailures` is neither a non-negative
   *   integer nor `Infinity`.
   */
  constructor(options: CheckpointFailureManagerOptions = {}) {
    const tolerable = options.tolerableFailures ?? 0;
    if (!(Number.isSafeInteger(tolerable) && tolerable >= 0) && tolerable !== Infinity) {
      throw new RangeError(
        `Cannot create a CheckpointFailureManager: 'tolerableFailures' must be a non-negative integer or Infinity: current value is ${tolerable}`,
      );
    }
    this.#tolerable = tolerable;
  }

  /** Consecutive failed checkpoints tolerated. */
  get tolerableFailures(): number {
    return this.#tolerable;
  }

  /** Counted failures since the latest success (or the latest `EXCEEDED`). */
  get consecutiveFailures(): number {
    return this.#consecutive;
  }

  /**
   * Records a failed checkpoint. Call it only for failures of a running
   * attempt: failures caused by a failover are not the checkpoint's fault.
   *
   * @param failure the checkpoint, why it failed, and details for the message.
   * @returns whether it was counted, and whether the job must fail.
   */
  onFailure(failure: CheckpointFailure): CheckpointFailureVerdict {
    const { checkpointId, reason } = failure;
    if (
      (failure.kind ?? "checkpoint") !== "checkpoint" ||
      !COUNTED_FAILURE_CODES.has(reason.code) ||
      checkpointId <= this.#lastSucceeded ||
      this.#counted.has(checkpointId)
    ) {
      return { verdict: "IGNORED", consecutive: this.#consecutive };
    }
    // Holds at most tolerableFailures + 1 ids; with no limit there is nothing to decide.
    if (this.#tolerable !== Infinity) this.#counted.add(checkpointId);
    const consecutive = ++this.#consecutive;
    if (consecutive <= this.#tolerable) return { verdict: "TOLERATED", consecutive };
    this.#reset();
    const what = `checkpoint ${checkpointId}`;
    const failed = `${describeFailure(reason)}` +
      (failure.detail === undefined ? "" : ` (${failure.detail})`);
    return {
      verdict: "EXCEEDED",
      consecutive,
      message: `Exceeded checkpoint tolerable failure threshold (${this.#tolerable}): ` +
        (consecutive === 1
          ? `${what} ${failed}`
          : `${consecutive} consecutive checkpoints failed, the last one, ${what}, ${failed}`),
    };
  }

  /**
   * Records a completed checkpoint: the count restarts from 0, and failures
   * of older checkpoints reported later are ignored.
   *
   * @param checkpointId the checkpoint whose metadata was written.
   */
  onSuccess(checkpointId: CheckpointId): void {
    if (checkpointId <= this.#lastSucceeded) return;
    this.#lastSucceeded = checkpointId;
    this.#reset();
  }

  #reset(): void {
    this.#consecutive = 0;
    this.#counted.clear();
  }
}

function describeFailure(reason: CheckpointFailureReason): string {
  switch (reason.code) {
    case "TIMEOUT":
      return "expired before completing";
    case "DECLINED":
      return "was declined";
    case "FINALIZE_FAILED":
      return "failed to write its metadata";
    case "IO_ERROR":
      return "failed with an I/O error";
    default:
      return `failed: ${reason.message} (${reason.code})`;
  }
}
