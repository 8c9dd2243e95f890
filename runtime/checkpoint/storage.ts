/**
 * Checkpoint storage: where snapshotted state and checkpoint metadata live
 * (Flink's `CheckpointStorage`). This module is the face: the
 * {@linkcode CheckpointStorage} interface, and re-exports of the rules every
 * storage shares (`storage_rules.ts`: errors, names, paths, listing), the
 * metadata format (`metadata.ts`) and the local-directory implementation
 * (`local_directory_storage.ts`). The cluster's NATS Object Store
 * implementation is `object_store_storage.ts`.
 *
 * ## Layout (relative to the job's directory or object-name prefix)
 *
 * ```text
 * chk-<id>/<name>       private state blobs of checkpoint <id>, one per writeState
 * chk-<id>/_metadata    JSON CheckpointMetadata: the commit point
 * shared/<name>         shared state blobs, one per writeShared, referred to by
 *                       any number of checkpoints (incremental state, changelogs)
 * ```
 *
 * ## Invariants
 *
 * - Every blob is written atomically: a reader sees the old content or the
 *   new, never a torn one.
 * - A checkpoint is complete if and only if its `_metadata` exists. It is
 *   written last (after every state blob is durable), atomically, never
 *   overwritten, and deleted first by `discard`, so a crash at any point
 *   leaves either a complete checkpoint or one without `_metadata` that
 *   {@linkcode CheckpointStorage.latestCompleted} ignores.
 * - A `_metadata` that exists but does not parse (or names another
 *   checkpoint) cannot come from a crash: it is corruption, and every read
 *   reports it as `CORRUPT` instead of skipping it. Skipping it would make a
 *   restore fall back to an older checkpoint whose successors' transactions
 *   two-phase-commit sinks may already have committed: records committed
 *   twice.
 * - `discard` deletes a checkpoint's private blobs only. A shared blob is
 *   deleted by `deleteShared` when the shared state registry
 *   (`shared_state_registry.ts`) says no retained checkpoint or savepoint
 *   refers to it, or with the whole job by `discardJob`. Deleting is
 *   idempotent, so retention can repeat a deletion a crash interrupted.
 * - State handles are relative to the job's directory, so a job directory
 *   can be moved as a whole.
 *
 * ```ts
 * import { LocalDirectoryCheckpointStorage } from "./storage.ts";
 * const dir = await Deno.makeTempDir();
 * const storage = new LocalDirectoryCheckpointStorage({ directory: dir });
 * const handle = await storage.writeState("job-1", 1, "src#0", new Uint8Array([1, 2]));
 * console.assert(handle.path === "chk-1/src#0" && handle.bytes === 2);
 * console.assert((await storage.latestCompleted("job-1")) === undefined);
 * await Deno.remove(dir, { recursive: true });
 * ```
 *
 * @module
 */

import type { CheckpointId, CheckpointMetadata, StoredBlob } from "./types.ts";

export { parseCheckpointMetadata } from "./metadata.ts";
export {
  checkCheckpointId,
  checkName,
  CHECKPOINT_DIR,
  CheckpointStorageError,
  type CheckpointStorageErrorCode,
  type CheckpointStorageErrorOptions,
  type CompletedCheckpointSource,
  findCompleted,
  findLatestCompleted,
  isValidName,
  MAX_NAME_BYTES,
  METADATA,
  parseStatePath,
  SHARED_DIR,
  sharedNameOf,
  type StatePath,
} from "./storage_rules.ts";
export {
  LocalDirectoryCheckpointStorage,
  type LocalDirectoryCheckpointStorageOptions,
} from "./local_directory_storage.ts";

/**
 * Durable storage of checkpoints, shared by the coordinator (metadata,
 * retention) and the subtasks (state blobs). Implementations: a local
 * directory (`local_directory_storage.ts`) and, for clusters, a NATS Object
 * Store bucket (`object_store_storage.ts`); both must keep
 * the invariants in this module's docs.
 */
