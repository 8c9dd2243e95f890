/**
 * The savepoint side of a `CheckpointCoordinator` (Flink's
 * `CheckpointCoordinator.triggerSavepoint` and its
 * `StopWithSavepointTerminationManager`, FLIP-34, and the restore modes of
 * FLIP-193): it holds the job's {@linkcode SavepointRequests}, refuses a
 * savepoint the job cannot take now, tells the sources to stop for a
 * stop-with-savepoint, stores a completed savepoint in its own location,
 * and after each completed checkpoint discards what the savepoints and the
 * CLAIM restore mode release.
 *
 * The decisions are the pure functions of `savepoints.ts`; this class does
 * their I/O through the coordinator's options and host. Triggering stays in
 * `checkpoint_coordinator.ts`, which owns the tracker and the timer.
 *
 * Invariant: a claimed restored checkpoint is discarded at most once, after
 * the job completed `retainedCheckpoints` checkpoints of its own.
 *
 * @module
 */

import { logger } from "../log.ts";
import type {
  CheckpointCoordinatorHost,
  CheckpointCoordinatorOptions,
} from "./checkpoint_coordinator_host.ts";
import {
  decideClaimedDiscard,
  discardAfterCompleted,
  refuseSavepoint,
  type SavepointError,
  SavepointRequests,
  type StopWithSavepointOptions,
  storeSavepoint,
} from "./savepoints.ts";

const log = logger("coordinator");

/** The savepoint requests of one job and the I/O they need, for its `CheckpointCoordinator`. */
export class CheckpointCoordinatorSavepoints {
  readonly #o: CheckpointCoordinatorOptions;
  readonly #host: CheckpointCoordinatorHost;
  /**
   * Pending savepoint and stop-with-savepoint requests (`savepoints.ts`):
   * the coordinator adds triggered savepoints, assigns the stop's final
   * checkpoint, and fails them on abort, failover and job end.
   */
  readonly requests: SavepointRequests = new SavepointRequests();
  /** Checkpoints (not savepoints) completed by this job, for the CLAIM restore mode. */
  #completedCheckpoints = 0;
  #claimedDiscarded = false;

  /** Keeps `options` (and its host) for the I/O; no I/O here. */
  constructor(options: CheckpointCoordinatorOptions) {
    this.#o = options;
    this.#host = options.host;
  }

  /** A stop-with-savepoint is in progress: the sources were told to stop. */
  get stopping(): boolean {
    return this.requests.stopping !== undefined;
  }

  /**
   * Why a savepoint into `directory` cannot be taken now (the job is not
   * running, is stopping or finishing, or has no savepoint storage), or
   * `undefined` when it can (see `refuseSavepoint`).
   */
  refuse(directory: string | undefined): SavepointError | undefined {
    return refuseSavepoint({
      jobId: this.#o.jobId,
      phase: this.#host.phase(),
      stopping: this.stopping,
      finishing: this.#host.attempt().finalCheckpointId !== undefined,
      storage: this.#o.savepointStorage,
      directory,
    });
  }

  /**
   * Stops the sources for a final savepoint (FLIP-34): registers the
   * request and tells every source subtask to stop (draining with
   * `options.drain`).
   * @returns the savepoint's path, once stored.
   * @throws {SavepointError} (rejects) when {@linkcode refuse} refuses, or
   *   as `JobCoordinator.stopWithSavepoint`.
   */
  stopWithSavepoint(options: StopWithSavepointOptions): Promise<string> {
    const refused = this.refuse(options.directory);
    if (refused !== undefined) return Promise.reject(refused);
    const done = this.requests.requestStop(options);
    const drain = options.drain ?? false;
    log.info(
      `job ${this.#o.jobId}: stopping with a savepoint (${drain ? "draining" : "no drain"})`,
      { name: "stop-with-savepoint", jobId: this.#o.jobId, drain },
    );
    for (const s of this.#o.sources) this.#host.toTask(s, { t: "stop-source", drain });
    return done;
  }

  /**
   * Savepoint `checkpointId`'s metadata is written: copies it to its own
   * location and resolves its requests.
   * @returns the savepoint's path, or `undefined` when no request waits for it.
   */
  store(checkpointId: number): Promise<string | undefined> {
    const o = this.#o;
    return this.requests.completed(
      checkpointId,
      (directory) =>
        storeSavepoint({
          storage: o.storage,
          jobId: o.jobId,
          checkpointId,
          target: o.savepointStorage!(directory),
        }),
    );
  }

  /**
   * After checkpoint `checkpointId` completed: discards the job-storage
   * copies of earlier savepoints, and a claimed restored checkpoint once the
   * restore mode says so (see `savepoints.ts`).
   */
  afterCompleted(checkpointId: number, kind: "checkpoint" | "savepoint"): void {
    const o = this.#o;
    if (kind === "checkpoint") this.#completedCheckpoints++;
    const claimed = !this.#claimedDiscarded && o.restoreFrom !== null &&
      decideClaimedDiscard({
          restoreMode: o.restoreSettings?.mode ?? "NO_CLAIM",
          restoredKind: o.restoreSettings?.kind ?? "checkpoint",
          otherJob: o.restoreFrom.jobId !== o.jobId,
          completedCheckpoints: this.#completedCheckpoints,
          retainedCheckpoints: o.checkpointing.retainedCheckpoints,
        }) === "discard";
    if (claimed) this.#claimedDiscarded = true;
    discardAfterCompleted({
      storage: o.storage,
      jobId: o.jobId,
      savepointCopies: this.requests.laterCheckpointCompleted(checkpointId),
      claimed: claimed ? o.restoreFrom : null,
    });
  }
}
