/**
 * A subtask's share of a completed checkpoint, read back for a restore
 * (Flink's `StateAssignmentOperation` and `TaskStateManager`, for one
 * subtask): {@linkcode readSubtaskRestore} reads the metadata and gives each
 * chained operator its {@linkcode OperatorRestore}, also at another
 * parallelism; {@linkcode operatorRestoreFrom} does that for one operator
 * from the old subtasks' handles.
 *
 * Operators are matched by uid, not by vertex, so a chain may change
 * between the checkpoint and the restore.
 *
 * ## Assignment by kind (metadata version 2)
 *
 * | kind                                            | goes to the new subtask                          |
 * | ----------------------------------------------- | ------------------------------------------------ |
 * | `keyed`, `keyed-incremental`                    | as handles, from every old subtask whose key-group range overlaps its own; its backend reads them |
 * | `timers`                                        | decoded, from every overlapping old subtask      |
 * | `operator`, `source-splits`, `sink-committables` | merged per old subtask, then redistributed: split lists evenly, union lists whole |
 * | `watermark`                                     | the floor, see below                             |
 * | `channel`                                       | refused: unaligned checkpoints are not restorable yet |
 *
 * ## Inline handles
 *
 * A handle carrying its bytes (`inline`, small state kept in the metadata,
 * `runtime/checkpoint/snapshot_contract.ts`) is served from them and never
 * read from storage or a local-recovery copy: {@linkcode operatorRestoreFrom}
 * wraps its reader with `servingInline`, and the reader it hands to keyed
 * backends (and to a savepoint's re-hash) is that wrapped one.
 *
 * ## Version-1 checkpoints
 *
 * Their handles (marked `legacyV1`, see `runtime/checkpoint/metadata.ts`)
 * are whole-subtask files: the keyed file `{ [uid]: { keyed?, timers? } }`,
 * the operator file `{ [uid]: OperatorStateSnapshot }` with the watermark
 * floors under {@linkcode WATERMARK_FLOORS_KEY}. Each is read and decoded
 * once; an operator's keyed part is handed to its backend as a `keyed`
 * handle whose reader returns that part re-encoded, so backends only ever
 * see version-2 handles.
 *
 * ## Watermark floors on restore
 *
 * At the same parallelism a subtask gets its own old subtask's watermark.
 * At another parallelism it gets the minimum over all old subtasks (`-Infinity`
 * when one of them had none): it consumes what several old subtasks did,
 * and only their minimum is a watermark every one of them had passed.
 *
 * @module
 */

import { decode, encode } from "../actor/codec.ts";
import type { JobVertex } from "../graph/job_graph.ts";
import type { CheckpointMetadata, StateHandle } from "../checkpoint/types.ts";
import { servingInline } from "../checkpoint/snapshot_contract.ts";
import { KeyGroupRange } from "../state/key_group.ts";
import type { StateReader } from "../state/keyed_state_backend.ts";
import type { TimerServiceSnapshot } from "../state/timer_service.ts";
import { rehashKeyedHandles, rehashTimerSnapshots } from "../state/rehash.ts";
import {
  type OperatorStateSnapshot,
  type OperatorStateSnapshotEntry,
  redistributeOperatorState,
} from "../state/operator_state.ts";
import type { OperatorRestore } from "./operators/operator.ts";
import { MIN_WATERMARK, WATERMARK_FLOORS_KEY } from "../time/watermark.ts";

/**
 * The watermark floor of new subtask `subtask` of `parallelism` from the
 * old subtasks' watermarks (ms, one per old subtask in order, `-Infinity`
 * for none): its own old subtask's at the same parallelism, else the
 * minimum over all (see the module docs).
 * @returns the floor in ms, or `undefined` when there is none.
 */
export function watermarkFloor(
  old: readonly number[],
  parallelism: number,
  subtask: number,
): number | undefined {
  const floor = old.length === parallelism ? old[subtask]! : Math.min(...old);
  return floor === MIN_WATERMARK || old.length === 0 ? undefined : floor;
}

/** Options of {@linkcode operatorRestoreFrom}. */
export interface OperatorRestoreOptions {
  /** The operator's uid. */
  readonly uid: string;
  /** The checkpoint restored from. */
  readonly checkpointId: number;
  /** Each old subtask's handles, index = old subtask index (all uids; the operator's are picked). */
  readonly oldSubtasks: readonly (readonly StateHandle[])[];
  /** The new parallelism. */
  readonly parallelism: number;
  /** The new subtask's index. */
  readonly subtask: number;
  /** The new subtask's key groups. */
  readonly keyGroupRange: KeyGroupRange;
  /** Reads a handle's blob (private or shared). */
  readonly read: StateReader;
}

/**
 * One operator's restore from the old subtasks' handles (see the module
 * docs for the assignment by kind).
 * @throws {Error} naming the handle when a blob does not decode or holds the
 *   wrong shape, two operator-state handles of one old subtask name the same
 *   state, or a handle is of kind `channel`; whatever `read` throws.
 */
