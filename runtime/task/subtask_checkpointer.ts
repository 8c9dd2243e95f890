/**
 * A subtask's side of checkpoints and savepoints (Flink's
 * `SubtaskCheckpointCoordinatorImpl` with its `AsyncCheckpointRunnable`).
 *
 * ## Checkpoint *n*, in order
 *
 * 1. **Synchronous part**, on the mailbox thread, nothing else running:
 *    every chained operator's queued asynchronous work is awaited
 *    (`quiesce`), barrier *n* is forwarded on every output (Flink's order:
 *    downstream starts aligning while this subtask captures, and no record
 *    is emitted in between), then every operator is asked for its
 *    participants' {@linkcode SnapshotResult}s (keyed state, timers,
 *    operator state, source splits, sink committables, watermark floors;
 *    two-phase-commit sinks pre-commit here). Its duration is the
 *    checkpoint's `syncDurationMs`.
 * 2. **Asynchronous part**, while the subtask keeps processing: every
 *    result's `write` runs with a {@linkcode StateWriter} of this subtask,
 *    which names blobs `<vertex>-<subtask>-a<attempt>.<name>`: private ones
 *    under `chk-<n>/`, shared ones (never for a savepoint) in the job's
 *    shared namespace. Then the subtask acknowledges with every handle, the
 *    uids that hold state, the bytes written and the durations; or, when a
 *    write failed, declines (code `DECLINED`, naming the error).
 *
 * ## Small state inline (Flink's `ByteStreamStateHandle`)
 *
 * A private blob smaller than `memoryThresholdBytes` (Flink's
 * `state.storage.fs.memory-threshold`, default
 * {@linkcode DEFAULT_MEMORY_THRESHOLD_BYTES}; 0 turns it off) is not
 * written to storage: its handle carries a copy of the bytes (`inline`),
 * with the path it would have had (`chk-<n>/<vertex>-<subtask>-a<attempt>.<name>`),
 * the ack carries it to the coordinator and the `_metadata` stores it. On
 * the Object Store every blob costs several NATS requests, so a subtask
 * with small timers, operator state, splits and watermark floors now
 * writes nothing for them. The ack is one transport message (NATS
 * max_payload is 1 MiB): the inline bytes of one ack are capped at
 * {@linkcode INLINE_BYTES_PER_ACK_LIMIT}; a blob that would pass the cap is
 * written to storage as usual. Shared blobs are never inline. An inline
 * handle has no local-recovery copy (the metadata has it) and nothing to
 * remove on abort.
 *
 * ## Abort and cancellation
 *
 * Once the coordinator aborted *n*, or the subtask is done (finished or
 * cancelled), the writer's `cancelled` is `true`: participants stop, the
 * results' captures are discarded, nothing is acknowledged, and the
 * checkpoint's directory is removed, since the checkpoint can no longer
 * complete and late files would leave (or re-create) it. Shared blobs
 * written for *n* stay: a backend may reuse one as soon as it was written,
 * so the coordinator's shared state registry decides when they go (see
 * `SubtaskStateWriter.removeWritten`).
 * A completion subsumes the checkpoints before it: their aborts stay in
 * force while their asynchronous parts run. A write that fails because the
 * coordinator discarded the aborted checkpoint's folder under it (a rename
 * into a removed directory) is logged at debug and not declined: nothing
 * that matters failed (Flink cancels the `AsyncCheckpointRunnable` of an
 * aborted checkpoint quietly).
 *
 * ## Local recovery
 *
 * With a `localState` store (Flink's `TaskLocalStateStore`,
 * `local_state_store.ts`), every blob of a checkpoint is also copied to the
 * worker's disk once its remote write returned; the ack waits for the
 * remote writes only, the local copy is sealed after it, kept on
 * completion (older copies pruned) and dropped on abort.
 *
 * ## Invariants
 *
 * - A blob name is written at most once per checkpoint and subtask attempt:
 *   a second write of it is refused (two participants would overwrite each
 *   other).
 * - An ack lists exactly the handles the results returned; `stateBytes`
 *   counts the blobs written for this checkpoint only (a shared blob an
 *   incremental snapshot refers to again was paid for earlier).
 * - `stateUids` are the uids of handles of any kind but `watermark` (a floor
 *   alone is not state, and never blocks an `allowNonRestoredState` resume).
 *
 * @module
 */

