/**
 * Internal: reading canonical `keyed` blobs (a MessagePack-encoded
 * `KeyedStateSnapshot`, as every backend writes for a full snapshot) for
 * changelog replay, and handing replayed snapshots to the inner backend's
 * `restore` as synthetic `keyed` handles.
 *
 * @module
 */

import { decode, encode } from "../../actor/codec.ts";
import type { StateHandle } from "../../checkpoint/snapshot_contract.ts";
import type { StateReader } from "../keyed_state_backend.ts";
import { checkSnapshotHeader, type KeyedStateSnapshot } from "../keyed_state_snapshot.ts";

/**
 * Reads and decodes one canonical `keyed` blob.
 * @throws {Error} naming the handle's path when it does not decode to a
 * keyed state snapshot of `maxParallelism`.
 */
export async function readCanonical(
  handle: StateHandle,
  read: StateReader,
  maxParallelism: number,
): Promise<KeyedStateSnapshot> {
  const where = `Cannot restore materialized keyed state '${handle.path}'`;
  const bytes = await read(handle);
  let value: unknown;
  try {
    value = decode(bytes);
  } catch (e) {
    throw new Error(`${where}: its ${bytes.length} bytes do not decode (${(e as Error).message})`, {
      cause: e,
    });
  }
  const snap = value as Partial<KeyedStateSnapshot> | null;
  if (typeof snap !== "object" || snap === null || typeof snap.states !== "object") {
    throw new Error(`${where}: it does not hold a keyed state snapshot`);
  }
  try {
    checkSnapshotHeader(snap as KeyedStateSnapshot, maxParallelism);
  } catch (e) {
    throw new Error(`${where}: ${(e as Error).message}`, { cause: e });
  }
  return snap as KeyedStateSnapshot;
}

/** Replayed snapshots as private `keyed` handles plus the reader that returns their bytes. */
export function syntheticHandles(
  snapshots: readonly KeyedStateSnapshot[],
  uid: string,
): { handles: StateHandle[]; read: StateReader } {
  const blobs = new Map<string, Uint8Array>();
  const handles = snapshots.map((snap, i): StateHandle => {
    const bytes = encode(snap);
    const path = `changelog-replay/${i}`;
    blobs.set(path, bytes);
    return {
      path,
      bytes: bytes.length,
      kind: "keyed",
      shared: false,
      uid,
      keyGroupRange: snap.keyGroupRange,
    };
  });
  return {
    handles,
    read: (handle) => Promise.resolve(blobs.get(handle.path)!),
  };
}
