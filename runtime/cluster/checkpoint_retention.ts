/**
 * The coordinator's retention of checkpoint state with shared blobs
 * (DESIGN §13; Flink's `CompletedCheckpointStore` subsumption with its
 * `SharedStateRegistry`): the I/O around the pure
 * {@linkcode SharedStateRegistry}.
 *
 * - Every accepted acknowledgement registers its handles, so a shared blob
 *   a checkpoint in flight refers to is protected from the retention of an
 *   older one.
 * - When a checkpoint's metadata is written it is completed; checkpoints
 *   the tracker's retention drops are then discarded: their private folder
 *   first (`_metadata` first, so a crash leaves an incomplete checkpoint,
 *   never a complete one missing blobs), then the shared blobs whose count
 *   reached zero; while a checkpoint is in flight (the final one beside a
 *   periodic one) the registry holds them until a checkpoint triggered
 *   after the discard completes, or the job ends
 *   (`SharedStateRegistry.discard`).
 * - An aborted checkpoint's folder is discarded at once; the shared blobs
 *   only it wrote are deleted when a checkpoint triggered after the abort
 *   completes, or when a failover cancelled every subtask of the attempt
 *   that wrote them (a later checkpoint may reuse them until then). Subtasks never delete shared blobs themselves;
 *   those of a checkpoint aborted before any ack registered them are swept
 *   (`SharedStateRegistry.unreferenced` over a listing) when the job ends —
 *   a simplification: until then, over restarts, they stay as garbage.
 * - Savepoints are never discarded by retention (the tracker retains
 *   checkpoints only) and refer to no shared blob.
 * - A coordinator that resumes the job from one of its own checkpoints
 *   rebuilds the registry from the metadata of every checkpoint it retains
 *   at start ({@linkcode retainedAtStart}): the restored one and, for a new
 *   leader (high availability), every older completed checkpoint the old
 *   leader left in storage (Flink's `CompletedCheckpointStore` recovery);
 *   the checkpoint coordinator then discards those beyond the retained
 *   number at once, so no retained checkpoint refers to a deleted shared
 *   blob and none of the old leader's is left behind. A checkpoint of
 *   another job is not registered: its shared blobs live in that job's
 *   namespace and belong to it (Flink's `NO_CLAIM`), so this job never
 *   deletes them.
 *
 * A retained checkpoint whose metadata cannot be read at start (three
 * tries) leaves the registry without its blobs: the end-of-job sweep is
 * then off, so nothing it uses is deleted as unreferenced (garbage, never a
 * loss).
 *
 * Every operation runs in call order on one queue (the rebuild first), and
 * reads only what the operations before it recorded: a discard asked for
 * after a registration was queued is decided after that registration;
 * deletes that fail are logged and left behind (a leftover blob is
 * garbage, never a loss), and `SharedStateRegistry.unreferenced` can find
 * them later.
 *
 * @module
 */

import type { CheckpointStorage } from "../checkpoint/storage.ts";
import { retainedCheckpointOf, SharedStateRegistry } from "../checkpoint/shared_state_registry.ts";
import type { CheckpointId, SubtaskAck } from "../checkpoint/types.ts";
import type { RestorePoint } from "../task/messages.ts";
import { logger } from "../log.ts";

const log = logger("coordinator");

/** Options of {@linkcode CheckpointRetention}. */
export interface CheckpointRetentionOptions {
  /** The job whose checkpoints are retained. */
  readonly jobId: string;
  /** Its checkpoint storage. */
  readonly storage: Pick<
    CheckpointStorage,
    "discard" | "deleteShared" | "listShared" | "readMetadata"
  >;
  /**
   * The completed checkpoints of this job the tracker retains at start (a
   * resume of the job's own checkpoint, with the older ones a new leader
   * recovered: {@linkcode retainedAtStart}), whose metadata rebuilds the
   * registry; empty for a fresh start or another job's checkpoint.
   */
  readonly retained: readonly CheckpointId[];
}

/** One job's retention (see the module docs). */
export class CheckpointRetention {
  readonly #o: CheckpointRetentionOptions;
  #registry = new SharedStateRegistry();
  #queue: Promise<void>;
  /** Checkpoints whose metadata was written (never aborted afterwards). */
  readonly #written = new Set<CheckpointId>();
  /**
   * Completed checkpoints retention dropped whose private folder is not
   * deleted yet. Changed only by queued operations, so it holds exactly the
   * discards asked for before the running operation was queued.
   */
  readonly #toDiscard = new Set<CheckpointId>();
  /** The metadata of a retained checkpoint could not be read: the registry misses its blobs. */
  #registryPartial = false;

