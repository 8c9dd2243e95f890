/**
 * The one MessagePack codec of Weir: every record batch, control message and
 * state snapshot that crosses an actor boundary is encoded here.
 *
 * It is msgpackr with its record extension (`useRecords: true`) and
 * `moreTypes: true`, without shared structures and not sequential. A plain
 * object shape is written once per message as an inline record definition and
 * later objects of that shape are written as bare values, which makes arrays
 * of same-shaped records about half the size of MessagePack maps and decoding
 * several times faster (see `codec_bench.ts`).
 *
 * ## Invariants
 *
 * - **Self-contained messages.** A message can be decoded alone, by any
 *   process, in any order, any number of times (replay): the decoder needs no
 *   state from the encoder or from earlier messages.
 * - **Owned output.** {@linkcode encode} returns a plain `Uint8Array` that
 *   owns its whole `ArrayBuffer` (`byteOffset` 0), so its `buffer` may be
 *   transferred to a worker and holding it pins nothing else.
 * - **Faithful roundtrip** of these values, nested in any way:
 *   - numbers, including `NaN`, `Infinity` and `-Infinity`, except that `-0`
 *     decodes as `0` (integral numbers are written as MessagePack integers,
 *     which have no negative zero);
 *   - strings, booleans, `null`, `undefined` (also as an array element or an
 *     object property value; array holes decode as `undefined`);
 *   - arrays and plain objects (decoded with `Object.prototype`);
 *   - `Map` (decoded as `Map`, keys of any primitive type keep their type),
 *     `Set`, `Date` (ms precision; an invalid `Date` stays invalid);
 *   - `bigint` of any size (always decoded as `bigint`, never as `number`);
 *   - `Uint8Array` (decoded as a `Uint8Array` that does not alias the input)
 *     and the other typed arrays.
 * - **Not preserved:** class instances decode as plain objects with their own
 *   enumerable properties (or their `toJSON()` shape); functions decode as
 *   `undefined`; symbols cannot be encoded; a lone UTF-16 surrogate in a
 *   string decodes as U+FFFD; an own property named `__proto__` comes back
 *   renamed (msgpackr's guard against prototype pollution).
 * - MessagePack maps written by other encoders decode as `Map`; int64/uint64
 *   from other encoders decode as `bigint`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decode, encode } from "./codec.ts";
 *
 * const batch = [{ id: "sensor_1", ts: 1547718199, temp: 35.8 }, { id: "sensor_2", ts: 1547718200, temp: 36.1 }];
 * assert.deepEqual(decode(encode(batch)), batch);
 * ```
 *
 * @module
 */

import { Packr, Unpackr } from "npm:msgpackr@2.1.4";

/** Shared by encoder and decoder; `useRecords` also makes maps decode as `Map`. */
const options = { useRecords: true, moreTypes: true } as const;

// Both are safe to share: without `structures`/`sequential`, a Packr keeps no
// record definitions between two pack() calls, and each message carries the
// definitions its Unpackr needs.
const packr = new Packr(options);
const unpackr = new Unpackr(options);

/**
 * Encoding or decoding failed. `cause` holds msgpackr's error.
 *
 * Decoding fails for truncated or malformed bytes and for trailing bytes
 * after the first value; encoding fails for values MessagePack cannot hold
 * (e.g. a symbol).
 */
export class CodecError extends Error {
  /** Always `"CodecError"`. */
  override name = "CodecError";
}

/**
 * Encodes `value` as one self-contained MessagePack message.
 *
 * @param value Any value listed in the module docs.
 * @returns A new `Uint8Array` that owns its whole buffer.
 * @throws {CodecError} when `value` holds something MessagePack cannot encode,
 * such as a symbol.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decode, encode } from "./codec.ts";
 *
 * const state = new Map<string, bigint>([["sensor_1", 42n]]);
 * assert.deepEqual(decode(encode(state)), state);
 * ```
 */
export function encode(value: unknown): Uint8Array {
  let packed: Uint8Array;
  try {
    packed = packr.pack(value);
  } catch (error) {
    throw new CodecError(
      `Cannot encode a value of type ${describe(value)}: ${messageOf(error)}`,
      { cause: error },
    );
  }
  // msgpackr returns a view into its reusable scratch buffer (a Node Buffer
  // under Deno's npm compatibility); copy it out so the result is owned.
  const owned = new Uint8Array(packed.byteLength);
  owned.set(packed);
  return owned;
}

/**
 * Decodes one message written by {@linkcode encode}.
 *
 * @param bytes Exactly one MessagePack value; not modified, and not aliased by
 * the result.
 * @returns The decoded value (typed `unknown`: validate before use).
 * @throws {CodecError} when `bytes` is empty, truncated, malformed or has
 * bytes left over after the value; the message states the byte length.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CodecError, decode } from "./codec.ts";
 *
 * assert.throws(() => decode(new Uint8Array([0x92, 0x01])), CodecError);
 * ```
 */
export function decode(bytes: Uint8Array): unknown {
  try {
    return unpackr.unpack(bytes);
  } catch (error) {
    throw new CodecError(
      `Cannot decode a MessagePack message of ${bytes.byteLength} bytes: ${messageOf(error)}`,
      { cause: error },
    );
  }
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return value.constructor?.name ?? "object";
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
