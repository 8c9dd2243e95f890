/**
 * Where a {@linkcode RecordWriter} (`record_writer.ts`) meets the record
 * codec: a sealed buffer encoded into messages that fit the transport (split
 * in halves until each does, a single record too large failing the job with
 * {@linkcode RecordTooLargeError}), and, on the in-thread path, the copy
 * through the codec of a record whose key the codec would change.
 *
 * @module
 */

import { decodeRecords, encodeRecords } from "./record_codec.ts";
import { SuppressRestartsError } from "../failure.ts";
import type { OutputChannelItem } from "./channel_state.ts";
import type { Transport } from "../actor/types.ts";

/** Room left in a transport message for the envelope around an encoded buffer, in bytes. */
export const ENVELOPE_BYTES = 1024;

/**
 * A record too large for one transport message (NATS: 1 MiB, less about
 * 1 KiB of envelope) on a network edge. Restarting cannot help, so the job
 * fails without restarts. Records on chained edges have no size limit.
 */
export class RecordTooLargeError extends SuppressRestartsError {
  /** The error class name. */
  override name = "RecordTooLargeError";
}

/** Where an encoded buffer goes, for {@linkcode encodeBuffers}' size check and its error. */
export interface BufferTarget {
  /**
   * The transport, whose max payload (bytes) is read at each encoding: a
   * NATS connection's may change when it reconnects to another server.
   */
  readonly transport: Pick<Transport, "maxPayload">;
  /** The JobGraph edge's index, named in a {@linkcode RecordTooLargeError}. */
  readonly edge: number;
  /** The consuming vertex's id (`v<n>`), named in a {@linkcode RecordTooLargeError}. */
  readonly consumerVertexId: string;
}

/**
 * Encodes records (with their timestamps and key groups, if any) into one or
 * more `buf` items appended to `out`, each small enough for one transport
 * message: the records' `vb` block plus {@linkcode ENVELOPE_BYTES} and 2
 * bytes per key group within the transport's max payload. A buffer too large is
 * split in two halves, each encoded again.
 * @throws {RecordTooLargeError} for a single record larger than the max payload.
 */
export function encodeBuffers(
  out: OutputChannelItem[],
  values: unknown[],
  ts: (number | null)[] | undefined,
  kg: Uint16Array | undefined,
  target: BufferTarget,
): void {
  const vb = encodeRecords(values, ts);
  const maxPayload = target.transport.maxPayload;
  const limit = maxPayload - ENVELOPE_BYTES - 2 * (kg?.length ?? 0);
  if (vb.byteLength <= limit) {
    out.push({ kind: "buf", vb, kg });
    return;
  }
  if (values.length === 1) {
    throw new RecordTooLargeError(
      `A record of ${vb.byteLength} bytes on edge ${target.edge} (to ${target.consumerVertexId}) ` +
        `exceeds the transport's max payload of ${maxPayload} bytes ` +
        `(less ${ENVELOPE_BYTES} bytes of envelope); records crossing a network edge must fit ` +
        `one message`,
    );
  }
  const half = values.length >> 1;
  encodeBuffers(out, values.slice(0, half), ts?.slice(0, half), kg?.slice(0, half), target);
  encodeBuffers(out, values.slice(half), ts?.slice(half), kg?.slice(half), target);
}

/**
 * Whether `key` survives the record codec unchanged as far as strings go:
 * no string in it (at any depth of arrays and plain objects) has a lone
 * UTF-16 surrogate.
 */
export function isWellFormedKey(key: unknown): boolean {
  if (typeof key === "string") return key.isWellFormed();
  if (typeof key !== "object" || key === null) return true;
  if (Array.isArray(key)) {
    // A loop, not `every`: tuple keys (dedup's `[bidder, auction]`) pass
    // here once per record.
    for (let i = 0; i < key.length; i++) {
      const part: unknown = key[i];
      if (typeof part === "string" ? !part.isWellFormed() : !isWellFormedKey(part)) return false;
    }
    return true;
  }
  if (Object.getPrototypeOf(key) !== Object.prototype) return true;
  return Object.entries(key).every(([k, v]) => k.isWellFormed() && isWellFormedKey(v));
}

/** `value` through the record codec: what an encoded buffer would deliver. */
export function copyRecord(value: unknown): unknown {
  return decodeRecords(encodeRecords([value], undefined)).values[0];
}