export async function operatorRestoreFrom(
  options: OperatorRestoreOptions,
): Promise<OperatorRestore> {
  const { uid, oldSubtasks, keyGroupRange } = options;
  // Inline handles (kept in the metadata) are served from their own bytes.
  const read = servingInline(options.read);
  const legacy = legacyFiles(read);
  const keyedHandles: StateHandle[] = [];
  const timers: TimerServiceSnapshot[] = [];
  const operatorParts: OperatorStateSnapshot[] = [];
  const watermarks: number[] = [];
  for (const handles of oldSubtasks) {
    const operator: Record<string, OperatorStateSnapshotEntry> = {};
    let watermark = MIN_WATERMARK;
    for (const handle of handles) {
      if (handle.legacyV1) {
        const file = await legacy.file(handle);
        if (handle.kind === "keyed") {
          if (!overlaps(handle, keyGroupRange)) continue;
          const part = file[uid] as { keyed?: unknown; timers?: TimerServiceSnapshot } | undefined;
          if (part?.keyed !== undefined) {
            keyedHandles.push(legacy.keyedPart(handle, uid, part.keyed));
          }
          if (part?.timers !== undefined) timers.push(part.timers);
        } else {
          const entries = file[uid] as OperatorStateSnapshot | undefined;
          if (entries !== undefined) mergeOperatorState(operator, entries, handle);
          watermark = legacyWatermark(file, uid, handle.path);
        }
        continue;
      }
      if (handle.uid !== uid) continue;
      switch (handle.kind) {
        case "keyed":
        case "keyed-incremental":
          if (overlaps(handle, keyGroupRange)) keyedHandles.push(handle);
          break;
        case "timers":
          if (overlaps(handle, keyGroupRange)) {
            timers.push(await decoded(handle, read) as TimerServiceSnapshot);
          }
          break;
        case "operator":
        case "source-splits":
        case "sink-committables":
          mergeOperatorState(
            operator,
            await decoded(handle, read) as OperatorStateSnapshot,
            handle,
          );
          break;
        case "watermark": {
          const value = await decoded(handle, read);
          if (typeof value !== "number" || Number.isNaN(value)) {
            throw new Error(
              `state file ${handle.path} holds a watermark of operator ${uid} that is not a number: ${
                JSON.stringify(value)
              }`,
            );
          }
          watermark = value;
          break;
        }
        case "channel":
          throw new Error(
            `state file ${handle.path} holds channel state (in-flight data of an unaligned ` +
              `checkpoint), which this version cannot restore`,
          );
      }
    }
    operatorParts.push(operator);
    watermarks.push(watermark);
  }
  return {
    checkpointId: options.checkpointId,
    keyedHandles,
    read: legacy.read,
    timers,
    operator: redistributeOperatorState(operatorParts, options.parallelism, options.subtask),
    watermark: watermarkFloor(watermarks, options.parallelism, options.subtask),
  };
}

/**
 * Reads subtask `subtask` of `vertex`'s share of a completed checkpoint, per
 * operator uid (operators the checkpoint does not know start empty).
 * @param options.meta the checkpoint's metadata (version 2, as storages return it).
 * @param options.read reads a handle's blob from checkpoint storage.
 * @throws {Error} when the metadata lists the wrong subtasks of a vertex, and
 *   what {@linkcode operatorRestoreFrom} throws.
 */
export async function readSubtaskRestore(options: {
  readonly meta: CheckpointMetadata;
  readonly read: StateReader;
  readonly vertex: JobVertex;
  readonly subtask: number;
  readonly keyGroupRange: KeyGroupRange;
}): Promise<Map<string, OperatorRestore>> {
  const { meta, vertex, subtask, keyGroupRange } = options;
  const read = cachedReader(options.read);
  const result = new Map<string, OperatorRestore>();
  for (const op of vertex.operators) {
    const vertexMeta = meta.vertices.find((v) => v.operatorUids.includes(op.uid));
    if (!vertexMeta) continue; // a new operator: starts empty
    const subtasks = [...vertexMeta.subtasks].sort((a, b) => a.subtask - b.subtask);
    if (
      subtasks.length !== vertexMeta.parallelism || subtasks.some((s, i) => s.subtask !== i)
    ) {
      throw new Error(
        `its metadata lists subtasks [${
          subtasks.map((s) => s.subtask).join(", ")
        }] of vertex ${vertexMeta.vertexId}, ` +
          `which has parallelism ${vertexMeta.parallelism}`,
      );
    }
    // Another max parallelism (beyond Flink, savepoints only): take every
    // old subtask's keyed state and timers and re-hash them (`rehash.ts`).
    // (A vertex without a max parallelism, as partial test vertices are, restores as is.)
    const rehash = Number.isInteger(vertex.maxParallelism) &&
      vertexMeta.maxParallelism !== vertex.maxParallelism;
    if (rehash && meta.kind !== "savepoint") {
      throw new Error(
        `vertex ${vertex.id} has max parallelism ${vertex.maxParallelism}, the checkpoint was ` +
          `taken with ${vertexMeta.maxParallelism}: only a savepoint can be restored with ` +
          `another max parallelism`,
      );
    }
    const restore = await operatorRestoreFrom({
      uid: op.uid,
      checkpointId: meta.checkpointId,
      oldSubtasks: subtasks.map((s) => s.handles),
      parallelism: vertex.parallelism,
      subtask,
      keyGroupRange: rehash ? new KeyGroupRange(0, vertexMeta.maxParallelism - 1) : keyGroupRange,
      read,
    });
    if (!rehash) {
      result.set(op.uid, restore);
      continue;
    }
    const target = { maxParallelism: vertex.maxParallelism, keyGroupRange };
    const keyed = await rehashKeyedHandles({
      ...target,
      uid: op.uid,
      handles: restore.keyedHandles,
      read: restore.read,
    });
    result.set(op.uid, {
      ...restore,
      keyedHandles: keyed.handles,
      read: keyed.read,
      timers: restore.timers.length === 0 ? [] : [rehashTimerSnapshots(restore.timers, target)],
    });
  }
  return result;
}

