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
 * A private blob smaller than the job's `memoryThresholdBytes` (Flink's
 * `state.storage.fs.memory-threshold`, default 20 KiB) is not written to
 * storage at all: its handle carries the bytes (`inline`, Flink's
 * `ByteStreamStateHandle`), the ack carries them to the coordinator and the
 * checkpoint metadata stores them; every reader serves them from memory
 * ({@linkcode servingInline}). Shared blobs are never inline: later
 * checkpoints must be able to refer to them.
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
  /**
   * The blob's bytes, when they are kept in the checkpoint metadata instead
   * of storage (Flink's `ByteStreamStateHandle`, below
   * `state.storage.fs.memory-threshold`): nothing was written at `path`,
   * which still names the blob uniquely (`chk-<n>/<name>`, the name it
   * would have had in storage; local recovery keys and caches by it). Only
   * on private handles; `inline.length === bytes`. In the JSON of
   * `_metadata` it is a base64 string (`metadata.ts`).
   */
  readonly inline?: Uint8Array;
}

/**
 * Wraps a reader of handles so an inline handle is served from its own
 * bytes and never reaches `read` (storage, or a local copy, has no blob
 * for it). Every restore path reads through it
 * (`runtime/task/subtask_state.ts`, channel state, savepoint copies).
 * @param read reads a handle's blob from storage.
 * @returns a reader that answers inline handles from memory, others via `read`.
 */
export function servingInline<H extends { readonly path: string; readonly inline?: Uint8Array }>(
  read: (handle: H) => Promise<Uint8Array>,
): (handle: H) => Promise<Uint8Array> {
  return (handle) => handle.inline === undefined ? read(handle) : Promise.resolve(handle.inline);
}

/**
 * Default of the checkpoint option `memoryThresholdBytes`
 * (`runtime/task/subtask_checkpointer.ts`):
 * 20 KiB (20 480 bytes), Flink's default `state.storage.fs.memory-threshold`.
 */
export const DEFAULT_MEMORY_THRESHOLD_BYTES = 20 * 1024;

/**
 * The most inline bytes one subtask's ack carries, 512 KiB: an ack is one
 * transport message and NATS refuses messages over max_payload (1 MiB), so
 * half of it stays free for the handles' other fields. Beyond it, blobs go
 * to storage. Also the largest allowed memory threshold.
 */
export const INLINE_BYTES_PER_ACK_LIMIT = 512 * 1024;

/** Where a participant's asynchronous write puts its blobs; given by the checkpointer. */
export interface StateWriter {
  /** The checkpoint (or savepoint) being written. */
  readonly checkpointId: number;
  /** What the snapshot is for. */
  readonly type: SnapshotType;
  /**
   * Writes a private blob of this checkpoint; a blob smaller than the
   * job's memory threshold is returned as an inline handle instead (see
   * {@linkcode StateHandle.inline}; the writer keeps a copy of the bytes,
   * never a view of the participant's buffer).
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
