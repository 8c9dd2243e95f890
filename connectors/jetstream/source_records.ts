/**
 * What `JetStreamSource` makes of a message besides its value: the
 * {@linkcode MessageMeta} its deserializer and timestamp extractor get, the
 * {@linkcode JetStreamDeadLetter} it emits to
 * {@linkcode JETSTREAM_DEAD_LETTER} under `onMalformed: "dead-letter"`, and
 * the {@linkcode JetStreamDeserializationError} that fails the job under
 * `onMalformed: "fail"` (see "Records" in `source.ts`).
 *
 * ## Invariants
 *
 * - Pure: nothing here does I/O; the reader (`source_reader.ts`) decides
 *   when a record is dead-lettered or fails the job.
 * - A dead letter carries the record's bytes as they were (the whole
 *   payload for a malformed batch) and its headers copied, so it outlives
 *   the message.
 * - A deserialization error quotes at most 200 characters of the record
 *   and keeps what the deserializer threw as `cause`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { JetStreamDeserializationError } from "./source_records.ts";
 *
 * const error = new JetStreamDeserializationError({
 *   stream: "orders",
 *   subject: "orders.eu",
 *   seq: 7,
 *   data: new TextEncoder().encode("{oops"),
 *   cause: new SyntaxError("Unexpected token"),
 * });
 * assert.equal(
 *   error.message,
 *   'Cannot deserialize sequence 7 of stream orders (subject orders.eu): Unexpected token ("{oops")',
 * );
 * ```
 *
 * @module
 */

import { OutputTag } from "../../runtime/api/output_tag.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import type { MessageHeaders } from "./feed.ts";

/** Characters of a record quoted at most in a {@linkcode JetStreamDeserializationError}. */
const MAX_QUOTED = 200;

/** What the deserializer and the timestamp extractor get besides the payload. */
export interface MessageMeta {
  /** The message's subject. */
  readonly subject: string;
  /** Its stream sequence. */
  readonly seq: number;
  /**
   * The record's index in its message's record batch (0 for a message
   * without `Weir-Batch`). The meta object of a batch is reused for its
   * records: read it during the call, do not keep it.
   */
  readonly index: number;
  /** Its headers, if any. */
  readonly headers: MessageHeaders | undefined;
}

/** A message the deserializer rejected, sent to {@linkcode JETSTREAM_DEAD_LETTER}. */
export interface JetStreamDeadLetter {
  /** The stream. */
  readonly stream: string;
  /** The message's subject. */
  readonly subject: string;
  /** Its stream sequence. */
  readonly seq: number;
  /** Its index in its message's record batch (0 without a batch, or for a whole malformed batch). */
  readonly index: number;
  /** Its headers, each name with its values. */
  readonly headers: Record<string, string[]>;
  /** The record's bytes (the whole payload for a malformed batch), as they were. */
  readonly data: Uint8Array;
  /** What the deserializer (or the batch decoder) threw. */
  readonly error: string;
}

/** The side output of malformed messages under `onMalformed: "dead-letter"` (id `"jetstream-dead-letter"`). */
export const JETSTREAM_DEAD_LETTER: OutputTag<JetStreamDeadLetter> = new OutputTag<
  JetStreamDeadLetter
>("jetstream-dead-letter");

/**
 * A message could not be deserialized, with `onMalformed: "fail"`. It fails
 * the job without restarts (a `SuppressRestartsError`), like the file
 * source's `DeserializationError`. The message reads, e.g.,
 * `Cannot deserialize sequence 7 of stream orders (subject orders.eu): Unexpected token … ("{oops")`.
 */
export class JetStreamDeserializationError extends SuppressRestartsError {
  /** The stream. */
  readonly stream: string;
  /** The message's subject. */
  readonly subject: string;
  /** Its stream sequence. */
  readonly seq: number;
  /**
   * Creates the error.
   * @param options where the message was and what the deserializer threw (kept as `cause`).
   */
  constructor(
    options: {
      stream: string;
      subject: string;
      seq: number;
      index?: number;
      data: Uint8Array;
      cause: unknown;
    },
  ) {
    const text = new TextDecoder().decode(options.data.subarray(0, MAX_QUOTED * 4));
    const quoted = text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text;
    super(
      `Cannot deserialize sequence ${options.seq}${
        options.index ? ` record ${options.index} of its batch` : ""
      } of stream ${options.stream} (subject ${options.subject}): ${messageOf(options.cause)} (${
        JSON.stringify(quoted)
      })`,
      { cause: options.cause },
    );
    this.name = "JetStreamDeserializationError";
    this.stream = options.stream;
    this.subject = options.subject;
    this.seq = options.seq;
  }
}

/**
 * The dead letter of a record (or of a whole malformed batch) of `stream`
 * at `meta`: its bytes as given, its headers copied, and the message of
 * what was thrown.
 * @param options the stream, the record's meta, its bytes and what its deserializer (or the batch decoder) threw.
 * @returns the record for {@linkcode JETSTREAM_DEAD_LETTER}.
 */
export function deadLetterOf(
  options: {
    readonly stream: string;
    readonly meta: MessageMeta;
    readonly data: Uint8Array;
    readonly cause: unknown;
  },
): JetStreamDeadLetter {
  const { meta } = options;
  return {
    stream: options.stream,
    subject: meta.subject,
    seq: meta.seq,
    index: meta.index,
    headers: headerRecord(meta.headers),
    data: options.data,
    error: messageOf(options.cause),
  };
}

/**
 * The message of a thrown value: `message` of an `Error`, else its string.
 * @param error what was thrown.
 * @returns its message.
 */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function headerRecord(headers: MessageHeaders | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (headers === undefined) return out;
  for (const name of headers.keys()) out[name] = headers.values(name);
  return out;
}