import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { StoredBlob, SubtaskAck } from "../checkpoint/types.ts";
import {
  DEFAULT_MEMORY_THRESHOLD_BYTES,
  INLINE_BYTES_PER_ACK_LIMIT,
  type SnapshotResult,
  type SnapshotType,
  type StateHandle,
  type StateHandleKind,
  type StateWriter,
} from "../checkpoint/snapshot_contract.ts";
import { logger } from "../log.ts";
import type { StreamOperator } from "./operators/operator.ts";
import type { TaskLocalStateStore } from "./local_state_store.ts";
import type { ChannelEvent, CoordinatorMessage, MessageBody } from "./messages.ts";
import {
  channelStateSnapshot,
  type InputChannelStateRecorder,
  type OutputChannelCapture,
} from "./channel_state.ts";

const log = logger("checkpointer");

/** Where the synchronous part can be failed by a test (chaos hooks). */
export type CheckpointFaultPoint = "before-snapshot" | "after-snapshot";

/** The storage a checkpointer writes to: private blobs, shared blobs, and their removal. */
export type CheckpointerStorage = Pick<
  CheckpointStorage,
  "writeState" | "writeShared" | "discard" | "deleteShared"
>;

/** Options of {@linkcode SubtaskCheckpointer}. */
export interface SubtaskCheckpointerOptions {
  /** The job whose checkpoint storage is written. */
  readonly jobId: string;
  /** The subtask's execution attempt (in blob names and acks). */
  readonly attempt: number;
  /** The subtask's vertex id (`v<n>`). */
  readonly vertexId: string;
  /** The subtask's index. */
  readonly subtask: number;
  /** Where state is written. */
  readonly storage: CheckpointerStorage;
  /** The subtask's name, for messages. */
  readonly taskName: string;
  /** Sends a message to the job's coordinator. */
  readonly report: (body: MessageBody<CoordinatorMessage>) => void;
  /** Whether the subtask is done (finished or cancelled): then nothing more is written or sent. */
  readonly isDone: () => boolean;
  /** Test hook called at each {@linkcode CheckpointFaultPoint}; throwing fails the subtask. */
  readonly faults?: ((point: CheckpointFaultPoint, checkpointId: number) => void) | undefined;
  /**
   * Unaligned checkpoints (FLIP-76) are on: a checkpoint's (never a
   * savepoint's) barrier overtakes the output buffers not yet sent, and
   * the channel-state participant (`channel_state.ts`) joins the snapshot.
   * Default `false`.
   */
  readonly unalignedCheckpoints?: boolean;
  /**
   * Local recovery (Flink's `TaskLocalStateStore`, `local_state_store.ts`):
   * every blob a checkpoint (never a savepoint) writes is also copied to
   * this worker-local store after its remote write returned (the ack never
   * waits for the copy), the copy is sealed after the ack, confirmed on
   * completion and dropped on abort. Absent: no local copies.
   */
  readonly localState?: TaskLocalStateStore | undefined;
  /**
   * Private blobs smaller than this many bytes are kept inline in the
   * checkpoint metadata instead of storage (see the module docs; Flink's
   * `state.storage.fs.memory-threshold`). An integer in
   * 0..{@linkcode INLINE_BYTES_PER_ACK_LIMIT}; 0 writes every blob to
   * storage. Default {@linkcode DEFAULT_MEMORY_THRESHOLD_BYTES}.
   */
  readonly memoryThresholdBytes?: number | undefined;
}

/** One checkpoint (or savepoint) to take, as its barrier or trigger said. */
export interface CheckpointRequest {
  /** The checkpoint id. */
  readonly checkpointId: number;
  /** Its trigger time, epoch ms. */
  readonly timestamp: number;
  /** Checkpoint or savepoint (Flink's `CheckpointOptions` in the barrier). */
  readonly type: SnapshotType;
  /** Time this subtask spent aligning barriers for it, in ms (0 for a source or when not aligned). */
  readonly alignmentDurationMs: number;
  /** Set by the checkpointer: trigger to snapshot start, less alignment, in ms (`SubtaskAck.startDelayMs`). */
  readonly startDelayMs?: number;
  /**
   * For a checkpoint taken unaligned at this subtask: the recording of the
   * input channels whose barrier had not arrived (the ack waits for it).
   */
  readonly inputChannelState?: InputChannelStateRecorder | undefined;
}

