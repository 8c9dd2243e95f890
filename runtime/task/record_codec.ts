/**
 * The record codec of the data plane: encodes the records of one network
 * buffer (and their timestamps) as one self-contained block of bytes, column
 * by column when the records share a simple shape, and with the MessagePack
 * codec of `../actor/codec.ts` otherwise.
 *
 * A buffer's records usually all have one shape (the output type of one
 * operator), so the shape is written once and each field becomes one column:
 * numbers a `Float64Array`, booleans one byte each, strings their UTF-16
 * lengths plus one UTF-8 block for all of them (joined, encoded once, decoded
 * once and sliced by length). Decoding builds the records with a function
 * generated once per shape, so every decoded object of a shape has the same
 * hidden class (monomorphic for the operators that read it). This is the
 * "hand-packed columnar" row of FACTS.md's codec table.
 *
 * ## Shapes encoded column by column
 *
 * The first record decides; every record must then match it, or the whole
 * buffer falls back to MessagePack:
 *
 * - all numbers (any `number`, including `NaN`, `±Infinity` and `-0`);
 * - all strings; all booleans;
 * - plain objects (prototype `Object.prototype` or `null`) with the same 1 to
 *   256 own enumerable string keys in the same order, each field always a
 *   number, always a string or always a boolean;
 * - arrays (prototype `Array.prototype`) of one fixed length from 1 to 256
 *   whose elements are, position by position, always a number, a string or
 *   a boolean ("tuples").
 * - plain objects as above where exactly one key holds such a tuple of one
 *   fixed length ("nested": a table `Row`, `{ kind, fields: [...] }`, the
 *   record of every SQL exchange); at most 256 fields in all, the tuple's
 *   elements counted one by one. This layout's key list, field order,
 *   generated-code fragments and key-list validation live in
 *   `./_row_layout.ts`; shape detection, the shape cache and the generated
 *   extract/build functions of every layout in `./_record_shape.ts`.
 *
 * Anything else falls back: a key set or order that differs, a nested object
 * or array, `null`/`undefined` values or array holes, class instances,
 * `bigint`, `Date`, `Map`, empty objects and arrays, more than 256 fields,
 * mixed kinds of records. Every columnar field takes at least one byte per
 * record, so a block's record count is bounded by its size.
 *
 * The prototype of every record after the first is checked through its
 * `constructor` (nearly free, where `Object.getPrototypeOf` costs ~30 ns a
 * record): an object whose prototype chain reaches `Object.prototype`
 * through objects with neither an own `constructor` nor enumerable
 * properties is taken as plain, as MessagePack would take it.
 *
 * ## Format (version 1, little-endian)
 *
 * | Bytes | Content |
 * |---|---|
 * | 0 | version, `1` |
 * | 1 | layout: `0` MessagePack, `1` scalars, `2` tuples, `3` objects, `4` nested objects |
 * | 2 | flags: bit 0 set when timestamps follow |
 * | 3 | reserved, `0` |
 * | 4–7 | record count *n* (u32) |
 * | 8–11 | field count *F* (u32; `1` for scalars, `0` for MessagePack; a nested object's tuple counts its elements) |
 * | 12–15 | byte length *K* of the key list (u32; objects and nested objects only, else `0`) |
 * | 16… | *F* type bytes (`1` number, `2` string, `3` boolean), then the keys as the UTF-8 of a JSON array of strings (*K* bytes), zero-padded to a multiple of 8 |
 * | … | timestamps when flagged: *n* × f64, `NaN` for `null` |
 * | … | MessagePack layout: the records as one MessagePack array, to the end |
 * | … | (nested objects: the key list writes the tuple's key as `[key, length]`, e.g. `["kind",["fields",3]]`; its fields are the tuple's elements, in place of the key) |
 * | … | other layouts, one column per field in order: number *n* × f64; boolean *n* × u8 (`0`/`1`); string *n* × u32 UTF-16 lengths; each zero-padded to a multiple of 8 |
 * | … | other layouts: the UTF-8 of all strings, column after column, to the end |
 *
 * Every column starts at a multiple of 8 from the block's start; a block
 * whose `byteOffset` is not a multiple of 8 is copied before decoding, so
 * `Float64Array` views are always aligned (FACTS.md: "Gotchas").
 *
 * ## Invariants
 *
 * - **Self-contained.** A block decodes alone, in any process, any number of
 *   times: no state is shared between encoder and decoder. The caches of
 *   generated functions (at most 256 shapes each) are only an optimisation.
 * - **Faithful for columnar shapes**: numbers bit for bit as `Float64` (`-0`
 *   and `NaN` stay), strings exactly (a lone UTF-16 surrogate may decode as
 *   U+FFFD), objects with their keys in the same order (`__proto__`, quotes,
 *   newlines and any other characters in keys are safe), tuples as arrays.
 *   Decoded objects always have `Object.prototype`, also when the encoded
 *   ones had a `null` prototype.
 * - **Decoded strings may share memory.** A decoded string of 13 or more
 *   UTF-16 units is a slice of its buffer's one decoded text (V8's sliced
 *   strings), so keeping it (say, as a state key) keeps that text alive.
 * - **Fallback buffers** roundtrip as the MessagePack codec documents (there
 *   `-0` decodes as `0`).
 * - **Timestamps** roundtrip exactly, `null` as `null`; a `NaN` timestamp
 *   decodes as `null`.
 * - **Owned output.** {@linkcode encodeRecords} returns a `Uint8Array` that
 *   owns its whole buffer; decoded records never alias the input bytes.
 * - **Bounds-checked.** Decoding validates every length against the block's
 *   size before reading, and throws {@linkcode CodecError} on anything
 *   malformed; it never reads outside `bytes`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeRecords, encodeRecords } from "./record_codec.ts";
 *
 * const records = [{ key: 7, value: 1.5 }, { key: 8, value: -0 }];
 * const { values, timestamps } = decodeRecords(encodeRecords(records, [1_000, null]));
 * assert.deepEqual(values, records);
 * assert.ok(Object.is((values[1] as { value: number }).value, -0));
 * assert.deepEqual(timestamps, [1_000, null]);
 * ```
 *
 * @module
 */

