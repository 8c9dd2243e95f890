/**
 * Reading an Object Store object's chunks without waiting forever: a read
 * fails after a stall timeout, and ends early as `"deleted"` when the object
 * is deleted while its chunks are awaited (purged chunks never arrive). Used
 * by `object_store_storage.ts`.
 *
 * @module
 */

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
