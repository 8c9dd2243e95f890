/**
 * The shared state registry: reference counts of the blobs in a job's shared
 * namespace (`shared/<name>` in checkpoint storage), deciding which of them
 * retention may delete (DESIGN §13; Flink's `SharedStateRegistryImpl`).
 *
 * Incremental checkpoints and changelog segments refer to shared blobs that
 * earlier checkpoints wrote. A shared blob may be deleted only when no
 * checkpoint that can still be restored, nor one still being taken, refers
 * to it. This module decides that and performs no I/O: the coordinator feeds
 * it the handles of every acknowledgement and tells it when a checkpoint
 * completes, is aborted or is discarded by retention; it deletes the paths
 * the registry returns (`CheckpointStorage.deleteShared`).
 *
 * ```ts
 * import { SharedStateRegistry } from "./shared_state_registry.ts";
 *
 * const registry = new SharedStateRegistry();
 * registry.register(1, [{ path: "shared/a", shared: true }, { path: "chk-1/x", shared: false }]);
 * registry.complete(1);
 * registry.begin(2);
 * registry.register(2, [{ path: "shared/a", shared: true }, { path: "shared/b", shared: true }]);
 * registry.abort(2); // shared/b is held: a later checkpoint may reuse it
 * registry.begin(3); // triggered after 2 was aborted
 * registry.register(3, [{ path: "shared/a", shared: true }, { path: "shared/c", shared: true }]);
 * console.assert(registry.complete(3).join() === "shared/b"); // 3 did not reuse it
 * console.assert(registry.discard(1).length === 0); // checkpoint 3 still refers to shared/a
 * console.assert(registry.discard(3).join() === "shared/a,shared/c");
 * ```
 *
 * ## Design
 *
 * - **A reference is a (checkpoint, path) pair.** A checkpoint refers to a
 *   path or it does not: the same path listed twice (two subtasks, a
 *   duplicated ack) counts once. A path's reference count is the number of
 *   registered checkpoints that refer to it.
 * - **Pending references count.** A checkpoint registers its handles as its
 *   acknowledgements arrive, before it completes (Flink registers at
 *   completion; counting earlier protects a blob that a checkpoint in flight
 *   refers to from the retention of an older one). A pending checkpoint is
 *   later either completed ({@linkcode SharedStateRegistry.complete}) or
 *   aborted ({@linkcode SharedStateRegistry.abort}).
 * - **Aborted checkpoints are held, not released** (Flink's "registered but
 *   not yet confirmed" shared state). A backend may reuse a blob as soon as
 *   it wrote it (the changelog backend's segments and materializations), so
 *   the checkpoints after an aborted one, whose acks may not have arrived
 *   yet, can refer to what it wrote. Its references are therefore kept
 *   until a checkpoint **triggered after the abort** completes
 *   ({@linkcode SharedStateRegistry.begin} records the trigger): a subtask
 *   acknowledges only after its writes ended, so every blob of the aborted
 *   checkpoint that was registered existed before that later checkpoint's
 *   barrier reached the subtask, and that later snapshot, now registered,
 *   counts whatever it still reuses. A checkpoint triggered before the
 *   abort proves nothing: its snapshot may predate a write the subtask
 *   reuses in its next one. `complete(m)` returns what only the released
 *   checkpoints referred to.
 *   {@linkcode SharedStateRegistry.releaseAborted} releases those of a
 *   failed attempt once its subtasks were cancelled (bounded by the last id
 *   that attempt triggered: the next attempt may already take checkpoints),
 *   or all of them when the job ended.
 * - **Completed checkpoints** are released by retention
 *   ({@linkcode SharedStateRegistry.discard}): at once when no checkpoint is
 *   in flight or held aborted, else held like an aborted one until a
 *   checkpoint triggered after the discard completes (a snapshot in flight
 *   may refer to their blobs before its acknowledgement arrives), or
 *   {@linkcode SharedStateRegistry.releaseDiscarded} when the job ended.
 *   Savepoints refer to no shared
 *   blob (the snapshot contract), and retention never discards them; if one
 *   is registered with shared handles anyway, its references protect them
 *   like any checkpoint's until it is discarded.
 * - **Owned or not.** A checkpoint restored in Flink's `NO_CLAIM` mode
 *   belongs to the user, not to this job: rebuilt with `owned: false`, every
 *   shared path it refers to is pinned and never returned for deletion, even
 *   after its last reference is released.
 * - **Private handles** (`chk-<n>/<name>`) are not counted: they belong to
 *   their checkpoint alone and go with `CheckpointStorage.discard`. They are
 *   only checked for form.
 *
 * ## Invariants
 *
 * - A path is returned for deletion only when no registered checkpoint
 *   (pending, completed, or aborted or discarded and held) refers to it, and only if no
 *   unowned checkpoint ever referred to it.
 * - Each path is returned at most once per registration: after it was
 *   returned it is unknown to the registry until a checkpoint registers it
 *   again (which would be the writer's bug: see below).
 * - Once every checkpoint is released, every owned path ever registered was
 *   returned exactly once (the property tests check both).
 *
 * ## What the registry cannot see
 *
 * - A shared blob written by a checkpoint that was aborted **before its
 *   acknowledgement arrived** was never registered; nor was one whose
 *   deletion a crash interrupted. {@linkcode SharedStateRegistry.unreferenced}
 *   finds such leftovers in a storage listing; run it only when no
 *   checkpoint is in flight (at start-up, before the first trigger), or it
 *   would name blobs whose acknowledgement is still on its way.
 * - A participant must refer only to shared blobs it wrote for this
 *   checkpoint, or that a checkpoint it was notified complete refers to and
 *   that is still retained (Flink's rule for placeholder handles). The
 *   registry cannot tell a blob already deleted from one never seen, so a
 *   reference to a blob it returned earlier is taken as new.
 *
 * @module
 */

