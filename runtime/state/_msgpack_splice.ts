/**
 * Internal: builds one MessagePack message out of pieces encoded at
 * different times, so that a large keyed state snapshot can be encoded in
 * slices between mailbox actions and still be decoded by one
 * `runtime/actor/codec.ts` `decode` call as the plain object it stands for.
 *
 * Plain objects are written as msgpackr records (`useRecords`, the codec's
 * format: a MessagePack map would decode as a `Map`): a record definition
 * (`fixext 1`, type `0x72`, the record id) followed by the array of field
 * names, then the field values in order. Each {@linkcode recordHeader}
 * defines record id `0x40` inline; msgpackr's decoder takes the latest
 * definition of an id, and every piece `encode` produced defines the records
 * it uses before using them, so pieces and headers may follow each other in
 * any order. Arrays whose length is known only at the end are written with
 * an `array 32` header ({@linkcode arrayHeader}) before their elements,
 * which are `encode`d arrays with their own header stripped
 * ({@linkcode arrayElements}).
 *
 * @module
 */

import { encode } from "../actor/codec.ts";
import { yieldToEventLoop } from "../actor/async.ts";

/** The header of a plain object with `fields`, in order; its values follow. */
export function recordHeader(fields: readonly string[]): Uint8Array {
  const names = encode(fields);
  const out = new Uint8Array(3 + names.length);
  out[0] = 0xd4; // fixext 1
  out[1] = 0x72; // msgpackr's record definition
  out[2] = 0x40; // record id
  out.set(names, 3);
  return out;
}

/** An `array 32` header for `count` elements (which follow). */
export function arrayHeader(count: number): Uint8Array {
  const out = new Uint8Array(5);
  out[0] = 0xdd;
  new DataView(out.buffer).setUint32(1, count);
  return out;
}

/**
 * The elements of an encoded array, without its header.
 * @throws {Error} when `encoded` is not a MessagePack array.
 */
export function arrayElements(encoded: Uint8Array): Uint8Array {
  const head = encoded[0]!;
  const skip = head >= 0x90 && head <= 0x9f ? 1 : head === 0xdc ? 3 : head === 0xdd ? 5 : -1;
  if (skip < 0) throw new Error(`Expected an encoded MessagePack array: first byte is ${head}`);
  return encoded.subarray(skip);
}

/**
 * Concatenates `parts` into one buffer, yielding to the event loop whenever
 * a slice took `sliceMs` or more (a 100 MB copy blocks for tens of ms).
 */
export async function concatSliced(
  parts: readonly Uint8Array[],
  sliceMs: number,
): Promise<Uint8Array> {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let offset = 0;
  let sliceStart = performance.now();
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
    if (performance.now() - sliceStart >= sliceMs) {
      await yieldToEventLoop();
      sliceStart = performance.now();
    }
  }
  return out;
}
