/**
 * The snapshot contract between a subtask's checkpointer and its state
 * participants (DESIGN §13; Flink's `SnapshotStrategy` / `SnapshotResources`
 * and `StateObject`s, with FLIP-158's shared changelog files).
 *
 * When checkpoint *n* reaches a subtask, its checkpointer
 * (`runtime/task/subtask_checkpointer.ts`) asks every state participant for
 * a snapshot: keyed state, operator state, timers, source splits, sink
 * committables and (for unaligned checkpoints) channel state. Each answers
 * with a {@linkcode SnapshotResult}:
 *
 * 1. **the synchronous capture**, done inside `snapshot(...)` on the mailbox
 *    thread before it returns; it must be short: O(1) or O(changed state),
 *    never a copy of all state when the backend can avoid it;
 * 2. **the asynchronous write**, `result.write(writer)`, which runs while the
 *    subtask keeps processing records, may yield to the event loop between
 *    slices, and returns the {@linkcode StateHandle}s it wrote.
 *
 * A handle names one blob in checkpoint storage, the participant kind that
 * wrote it and whether it is **shared**: a shared blob lives in the job's
 * shared namespace and may be referenced by later checkpoints (incremental
 * checkpoints, changelog segments); a private blob belongs to its checkpoint
 * alone and is deleted with it. Retention deletes a shared blob only when no
 * retained checkpoint or savepoint refers to it (`shared_state_registry.ts`).
 *
 * A savepoint ({@linkcode SnapshotType} `"savepoint"`) never writes or
 * references shared blobs: it is self-contained and in the canonical format,
 * so any backend can restore it.
 *
 * @module
 */

/** What a snapshot is for: a periodic checkpoint, or a user-triggered savepoint (canonical, self-contained). */
export type SnapshotType = "checkpoint" | "savepoint";

/**
 * The participant kinds whose state a checkpoint holds.
 *
 * | kind                | written by                                   |
 * | ------------------- | -------------------------------------------- |
 * | `keyed`             | a keyed state backend (full, canonical)      |
 * | `keyed-incremental` | a keyed state backend (base or changelog)    |
 * | `timers`            | the timer service                            |
 * | `operator`          | operator (list / union list) state           |
 * | `source-splits`     | a source reader's splits                     |
 * | `sink-committables` | a sink's committables and writer state       |
 * | `channel`           | in-flight buffers of an unaligned checkpoint |
 * | `watermark`         | an operator's watermark floor                |
 */
export type StateHandleKind =
  | "keyed"
  | "keyed-incremental"
  | "timers"
  | "operator"
  | "source-splits"
  | "sink-committables"
  | "channel"
  | "watermark";

/**
 * One blob in checkpoint storage, as a participant wrote it (checkpoint
 * metadata version 2 lists these per subtask).
 */
export interface StateHandle {
  /**
   * Location of the blob, relative to the storage's directory of the job,
   * with `/` separators: `chk-<n>/<name>` for a private blob,
   * `shared/<name>` for a shared one. Never absolute, never containing `..`.
   */
  readonly path: string;
  /** Size of the blob, in bytes. */
  readonly bytes: number;
  /** The participant kind that wrote it. */
  readonly kind: StateHandleKind;
  /** `true` when the blob is in the shared namespace and may be referenced by later checkpoints. */
  readonly shared: boolean;
  /** The operator uid whose state it holds (`""` for state of the whole subtask, such as channel state). */
  readonly uid: string;
  /** Key groups it covers (inclusive `[first, last]`), for keyed kinds; absent otherwise. */
  readonly keyGroupRange?: readonly [number, number];
  /**
   * Set only on handles converted from version-1 checkpoint metadata
   * (`runtime/checkpoint/metadata.ts`): the blob is a version-1 subtask
   * file holding the state of every operator of the subtask by uid, and
   * `uid` is `""`. Kind `keyed`: `{ [uid]: { keyed?, timers? } }` (keyed
   * state and timers); kind `operator`: `{ [uid]: OperatorStateSnapshot }`
   * plus the watermark floors. Only the restore path reads them
   * (`runtime/task/subtask_state.ts`); nothing writes them any more.
   */
  readonly legacyV1?: true;
}

/** Where a participant's asynchronous write puts its blobs; given by the checkpointer. */
export interface StateWriter {
  /** The checkpoint (or savepoint) being written. */
  readonly checkpointId: number;
  /** What the snapshot is for. */
  readonly type: SnapshotType;
  /**
   * Writes a private blob of this checkpoint.
   * @param name file name unique within the checkpoint (the writer prefixes subtask and attempt).
   * @throws {import("./storage.ts").CheckpointStorageError} when storage fails.
   */
  writePrivate(
    name: string,
    bytes: Uint8Array,
    kind: StateHandleKind,
    uid: string,
    keyGroupRange?: readonly [number, number],
  ): Promise<StateHandle>;
  /**
   * Writes a blob into the job's shared namespace; refused for savepoints.
   * @param name file name unique within the job (include the subtask, attempt and a sequence).
   * @throws {Error} for a savepoint; {@linkcode import("./storage.ts").CheckpointStorageError} when storage fails.
   */
  writeShared(
    name: string,
    bytes: Uint8Array,
    kind: StateHandleKind,
    uid: string,
    keyGroupRange?: readonly [number, number],
  ): Promise<StateHandle>;
  /** `true` once the checkpoint was aborted or the subtask ended: stop writing and return. */
  readonly cancelled: boolean;
}

/**
 * A participant's answer to a snapshot request: its synchronous capture is
 * already done; `write` is the asynchronous part.
 */
export interface SnapshotResult {
  /**
   * Writes what was captured and returns the handles written (and, for an
   * incremental snapshot, the earlier shared handles it still refers to).
   * Runs off the record path: it may yield between slices.
   * @throws whatever storage throws; the checkpointer declines the checkpoint.
   */
  write(writer: StateWriter): Promise<StateHandle[]>;
  /** Releases what the capture holds (the checkpoint was aborted before `write` ran or finished). */
  discard?(): void;
}

/** A snapshot result with nothing to write. */
export const EMPTY_SNAPSHOT: SnapshotResult = Object.freeze({
  write: () => Promise.resolve([]),
});