import type { CheckpointId, CheckpointMetadata } from "./types.ts";
import { isValidName } from "./storage_rules.ts";

/** Prefix of every path in a job's shared namespace: `shared/<name>`. */
const SHARED_PREFIX = "shared/";

/**
 * What the registry reads of a state handle: its path and whether it is
 * shared. The snapshot contract's `StateHandle` has this shape.
 */
export interface SharedStateReference {
  /** `shared/<name>` when `shared`, else `chk-<n>/<name>`. */
  readonly path: string;
  /** Whether the blob is in the job's shared namespace. */
  readonly shared: boolean;
}

/**
 * Where a registered checkpoint stands: being taken, complete (restorable),
 * aborted and held until a later checkpoint completes, or discarded by
 * retention while a checkpoint was in flight and held the same way (see
 * {@linkcode SharedStateRegistry.discard}).
 */
export type RegisteredCheckpointStatus = "pending" | "completed" | "aborted" | "discarded";

/**
 * A completed checkpoint to rebuild the registry from, as its metadata lists
 * it (see {@linkcode SharedStateRegistry.rebuild}).
 */
export interface RetainedCheckpoint {
  /** The checkpoint (or savepoint) id. */
  readonly checkpointId: CheckpointId;
  /** Every handle of every subtask of it. */
  readonly handles: readonly SharedStateReference[];
  /**
   * `false` for a checkpoint this job does not own (restored in `NO_CLAIM`
   * mode, or a savepoint of another job): the shared paths it refers to are
   * never returned for deletion. Default `true`.
   */
  readonly owned?: boolean;
}

/**
 * A completed checkpoint's metadata as {@linkcode SharedStateRegistry.rebuild}
 * takes it: every handle of every subtask of every vertex.
 *
 * @param meta the checkpoint's (or savepoint's) metadata, as read back from storage.
 * @param owned `false` for a checkpoint restored in `NO_CLAIM` mode (see
 *   {@linkcode RetainedCheckpoint.owned}). Default `true`.
 * @returns the retained checkpoint.
 *
 * @example
 * ```ts ignore
 * const ids = await storage.listCompleted(jobId);
 * const metas = await Promise.all(ids.map((id) => storage.readMetadata(jobId, id)));
 * const registry = SharedStateRegistry.rebuild(metas.map((m) => retainedCheckpointOf(m)));
 * ```
 */