import { CodecError, decode, encode } from "../actor/codec.ts";
import { LAYOUT_NESTED, parseRowKeyList, rowKeyList } from "./_row_layout.ts";
import {
  cachedShape,
  type ColumnarLayout,
  compileBuild,
  compileExtract,
  detectShape,
  LAYOUT_OBJECT,
  LAYOUT_SCALAR,
  MAX_FIELDS,
  type Shape,
  shapeFor,
  TYPE_BOOLEAN,
  TYPE_NAMES,
  TYPE_NUMBER,
  TYPE_STRING,
} from "./_record_shape.ts";

export { CodecError };

/** The records and timestamps of one buffer, as {@linkcode decodeRecords} returns them. */
export interface DecodedRecords {
  /** The records, in order. */
  readonly values: unknown[];
  /** One timestamp per record (ms, `null` = none), or `undefined` when none were encoded. */
  readonly timestamps: (number | null)[] | undefined;
}

const VERSION = 1;
const LAYOUT_MSGPACK = 0;
const FLAG_TIMESTAMPS = 1;
const HEADER_BYTES = 16;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const utf8Encoder = new TextEncoder();
// `ignoreBOM`: a string that starts with U+FEFF must keep it.
const utf8Decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

// ---------------------------------------------------------------------------
// Encoding

/** Size of the reused encoding buffer, in bytes; it is reset to it after a larger block. */
const SCRATCH_BYTES = 64 * 1024;
/** Largest encoding buffer kept between two calls, in bytes (2 × NATS's max payload). */
const SCRATCH_KEPT_BYTES = 2 * 1024 * 1024;
/** Reused encoding buffer (an 8-byte multiple). */
let scratch = new ArrayBuffer(SCRATCH_BYTES);
let scratchU8 = new Uint8Array(scratch);
let scratchU32 = new Uint32Array(scratch);
let scratchF64 = new Float64Array(scratch);
/** Set while the scratch buffer is in use (a getter could re-enter). */
let encoding = false;

/** Makes the scratch buffer hold `bytes`, keeping its first `used` bytes. */
function reserve(bytes: number, used: number): void {
  if (bytes <= scratch.byteLength) return;
  const grown = new ArrayBuffer(align8(Math.max(bytes, scratch.byteLength * 2)));
  const u8 = new Uint8Array(grown);
  u8.set(scratchU8.subarray(0, used));
  scratch = grown;
  scratchU8 = u8;
  scratchU32 = new Uint32Array(grown);
  scratchF64 = new Float64Array(grown);
}

/** `n` rounded up to a multiple of 8 (arithmetic, not bitwise: `n` may pass 2³¹). */
function align8(n: number): number {
  return Math.ceil(n / 8) * 8;
}

