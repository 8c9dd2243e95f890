/**
 * A subtask's part of a checkpoint, in both directions:
 * {@linkcode splitSubtaskSnapshot} turns the operators' synchronous captures
 * into the two files a subtask writes (keyed state with timers, grouped by
 * key group; and operator state), and {@linkcode readSubtaskRestore} reads a
 * subtask's share back from a completed checkpoint, also at another
 * parallelism: keyed parts of every old subtask whose key groups overlap,
 * operator state redistributed (split lists evenly, union lists whole).
 *
 * Operators are matched by uid, not by vertex, so a chain may change
 * between the checkpoint and the restore.
 *
 * ## Files
 *
 * - `<vertex>-<subtask>-a<attempt>.keyed`: `{ [uid]: KeyedPart }`.
 * - `<vertex>-<subtask>-a<attempt>.op`: `{ [uid]: OperatorStateSnapshot }`,
 *   plus, under the reserved key {@linkcode WATERMARK_FLOORS_KEY}, each
 *   operator's watermark floor (`{ [uid]: ms }`, see
 *   `runtime/time/watermark.ts`). A subtask whose operators hold only
 *   watermarks writes an operator file, but its uids are not in `stateUids`:
 *   a floor alone is not state, and never blocks an `allowNonRestoredState`
 *   resume.
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

import { decode } from "../actor/codec.ts";
import type { JobVertex } from "../graph/job_graph.ts";
import type { CheckpointStorage } from "../checkpoint/storage.ts";
import type { StateHandle } from "../checkpoint/types.ts";
import { KeyGroupRange } from "../state/key_group.ts";
import type { KeyedStateSnapshot } from "../state/heap_keyed_backend.ts";
import type { TimerServiceSnapshot } from "../state/timer_service.ts";
import { type OperatorStateSnapshot, redistributeOperatorState } from "../state/operator_state.ts";
import type { OperatorRestore, OperatorSnapshot } from "./operators/operator.ts";
import type { RestorePoint } from "./messages.ts";
import { MIN_WATERMARK, WATERMARK_FLOORS_KEY } from "../time/watermark.ts";

/**
 * An operator's watermark floor in an old subtask's operator file (`-Infinity` when none).
 * @throws {Error} naming the file when the entry is not a number.
 */
