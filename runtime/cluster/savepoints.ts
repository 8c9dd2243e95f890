/**
 * The coordinator's savepoint bookkeeping: user-triggered savepoints
 * (Flink's `CheckpointCoordinator.triggerSavepoint`), stop-with-savepoint
 * (FLIP-34, Flink's `StopWithSavepointTerminationManager`) and the restore
 * modes of a resumed job (Flink's `RestoreMode`, FLIP-193).
 *
 * `JobCoordinator` owns one {@linkcode SavepointRequests}: it asks it which
 * triggered checkpoints are savepoints, tells it when one completed or
 * failed, and where to store them; the decisions here perform no I/O except
 * {@linkcode SavepointRequests.completed}, which runs the store function the
 * coordinator passes.
 *
 * ## Triggering
 *
 * A savepoint is a forced checkpoint of kind `"savepoint"` (the trigger
 * message and the pending checkpoint carry the type): it ignores the
 * interval and the concurrency limit, is never subsumed, and retention never
 * discards it. Once its `_metadata` is written in the job's checkpoint
 * storage, it is copied into its own self-contained location in the target
 * directory (`savepoint_storage.ts`); the promise resolves with that path.
 * The copy in the job's checkpoint storage stays while it is the latest
 * checkpoint a failover would restore, and is discarded once a later
 * checkpoint completed ({@linkcode SavepointRequests.laterCheckpointCompleted}).
 *
 * ## Stop with a savepoint
 *
 * `stop` tells every source subtask to stop: with `drain`, a source ends its
 * input as a bounded one does (it emits `MAX_WATERMARK`, so event-time
 * windows and timers fire, and end of data flows downstream); without, it
 * only suspends (no watermark, no end of data: windows keep their state in
 * the savepoint). Once every source stopped, the final checkpoint (FLIP-147)
 * is taken as the savepoint; when it completed, sinks commit it
 * (`complete`), every subtask finishes, and the job ends FINISHED. A
 * failover while stopping fails the stop request (the job keeps running).
 *
 * ## Restore modes
 *
 * | mode | the restored snapshot's files | the first checkpoint |
 * |---|---|---|
 * | `NO_CLAIM` (default, as Flink 1.15+) | never deleted by the new job | full (Weir's checkpoints are all full today) |
 * | `CLAIM` | owned by the new job: a restored *checkpoint* is discarded once the new job completed `retainedCheckpoints` checkpoints of its own | as any |
 *
 * A savepoint is never deleted, not even when claimed (DESIGN §13).
 *
 * @module
 */

import type { CheckpointId } from "../checkpoint/types.ts";
import type { RestoreMode } from "../api/executor.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import { copyToSavepoint } from "../checkpoint/savepoint_storage.ts";
import type { RestorePoint } from "../task/messages.ts";
import { logger } from "../log.ts";

const log = logger("coordinator");

/** Options of a stop-with-savepoint (Flink's `stop [--drain] --savepointPath`). */
export interface StopWithSavepointOptions {
  /** The savepoint directory; default the cluster's (local mode: `.weir/savepoints`). */
  readonly directory?: string | undefined;
  /**
   * Emit `MAX_WATERMARK` before the savepoint, so event-time windows and
   * timers fire (Flink's `--drain`, `advanceToEndOfEventTime`). Default false.
   */
  readonly drain?: boolean | undefined;
}

interface Waiter {
  readonly directory: string | undefined;
  readonly resolve: (path: string) => void;
  readonly reject: (error: Error) => void;
}

interface StopRequest extends Waiter {
  readonly drain: boolean;
  checkpointId: CheckpointId | undefined;
}

/** A savepoint or stop request that cannot be served, or that failed. */
export class SavepointError extends Error {
  /** The error class name. */
  override name = "SavepointError";
}

/**
 * The pending savepoint and stop requests of one job (see the module docs).
 * Every promise it hands out settles exactly once.
 */
export class SavepointRequests {
  readonly #byId = new Map<CheckpointId, Waiter>();
  #stop: StopRequest | undefined;
  /** Savepoints completed in the job's storage whose copy there is not discarded yet. */
  readonly #inJobStorage: CheckpointId[] = [];

  /**
   * Registers the savepoint triggered as checkpoint `checkpointId`.
   * @returns its path, once stored.
   */
  add(checkpointId: CheckpointId, directory: string | undefined): Promise<string> {
    return new Promise((resolve, reject) => {
      this.#byId.set(checkpointId, { directory, resolve, reject });
    });
  }