/**
 * Encodes the records of one buffer, and their timestamps when given, as one
 * self-contained block (format in the module docs).
 *
 * @param values The records, in order (at most 2³² − 1).
 * @param timestamps One timestamp per record (ms; `null` = none), or
 * `undefined` when no record has one.
 * @returns A new `Uint8Array` that owns its whole buffer.
 * @throws {CodecError} when `timestamps` and `values` differ in length, when
 * a record cannot be encoded by MessagePack (e.g. a symbol), or on a
 * big-endian host.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeRecords, encodeRecords } from "./record_codec.ts";
 *
 * const bytes = encodeRecords(["a", "ü", "𝄞"]);
 * assert.deepEqual(decodeRecords(bytes), { values: ["a", "ü", "𝄞"], timestamps: undefined });
 * ```
 */
export function encodeRecords(
  values: readonly unknown[],
  timestamps?: readonly (number | null)[],
): Uint8Array {
  if (!LITTLE_ENDIAN) throw new CodecError("The record codec needs a little-endian host");
  const n = values.length;
  if (timestamps !== undefined && timestamps.length !== n) {
    throw new CodecError(
      `Cannot encode ${n} records with ${timestamps.length} timestamps: there must be one per record`,
    );
  }
  if (!encoding) {
    const shape = n === 0 ? shapeFor(LAYOUT_SCALAR, [TYPE_NUMBER], [], "") : detectShape(values[0]);
    if (shape !== undefined) {
      encoding = true;
      try {
        const bytes = encodeColumnar(shape, values, timestamps);
        if (bytes !== undefined) return bytes;
      } finally {
        encoding = false;
      }
    }
  }
  return encodeFallback(values, timestamps);
}

function writeHeader(
  u8: Uint8Array,
  u32: Uint32Array,
  layout: number,
  header: { n: number; f: number; keyBytes: number; hasTimestamps: boolean },
): void {
  u8[0] = VERSION;
  u8[1] = layout;
  u8[2] = header.hasTimestamps ? FLAG_TIMESTAMPS : 0;
  u8[3] = 0;
  u32[1] = header.n;
  u32[2] = header.f;
  u32[3] = header.keyBytes;
}

function writeTimestamps(
  f64: Float64Array,
  index: number,
  timestamps: readonly (number | null)[],
): void {
  for (let i = 0; i < timestamps.length; i++) {
    const t = timestamps[i];
    f64[index + i] = typeof t === "number" ? t : Number.NaN;
  }
}

/** Encodes `values` with `shape`, or returns `undefined` when some record does not match it. */
function encodeColumnar(
  shape: Shape,
  values: readonly unknown[],
  timestamps: readonly (number | null)[] | undefined,
): Uint8Array | undefined {
  const n = values.length;
  const { types, layout } = shape;
  const f = types.length;
  // Schema: header, type bytes, key JSON (at most 3 UTF-8 bytes per UTF-16 unit).
  reserve(HEADER_BYTES + f + 3 * shape.keysJson.length + 8, 0);
  for (let j = 0; j < f; j++) scratchU8[HEADER_BYTES + j] = types[j]!;
  const keyBytes = shape.keysJson === ""
    ? 0
    : utf8Encoder.encodeInto(shape.keysJson, scratchU8.subarray(HEADER_BYTES + f)).written;
  const schemaEnd = HEADER_BYTES + f + keyBytes;
  let pos = align8(schemaEnd);
  scratchU8.fill(0, schemaEnd, pos);
  const tsAt = pos;
  if (timestamps !== undefined) pos += 8 * n;
  const offsets = new Int32Array(f);
  let stringColumns = 0;
  for (let j = 0; j < f; j++) {
    const type = types[j]!;
    if (type === TYPE_NUMBER) {
      offsets[j] = pos / 8;
      pos += 8 * n;
    } else if (type === TYPE_BOOLEAN) {
      offsets[j] = pos;
      pos += align8(n);
    } else {
      offsets[j] = pos / 4;
      pos += align8(4 * n);
      stringColumns++;
    }
  }
  const fixedEnd = pos;
  reserve(fixedEnd, schemaEnd);
  const strings: string[] = stringColumns === 0 ? [] : new Array(stringColumns * n);
  const extract = shape.extract ??= compileExtract(shape);
  if (!extract(values, n, scratchF64, scratchU8, scratchU32, strings, offsets)) return undefined;
  // Zero the padding after boolean and string-length columns.
  for (let j = 0; j < f; j++) {
    const type = types[j]!;
    if (type === TYPE_BOOLEAN) scratchU8.fill(0, offsets[j]! + n, offsets[j]! + align8(n));
    else if (type === TYPE_STRING) {
      scratchU8.fill(0, offsets[j]! * 4 + 4 * n, offsets[j]! * 4 + align8(4 * n));
    }
  }
  writeHeader(scratchU8, scratchU32, layout, {
    n,
    f,
    keyBytes,
    hasTimestamps: timestamps !== undefined,
  });
  if (timestamps !== undefined) writeTimestamps(scratchF64, tsAt / 8, timestamps);
  let end = fixedEnd;
  if (stringColumns > 0) {
    const text = strings.join("");
    reserve(fixedEnd + 3 * text.length, fixedEnd);
    end += utf8Encoder.encodeInto(text, scratchU8.subarray(fixedEnd)).written;
  }
  const out = scratchU8.slice(0, end);
  if (scratch.byteLength > SCRATCH_KEPT_BYTES) {
    scratch = new ArrayBuffer(SCRATCH_BYTES);
    scratchU8 = new Uint8Array(scratch);
    scratchU32 = new Uint32Array(scratch);
    scratchF64 = new Float64Array(scratch);
  }
  return out;
}

