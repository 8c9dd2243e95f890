/**
 * Turns what a subtask's mailbox subject delivers into task messages: a
 * buffer frame (`buffer_frame.ts`) whose records block is decoded once, on
 * arrival; a MessagePack message (events, credits, control); or a message
 * object a subtask in the same thread handed over with
 * `Transport.publishValue` (DESIGN.md §15: inside a thread, records pass as
 * values). The input side of Flink's network stack, without the I/O.
 *
 * An in-thread buffer is taken as it is (its records, and on a hash edge
 * their keys, are the producer's objects, shared under the object-reuse
 * contract of `record_writer.ts`); only its shape is checked, as a decoded
 * one's is.
 *
 * @module
 */

import type { TransportMessage } from "../actor/types.ts";
import { CodecError, decode } from "../actor/codec.ts";
import { decodeRecords } from "./record_codec.ts";
import { decodeBufferFrame, isBufferFrame } from "./buffer_frame.ts";
import type { BufferMessage, ReceivedBufferMessage, TaskMessage } from "./messages.ts";

/** A task message as the task handles it: buffers decoded, everything else as sent. */
export type InboundMessage = ReceivedBufferMessage | Exclude<TaskMessage, BufferMessage>;

/**
 * Decodes one message of a subtask's mailbox subject.
 *
 * @param message What the transport delivered: bytes (a buffer frame or
 * MessagePack), or an in-thread value.
 * @returns The message, a buffer's records decoded.
 * @throws {CodecError} naming what is malformed (for a buffer: its channel
 * and sequence number), for bytes that do not decode, a value that is not a
 * message object, or a buffer whose records, timestamps or key groups do not
 * match.
 */
export function decodeInbound(message: TransportMessage): InboundMessage {
  const value = message.value;
  if (value !== undefined) return checkInThread(value, message.subject);
  const data = message.data;
  if (isBufferFrame(data)) return decodeBuffer(decodeBufferFrame(data));
  const msg = decode(data) as TaskMessage;
  if (typeof msg === "object" && msg !== null && msg.t === "buf") return decodeBuffer(msg);
  return msg as InboundMessage;
}

/** `buffer <seq> of edge <edge> from producer subtask <src>`, for messages. */
function describe(msg: { seq: unknown; edge: unknown; src: unknown }): string {
  return `buffer ${msg.seq} of edge ${msg.edge} from producer subtask ${msg.src}`;
}

function checkInThread(value: unknown, subject: string): InboundMessage {
  if (
    typeof value !== "object" || value === null || typeof (value as { t?: unknown }).t !== "string"
  ) {
    throw new CodecError(
      `The in-thread value on '${subject}' must be a task message object: current value is ${
        String(value)
      }`,
    );
  }
  const msg = value as InboundMessage;
  if (msg.t !== "buf") return msg;
  if (!Array.isArray(msg.v)) {
    throw new CodecError(`The records of in-thread ${describe(msg)} on '${subject}' are missing`);
  }
  const where = `in-thread ${describe(msg)} on '${subject}'`;
  checkColumns(msg.v.length, msg.ts, msg.kg, where);
  if (msg.k !== undefined && (!Array.isArray(msg.k) || msg.k.length !== msg.v.length)) {
    throw new CodecError(
      `Cannot take ${where}: its keys do not match its ${msg.v.length} records (${
        Array.isArray(msg.k) ? msg.k.length : typeof msg.k
      } keys)`,
    );
  }
  return msg;
}

/**
 * Decodes a buffer's records block.
 * @throws {CodecError} naming the channel and sequence number when `vb` is
 * missing or malformed.
 */
function decodeBuffer(msg: BufferMessage): ReceivedBufferMessage {
  const where = describe(msg);
  if (!(msg.vb instanceof Uint8Array)) {
    throw new CodecError(`The records block of ${where} is missing`);
  }
  let decoded: { values: unknown[]; timestamps: (number | null)[] | undefined };
  try {
    decoded = decodeRecords(msg.vb);
  } catch (error) {
    throw new CodecError(
      `Cannot decode ${where}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  if (msg.kg !== undefined && !(msg.kg instanceof Uint16Array)) {
    throw new CodecError(`Cannot decode ${where}: its key groups are not a Uint16Array`);
  }
  checkColumns(decoded.values.length, decoded.timestamps, msg.kg, where);
  return {
    t: "buf",
    job: msg.job,
    att: msg.att,
    edge: msg.edge,
    src: msg.src,
    seq: msg.seq,
    v: decoded.values,
    ts: decoded.timestamps,
    ...(msg.kg ? { kg: msg.kg } : {}),
  };
}

function checkColumns(
  n: number,
  ts: readonly unknown[] | undefined,
  kg: ArrayLike<number> | undefined,
  where: string,
): void {
  if (kg !== undefined && kg.length !== n) {
    throw new CodecError(
      `Cannot decode ${where}: its key groups do not match its ${n} records (${kg.length} key groups)`,
    );
  }
  if (ts !== undefined && (!Array.isArray(ts) || ts.length !== n)) {
    throw new CodecError(
      `Cannot decode ${where}: its timestamps do not match its ${n} records (${
        Array.isArray(ts) ? ts.length : typeof ts
      } timestamps)`,
    );
  }
}