export function retainedCheckpointOf(meta: CheckpointMetadata, owned = true): RetainedCheckpoint {
  const handles = meta.vertices.flatMap((v) => v.subtasks.flatMap((s) => s.handles));
  return { checkpointId: meta.checkpointId, handles, owned };
}

interface Registration {
  status: RegisteredCheckpointStatus;
  readonly paths: Set<string>;
  /** The event clock when it was triggered ({@linkcode SharedStateRegistry.begin}); absent: unknown. */
  begunAt?: number;
  /** The event clock when it was aborted, or discarded and held. */
  heldAt?: number;
}

/**
 * Reference counts of shared blobs by path, per registered checkpoint
 * (Flink's `SharedStateRegistryImpl`, counting references instead of
 * tracking the last checkpoint that used each entry). Pure: performs no
 * I/O, and every method returns synchronously.
 *
 * Paths returned for deletion are sorted, so the caller's deletes and logs
 * are deterministic.
 */
export class SharedStateRegistry {
  readonly #checkpoints = new Map<CheckpointId, Registration>();
  /** Path → number of registered checkpoints that refer to it (≥ 1). */
  readonly #counts = new Map<string, number>();
  /** Paths an unowned checkpoint referred to: never returned. */
  readonly #pinned = new Set<string>();
  /** Orders `begin` and `abort` events. */
  #clock = 0;

  /**
   * A registry holding the completed checkpoints a job retains, e.g. read
   * back from storage after the coordinator restarted or when a job resumes
   * (Flink's `registerAllAfterRestored`).
   *
   * @param retained the retained checkpoints, each with every handle of its metadata.
   * @returns the registry, every checkpoint `completed`.
   * @throws {RangeError} for a duplicate or invalid checkpoint id, or a malformed handle.
   */
  static rebuild(retained: readonly RetainedCheckpoint[]): SharedStateRegistry {
    const registry = new SharedStateRegistry();
    for (const [i, checkpoint] of retained.entries()) {
      const { checkpointId } = checkpoint;
      if (registry.#checkpoints.has(checkpointId)) {
        throw new RangeError(
          `Cannot rebuild the shared state registry: checkpoint ${checkpointId} is listed twice (again at index ${i})`,
        );
      }
      registry.register(checkpointId, checkpoint.handles);
      registry.complete(checkpointId);
      if (checkpoint.owned === false) {
        for (const path of registry.#checkpoints.get(checkpointId)!.paths) {
          registry.#pinned.add(path);
        }
      }
    }
    return registry;
  }