/** What the synchronous part acts on: the chain's operators and the outputs that carry the barrier. */
export interface CheckpointTargets {
  /** The chained operators, head first. */
  readonly operators: readonly StreamOperator[];
  /** The subtask's record writers. */
  readonly writers: readonly {
    broadcastEvent(event: ChannelEvent): void;
    /** Sends `event` ahead of what is not sent yet, returning that (`record_writer.ts`). */
    overtakeWithEvent?(event: ChannelEvent): OutputChannelCapture[];
  }[];
}

/** The checkpoints of one subtask attempt (see the module docs). */
export class SubtaskCheckpointer {
  readonly #o: SubtaskCheckpointerOptions;
  readonly #prefix: string;
  readonly #parts = new Set<Promise<void>>();
  /** Checkpoints the coordinator aborted; their asynchronous parts write nothing more. */
  readonly #aborted = new Set<number>();
  /** Checkpoints whose asynchronous part is running. */
  readonly #writing = new Set<number>();
  /** The latest checkpoint notified complete (0: none). */
  #lastCompleted = 0;

  /** Makes the checkpointer of one subtask attempt (nothing in flight). */
  constructor(options: SubtaskCheckpointerOptions) {
    this.#o = options;
    this.#prefix = `${options.vertexId}-${options.subtask}-a${options.attempt}`;
  }

  /**
   * Takes checkpoint `request.checkpointId`: the synchronous part now, the
   * asynchronous part started (see the module docs).
   * @throws whatever an operator's `quiesce` or `snapshotState`, or the fault
   *   hook, throws: the subtask fails (results already captured are discarded).
   */
  async checkpointState(request: CheckpointRequest, targets: CheckpointTargets): Promise<void> {
    const { checkpointId, timestamp, type } = request;
    this.#o.faults?.("before-snapshot", checkpointId);
    const t0 = performance.now();
    // Flink's checkpoint start delay: trigger to the first barrier, so less the alignment.
    const startDelayMs = Math.max(0, Date.now() - timestamp - request.alignmentDurationMs);
    for (const op of targets.operators) await op.quiesce();
    const barrier: ChannelEvent = { k: "barrier", id: checkpointId, ts: timestamp, type };
    // Unaligned (never for a savepoint): the barrier overtakes the output
    // not yet sent, which becomes channel state.
    const overtake = this.#o.unalignedCheckpoints === true && type === "checkpoint";
    const outputs: OutputChannelCapture[] = [];
    for (const w of targets.writers) {
      if (overtake && w.overtakeWithEvent) outputs.push(...w.overtakeWithEvent(barrier));
      else w.broadcastEvent(barrier);
    }
    const results: SnapshotResult[] = [];
    if (overtake || request.inputChannelState) {
      results.push(channelStateSnapshot(request.inputChannelState, outputs));
    }
    try {
      for (const op of targets.operators) {
        results.push(...await op.snapshotState(checkpointId, timestamp, type));
      }
      this.#o.faults?.("after-snapshot", checkpointId);
    } catch (error) {
      for (const r of results) r.discard?.();
      throw error;
    }
    const syncDurationMs = performance.now() - t0;
    this.#start({ ...request, startDelayMs }, results, syncDurationMs);
  }

  /** Checkpoint `checkpointId` was aborted: its asynchronous part writes nothing more. */
  abort(checkpointId: number): void {
    this.#aborted.add(checkpointId);
    void this.#o.localState?.abort(checkpointId);
  }

