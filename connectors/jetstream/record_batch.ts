/**
 * Record batches: many records in one JetStream message (the format is
 * specified in `protocol.ts`, "Record batches"). Pure: encoding and
 * decoding only, no I/O.
 *
 * A batch message carries the header `Weir-Batch: <count>` and a payload of
 * `count` records, each a 4-byte unsigned big-endian length followed by
 * that many bytes. A message without the header is one record, its payload
 * the record's bytes.
 *
 * The idea is Kafka's record batch (KIP-98's message format v2: many
 * records per log entry, one offset per entry plus an index within it),
 * reduced to what a reader needs: no per-record headers, timestamps or
 * compression.
 *
 * ## Invariants
 *
 * - {@linkcode decodeRecordBatch} returns exactly `count` records that
 *   cover the payload exactly, or throws a {@linkcode RecordBatchError}
 *   naming the stream, sequence, record and byte offset: a batch is never
 *   partly delivered, and no trailing byte is ignored.
 * - Decoded records are views into the payload (no copy).
 * - {@linkcode RecordBatchBuilder} reuses one growing buffer; `finish`
 *   returns a copy of exactly the batch's bytes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decodeRecordBatch, RecordBatchBuilder } from "./record_batch.ts";
 *
 * const builder = new RecordBatchBuilder();
 * builder.add(new TextEncoder().encode("a"));
 * builder.add(new TextEncoder().encode("bc"));
 * assert.equal(builder.count, 2);
 * assert.equal(builder.byteLength, 4 + 1 + 4 + 2);
 * const payload = builder.finish();
 * const records = decodeRecordBatch(payload, "2", { stream: "s", seq: 1 });
 * assert.deepEqual(records.map((r) => new TextDecoder().decode(r)), ["a", "bc"]);
 * ```
 *
 * @module
 */

import { SuppressRestartsError } from "../../runtime/failure.ts";

/** The header that marks a record batch; its value is the record count (decimal). */
export const RECORD_BATCH_HEADER = "Weir-Batch";

/** Bytes of a record's length prefix. */
export const RECORD_LENGTH_BYTES = 4;

/** The largest record count a header may carry (a batch fits in one 1 MiB message anyway). */
export const MAX_BATCH_RECORDS = 1 << 24;

/** A new builder's buffer, in bytes (it doubles as needed and is reused after `finish`). */
export const INITIAL_BATCH_BYTES = 4096;

/**
 * The writers' bound on the bytes in the open batches of all subjects
 * together (8 MiB): past it, every open batch is published.
 */
export const MAX_OPEN_BATCH_BYTES = 8 * 1024 * 1024;

/**
 * The largest payload, in bytes, of a batch of more than one record (NATS's
 * default `max_payload`, 1 MiB, less 64 KiB for headers): a writer
 * publishes a subject's open batch before adding a record that would take
 * it past this bound, so records that each fit in a message never make a
 * batch the server refuses (Kafka's `RecordAccumulator` likewise starts a
 * new batch for a record that does not fit the current one). Found by the
 * breaker (tests/breaker_sinks_test.ts): a 100 KiB record followed by a
 * 1000 KiB one made a 1.1 MB batch, refused by the server at every restart.
 */
export const MAX_BATCH_PAYLOAD_BYTES = 1024 * 1024 - 64 * 1024;

/** Where a batch was read, for errors. */
export interface BatchLocation {
  /** The stream. */
  readonly stream: string;
  /** The message's stream sequence. */
  readonly seq: number;
  /** The message's subject, if known. */
  readonly subject?: string;
}

/**
 * A message's record batch is malformed: a header that is not a count, a
 * length that runs past the payload, a count that does not match, or bytes
 * left over. The message names the stream, the sequence and the byte offset.
 * Retrying cannot fix the stored bytes, so it fails a job without restarts.
 */