export interface CheckpointStorage {
  /**
   * Writes one state blob of a checkpoint, atomically; overwrites a blob of
   * the same name.
   *
   * @param jobId the job.
   * @param checkpointId the checkpoint.
   * @param name the blob's name within the checkpoint (unique per subtask and
   *   attempt, e.g. `"map-1#0-a2"`); no `/`, `\`, leading `.`, nor `_metadata`.
   * @param data the bytes.
   * @returns the handle to put in the subtask's ack.
   * @throws {RangeError} for an invalid job id, checkpoint id or name.
   * @throws {CheckpointStorageError} `IO` when writing fails.
   */
  writeState(
    jobId: string,
    checkpointId: CheckpointId,
    name: string,
    data: Uint8Array,
  ): Promise<StoredBlob>;
  /**
   * Reads a state blob back: a private one (`chk-<n>/<name>`) or a shared
   * one (`shared/<name>`).
   *
   * @throws {CheckpointStorageError} `NOT_FOUND`, `CORRUPT` (size differs from
   *   `handle.bytes`) or `IO`; `checkpointId` is set for a private blob only.
   * @throws {RangeError} for an invalid job id or a handle path that is
   *   neither form (escapes the job directory, names `_metadata`).
   */
  readState(jobId: string, handle: StoredBlob): Promise<Uint8Array>;
  /**
   * Writes a blob into the job's shared namespace, atomically; overwrites a
   * blob of the same name. Shared blobs outlive the checkpoint that wrote
   * them: `discard` leaves them, `deleteShared` (driven by the shared state
   * registry) and `discardJob` remove them.
   *
   * @param jobId the job.
   * @param name the blob's name, unique within the job (the writer includes
   *   the subtask, attempt and a sequence); no `/`, `\`, leading `.`, nor
   *   `_metadata`.
   * @param data the bytes.
   * @returns `{ path: "shared/<name>", bytes }`, readable with `readState`.
   * @throws {RangeError} for an invalid job id or name.
   * @throws {CheckpointStorageError} `IO` when writing fails.
   */
  writeShared(jobId: string, name: string, data: Uint8Array): Promise<StoredBlob>;
  /**
   * Deletes shared blobs. Idempotent: a blob already absent (deleted before
   * a crash, or never written) is not an error, so retention can repeat a
   * deletion it is unsure of.
   *
   * @param jobId the job.
   * @param paths the blobs' paths, each `shared/<name>` (as the shared state
   *   registry returns them); all are checked before any is deleted.
   * @throws {RangeError} for an invalid job id, or a path that is not
   *   `shared/<name>` (naming it); nothing is deleted then.
   * @throws {CheckpointStorageError} `IO` when a deletion fails (the blobs
   *   before it may be deleted).
   */
  deleteShared(jobId: string, paths: readonly string[]): Promise<void>;
  /**
   * The paths of the job's shared blobs, `shared/<name>`, sorted: exactly
   * the blobs `readState` can read (in-flight writes and blobs being
   * deleted excluded). For leak checks and for sweeping blobs no retained
   * checkpoint refers to (`SharedStateRegistry.unreferenced`).
   *
   * @throws {RangeError} for an invalid job id.
   * @throws {CheckpointStorageError} `IO`.
   */
  listShared(jobId: string): Promise<string[]>;
  /**
   * Writes a checkpoint's metadata atomically: the commit point. Call it only
   * after every state blob it references was written.
   *
   * @returns the checkpoint's location (an external pointer to show and to restore from).
   * @throws {CheckpointStorageError} `ALREADY_EXISTS` when the checkpoint is already complete, `IO`.
   * @throws {TypeError} when `meta` is malformed.
   */
  writeMetadata(meta: CheckpointMetadata): Promise<string>;
  /**
   * Reads a complete checkpoint's metadata.
   *
   * @throws {CheckpointStorageError} `NOT_FOUND` (no `_metadata`), `CORRUPT`, `IO`.
   */
  readMetadata(jobId: string, checkpointId: CheckpointId): Promise<CheckpointMetadata>;
  /**
   * The complete checkpoint (or savepoint) with the highest id, or `undefined`.
   * Directories without `_metadata` (incomplete checkpoints: aborted, or torn
   * by a crash) are skipped; a `_metadata` that exists but cannot be parsed
   * is never skipped (see the module's invariants).
   *
   * @throws {CheckpointStorageError} `CORRUPT`, naming the path, when the
   *   `_metadata` of a checkpoint newer than every complete one exists but is
   *   corrupt; `IO` when the job directory or a `_metadata` cannot be read.
   */
  latestCompleted(jobId: string): Promise<CheckpointMetadata | undefined>;
  /**
   * Ids of the complete checkpoints and savepoints, ascending: those whose
   * `_metadata` exists, as {@linkcode CheckpointStorage.latestCompleted}
   * decides. Each `_metadata` is read and checked.
   *
   * @throws {CheckpointStorageError} `CORRUPT`, naming the path, when any
   *   `_metadata` exists but is corrupt; `IO`.
   */
  listCompleted(jobId: string): Promise<CheckpointId[]>;
  /**
   * Ids of every checkpoint directory, complete or not, ascending: the
   * incomplete ones are garbage from aborted checkpoints or crashes.
   *
   * @throws {CheckpointStorageError} `IO`.
   */
  listAll(jobId: string): Promise<CheckpointId[]>;
  /**
   * Deletes a checkpoint: its `_metadata` first, then its private state
   * (`chk-<id>/`). Shared blobs it wrote or referred to stay (see
   * `deleteShared`). Idempotent.
   *
   * @throws {CheckpointStorageError} `IO`.
   */
  discard(jobId: string, checkpointId: CheckpointId): Promise<void>;
  /**
   * Deletes every checkpoint and savepoint of a job, every `_metadata`
   * first, and its shared blobs. Idempotent.
   *
   * @throws {CheckpointStorageError} `IO`.
   */
  discardJob(jobId: string): Promise<void>;
  /**
   * Where the checkpoints of a job live, for messages and logs: a directory
   * or a URL such as `nats-object-store://<bucket>/<jobId>/`.
   *
   * @throws {RangeError} for an invalid job id.
   */
  jobLocation(jobId: string): string;
}