  /**
   * Registers a stop-with-savepoint; the coordinator then stops the sources.
   * @returns the final savepoint's path, once stored.
   * @throws {SavepointError} (rejects) when a stop is already in progress.
   */
  requestStop(options: StopWithSavepointOptions): Promise<string> {
    if (this.#stop !== undefined) {
      return Promise.reject(new SavepointError("a stop-with-savepoint is already in progress"));
    }
    return new Promise((resolve, reject) => {
      this.#stop = {
        directory: options.directory,
        drain: options.drain ?? false,
        resolve,
        reject,
        checkpointId: undefined,
      };
    });
  }

  /** The stop in progress, if any: whether it drains. */
  get stopping(): { readonly drain: boolean } | undefined {
    return this.#stop;
  }

  /**
   * The final checkpoint of a stop was triggered as `checkpointId`: it is the
   * stop's savepoint. Does nothing when no stop is in progress.
   */
  assignStop(checkpointId: CheckpointId): void {
    if (this.#stop !== undefined) this.#stop.checkpointId = checkpointId;
  }

  /** Whether checkpoint `checkpointId` is a savepoint (user-triggered or a stop's). */
  isSavepoint(checkpointId: CheckpointId): boolean {
    return this.#byId.has(checkpointId) || this.#stop?.checkpointId === checkpointId;
  }

  /**
   * Savepoint `checkpointId` completed in the job's storage: stores it with
   * `store(directory)` and settles its request with the path or the error.
   * @returns the path, or `undefined` when it is not a savepoint or storing failed.
   */
  async completed(
    checkpointId: CheckpointId,
    store: (directory: string | undefined) => Promise<string>,
  ): Promise<string | undefined> {
    const waiter = this.#byId.get(checkpointId) ??
      (this.#stop?.checkpointId === checkpointId ? this.#stop : undefined);
    if (waiter === undefined) return undefined;
    this.#byId.delete(checkpointId);
    this.#inJobStorage.push(checkpointId);
    try {
      const path = await store(waiter.directory);
      if (waiter === this.#stop) this.#stop = undefined;
      waiter.resolve(path);
      return path;
    } catch (error) {
      if (waiter === this.#stop) this.#stop = undefined;
      waiter.reject(
        new SavepointError(
          `Savepoint ${checkpointId} completed but could not be stored: ${describe(error)}`,
          { cause: error },
        ),
      );
      return undefined;
    }
  }

  /**
   * Checkpoint `checkpointId` failed or was aborted: its savepoint request
   * (if it is one) rejects. A stop's final savepoint failing fails the stop.
   */
  failed(checkpointId: CheckpointId, reason: string): void {
    const waiter = this.#byId.get(checkpointId);
    if (waiter !== undefined) {
      this.#byId.delete(checkpointId);
      waiter.reject(new SavepointError(`Savepoint ${checkpointId} failed: ${reason}`));
    }
  }

  /** Every pending request rejects (failover, cancellation, the job's end). */
  failAll(reason: string): void {
    for (const [id, waiter] of this.#byId) {
      waiter.reject(new SavepointError(`Savepoint ${id} failed: ${reason}`));
    }
    this.#byId.clear();
    const stop = this.#stop;
    this.#stop = undefined;
    stop?.reject(new SavepointError(`Stop with savepoint failed: ${reason}`));
  }

  /**
   * A checkpoint with id `checkpointId` completed: the copies of earlier
   * savepoints in the job's storage are no longer what a failover restores.
   * @returns their ids, to discard from the job's storage (each once).
   */
  laterCheckpointCompleted(checkpointId: CheckpointId): CheckpointId[] {
    const out: CheckpointId[] = [];
    for (let i = this.#inJobStorage.length - 1; i >= 0; i--) {
      if (this.#inJobStorage[i]! < checkpointId) out.push(...this.#inJobStorage.splice(i, 1));
    }
    return out.sort((a, b) => a - b);
  }
}

/** Facts for {@linkcode decideClaimedDiscard}. */
export interface ClaimFacts {
  /** How the job was restored. */
  readonly restoreMode: RestoreMode;
  /** The kind of the restored snapshot. */
  readonly restoredKind: "checkpoint" | "savepoint";
  /** Whether the restored snapshot belongs to another job (a resume), not this job's own. */
  readonly otherJob: boolean;
  /** Checkpoints (not savepoints) this job completed so far. */
  readonly completedCheckpoints: number;
  /** The job's `retainedCheckpoints`. */
  readonly retainedCheckpoints: number;
}

/**
 * Whether a resumed job now discards the snapshot it was restored from
 * (Flink's `RestoreMode.CLAIM`: the restored checkpoint joins the job's
 * retained checkpoints and is subsumed like them). Performs no I/O.
 *
 * @returns `"discard"` only for a claimed checkpoint (never a savepoint) of
 *   another job once this job retains `retainedCheckpoints` of its own;
 *   `"keep"` otherwise.
 *
 * @example
 * ```ts
 * import { decideClaimedDiscard } from "./savepoints.ts";
 * const facts = { restoreMode: "CLAIM", restoredKind: "checkpoint", otherJob: true,
 *   completedCheckpoints: 1, retainedCheckpoints: 1 } as const;
 * console.assert(decideClaimedDiscard(facts) === "discard");
 * console.assert(decideClaimedDiscard({ ...facts, restoreMode: "NO_CLAIM" }) === "keep");
 * ```
 */
export function decideClaimedDiscard(facts: ClaimFacts): "discard" | "keep" {
  if (facts.restoreMode !== "CLAIM" || facts.restoredKind !== "checkpoint") return "keep";
  if (!facts.otherJob) return "keep";
  return facts.completedCheckpoints >= Math.max(1, facts.retainedCheckpoints) ? "discard" : "keep";
}

/** Facts for {@linkcode refuseSavepoint}. */
export interface SavepointRefusalFacts {
  /** The job. */
  readonly jobId: string;
  /** The coordinator's phase: only `"running"` serves savepoints. */
  readonly phase: string;
  /** Whether a stop-with-savepoint is in progress. */
  readonly stopping: boolean;
  /** Whether the job's sources all ended and its final checkpoint was triggered. */
  readonly finishing: boolean;
  /** The savepoint storage resolver, if the coordinator has one. */
  readonly storage: ((directory: string | undefined) => CheckpointStorage) | undefined;
  /** The requested directory. */
  readonly directory: string | undefined;
}

/**
 * Why a savepoint (or stop) request cannot be served now, or `undefined`
 * when it can. Calls the resolver, which throws for a refused directory.
 */
export function refuseSavepoint(facts: SavepointRefusalFacts): SavepointError | undefined {
  const { jobId } = facts;
  if (facts.phase !== "running") {
    return new SavepointError(
      `job ${jobId} is not running (${facts.phase}): cannot take a savepoint`,
    );
  }
  if (facts.stopping) {
    return new SavepointError(`job ${jobId} is stopping with a savepoint already`);
  }
  if (facts.finishing) {
    return new SavepointError(
      `job ${jobId} is finishing: its sources reached the end of their input and its final ` +
        `checkpoint was triggered`,
    );
  }
  if (facts.storage === undefined) {
    return new SavepointError(`job ${jobId}: this coordinator has no savepoint storage`);
  }
  try {
    facts.storage(facts.directory);
  } catch (error) {
    return new SavepointError(
      `job ${jobId}: cannot store a savepoint in ${
        facts.directory === undefined ? "the default directory" : JSON.stringify(facts.directory)
      }: ${describe(error)}`,
      { cause: error },
    );
  }
  return undefined;
}

/**
 * Copies completed savepoint `checkpointId` of `jobId` from the job's
 * storage to `target` (see `copyToSavepoint`) and logs it.
 * @returns the savepoint path.
 * @throws what `copyToSavepoint` throws.
 */
export async function storeSavepoint(options: {
  readonly storage: CheckpointStorage;
  readonly jobId: string;
  readonly checkpointId: CheckpointId;
  readonly target: CheckpointStorage;
}): Promise<string> {
  const { jobId, checkpointId } = options;
  const path = await copyToSavepoint({
    from: options.storage,
    jobId,
    checkpointId,
    to: options.target,
  });
  log.info(`job ${jobId}: savepoint ${checkpointId} stored at ${path}`, {
    name: "savepoint-completed",
    jobId,
    checkpointId,
    path,
  });
  return path;
}

/**
 * Discards (in the background, logging failures) the job-storage copies of
 * savepoints a later checkpoint replaced, and a claimed restored checkpoint.
 */
export function discardAfterCompleted(options: {
  readonly storage: CheckpointStorage;
  readonly jobId: string;
  readonly savepointCopies: readonly CheckpointId[];
  readonly claimed: RestorePoint | null;
}): void {
  const { storage, jobId, claimed } = options;
  for (const id of options.savepointCopies) {
    storage.discard(jobId, id).catch((e) =>
      log.warn(`job ${jobId}: cannot discard the job-storage copy of savepoint ${id}: ${e}`)
    );
  }
  if (claimed === null) return;
  log.info(
    `job ${jobId}: discarding claimed checkpoint ${claimed.checkpointId} of job ` +
      `${claimed.jobId} (restore mode CLAIM)`,
  );
  storage.discard(claimed.jobId, claimed.checkpointId).catch((e) =>
    log.warn(`job ${jobId}: cannot discard claimed checkpoint ${claimed.checkpointId}: ${e}`)
  );
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