export class RecordBatchError extends SuppressRestartsError {
  /** The stream. */
  readonly stream: string;
  /** The message's stream sequence. */
  readonly seq: number;
  /**
   * Creates the error: `Invalid record batch at sequence <seq> of stream <stream>: <problem>`.
   * @param where the message.
   * @param problem what is wrong, with the offending value.
   */
  constructor(where: BatchLocation, problem: string) {
    const subject = where.subject === undefined ? "" : ` (subject ${where.subject})`;
    super(
      `Invalid record batch at sequence ${where.seq} of stream ${where.stream}${subject}: ${problem}`,
    );
    this.name = "RecordBatchError";
    this.stream = where.stream;
    this.seq = where.seq;
  }
}

/**
 * A record too large for one message: its batch held it alone and the
 * client refused the message for the server's `max_payload`. The same
 * record comes again at every restart, so it fails the job without
 * restarts. Added by the breaker (tests/breaker_sinks_test.ts); before, each
 * attempt failed alike until the restart strategy gave up.
 */
export class RecordTooLargeError extends SuppressRestartsError {
  /**
   * Creates the error: `A record of <bytes> bytes for subject <subject> of stream <stream> ...`.
   * @param where the subject, the stream, the record's bytes and the server's `max_payload` (if known).
   * @param cause the client's error.
   */
  constructor(
    where: { subject: string; stream: string; bytes: number; maxPayload: number | undefined },
    cause: unknown,
  ) {
    super(
      `A record of ${where.bytes} bytes for subject ${where.subject} of stream ${where.stream} ` +
        `does not fit in one message: the server's max_payload is ${
          where.maxPayload ?? "unknown"
        } bytes (headers and the ${RECORD_LENGTH_BYTES}-byte length prefix included); ` +
        `a restart would publish it again`,
      { cause },
    );
    this.name = "RecordTooLargeError";
  }
}

/**
 * Classifies a failed publish of a batch of `count` records: a batch of one
 * record refused for `max_payload` becomes a {@linkcode RecordTooLargeError}.
 * @returns that error, or `error` unchanged.
 */
export function classifyPublishFailure(
  error: unknown,
  batch: {
    subject: string;
    stream: string;
    count: number;
    bytes: number;
    maxPayload: number | undefined;
  },
): unknown {
  const message = error instanceof Error ? error.message : String(error);
  if (batch.count !== 1 || !message.includes("max_payload")) return error;
  return new RecordTooLargeError(
    {
      subject: batch.subject,
      stream: batch.stream,
      bytes: batch.bytes - RECORD_LENGTH_BYTES,
      maxPayload: batch.maxPayload,
    },
    error,
  );
}

const COUNT = /^[1-9][0-9]{0,8}$/;

/**
 * Parses a `Weir-Batch` header value: a decimal count from 1 to
 * {@linkcode MAX_BATCH_RECORDS}, no sign, no leading zero, no spaces.
 * @returns the count.
 * @throws {RecordBatchError} naming the value and where it was read.
 */
export function parseBatchCount(value: string, where: BatchLocation): number {
  const count = COUNT.test(value) ? Number(value) : NaN;
  if (!(count <= MAX_BATCH_RECORDS)) {
    throw new RecordBatchError(
      where,
      `header ${RECORD_BATCH_HEADER} must be a record count from 1 to ${MAX_BATCH_RECORDS}: current value is ${
        JSON.stringify(value.slice(0, 40))
      }`,
    );
  }
  return count;
}

/**
 * Decodes a batch message's payload into its records (views into `payload`).
 * @param payload the message's payload.
 * @param header the `Weir-Batch` header's value.
 * @param where the message, for errors.
 * @returns exactly the header's count of records, in order.
 * @throws {RecordBatchError} naming the stream, the sequence, the record
 *   and the byte offset when the payload does not hold exactly that many
 *   length-prefixed records.
 */
