/**
 * Reading an Object Store object whole without waiting forever: a read
 * fails after a stall timeout, and ends early as `"deleted"` when the object
 * is deleted while its chunks are awaited (purged chunks never arrive); its
 * size and SHA-256 digest are checked. Used by `object_store_storage.ts`.
 *
 * @module
 */

import type { objApi } from "../actor/nats_deps.ts";
import { storeKey } from "./_object_names.ts";

/** What {@linkcode downloadObject} found. */
export type Download =
  | { readonly kind: "ok"; readonly data: Uint8Array }
  | { readonly kind: "missing" }
  | { readonly kind: "size"; readonly actual: number }
  | { readonly kind: "corrupt"; readonly cause: unknown };

/**
 * Reads an object whole into one buffer. Rejects (for `IO`) when the
 * server cannot be asked or no chunk arrives for the stall timeout.
 *
 * @param store the bucket.
 * @param objectName the object's name (see {@linkcode storeKey}).
 * @param expectedBytes the size the caller expects; a differing object is
 *   reported as `size` before its chunks are fetched.
 * @param options the stall timeout (ms) and how to ask whether the object was deleted.
 */
export async function downloadObject(
  store: objApi.ObjectStore,
  objectName: string,
  expectedBytes: number | undefined,
  options: { stallMs: number; gone: () => Promise<boolean> },
): Promise<Download> {
  let result: objApi.ObjectResult | null;
  try {
    result = await store.get(storeKey(objectName));
  } catch (cause) {
    if (isDigestError(cause)) return { kind: "corrupt", cause };
    throw cause;
  }
  if (result === null) return { kind: "missing" };
  const size = result.info.size;
  if (expectedBytes !== undefined && size !== expectedBytes) {
    await result.data.cancel().catch(() => {});
    return { kind: "size", actual: size };
  }
  const data = new Uint8Array(size);
  let offset = 0;
  const reader = result.data.getReader();
  try {
    for (;;) {
      const read = await readWithin(reader, {
        stallMs: options.stallMs,
        objectName,
        gone: options.gone,
      });
      if (read === "deleted") {
        // Discarded while being read (a subsumed checkpoint, or another
        // process's cleanup): its remaining chunks will never arrive.
        await reader.cancel().catch(() => {});
        return { kind: "missing" };
      }
      const { done, value } = read;
      if (done) break;
      if (offset + value.byteLength > size) {
        await reader.cancel().catch(() => {});
        return { kind: "corrupt", cause: chunksDiffer(offset + value.byteLength, size) };
      }
      data.set(value, offset);
      offset += value.byteLength;
    }
    const error = await result.error;
    if (error) throw error;
  } catch (cause) {
    if (isDigestError(cause)) return { kind: "corrupt", cause };
    await reader.cancel().catch(() => {});
    throw cause;
  }
  return offset === size
    ? { kind: "ok", data }
    : { kind: "corrupt", cause: chunksDiffer(offset, size) };
}

function chunksDiffer(received: number, size: number): string {
  return `its chunks hold ${received}+ bytes, its metadata says ${size}`;
}

/** Whether the Object Store client rejected an object for its SHA-256 digest. */
function isDigestError(error: unknown): boolean {
  return error instanceof Error && /digest/i.test(error.message);
}

/** How often a read that is waiting for a chunk checks whether its object was deleted, in ms. */
const DELETION_CHECK_MS = 1_000;

/**
 * `reader.read()`, failing when nothing arrives within `stallMs`, and
 * `"deleted"` when, while waiting, the object turns out to be deleted (its
 * purged chunks would never arrive: without this a checkpoint discarded
 * during a listing stalled the reader for the whole timeout).
 */
export async function readWithin(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  options: { stallMs: number; objectName: string; gone: () => Promise<boolean> },
): Promise<ReadableStreamReadResult<Uint8Array> | "deleted"> {
  const read = reader.read();
  const started = Date.now();
  for (;;) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waitMs = Math.min(DELETION_CHECK_MS, options.stallMs - (Date.now() - started));
    const tick = new Promise<"tick">((resolve) => {
      timer = setTimeout(() => resolve("tick"), Math.max(0, waitMs));
    });
    try {
      const first = await Promise.race([read, tick]);
      if (first !== "tick") return first;
    } finally {
      clearTimeout(timer);
    }
    if (await options.gone()) return "deleted";
    if (Date.now() - started >= options.stallMs) {
      throw new Error(
        `no chunk of object ${
          JSON.stringify(options.objectName)
        } arrived for ${options.stallMs} ms`,
      );
    }
  }
}