  /**
   * Records that a checkpoint was triggered: it becomes `pending` with no
   * references yet. Only a checkpoint whose trigger was recorded releases
   * aborted checkpoints when it completes, and only those aborted before
   * it was triggered (see the module docs). Beginning a pending checkpoint
   * again does nothing.
   *
   * @param checkpointId the triggered checkpoint.
   * @throws {RangeError} for an invalid checkpoint id.
   * @throws {Error} when the checkpoint is already completed or aborted.
   */
  begin(checkpointId: CheckpointId): void {
    checkId(checkpointId, "begin");
    const registration = this.#checkpoints.get(checkpointId);
    if (registration === undefined) {
      this.#checkpoints.set(checkpointId, {
        status: "pending",
        paths: new Set(),
        begunAt: ++this.#clock,
      });
    } else if (registration.status !== "pending") {
      throw new Error(
        `Cannot begin checkpoint ${checkpointId}: it is already ${registration.status}`,
      );
    } else {
      registration.begunAt ??= ++this.#clock;
    }
  }

  /**
   * Records that a checkpoint in flight refers to `handles` (one subtask's
   * acknowledgement; call once per ack). The checkpoint becomes `pending` if
   * it was unknown. Shared handles are counted; private ones only checked.
   *
   * @param checkpointId the checkpoint the handles belong to.
   * @param handles the handles of one acknowledgement (any may repeat).
   * @throws {RangeError} for an invalid checkpoint id, or a handle whose path
   *   does not match its `shared` flag (`shared/<name>` or `chk-<n>/<name>`),
   *   naming the handle; nothing is registered then.
   * @throws {Error} when the checkpoint is already completed (its references are fixed).
   */
  register(checkpointId: CheckpointId, handles: readonly SharedStateReference[]): void {
    checkId(checkpointId, "register");
    const shared = sharedPathsOf(checkpointId, handles);
    let registration = this.#checkpoints.get(checkpointId);
    if (registration !== undefined && registration.status !== "pending") {
      throw new Error(
        `Cannot register state handles of checkpoint ${checkpointId}: it is already ${registration.status}, so its references are fixed`,
      );
    }
    if (registration === undefined) {
      registration = { status: "pending", paths: new Set() };
      this.#checkpoints.set(checkpointId, registration);
    }
    for (const path of shared) {
      if (registration.paths.has(path)) continue;
      registration.paths.add(path);
      this.#counts.set(path, (this.#counts.get(path) ?? 0) + 1);
    }
  }

  /**
   * Marks a checkpoint completed (its metadata was written), and releases
   * every aborted checkpoint that was aborted before this one was triggered
   * ({@linkcode SharedStateRegistry.begin}; see the module docs): none when
   * its trigger was not recorded. A checkpoint none of whose acks had
   * handles may be completed without a `register`. Completing a completed
   * checkpoint again does nothing.
   *
   * @param checkpointId the checkpoint.
   * @returns the shared paths only the released aborted checkpoints referred
   *   to, to delete, sorted.
   * @throws {RangeError} for an invalid checkpoint id.
   * @throws {Error} when the checkpoint was aborted.
   */
  complete(checkpointId: CheckpointId): string[] {
    checkId(checkpointId, "complete");
    const registration = this.#checkpoints.get(checkpointId);
    if (registration === undefined) {
      this.#checkpoints.set(checkpointId, { status: "completed", paths: new Set() });
      return [];
    }
    if (registration.status === "aborted") {
      throw new Error(`Cannot complete checkpoint ${checkpointId}: it was aborted`);
    }
    const wasPending = registration.status === "pending";
    registration.status = "completed";
    const begunAt = registration.begunAt;
    if (!wasPending || begunAt === undefined) return [];
    return this.#releaseHeldWhere((r) => r.heldAt! < begunAt);
  }

  /**
   * Aborts a pending checkpoint that will never complete (declined, timed
   * out, subsumed, or its attempt failed). Its references are held until a
   * later checkpoint completes ({@linkcode SharedStateRegistry.complete}) or
   * {@linkcode SharedStateRegistry.releaseAborted} is called, because a
   * later checkpoint may reuse the blobs it wrote. A checkpoint never
   * registered is recorded as aborted with no references; aborting an
   * aborted checkpoint again does nothing.
   *
   * @param checkpointId the aborted checkpoint.
   * @throws {RangeError} for an invalid checkpoint id.
   * @throws {Error} when the checkpoint is completed: use {@linkcode SharedStateRegistry.discard}.
   */
  abort(checkpointId: CheckpointId): void {
    checkId(checkpointId, "abort");
    const registration = this.#checkpoints.get(checkpointId);
    if (registration?.status === "completed" || registration?.status === "discarded") {
      throw new Error(
        `Cannot abort checkpoint ${checkpointId}: it is ${registration.status} (retention releases it with discard)`,
      );
    }
    if (registration === undefined) {
      this.#checkpoints.set(checkpointId, {
        status: "aborted",
        paths: new Set(),
        heldAt: ++this.#clock,
      });
    } else if (registration.status === "pending") {
      registration.status = "aborted";
      registration.heldAt = ++this.#clock;
    }
  }

  /**
   * Releases the aborted checkpoints with an id up to `upTo`. Call it only
   * for checkpoints whose writers are all gone: after a failover cancelled
   * every subtask of the failed attempt, with `upTo` the last id that
   * attempt triggered (the next attempt restores from a completed
   * checkpoint, whose references are registered, and may already take
   * checkpoints of its own, which this leaves alone); or with no bound when
   * the job ended.
   *
   * @param upTo the largest checkpoint id to release. Default: all.
   * @returns the shared paths only the aborted checkpoints referred to, to delete, sorted.
   */
  releaseAborted(upTo: number = Number.POSITIVE_INFINITY): string[] {
    return this.#releaseHeldWhere((r, id) => r.status === "aborted" && id <= upTo);
  }

  /**
   * Releases every discarded checkpoint still held (see
   * {@linkcode SharedStateRegistry.discard}). Call it only when nothing can
   * refer to their blobs any more: the job ended. A failover does not
   * release them: the next attempt may already run on a chain they hold.
   *
   * @returns the shared paths only they referred to, to delete, sorted.
   */
  releaseDiscarded(): string[] {
    return this.#releaseHeldWhere((r) => r.status === "discarded");
  }

  /**
   * Releases a completed checkpoint that retention (or the user) discards:
   * the shared blobs no other registered checkpoint refers to are returned
   * for deletion. While a checkpoint is pending or an aborted one is held,
   * the discarded checkpoint is held instead (status `discarded`, nothing
   * returned) until a checkpoint triggered after the discard completes, or
   * {@linkcode SharedStateRegistry.releaseDiscarded}: a snapshot taken
   * meanwhile may refer to its blobs before its acknowledgement registers
   * them (the changelog backend appends to its old chain while a
   * materialization is written, and keeps doing so if that one is not
   * adopted; found by chaos_incremental_test: the final checkpoint, taken
   * beside a materializing periodic one, lost the old chain when the
   * periodic one's completion discarded its predecessor). Without a
   * checkpoint in flight or held, every subtask's current chain is
   * referred to by its latest snapshot's checkpoint, which is registered,
   * so the release is immediate. An unknown checkpoint (never registered,
   * or already released) or one already held returns `[]`, so a retried
   * retention is harmless.
   *
   * @param checkpointId the discarded checkpoint.
   * @returns the shared paths to delete (`shared/<name>`), sorted.
   * @throws {RangeError} for an invalid checkpoint id.
   * @throws {Error} when the checkpoint is pending or aborted (see
   *   {@linkcode SharedStateRegistry.abort}).
   */
  discard(checkpointId: CheckpointId): string[] {
    checkId(checkpointId, "discard");
    const registration = this.#checkpoints.get(checkpointId);
    if (registration?.status === "discarded") return [];
    if (registration !== undefined && registration.status !== "completed") {
      throw new Error(
        `Cannot discard checkpoint ${checkpointId}: it is ${registration.status}, not completed (an aborted checkpoint is released by a later completion or releaseAborted)`,
      );
    }
    if (registration !== undefined && this.#inFlightOrHeld()) {
      registration.status = "discarded";
      registration.heldAt = ++this.#clock;
      return [];
    }
    return this.#release([checkpointId]);
  }

  /** Whether a checkpoint is pending, or aborted and still held. */
  #inFlightOrHeld(): boolean {
    for (const r of this.#checkpoints.values()) {
      if (r.status === "pending" || r.status === "aborted") return true;
    }
    return false;
  }

  /**
   * The status of a registered checkpoint, or `undefined` when it is not
   * registered (never, or released).
   *
   * @param checkpointId the checkpoint.
   * @returns `"pending"`, `"completed"`, `"aborted"` or `undefined`.
   */
  statusOf(checkpointId: CheckpointId): RegisteredCheckpointStatus | undefined {
    return this.#checkpoints.get(checkpointId)?.status;
  }

  /**
   * How many registered checkpoints refer to a shared path.
   *
   * @param path a shared path, `shared/<name>`.
   * @returns the count; `0` when no registered checkpoint refers to it.
   */
  referenceCount(path: string): number {
    return this.#counts.get(path) ?? 0;
  }

  /**
   * The registered checkpoints, ascending.
   *
   * @returns their ids.
   */
  checkpoints(): CheckpointId[] {
    return [...this.#checkpoints.keys()].sort((a, b) => a - b);
  }

  /**
   * Every shared path some registered checkpoint refers to, sorted.
   *
   * @returns the paths.
   */
  referencedPaths(): string[] {
    return [...this.#counts.keys()].sort();
  }

  /**
   * The paths of a storage listing (`CheckpointStorage.listShared`) that no
   * registered checkpoint refers to and that are not pinned: leftovers of
   * checkpoints aborted before their acknowledgement arrived, or of a crash
   * between a release and its deletion. Safe to delete only while no
   * checkpoint is in flight (see the module docs).
   *
   * @param listed shared paths found in storage (`shared/<name>`).
   * @returns the unreferenced ones, sorted, each once.
   */
  unreferenced(listed: Iterable<string>): string[] {
    const out = new Set<string>();
    for (const path of listed) {
      if (!this.#counts.has(path) && !this.#pinned.has(path)) out.add(path);
    }
    return [...out].sort();
  }

  /** Releases the held (aborted or discarded) checkpoints that satisfy `which`. */
  #releaseHeldWhere(which: (r: Registration, id: CheckpointId) => boolean): string[] {
    const ids: CheckpointId[] = [];
    for (const [id, r] of this.#checkpoints) {
      if ((r.status === "aborted" || r.status === "discarded") && which(r, id)) ids.push(id);
    }
    return this.#release(ids);
  }

  /** Drops checkpoints' references; the paths reaching zero that are not pinned, sorted. */
  #release(checkpointIds: readonly CheckpointId[]): string[] {
    const unreferenced: string[] = [];
    for (const checkpointId of checkpointIds) {
      const registration = this.#checkpoints.get(checkpointId);
      if (registration === undefined) continue;
      this.#checkpoints.delete(checkpointId);
      this.#releasePaths(registration.paths, unreferenced);
    }
    return unreferenced.sort();
  }

  #releasePaths(paths: ReadonlySet<string>, unreferenced: string[]): void {
    for (const path of paths) {
      const count = this.#counts.get(path)! - 1;
      if (count > 0) {
        this.#counts.set(path, count);
        continue;
      }
      this.#counts.delete(path);
      if (this.#pinned.has(path)) continue;
      unreferenced.push(path);
    }
  }
}