export function decodeRecordBatch(
  payload: Uint8Array,
  header: string,
  where: BatchLocation,
): Uint8Array[] {
  const count = parseBatchCount(header, where);
  const total = payload.byteLength;
  if (count * RECORD_LENGTH_BYTES > total) {
    throw new RecordBatchError(
      where,
      `header ${RECORD_BATCH_HEADER} says ${count} records, but the payload of ${total} bytes ` +
        `cannot hold ${count} length prefixes`,
    );
  }
  const records: Uint8Array[] = new Array(count);
  let offset = 0;
  for (let i = 0; i < count; i++) {
    if (offset + RECORD_LENGTH_BYTES > total) {
      throw new RecordBatchError(
        where,
        `record ${i} of ${count}: its length prefix at byte offset ${offset} runs past the payload's end (${total} bytes)`,
      );
    }
    const length = ((payload[offset]! << 24) >>> 0) + (payload[offset + 1]! << 16) +
      (payload[offset + 2]! << 8) + payload[offset + 3]!;
    const start = offset + RECORD_LENGTH_BYTES;
    const end = start + length;
    if (end > total) {
      throw new RecordBatchError(
        where,
        `record ${i} of ${count}: its length ${length} at byte offset ${offset} runs past the payload's end (${total} bytes)`,
      );
    }
    records[i] = payload.subarray(start, end);
    offset = end;
  }
  if (offset !== total) {
    throw new RecordBatchError(
      where,
      `${total - offset} bytes follow the last of its ${count} records, at byte offset ${offset}`,
    );
  }
  return records;
}

/**
 * Encodes `records` as one batch payload (for tests and small batches; the
 * sink uses {@linkcode RecordBatchBuilder}).
 * @returns the payload; the header value is `String(records.length)`.
 * @throws {RangeError} when there is no record, or more than {@linkcode MAX_BATCH_RECORDS}.
 */
export function encodeRecordBatch(records: readonly Uint8Array[]): Uint8Array {
  const builder = new RecordBatchBuilder();
  for (const record of records) builder.add(record);
  return builder.finish();
}

/**
 * Builds one batch payload record by record into a reused buffer (the
 * sink's side). `finish` returns the payload and starts an empty batch.
 */
export class RecordBatchBuilder {
  #buffer: Uint8Array;
  #length = 0;
  #count = 0;

  /**
   * Creates an empty builder.
   * @param initialBytes the buffer's initial size, in bytes (default 64 KiB); it grows as needed.
   */
  constructor(initialBytes = 64 * 1024) {
    this.#buffer = new Uint8Array(Math.max(16, initialBytes));
  }

  /** Records in the current batch. */
  get count(): number {
    return this.#count;
  }

  /** Bytes of the current batch's payload (length prefixes included). */
  get byteLength(): number {
    return this.#length;
  }

  /**
   * Whether adding a record of `recordBytes` bytes would take a non-empty
   * batch past `limitBytes` of payload (length prefixes included); an empty
   * batch always takes the record.
   */
  wouldExceed(recordBytes: number, limitBytes: number): boolean {
    return this.#count > 0 && this.#length + RECORD_LENGTH_BYTES + recordBytes > limitBytes;
  }

  /**
   * Appends one record.
   * @throws {RangeError} when the batch already holds {@linkcode MAX_BATCH_RECORDS} records.
   */
  add(record: Uint8Array): void {
    if (this.#count >= MAX_BATCH_RECORDS) {
      throw new RangeError(
        `A record batch holds at most ${MAX_BATCH_RECORDS} records: current count is ${this.#count}`,
      );
    }
    const length = record.byteLength;
    const needed = this.#length + RECORD_LENGTH_BYTES + length;
    if (needed > this.#buffer.byteLength) {
      const grown = new Uint8Array(Math.max(needed, this.#buffer.byteLength * 2));
      grown.set(this.#buffer.subarray(0, this.#length));
      this.#buffer = grown;
    }
    const b = this.#buffer;
    let o = this.#length;
    b[o++] = length >>> 24;
    b[o++] = (length >>> 16) & 0xff;
    b[o++] = (length >>> 8) & 0xff;
    b[o++] = length & 0xff;
    b.set(record, o);
    this.#length = o + length;
    this.#count++;
  }

  /**
   * Ends the current batch.
   * @returns a copy of its payload (`count` records).
   * @throws {RangeError} when the batch is empty.
   */
  finish(): Uint8Array {
    if (this.#count === 0) {
      throw new RangeError("Cannot finish an empty record batch: current count is 0");
    }
    const payload = this.#buffer.slice(0, this.#length);
    this.#length = 0;
    this.#count = 0;
    return payload;
  }
}
