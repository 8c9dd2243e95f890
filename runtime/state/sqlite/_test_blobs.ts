/**
 * Test helper of the SQLite backend's tests: an in-memory checkpoint
 * storage (a {@linkcode StateWriter} per snapshot and a reader), so that the
 * bytes a backend writes are all a restore gets.
 *
 * @module
 */

import type {
  SnapshotResult,
  SnapshotType,
  StateHandle,
  StateHandleKind,
  StateWriter,
} from "../../checkpoint/snapshot_contract.ts";
import type { StateReader } from "../keyed_state_backend.ts";

/** Blobs by path; writers refuse a path written twice. */
export class TestBlobs {
  readonly blobs: Map<string, Uint8Array> = new Map();
  #writers = 0;

  /** Reads a handle's blob. */
  readonly read: StateReader = (handle) => {
    const bytes = this.blobs.get(handle.path);
    return bytes === undefined
      ? Promise.reject(new Error(`No blob at '${handle.path}'`))
      : Promise.resolve(bytes.slice());
  };

  /** A writer for one snapshot. */
  writer(checkpointId: number, type: SnapshotType): StateWriter & { cancelled: boolean } {
    const prefix = `w${this.#writers++}-`;
    const blobs = this.blobs;
    const write = (
      path: string,
      bytes: Uint8Array,
      kind: StateHandleKind,
      uid: string,
      shared: boolean,
      keyGroupRange?: readonly [number, number],
    ): Promise<StateHandle> => {
      if (blobs.has(path)) return Promise.reject(new Error(`Blob '${path}' written twice`));
      blobs.set(path, bytes.slice());
      return Promise.resolve(
        keyGroupRange === undefined
          ? { path, bytes: bytes.length, kind, shared, uid }
          : { path, bytes: bytes.length, kind, shared, uid, keyGroupRange },
      );
    };
    return {
      checkpointId,
      type,
      cancelled: false,
      writePrivate: (name, bytes, kind, uid, range) =>
        write(`chk-${checkpointId}/${prefix}${name}`, bytes, kind, uid, false, range),
      writeShared: (name, bytes, kind, uid, range) =>
        write(`shared/${prefix}${name}`, bytes, kind, uid, true, range),
    };
  }

  /** Writes a snapshot result with a fresh writer. */
  write(
    result: SnapshotResult,
    checkpointId = 1,
    type: SnapshotType = "checkpoint",
  ): Promise<StateHandle[]> {
    return result.write(this.writer(checkpointId, type));
  }
}