function checkId(checkpointId: CheckpointId, operation: string): void {
  if (!Number.isSafeInteger(checkpointId) || checkpointId < 1) {
    throw new RangeError(
      `Shared state registry: cannot ${operation}: 'checkpointId' must be a positive integer: current value is ${checkpointId}`,
    );
  }
}

/** The shared paths of a handle list, each checked against its flag; throws before anything is counted. */
function sharedPathsOf(
  checkpointId: CheckpointId,
  handles: readonly SharedStateReference[],
): string[] {
  const out: string[] = [];
  for (const [i, handle] of handles.entries()) {
    const path = handle?.path;
    const isShared = typeof path === "string" && path.startsWith(SHARED_PREFIX) &&
      isValidName(path.slice(SHARED_PREFIX.length));
    const isPrivate = typeof path === "string" && /^chk-[1-9][0-9]*\/[^/]+$/.test(path) &&
      isValidName(path.slice(path.indexOf("/") + 1));
    if (handle?.shared === true ? !isShared : handle?.shared === false ? !isPrivate : true) {
      throw new RangeError(
        `Cannot register state handles of checkpoint ${checkpointId}: handles[${i}] must have ` +
          `'shared: true' and a path "shared/<name>", or 'shared: false' and a path "chk-<n>/<name>": ` +
          `current value is ${JSON.stringify(handle)}`,
      );
    }
    if (handle.shared) out.push(path!);
  }
  return out;
}