  /**
   * Checkpoint `checkpointId` completed: aborts of it and earlier ones need
   * no more tracking, except those whose asynchronous part still runs (a
   * completion subsumes the checkpoints before it: the coordinator sends
   * their aborts first and discards their folders, so such a part must stay
   * cancelled; forgetting the abort here let it write into, or re-create,
   * the discarded folder).
   */
  completed(checkpointId: number): void {
    this.#lastCompleted = Math.max(this.#lastCompleted, checkpointId);
    for (const id of this.#aborted) {
      if (id <= checkpointId && !this.#writing.has(id)) this.#aborted.delete(id);
    }
    void this.#o.localState?.confirm(checkpointId);
  }

  /** Resolves when every asynchronous part started so far has ended. Never rejects. */
  async waitForAll(): Promise<void> {
    await Promise.all([...this.#parts]);
  }

  #cancelled(checkpointId: number): boolean {
    return this.#aborted.has(checkpointId) || this.#o.isDone();
  }

  /** Starts the asynchronous part; it acknowledges or declines, and never throws. */
  #start(request: CheckpointRequest, results: SnapshotResult[], syncDurationMs: number): void {
    const o = this.#o;
    const { checkpointId } = request;
    const writer = new SubtaskStateWriter({
      jobId: o.jobId,
      checkpointId,
      type: request.type,
      prefix: this.#prefix,
      storage: o.storage,
      cancelled: () => this.#cancelled(checkpointId),
      localState: request.type === "checkpoint" ? o.localState : undefined,
      memoryThresholdBytes: o.memoryThresholdBytes ?? DEFAULT_MEMORY_THRESHOLD_BYTES,
    });
    const part = this.#write(request, results, writer, syncDurationMs)
      .catch(async (error) => {
        for (const r of results) r.discard?.();
        await writer.removeWritten();
        await o.localState?.abort(checkpointId);
        if (writer.cancelled) {
          // Aborted (its folder discarded under the write) or the subtask is
          // done: nothing that matters failed, and nobody waits for a decline.
          log.debug(
            `${o.taskName}: asynchronous part of cancelled ${request.type} ${checkpointId} ` +
              `stopped: ${error instanceof Error ? error.message : String(error)}`,
          );
          return;
        }
        o.report({
          t: "decline",
          vertex: o.vertexId,
          subtask: o.subtask,
          id: checkpointId,
          code: "DECLINED",
          reason: `Asynchronous part of ${request.type} ${checkpointId} failed in ${o.taskName}: ${
            error instanceof Error ? error.message : String(error)
          }`,
        });
      })
      .finally(() => {
        this.#parts.delete(part);
        this.#writing.delete(checkpointId);
        if (checkpointId <= this.#lastCompleted) this.#aborted.delete(checkpointId);
      });
    this.#writing.add(checkpointId);
    this.#parts.add(part);
  }

  async #write(
    request: CheckpointRequest,
    results: SnapshotResult[],
    writer: SubtaskStateWriter,
    syncDurationMs: number,
  ): Promise<void> {
    const o = this.#o;
    const { checkpointId } = request;
    await Promise.resolve(); // let the mailbox loop go on before encoding
    const t0 = performance.now();
    if (writer.cancelled) {
      for (const r of results) r.discard?.();
      return;
    }
    const handles = (await Promise.all(results.map((r) => r.write(writer)))).flat();
    if (writer.cancelled) {
      // Aborted, or this attempt was cancelled, while we wrote: the
      // checkpoint can never complete without our ack, and our late files
      // would leave (or re-create) its directory. Remove them.
      for (const r of results) r.discard?.();
      await writer.removeWritten();
      await o.localState?.abort(checkpointId);
      return;
    }
    const stateUids = new Set<string>();
    for (const h of handles) if (h.kind !== "watermark" && h.uid !== "") stateUids.add(h.uid);
    const ack: SubtaskAck = {
      vertexId: o.vertexId,
      subtask: o.subtask,
      attempt: o.attempt,
      checkpointId,
      handles,
      stateUids: [...stateUids],
      syncDurationMs,
      asyncDurationMs: performance.now() - t0,
      alignmentDurationMs: request.alignmentDurationMs,
      stateBytes: writer.bytesWritten,
      startDelayMs: request.startDelayMs ?? 0,
    };
    o.report({ t: "ack", ack });
    // The local copy is sealed after the ack, which never waits for it.
    // Inline handles have no local copy: the metadata holds their bytes.
    if (writer.localState) {
      await writer.localState.seal(checkpointId, handles.filter((h) => h.inline === undefined));
    }
  }
}

/** Options of {@linkcode SubtaskStateWriter}. */
interface SubtaskStateWriterOptions {
  readonly jobId: string;
  readonly checkpointId: number;
  readonly type: SnapshotType;
  /** `<vertex>-<subtask>-a<attempt>`. */
  readonly prefix: string;
  readonly storage: CheckpointerStorage;
  readonly cancelled: () => boolean;
  /** Where a checkpoint's blobs are also copied (local recovery); absent for savepoints. */
  readonly localState: TaskLocalStateStore | undefined;
  /** Private blobs smaller than this are kept inline (0: none). */
  readonly memoryThresholdBytes: number;
}

/** The {@linkcode StateWriter} of one subtask attempt's checkpoint: names, tracks and removes its blobs. */
class SubtaskStateWriter implements StateWriter {
  readonly checkpointId: number;
  readonly type: SnapshotType;
  readonly #o: SubtaskStateWriterOptions;
  readonly #names = new Set<string>();
  #wrotePrivate = false;
  /** Inline bytes handed out so far (capped by {@linkcode INLINE_BYTES_PER_ACK_LIMIT}). */
  #inlineBytes = 0;
  /** Bytes of state so far, over private (inline or written) and shared blobs. */
  bytesWritten = 0;