  /** Starts rebuilding the registry from `options.retained`'s metadata. */
  constructor(options: CheckpointRetentionOptions) {
    this.#o = options;
    this.#queue = options.retained.length === 0 ? Promise.resolve() : this.#rebuild();
  }

  /** Resolves when every operation queued so far, deletes included, has ended. Never rejects. */
  settled(): Promise<void> {
    return this.#queue;
  }

  /**
   * Checkpoint `checkpointId` was triggered: only aborts recorded before
   * this are released when it completes (see `SharedStateRegistry.begin`).
   */
  triggered(checkpointId: CheckpointId): void {
    this.#run(() => this.#registry.begin(checkpointId), "begin");
  }

  /** An acknowledgement the tracker accepted: its handles are referenced by its checkpoint. */
  acknowledged(ack: SubtaskAck): void {
    this.#run(() => this.#registry.register(ack.checkpointId, ack.handles), "register");
  }

  /**
   * Checkpoint `checkpointId`'s metadata was written (the commit point):
   * its references are fixed, whatever happens to the attempt; shared blobs
   * only checkpoints aborted before it was triggered referred to are
   * deleted.
   */
  written(checkpointId: CheckpointId): void {
    this.#written.add(checkpointId);
    this.#run(async () => {
      const released = this.#registry.complete(checkpointId);
      await this.#deleteShared(released, `aborted before checkpoint ${checkpointId} completed`);
      await this.#discardPending(); // retries discards that failed before
    }, "complete");
  }

  /**
   * Retention dropped completed checkpoints `ids`: each one's private folder
   * is discarded, then the shared blobs no retained checkpoint refers to
   * (held while a checkpoint is in flight: `SharedStateRegistry.discard`).
   * A checkpoint whose folder cannot be deleted (storage unreachable) stays
   * registered, so none of the shared blobs it refers to is deleted while its
   * metadata may still be there: the discard is retried at the next
   * completion and when the job ends (found by the chaos run with a NATS
   * outage and coordinator kills: a checkpoint left behind complete but
   * missing two shared blobs).
   */
  discard(ids: readonly CheckpointId[]): void {
    if (ids.length === 0) return;
    // Recorded by the queued operation, not now: an operation queued earlier
    // (a completion retrying failed discards) must not discard these before
    // the acknowledgements queued in between are registered, or a later
    // checkpoint's references to their shared blobs would not count yet
    // (found by changelog_state_backend_job_test under load: checkpoint 3,
    // appending to 2's materialization, lost it when 2 was discarded ahead
    // of 3's registration).
    this.#run(() => {
      for (const id of ids) this.#toDiscard.add(id);
      return this.#discardPending();
    }, "discard");
  }

  /** Discards the checkpoints retention dropped, in id order; those that fail wait for a retry. */
  async #discardPending(): Promise<void> {
    for (const id of [...this.#toDiscard].sort((a, b) => a - b)) {
      try {
        await this.#o.storage.discard(this.#o.jobId, id);
      } catch (error) {
        log.warn(
          `job ${this.#o.jobId}: cannot discard checkpoint ${id} (retried later; its shared ` +
            `blobs are kept meanwhile): ${error}`,
        );
        continue;
      }
      this.#toDiscard.delete(id);
      await this.#deleteShared(this.#registry.discard(id), `of discarded checkpoint ${id}`);
    }
  }

  /**
   * Checkpoint `checkpointId` was aborted: its folder goes now, its shared
   * blobs when nothing can reuse them. A checkpoint whose metadata was
   * written is not aborted: it is the one a failover restores.
   */
  aborted(checkpointId: CheckpointId): void {
    if (this.#written.has(checkpointId)) return;
    this.#run(async () => {
      this.#registry.abort(checkpointId);
      await this.#o.storage.discard(this.#o.jobId, checkpointId).catch(() => {});
    }, "abort");
  }

  /**
   * A failover aborted `ids` and every subtask of the failed attempt was
   * cancelled, every metadata write in flight settled: the ones not written
   * are aborted, and no aborted checkpoint up to `upTo` (the last id the
   * failed attempt triggered) can be reused any more, so the shared blobs
   * only they referred to go. Later ids belong to the next attempt, which
   * may be running by now and reuse what its aborted checkpoints wrote.
   *
   * @param upTo the last checkpoint id of the failed attempt. Default: all (the job ended).
   */
  failedOver(ids: readonly CheckpointId[], upTo: number = Number.POSITIVE_INFINITY): void {
    for (const id of ids) this.aborted(id);
    this.#run(
      () => this.#deleteShared(this.#registry.releaseAborted(upTo), "of aborted checkpoints"),
      "release",
    );
  }

  /**
   * The job finished: discards that failed are retried, and, nothing being
   * in flight, the shared blobs only aborted or discarded checkpoints
   * referred to go (retained checkpoints keep theirs).
   */
  ended(): void {
    this.#run(() => this.#discardPending(), "discard");
    this.failedOver([]);
    this.#run(
      () => this.#deleteShared(this.#registry.releaseDiscarded(), "of discarded checkpoints"),
      "release",
    );
    // Shared blobs no acknowledgement registered (written by a checkpoint
    // aborted before its ack, which subtasks leave for the registry to
    // judge): nothing can write or reuse one any more.
    this.#run(async () => {
      if (this.#registryPartial) return; // retained checkpoints' blobs are unknown
      const listed = await this.#o.storage.listShared(this.#o.jobId);
      await this.#deleteShared(
        this.#registry.unreferenced(listed),
        "that no checkpoint registered",
      );
    }, "sweep");
  }

  /** The registry, for tests and metrics: read it after {@linkcode settled}. */
  get registry(): SharedStateRegistry {
    return this.#registry;
  }

  #run(op: () => void | Promise<void>, what: string): void {
    this.#queue = this.#queue.then(op).catch((error) => {
      log.warn(`job ${this.#o.jobId}: checkpoint retention (${what}) failed: ${error}`);
    });
  }

  async #deleteShared(paths: readonly string[], what: string): Promise<void> {
    if (paths.length === 0) return;
    try {
      await this.#o.storage.deleteShared(this.#o.jobId, paths);
      log.debug(`job ${this.#o.jobId}: deleted ${paths.length} shared blobs ${what}`);
    } catch (error) {
      log.warn(
        `job ${this.#o.jobId}: cannot delete ${paths.length} shared blobs ${what} ` +
          `(left behind as garbage): ${error}`,
      );
    }
  }

  async #rebuild(): Promise<void> {
    const o = this.#o;
    try {
      const retained = [];
      for (const id of o.retained) {
        // A new leader reads several checkpoints while NATS may still be settling: retry a little.
        const meta = await retryRead(() => o.storage.readMetadata(o.jobId, id));
        retained.push(retainedCheckpointOf(meta));
      }
      this.#registry = SharedStateRegistry.rebuild(retained);
    } catch (error) {
      // Without the metadata nothing can tell which shared blobs the
      // retained checkpoints use: the end-of-job sweep of unregistered blobs
      // is off (it could delete theirs), so what they alone use stays as
      // garbage, never a loss. The restore itself reports the unreadable checkpoint.
      log.warn(
        `job ${o.jobId}: cannot rebuild the shared state registry from checkpoints ` +
          `${o.retained.join(", ")}: shared blobs no checkpoint of this run registers will ` +
          `not be swept: ${error}`,
      );
      this.#registryPartial = true;
      this.#registry = SharedStateRegistry.rebuild(
        o.retained.map((checkpointId) => ({ checkpointId, handles: [], owned: false })),
      );
    }
  }
}

/** Runs `read` up to 3 times, 250 ms apart; rejects with the last error. */
async function retryRead<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (attempt >= 3) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/**
 * The completed checkpoints of this job retained when it starts from
 * `restoreFrom`: none for a fresh start or another job's checkpoint (its
 * shared blobs belong to that job); else `restoreFrom` and the recovered
 * ones before it, ascending (later ones cannot exist: a new leader restores
 * the latest). Pure.
 */
export function retainedAtStart(
  jobId: string,
  restoreFrom: RestorePoint | null,
  recovered: readonly CheckpointId[] | undefined,
): CheckpointId[] {
  if (restoreFrom === null || restoreFrom.jobId !== jobId) return [];
  const id = restoreFrom.checkpointId;
  return [...new Set([...(recovered ?? []).filter((r) => r < id), id])].sort((a, b) => a - b);
}