/** Whether a handle's key groups (all, when it names none) overlap `range`. */
function overlaps(handle: StateHandle, range: KeyGroupRange): boolean {
  const r = handle.keyGroupRange;
  return r === undefined || new KeyGroupRange(r[0], r[1]).intersect(range).size > 0;
}

/** A reader that reads each path once (several operators share a version-1 file). */
function cachedReader(read: StateReader): StateReader {
  const blobs = new Map<string, Promise<Uint8Array>>();
  return (handle) => {
    let p = blobs.get(handle.path);
    if (!p) blobs.set(handle.path, p = read(handle));
    return p;
  };
}

async function decoded(handle: StateHandle, read: StateReader): Promise<unknown> {
  const bytes = await read(handle);
  try {
    return decode(bytes);
  } catch (error) {
    throw new Error(`state file ${handle.path} (${handle.bytes} bytes) is corrupt`, {
      cause: error,
    });
  }
}

/** Adds one operator-state handle's entries, refusing a name seen in another handle. */
function mergeOperatorState(
  into: Record<string, OperatorStateSnapshotEntry>,
  entries: OperatorStateSnapshot,
  handle: StateHandle,
): void {
  if (typeof entries !== "object" || entries === null || Array.isArray(entries)) {
    throw new Error(`state file ${handle.path} does not hold operator state: ${typeof entries}`);
  }
  for (const [name, entry] of Object.entries(entries)) {
    if (Object.hasOwn(into, name)) {
      throw new Error(
        `state file ${handle.path} holds operator state '${name}' of operator ${handle.uid}, ` +
          `which another of its state files holds too`,
      );
    }
    Object.defineProperty(into, name, { value: entry, enumerable: true, writable: true });
  }
}

/** An operator's watermark floor in a version-1 operator file (`-Infinity` when none). */
function legacyWatermark(file: Record<string, unknown>, uid: string, path: string): number {
  const floors = file[WATERMARK_FLOORS_KEY] as Record<string, unknown> | undefined;
  const value = floors?.[uid];
  if (value === undefined) return MIN_WATERMARK;
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new Error(
      `state file ${path} holds a watermark of operator ${uid} that is not a number: ${
        JSON.stringify(value)
      }`,
    );
  }
  return value;
}

/**
 * Version-1 files decoded once, and the version-2 `keyed` handles standing
 * for an operator's part of one (see the module docs), with the reader that
 * serves both them and ordinary handles.
 */
function legacyFiles(read: StateReader) {
  const files = new Map<string, Promise<Record<string, unknown>>>();
  const parts = new Map<StateHandle, Uint8Array>();
  return {
    file(handle: StateHandle): Promise<Record<string, unknown>> {
      let p = files.get(handle.path);
      if (!p) {
        p = decoded(handle, read).then((value) => {
          if (typeof value !== "object" || value === null || Array.isArray(value)) {
            throw new Error(`state file ${handle.path} is not a version-1 subtask state file`);
          }
          return value as Record<string, unknown>;
        });
        files.set(handle.path, p);
      }
      return p;
    },
    keyedPart(handle: StateHandle, uid: string, keyed: unknown): StateHandle {
      const bytes = encode(keyed);
      const part: StateHandle = {
        path: `${handle.path}#${uid}`,
        bytes: bytes.byteLength,
        kind: "keyed",
        shared: false,
        uid,
        ...(handle.keyGroupRange === undefined ? {} : { keyGroupRange: handle.keyGroupRange }),
      };
      parts.set(part, bytes);
      return part;
    },
    read:
      ((handle) =>
        parts.get(handle) !== undefined
          ? Promise.resolve(parts.get(handle)!)
          : read(handle)) as StateReader,
  };
}