  /** The local copy's store, when local recovery is on for this checkpoint. */
  readonly localState: TaskLocalStateStore | undefined;

  constructor(options: SubtaskStateWriterOptions) {
    this.#o = options;
    this.localState = options.localState;
    this.checkpointId = options.checkpointId;
    this.type = options.type;
  }

  get cancelled(): boolean {
    return this.#o.cancelled();
  }

  async writePrivate(
    name: string,
    bytes: Uint8Array,
    kind: StateHandleKind,
    uid: string,
    keyGroupRange?: readonly [number, number],
  ): Promise<StateHandle> {
    const o = this.#o;
    const full = this.#claim(name, "private");
    if (
      bytes.length < o.memoryThresholdBytes &&
      this.#inlineBytes + bytes.length <= INLINE_BYTES_PER_ACK_LIMIT
    ) {
      this.#inlineBytes += bytes.length;
      this.bytesWritten += bytes.length;
      const path = `chk-${o.checkpointId}/${full}`;
      return {
        ...handleOf({ path, bytes: bytes.length }, kind, false, uid, keyGroupRange),
        inline: bytes.slice(),
      };
    }
    this.#wrotePrivate = true;
    const blob = await o.storage.writeState(o.jobId, o.checkpointId, full, bytes);
    this.bytesWritten += blob.bytes;
    this.localState?.storeBlob(o.checkpointId, blob, bytes);
    return handleOf(blob, kind, false, uid, keyGroupRange);
  }

  async writeShared(
    name: string,
    bytes: Uint8Array,
    kind: StateHandleKind,
    uid: string,
    keyGroupRange?: readonly [number, number],
  ): Promise<StateHandle> {
    const o = this.#o;
    if (o.type === "savepoint") {
      throw new Error(
        `Savepoint ${o.checkpointId} cannot write shared blob '${name}' of operator ${uid} ` +
          `(kind ${kind}): a savepoint must be self-contained`,
      );
    }
    const full = this.#claim(name, "shared");
    const blob = await o.storage.writeShared(o.jobId, full, bytes);
    this.bytesWritten += blob.bytes;
    this.localState?.storeBlob(o.checkpointId, blob, bytes);
    return handleOf(blob, kind, true, uid, keyGroupRange);
  }

  /**
   * Removes this checkpoint's private directory. Never throws.
   *
   * Shared blobs it wrote stay: a backend may refer to a blob again as soon
   * as it was written (the changelog backend's segments and
   * materializations), so whether one is garbage is the coordinator's
   * registry's decision, not this aborted checkpoint's. Blobs no
   * acknowledgement ever registered are swept when the job ends
   * (`CheckpointRetention.ended`).
   */
  async removeWritten(): Promise<void> {
    const o = this.#o;
    if (this.#wrotePrivate) await o.storage.discard(o.jobId, o.checkpointId).catch(() => {});
  }

  /** The blob's full name; refuses a name already written in this checkpoint. */
  #claim(name: string, where: "private" | "shared"): string {
    const full = `${this.#o.prefix}.${name}`;
    const key = `${where}:${full}`;
    if (this.#names.has(key)) {
      throw new Error(
        `${this.type === "savepoint" ? "Savepoint" : "Checkpoint"} ${this.checkpointId}: ` +
          `${where} blob '${full}' is written twice (two state participants use the name '${name}')`,
      );
    }
    this.#names.add(key);
    return full;
  }
}

function handleOf(
  blob: StoredBlob,
  kind: StateHandleKind,
  shared: boolean,
  uid: string,
  keyGroupRange: readonly [number, number] | undefined,
): StateHandle {
  return {
    path: blob.path,
    bytes: blob.bytes,
    kind,
    shared,
    uid,
    ...(keyGroupRange === undefined ? {} : { keyGroupRange: [keyGroupRange[0], keyGroupRange[1]] }),
  };
}
