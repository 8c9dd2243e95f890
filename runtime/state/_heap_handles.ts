/**
 * Internal: the canonical keyed state handle of {@linkcode HeapKeyedStateBackend}
 * — one private blob of kind `keyed` holding a MessagePack-encoded
 * {@linkcode KeyedStateSnapshot} (Flink's `KeyGroupsStateHandle` of a full
 * snapshot) — written from a captured snapshot and read back on restore.
 *
 * @module
 */

import { decode, encode } from "../actor/codec.ts";
import type { SnapshotResult, SnapshotType, StateHandle } from "../checkpoint/snapshot_contract.ts";
import type { StateReader } from "./keyed_state_backend.ts";
import { checkSnapshotHeader, type KeyedStateSnapshot } from "./keyed_state_snapshot.ts";

/**
 * The private blob name of an operator's keyed state within a checkpoint
 * (the writer prefixes subtask and attempt).
 */
export function keyedBlobName(uid: string): string {
  return `keyed-${encodeURIComponent(uid)}`;
}

/**
 * A {@linkcode SnapshotResult} that encodes an already captured canonical
 * snapshot into one `keyed` handle covering the snapshot's key-group range.
 * `checkpointId` and `type` are the caller's; the writer carries them too.
 */
export function keyedSnapshotResult(
  snapshot: KeyedStateSnapshot,
  _checkpointId: number,
  _type: SnapshotType,
  uid: string,
): SnapshotResult {
  let captured: KeyedStateSnapshot | undefined = snapshot;
  return {
    async write(writer) {
      if (captured === undefined) throw new Error(`Keyed state snapshot of '${uid}' was discarded`);
      const bytes = encode(captured);
      captured = undefined;
      if (writer.cancelled) return [];
      return [
        await writer.writePrivate(keyedBlobName(uid), bytes, "keyed", uid, snapshot.keyGroupRange),
      ];
    },
    discard() {
      captured = undefined;
    },
  };
}

/**
 * Reads and decodes one `keyed` handle.
 * @throws {Error} naming the handle's path when its kind is not `keyed`, its
 * bytes do not decode, they are not a keyed state snapshot, or its version
 * or max parallelism is not restorable into `maxParallelism`.
 */
export async function decodeKeyedHandle(
  handle: StateHandle,
  read: StateReader,
  maxParallelism: number,
): Promise<KeyedStateSnapshot> {
  if (handle.kind !== "keyed") {
    throw new Error(
      `Cannot restore keyed state handle '${handle.path}': the heap keyed state backend reads handles of kind 'keyed' only, current value is '${handle.kind}'`,
    );
  }
  const bytes = await read(handle);
  let value: unknown;
  try {
    value = decode(bytes);
  } catch (e) {
    throw new Error(
      `Cannot restore keyed state handle '${handle.path}': its ${bytes.length} bytes do not decode (${
        (e as Error).message
      })`,
      { cause: e },
    );
  }
  if (
    typeof value !== "object" || value === null || Array.isArray(value) ||
    typeof (value as { states?: unknown }).states !== "object" ||
    (value as { states?: unknown }).states === null
  ) {
    throw new Error(
      `Cannot restore keyed state handle '${handle.path}': it does not hold a keyed state snapshot (an object with 'version', 'maxParallelism', 'keyGroupRange' and 'states')`,
    );
  }
  const snapshot = value as KeyedStateSnapshot;
  try {
    checkSnapshotHeader(snapshot, maxParallelism);
  } catch (e) {
    throw new Error(`Cannot restore keyed state handle '${handle.path}': ${(e as Error).message}`, {
      cause: e,
    });
  }
  return snapshot;
}