function encodeFallback(
  values: readonly unknown[],
  timestamps: readonly (number | null)[] | undefined,
): Uint8Array {
  const n = values.length;
  const packed = encode(values);
  const tsBytes = timestamps === undefined ? 0 : 8 * n;
  const out = new Uint8Array(HEADER_BYTES + tsBytes + packed.byteLength);
  const u32 = new Uint32Array(out.buffer, 0, HEADER_BYTES / 4);
  writeHeader(out, u32, LAYOUT_MSGPACK, {
    n,
    f: 0,
    keyBytes: 0,
    hasTimestamps: timestamps !== undefined,
  });
  if (timestamps !== undefined) {
    writeTimestamps(new Float64Array(out.buffer, HEADER_BYTES, n), 0, timestamps);
  }
  out.set(packed, HEADER_BYTES + tsBytes);
  return out;
}

// ---------------------------------------------------------------------------
// Decoding

/**
 * Decodes a block written by {@linkcode encodeRecords}.
 *
 * @param bytes One block; not modified, and not aliased by the result. When
 * its `byteOffset` is not a multiple of 8 it is copied first.
 * @returns The records and, when they were encoded, the timestamps.
 * @throws {CodecError} when `bytes` is truncated, has another version, an
 * unknown layout or type, lengths that do not fit its size, invalid UTF-8,
 * a key list that is not a JSON array of distinct strings, boolean bytes
 * other than 0/1, or trailing bytes; the message states the byte length and
 * what was wrong.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CodecError, decodeRecords } from "./record_codec.ts";
 *
 * assert.throws(() => decodeRecords(new Uint8Array([1, 1, 0])), CodecError);
 * ```
 */
