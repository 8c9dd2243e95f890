/**
 * The asynchronous part of a subtask's checkpoints (Flink's
 * `AsyncCheckpointRunnable`, with the bookkeeping of
 * `SubtaskCheckpointCoordinatorImpl`): after the synchronous part captured
 * every operator's state on the mailbox loop, it encodes and writes that
 * state to checkpoint storage while processing goes on, then acknowledges
 * the checkpoint to the coordinator with the state handles, sizes and
 * durations, or declines it when writing failed.
 *
 * A checkpoint the coordinator aborted, or any checkpoint once the subtask
 * is done (finished or cancelled), writes nothing more; files already
 * written for it are discarded, since the checkpoint can no longer complete
 * and late files would leave (or re-create) its directory.
 *
 * @module
 */

import { encode } from "../actor/codec.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { SubtaskAck } from "../checkpoint/types.ts";
import type { KeyGroupRange } from "../state/key_group.ts";
import type { OperatorSnapshot } from "./operators/operator.ts";
import { splitSubtaskSnapshot } from "./subtask_state.ts";
import type { CoordinatorMessage, MessageBody } from "./messages.ts";

/** Options of {@linkcode AsyncCheckpoints}. */
export interface AsyncCheckpointsOptions {
  /** The job whose checkpoint storage is written. */
  readonly jobId: string;
  /** The subtask's execution attempt (in state file names and acks). */
  readonly attempt: number;
  /** The subtask's vertex id (`v<n>`). */
  readonly vertexId: string;
  /** The subtask's index. */
  readonly subtask: number;
  /** The subtask's key groups, reported with its keyed state. */
  readonly keyGroupRange: KeyGroupRange;
  /** Where state is written. */
  readonly storage: CheckpointStorage;
  /** The subtask's name, for messages. */
  readonly taskName: string;
  /** Sends a message to the job's coordinator. */
  readonly report: (body: MessageBody<CoordinatorMessage>) => void;
  /** Whether the subtask is done (finished or cancelled): then nothing more is written or sent. */
  readonly isDone: () => boolean;
}

/** The asynchronous parts of one subtask's checkpoints in flight. */
export class AsyncCheckpoints {
  readonly #o: AsyncCheckpointsOptions;
  readonly #parts = new Set<Promise<void>>();
  /** Checkpoints the coordinator aborted; their asynchronous parts write nothing more. */
  readonly #aborted = new Set<number>();

  /** Makes the bookkeeping of one subtask (nothing in flight). */
  constructor(options: AsyncCheckpointsOptions) {
    this.#o = options;
  }

  /**
   * Starts writing checkpoint `checkpointId`'s captured state; acknowledges
   * it when written, declines it (code `DECLINED`, naming the error) when
   * writing fails. Never throws.
   *
   * @param checkpointId The checkpoint.
   * @param snapshots Every chained operator's snapshot, by uid.
   * @param syncDurationMs Duration of the synchronous part, in ms.
   * @param alignmentDurationMs Duration of barrier alignment, in ms.
   */
  start(
    checkpointId: number,
    snapshots: Record<string, OperatorSnapshot>,
    syncDurationMs: number,
    alignmentDurationMs: number,
  ): void {
    const o = this.#o;
    const part = this.#write(checkpointId, snapshots, syncDurationMs, alignmentDurationMs)
      .catch((error) => {
        if (o.isDone()) return;
        o.report({
          t: "decline",
          vertex: o.vertexId,
          subtask: o.subtask,
          id: checkpointId,
          code: "DECLINED",
          reason: `Asynchronous part of checkpoint ${checkpointId} failed in ${o.taskName}: ${
            error instanceof Error ? error.message : String(error)
          }`,
        });
      })
      .finally(() => this.#parts.delete(part));
    this.#parts.add(part);
  }

  /** Checkpoint `checkpointId` was aborted: its asynchronous part writes nothing more. */
  abort(checkpointId: number): void {
    this.#aborted.add(checkpointId);
  }

  /** Checkpoint `checkpointId` completed: aborts of it and earlier ones need no more tracking. */
  completed(checkpointId: number): void {
    for (const id of this.#aborted) if (id <= checkpointId) this.#aborted.delete(id);
  }

  /** Resolves when every asynchronous part started so far has ended. */
  async waitForAll(): Promise<void> {
    await Promise.all([...this.#parts]);
  }

  /** Encodes and writes the state, then acknowledges. */
  async #write(
    checkpointId: number,
    snapshots: Record<string, OperatorSnapshot>,
    syncDurationMs: number,
    alignmentDurationMs: number,
  ): Promise<void> {
    const o = this.#o;
    await Promise.resolve(); // let the mailbox loop go on before encoding
    const t0 = performance.now();
    const { keyedPart, operatorPart, stateUids } = splitSubtaskSnapshot(snapshots);
    if (this.#aborted.has(checkpointId) || o.isDone()) return;
    const base = `${o.vertexId}-${o.subtask}-a${o.attempt}`;
    const [keyedHandle, operatorHandle] = await Promise.all([
      keyedPart
        ? o.storage.writeState(o.jobId, checkpointId, `${base}.keyed`, encode(keyedPart))
        : Promise.resolve(null),
      operatorPart
        ? o.storage.writeState(o.jobId, checkpointId, `${base}.op`, encode(operatorPart))
        : Promise.resolve(null),
    ]);
    if (this.#aborted.has(checkpointId) || o.isDone()) {
      // Aborted, or this attempt was cancelled, while we wrote: the
      // checkpoint can never complete without our ack, and our late files
      // would leave (or re-create) its directory. Remove it.
      await o.storage.discard(o.jobId, checkpointId).catch(() => {});
      return;
    }
    const ack: SubtaskAck = {
      vertexId: o.vertexId,
      subtask: o.subtask,
      attempt: o.attempt,
      checkpointId,
      keyedHandle,
      operatorHandle,
      keyGroupRange: keyedPart
        ? [o.keyGroupRange.startKeyGroup, o.keyGroupRange.endKeyGroup]
        : null,
      syncDurationMs,
      asyncDurationMs: performance.now() - t0,
      alignmentDurationMs,
      stateBytes: (keyedHandle?.bytes ?? 0) + (operatorHandle?.bytes ?? 0),
      stateUids,
    };
    o.report({ t: "ack", ack });
  }
}