function watermarkOf(
  file: Record<string, unknown> | undefined,
  uid: string,
  path: string | undefined,
): number {
  const floors = file?.[WATERMARK_FLOORS_KEY] as Record<string, unknown> | undefined;
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

/** One operator's entry in a subtask's keyed-state file. */
export interface KeyedPart {
  /** Keyed state, grouped by key group. */
  keyed?: KeyedStateSnapshot;
  /** Timers, grouped by key group. */
  timers?: TimerServiceSnapshot;
}

/**
 * The operator-state file's content: operator state by uid, and the
 * watermark floors under {@linkcode WATERMARK_FLOORS_KEY}.
 */
export type OperatorPart = Record<string, OperatorStateSnapshot | Record<string, number>>;

/** What a subtask writes for one checkpoint. */
export interface SubtaskSnapshotParts {
  /** The keyed-state file's content by operator uid, or `undefined` when no operator is keyed. */
  readonly keyedPart: Record<string, KeyedPart> | undefined;
  /**
   * The operator-state file's content, or `undefined` when no operator has
   * operator state or a watermark.
   */
  readonly operatorPart: OperatorPart | undefined;
  /** Uids of the operators that hold any state (for the resume check of `allowNonRestoredState`). */
  readonly stateUids: string[];
}

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

/** Whether an operator's snapshot holds any state (keyed entries, timers or operator state). */
function hasState(snapshot: OperatorSnapshot): boolean {
  const keyed = snapshot.keyed?.states;
  if (keyed && Object.values(keyed).some((st) => st.keyGroups.length > 0)) return true;
  const timers = snapshot.timers;
  if (timers && (timers.eventTime.length > 0 || timers.processingTime.length > 0)) return true;
  const operator = snapshot.operator;
  return operator !== undefined && Object.values(operator).some((e) => e.items.length > 0);
}

/**
 * Splits the operators' captures into the subtask's keyed and operator files.
 * @throws {Error} when an operator's uid is {@linkcode WATERMARK_FLOORS_KEY}.
 */
export function splitSubtaskSnapshot(
  snapshots: Readonly<Record<string, OperatorSnapshot>>,
): SubtaskSnapshotParts {
  let keyedPart: Record<string, KeyedPart> | undefined;
  let operatorPart: OperatorPart | undefined;
  let watermarks: Record<string, number> | undefined;
  const stateUids: string[] = [];
  for (const [uid, s] of Object.entries(snapshots)) {
    if (uid === WATERMARK_FLOORS_KEY) {
      throw new Error(
        `The uid '${uid}' is reserved for watermark floors: give the operator another`,
      );
    }
    if (s.watermark !== undefined) (watermarks ??= {})[uid] = s.watermark;
    if (hasState(s)) stateUids.push(uid);
    if (s.keyed || s.timers) {
      const part: KeyedPart = {};
      if (s.keyed) part.keyed = s.keyed;
      if (s.timers) part.timers = s.timers;
      (keyedPart ??= {})[uid] = part;
    }
    if (s.operator && Object.keys(s.operator).length > 0) (operatorPart ??= {})[uid] = s.operator;
  }
  if (watermarks) (operatorPart ??= {})[WATERMARK_FLOORS_KEY] = watermarks;
  return { keyedPart, operatorPart, stateUids };
}

/**
 * Reads subtask `subtask` of `vertex`'s share of a completed checkpoint, per
 * operator uid (operators the checkpoint does not know start empty).
 * @throws {CheckpointStorageError} when a file is missing or has the wrong size.
 * @throws {Error} when a file does not decode, or the metadata lists the wrong subtasks.
 */
export async function readSubtaskRestore(options: {
  readonly storage: CheckpointStorage;
  readonly point: RestorePoint;
  readonly vertex: JobVertex;
  readonly subtask: number;
  readonly keyGroupRange: KeyGroupRange;
}): Promise<Map<string, OperatorRestore>> {
  const { storage, point, vertex, subtask, keyGroupRange } = options;
  const { jobId, checkpointId } = point;
  const meta = await storage.readMetadata(jobId, checkpointId);
  const files = new Map<string, Promise<Record<string, unknown>>>();
  const read = (handle: StateHandle) => {
    let p = files.get(handle.path);
    if (!p) {
      p = storage.readState(jobId, handle).then((bytes) => {
        try {
          return decode(bytes) as Record<string, unknown>;
        } catch (error) {
          throw new Error(`state file ${handle.path} (${handle.bytes} bytes) is corrupt`, {
            cause: error,
          });
        }
      });
      files.set(handle.path, p);
    }
    return p;
  };
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
    const keyed: KeyedStateSnapshot[] = [];
    const timers: TimerServiceSnapshot[] = [];
    const operatorParts: OperatorStateSnapshot[] = [];
    const watermarks: number[] = [];
    for (const s of subtasks) {
      if (s.keyedHandle && s.keyGroupRange) {
        const old = new KeyGroupRange(s.keyGroupRange[0], s.keyGroupRange[1]);
        if (old.intersect(keyGroupRange).size > 0) {
          const part = (await read(s.keyedHandle))[op.uid] as
            | { keyed?: KeyedStateSnapshot; timers?: TimerServiceSnapshot }
            | undefined;
          if (part?.keyed) keyed.push(part.keyed);
          if (part?.timers) timers.push(part.timers);
        }
      }
      const file = s.operatorHandle ? await read(s.operatorHandle) : undefined;
      operatorParts.push((file?.[op.uid] as OperatorStateSnapshot | undefined) ?? {});
      watermarks.push(watermarkOf(file, op.uid, s.operatorHandle?.path));
    }
    const watermark = watermarkFloor(watermarks, vertex.parallelism, subtask);
    result.set(op.uid, {
      checkpointId,
      keyed,
      timers,
      operator: redistributeOperatorState(operatorParts, vertex.parallelism, subtask),
      watermark,
    });
  }
  return result;
}
