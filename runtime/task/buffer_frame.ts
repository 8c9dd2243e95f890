/**
 * The wire frame of a data buffer: a small binary header followed by the
 * records block, so the hot path neither MessagePack-encodes an envelope
 * around the block nor copies the block again on the way in.
 *
 * ## Layout (little-endian)
 *
 * | offset | size | field |
 * |---|---|---|
 * | 0 | 1 | `0xC1`: the one byte MessagePack never uses, so a receiver tells a frame from a MessagePack message by its first byte |
 * | 1 | 1 | version, `1` |
 * | 2 | 2 | job id length *j* in bytes (UTF-8) |
 * | 4 | 4 | attempt |
 * | 8 | 4 | edge |
 * | 12 | 4 | producer subtask |
 * | 16 | 8 | sequence number (float64) |
 * | 24 | 4 | key-group count *k* (0 when the edge is not hashed) |
 * | 28 | 4 | records block length *b* |
 * | 32 | *j* | job id |
 * | | 2*k* | key groups (uint16) |
 * | | pad | zeros up to a multiple of 8 |
 * | | *b* | records block (`record_codec.ts`), 8-byte aligned in the frame |
 *
 * @module
 */

import { CodecError } from "../actor/codec.ts";
import type { BufferMessage } from "./messages.ts";

/** First byte of a buffer frame (never a MessagePack type byte). */
export const FRAME_MAGIC = 0xc1;
const VERSION = 1;
const HEADER = 32;
const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder("utf-8", { fatal: true });

/** Whether `bytes` is a buffer frame (and not a MessagePack message). */
export function isBufferFrame(bytes: Uint8Array): boolean {
  return bytes.byteLength > 0 && bytes[0] === FRAME_MAGIC;
}

/** Encodes a buffer message as one frame (the records block is copied once). */
export function encodeBufferFrame(msg: BufferMessage): Uint8Array {
  const job = utf8.encode(msg.job);
  const k = msg.kg?.length ?? 0;
  const blockAt = Math.ceil((HEADER + job.byteLength + 2 * k) / 8) * 8;
  const out = new Uint8Array(blockAt + msg.vb.byteLength);
  const view = new DataView(out.buffer);
  out[0] = FRAME_MAGIC;
  out[1] = VERSION;
  view.setUint16(2, job.byteLength, true);
  view.setUint32(4, msg.att, true);
  view.setUint32(8, msg.edge, true);
  view.setUint32(12, msg.src, true);
  view.setFloat64(16, msg.seq, true);
  view.setUint32(24, k, true);
  view.setUint32(28, msg.vb.byteLength, true);
  out.set(job, HEADER);
  if (msg.kg) {
    const at = HEADER + job.byteLength;
    for (let i = 0; i < k; i++) view.setUint16(at + 2 * i, msg.kg[i]!, true);
  }
  out.set(msg.vb, blockAt);
  return out;
}

/**
 * Decodes a frame. The records block is a view into `bytes` (no copy).
 * @throws {CodecError} naming the length and what is wrong, for a truncated or malformed frame.
 */
export function decodeBufferFrame(bytes: Uint8Array): BufferMessage {
  const fail = (what: string): never => {
    throw new CodecError(`Cannot decode a buffer frame of ${bytes.byteLength} bytes: ${what}`);
  };
  if (bytes.byteLength < HEADER) fail(`shorter than its ${HEADER}-byte header`);
  if (bytes[0] !== FRAME_MAGIC) fail(`first byte is ${bytes[0]}, not ${FRAME_MAGIC}`);
  if (bytes[1] !== VERSION) fail(`unsupported version ${bytes[1]}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const j = view.getUint16(2, true);
  const k = view.getUint32(24, true);
  const b = view.getUint32(28, true);
  const blockAt = Math.ceil((HEADER + j + 2 * k) / 8) * 8;
  if (blockAt + b !== bytes.byteLength) {
    fail(`its header announces ${blockAt + b} bytes (job id ${j}, ${k} key groups, block ${b})`);
  }
  let job = "";
  try {
    job = utf8Decoder.decode(bytes.subarray(HEADER, HEADER + j));
  } catch {
    fail("its job id is not UTF-8");
  }
  const msg = {
    t: "buf" as const,
    job,
    att: view.getUint32(4, true),
    edge: view.getUint32(8, true),
    src: view.getUint32(12, true),
    seq: view.getFloat64(16, true),
    vb: bytes.subarray(blockAt, blockAt + b),
  };
  if (k === 0) return msg;
  const kg = new Uint16Array(k);
  const at = HEADER + j;
  for (let i = 0; i < k; i++) kg[i] = view.getUint16(at + 2 * i, true);
  return { ...msg, kg };
}