export function decodeRecords(bytes: Uint8Array): DecodedRecords {
  const length = bytes.byteLength;
  const fail = (what: string): never => {
    throw new CodecError(`Cannot decode a record block of ${length} bytes: ${what}`);
  };
  if (!LITTLE_ENDIAN) fail("the record codec needs a little-endian host");
  if (length < HEADER_BYTES) fail(`it is shorter than the ${HEADER_BYTES}-byte header`);
  if (bytes.byteOffset % 8 !== 0) bytes = bytes.slice();
  const u8 = bytes;
  const u32 = new Uint32Array(bytes.buffer, bytes.byteOffset, length >>> 2);
  const f64 = new Float64Array(bytes.buffer, bytes.byteOffset, length >>> 3);
  const version = u8[0]!;
  const layout = u8[1]!;
  const flags = u8[2]!;
  if (version !== VERSION) fail(`version ${version} is not supported (expected ${VERSION})`);
  if (layout > LAYOUT_NESTED) fail(`layout ${layout} is unknown`);
  if ((flags & ~FLAG_TIMESTAMPS) !== 0 || u8[3] !== 0) {
    fail(`flags ${flags} or reserved byte ${u8[3]} are invalid`);
  }
  const n = u32[1]!;
  const f = u32[2]!;
  const keyBytes = u32[3]!;
  const expectedFields = layout === LAYOUT_MSGPACK
    ? f === 0
    : layout === LAYOUT_SCALAR
    ? f === 1
    : f >= 1 && f <= MAX_FIELDS;
  if (!expectedFields) fail(`field count ${f} is invalid for layout ${layout}`);
  if ((layout === LAYOUT_OBJECT || layout === LAYOUT_NESTED) !== (keyBytes > 0)) {
    fail(`key list of ${keyBytes} bytes is invalid for layout ${layout}`);
  }
  const schemaEnd = HEADER_BYTES + f + keyBytes;
  if (schemaEnd > length) fail(`its schema needs ${schemaEnd} bytes`);
  let pos = align8(schemaEnd);
  let timestamps: (number | null)[] | undefined;
  if ((flags & FLAG_TIMESTAMPS) !== 0) {
    if (pos + 8 * n > length) fail(`${n} timestamps need ${pos + 8 * n} bytes`);
    timestamps = new Array<number | null>(n);
    const at = pos / 8;
    for (let i = 0; i < n; i++) {
      const t = f64[at + i]!;
      timestamps[i] = t === t ? t : null;
    }
    pos += 8 * n;
  }
  if (layout === LAYOUT_MSGPACK) {
    let values: unknown;
    try {
      values = decode(u8.subarray(pos));
    } catch (error) {
      throw new CodecError(
        `Cannot decode a record block of ${length} bytes: its MessagePack records are malformed`,
        { cause: error },
      );
    }
    if (!Array.isArray(values) || values.length !== n) {
      fail(`its MessagePack part is not an array of ${n} records`);
    }
    return { values: values as unknown[], timestamps };
  }
  const shape = decodeShape(layout as ColumnarLayout, u8, f, keyBytes, fail);
  // Column offsets (indices into the f64/u8/u32 views), then string starts.
  const offsets = new Int32Array(2 * f);
  const { types } = shape;
  for (let j = 0; j < f; j++) {
    const type = types[j]!;
    const size = type === TYPE_NUMBER ? 8 * n : type === TYPE_BOOLEAN ? align8(n) : align8(4 * n);
    if (pos + size > length) fail(`column ${j} (${TYPE_NAMES[type]}) of ${n} records ends past it`);
    offsets[j] = type === TYPE_NUMBER ? pos / 8 : type === TYPE_BOOLEAN ? pos : pos / 4;
    pos += size;
  }
  let textLength = 0;
  for (let j = 0; j < f; j++) {
    const type = types[j]!;
    const at = offsets[j]!;
    if (type === TYPE_BOOLEAN) {
      for (let i = 0; i < n; i++) if (u8[at + i]! > 1) fail(`column ${j} has a non-boolean byte`);
    } else if (type === TYPE_STRING) {
      offsets[f + j] = textLength;
      for (let i = 0; i < n; i++) textLength += u32[at + i]!;
    }
  }
  let text = "";
  if (textLength > 0 || pos < length) {
    if (!types.includes(TYPE_STRING)) fail(`${length - pos} bytes follow the last column`);
    try {
      text = utf8Decoder.decode(u8.subarray(pos));
    } catch (error) {
      throw new CodecError(
        `Cannot decode a record block of ${length} bytes: its strings are not valid UTF-8`,
        { cause: error },
      );
    }
    if (text.length !== textLength) {
      fail(`its strings have ${text.length} UTF-16 units, the lengths add up to ${textLength}`);
    }
  }
  const build = shape.build ??= compileBuild(shape);
  return { values: build(n, f64, u8, u32, offsets, text), timestamps };
}

/** Reads and validates the shape of a columnar block. */
function decodeShape(
  layout: ColumnarLayout,
  u8: Uint8Array,
  f: number,
  keyBytes: number,
  fail: (what: string) => never,
): Shape {
  const types: number[] = [];
  for (let j = 0; j < f; j++) {
    const type = u8[HEADER_BYTES + j]!;
    if (type < TYPE_NUMBER || type > TYPE_BOOLEAN) fail(`field ${j} has unknown type ${type}`);
    types.push(type);
  }
  let keysJson = "";
  if (keyBytes > 0) {
    const start = HEADER_BYTES + f;
    try {
      keysJson = utf8Decoder.decode(u8.subarray(start, start + keyBytes));
    } catch {
      fail("its key list is not valid UTF-8");
    }
  }
  const cached = cachedShape(layout, types, keysJson);
  if (cached !== undefined) return cached;
  let keys: string[] = [];
  if (layout === LAYOUT_OBJECT) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(keysJson);
    } catch {
      fail("its key list is not JSON");
    }
    if (
      !Array.isArray(parsed) || parsed.length !== f ||
      !parsed.every((k) => typeof k === "string") || new Set(parsed).size !== f
    ) {
      fail(`its key list is not an array of ${f} distinct strings`);
    }
    keys = parsed as string[];
    // Canonical form, so that encoder and decoder share one cache entry.
    keysJson = JSON.stringify(keys);
  } else if (layout === LAYOUT_NESTED) {
    const row = parseRowKeyList(types.length, keysJson, fail);
    return shapeFor(LAYOUT_NESTED, types, row.keys, rowKeyList(row.keys, row.nested), row.nested);
  }
  return shapeFor(layout, types, keys, keysJson);
}
