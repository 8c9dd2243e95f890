/**
 * Internal: the canonical keyed state handle of {@linkcode HeapKeyedStateBackend}
 * — one private blob of kind `keyed` holding a MessagePack-encoded
 * {@linkcode KeyedStateSnapshot} (Flink's `KeyGroupsStateHandle` of a full
 * snapshot) — written from a captured snapshot and read back on restore.
 *
 * @module
 */

import { decode, encode } from "../actor/codec.ts";
import type { SnapshotResult, StateHandle } from "../checkpoint/snapshot_contract.ts";
import type { StateReader } from "./keyed_state_backend.ts";
import { checkSnapshotHeader, type KeyedStateSnapshot } from "./keyed_state_snapshot.ts";
import type { TableCapture } from "./_heap_cow.ts";
import { concatSliced, recordHeader } from "./_msgpack_splice.ts";
import { yieldToEventLoop } from "../actor/async.ts";

/** How long one slice of a snapshot's asynchronous part runs before it yields to the event loop, ms. */
export const SNAPSHOT_SLICE_MS = 1;

/** Entries copied between two looks at the slice's clock. */
const ENTRIES_PER_CHECK = 256;

/** What a copy-on-write snapshot writes besides the states. */
export interface CaptureHeader {
  /** The backend's max parallelism. */
  readonly maxParallelism: number;
  /** The backend's key-group range, inclusive. */
  readonly keyGroupRange: readonly [number, number];
}

/**
 * The {@linkcode SnapshotResult} of a copy-on-write snapshot: `write` copies
 * and encodes the captured tables (`_heap_cow.ts`) in slices of about
 * {@linkcode SNAPSHOT_SLICE_MS}, yielding to the event loop between them,
 * into one canonical `keyed` blob (the same bytes `encode` makes of the
 * {@linkcode KeyedStateSnapshot}); `discard` releases the captures. A
 * failed write releases them too.
 */
export function cowSnapshotResult(
  captures: readonly TableCapture[],
  header: CaptureHeader,
  uid: string,
): SnapshotResult {
  let released = false;
  const release = () => {
    released = true;
    for (const c of captures) c.release();
  };
  return {
    async write(writer) {
      if (released) throw new Error(`Keyed state snapshot of '${uid}' was discarded`);
      try {
        let sliceStart = performance.now();
        for (const capture of captures) {
          while (!capture.step(ENTRIES_PER_CHECK)) {
            if (performance.now() - sliceStart < SNAPSHOT_SLICE_MS) continue;
            await yieldToEventLoop();
            if (writer.cancelled) {
              release();
              return [];
            }
            sliceStart = performance.now();
          }
        }
        const parts: Uint8Array[] = [
          recordHeader(["version", "maxParallelism", "keyGroupRange", "states"]),
          encode(2),
          encode(header.maxParallelism),
          encode(header.keyGroupRange),
          recordHeader(captures.map((c) => c.table.name)),
        ];
        // Not push(...parts): a state may have more parts than the stack has room for arguments.
        for (const capture of captures) for (const part of capture.parts) parts.push(part);
        released = true;
        const bytes = await concatSliced(parts, SNAPSHOT_SLICE_MS);
        if (writer.cancelled) return [];
        return [
          await writer.writePrivate(keyedBlobName(uid), bytes, "keyed", uid, header.keyGroupRange),
        ];
      } catch (e) {
        release();
        throw e;
      }
    },
    discard: release,
  };
}

/**
 * The private blob name of an operator's keyed state within a checkpoint
 * (the writer prefixes subtask and attempt).
 */
export function keyedBlobName(uid: string): string {
  return `keyed-${encodeURIComponent(uid)}`;
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

/** What {@linkcode restoreKeyedHandles} restores into. */
export interface KeyedHandlesTarget {
  /** The backend's key-group range, inclusive: handles of disjoint ranges are not read. */
  readonly range: readonly [start: number, end: number];
  /** The backend's max parallelism. */
  readonly maxParallelism: number;
  /** Loads one decoded snapshot (`restoreCanonical`). */
  readonly load: (snapshot: KeyedStateSnapshot) => void;
}

/**
 * Reads, decodes and loads each `keyed` handle whose key-group range meets
 * `target.range`, in order.
 * @throws {Error} naming the handle's path when {@linkcode decodeKeyedHandle}
 *   or `target.load` throws for it.
 */
export async function restoreKeyedHandles(
  handles: readonly StateHandle[],
  read: StateReader,
  target: KeyedHandlesTarget,
): Promise<void> {
  const [start, end] = target.range;
  for (const handle of handles) {
    const range = handle.keyGroupRange;
    if (range !== undefined && (range[1] < start || range[0] > end)) continue;
    const snapshot = await decodeKeyedHandle(handle, read, target.maxParallelism);
    try {
      target.load(snapshot);
    } catch (e) {
      throw new Error(
        `Cannot restore keyed state handle '${handle.path}': ${(e as Error).message}`,
        { cause: e },
      );
    }
  }
}
