/**
 * Internal test kit: runs an operator's snapshot results through an
 * in-memory {@linkcode StateWriter} (real MessagePack blobs, real handles),
 * decodes what was written for inspection, and builds restores from it.
 * Used by operator tests and their harness; not part of the public API.
 *
 * @module
 */

import { decode } from "../../actor/codec.ts";
import type {
  SnapshotType,
  StateHandle,
  StateHandleKind,
  StateWriter,
} from "../../checkpoint/snapshot_contract.ts";
import type { KeyedStateSnapshot } from "../../state/keyed_state_snapshot.ts";
import type { OperatorStateSnapshot } from "../../state/operator_state.ts";
import type { TimerServiceSnapshot } from "../../state/timer_service.ts";
import type { StateReader } from "../../state/keyed_state_backend.ts";
import type { OperatorRestore, OperatorSnapshotResults } from "./operator.ts";

/** What one operator's snapshot wrote, decoded for inspection, with the blobs to restore from. */
export interface TakenSnapshot {
  /** The handles the results' writes returned. */
  readonly handles: readonly StateHandle[];
  /** Each handle's bytes. */
  readonly blobs: ReadonlyMap<StateHandle, Uint8Array>;
  /** The decoded `keyed` blob, if one was written. */
  readonly keyed?: KeyedStateSnapshot;
  /** The decoded `timers` blob, if one was written. */
  readonly timers?: TimerServiceSnapshot;
  /** The decoded operator-state blob (any of the three kinds), if one was written. */
  readonly operator?: OperatorStateSnapshot;
  /** The decoded watermark floor, if one was written. */
  readonly watermark?: number;
}

/**
 * Runs every result's `write` into memory and decodes the blobs.
 * @param prefix prepended to blob names (as the checkpointer's vertex-subtask-attempt).
 */
export async function takeSnapshot(
  results: OperatorSnapshotResults,
  checkpointId = 1,
  type: SnapshotType = "checkpoint",
  prefix = "v1-0-a0",
): Promise<TakenSnapshot> {
  const blobs = new Map<StateHandle, Uint8Array>();
  const put = (shared: boolean) =>
  (
    name: string,
    bytes: Uint8Array,
    kind: StateHandleKind,
    uid: string,
    keyGroupRange?: readonly [number, number],
  ): Promise<StateHandle> => {
    if (shared && type === "savepoint") {
      return Promise.reject(
        new Error(`savepoint ${checkpointId} cannot write shared blob ${name}`),
      );
    }
    const handle: StateHandle = {
      path: shared ? `shared/${prefix}.${name}` : `chk-${checkpointId}/${prefix}.${name}`,
      bytes: bytes.byteLength,
      kind,
      shared,
      uid,
      ...(keyGroupRange === undefined ? {} : { keyGroupRange: [...keyGroupRange] as const }),
    };
    blobs.set(handle, bytes.slice());
    return Promise.resolve(handle);
  };
  const writer: StateWriter = {
    checkpointId,
    type,
    cancelled: false,
    writePrivate: put(false),
    writeShared: put(true),
  };
  const handles = (await Promise.all(results.map((r) => r.write(writer)))).flat();
  const view: {
    handles: StateHandle[];
    blobs: Map<StateHandle, Uint8Array>;
    keyed?: KeyedStateSnapshot;
    timers?: TimerServiceSnapshot;
    operator?: OperatorStateSnapshot;
    watermark?: number;
  } = { handles, blobs };
  for (const h of handles) {
    const value = decode(blobs.get(h)!);
    if (h.kind === "keyed") view.keyed = value as KeyedStateSnapshot;
    else if (h.kind === "timers") view.timers = value as TimerServiceSnapshot;
    else if (h.kind === "watermark") view.watermark = value as number;
    else if (h.kind !== "keyed-incremental" && h.kind !== "channel") {
      view.operator = value as OperatorStateSnapshot;
    }
  }
  return view;
}

/** A reader over the blobs of `snapshots`. */
export function readerOf(snapshots: readonly TakenSnapshot[]): StateReader {
  return (handle) => {
    for (const s of snapshots) {
      const bytes = s.blobs.get(handle);
      if (bytes !== undefined) return Promise.resolve(bytes);
    }
    return Promise.reject(new Error(`no blob for handle ${handle.path} in the test snapshots`));
  };
}

/**
 * A restore of keyed state, timers and the minimum watermark of `snapshots`
 * (one per old subtask), without operator state.
 */
export function restoreOf(snapshots: readonly TakenSnapshot[], checkpointId = 1): OperatorRestore {
  const watermarks = snapshots.flatMap((s) => s.watermark === undefined ? [] : [s.watermark]);
  return {
    checkpointId,
    keyedHandles: snapshots.flatMap((s) =>
      s.handles.filter((h) => h.kind === "keyed" || h.kind === "keyed-incremental")
    ),
    read: readerOf(snapshots),
    timers: snapshots.flatMap((s) => s.timers ? [s.timers] : []),
    operator: undefined,
    watermark: watermarks.length === 0 ? undefined : Math.min(...watermarks),
  };
}

/** A restore of operator state (and a watermark floor) only. */
export function operatorRestore(
  operator: OperatorStateSnapshot | undefined,
  options: { readonly checkpointId?: number; readonly watermark?: number } = {},
): OperatorRestore {
  return {
    checkpointId: options.checkpointId ?? 1,
    keyedHandles: [],
    read: (h) => Promise.reject(new Error(`no keyed blob ${h.path} in an operator-state restore`)),
    timers: [],
    operator,
    watermark: options.watermark,
  };
}
