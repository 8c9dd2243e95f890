/**
 * Putting messages into JetStream from the command line: `weir stream
 * publish` (one payload, N times) and `weir stream load` (a JSON-lines
 * file, one message per line). Every message is published with a
 * JetStream publish acknowledgement; up to
 * {@linkcode DEFAULT_MAX_PENDING_ACKS} acknowledgements are awaited at once
 * ({@linkcode PublishWindow}), which is what makes a load fast (awaiting
 * each publish manages a few thousand messages per second, a window of a
 * thousand a hundred times more; see `FACTS.md`).
 *
 * ## What `load` publishes
 *
 * Each non-blank line of the file must be one JSON value (JSON Lines).
 * With `--format jsonl` (the default) a message's payload is the line's
 * UTF-8 bytes, as given: what `JetStreamSource`'s default deserializer
 * (JSON of UTF-8) and `weir stream read` decode into the same value. With
 * `--format msgpack` the payload is the value encoded as plain MessagePack
 * (msgpackr's `pack`, without its record extension), for a source whose
 * deserializer is `(data) => unpack(data)` (`npm:msgpackr`) or any
 * MessagePack decoder. One line is one message, never a `Weir-Batch`
 * record batch, and no `Weir-Txn` header: plain records, which every
 * isolation level reads.
 *
 * ## Invariants
 *
 * - A load reads the file twice: first it checks every line (UTF-8, JSON,
 *   and the message within the server's `max_payload`) and publishes
 *   nothing if one is wrong, naming the file and line; then it publishes
 *   the lines in order.
 * - Blank lines (only whitespace) are not records: they are skipped and
 *   counted, and the count is reported.
 * - A publish that fails (no acknowledgement, the stream refuses it) ends
 *   the command once the publishes in flight have settled, naming the line
 *   (or message number) and how many messages were stored. Messages
 *   acknowledged before stay in the stream: running the load again appends
 *   them again (no deduplication; at-least-once into the stream).
 *
 * @module
 */

import { pack } from "npm:msgpackr@2.1.4";
import {
  createInbox,
  headers as natsHeaders,
  jetstreamApi,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from "../runtime/actor/nats_deps.ts";
import { UsageError } from "./_args.ts";
import { checkSubject } from "./_stream_config.ts";

/** JetStream publish acknowledgements awaited at most at once. */
export const DEFAULT_MAX_PENDING_ACKS = 1000;

/** What a run of publishes stored. */
export interface PublishTotals {
  /** Messages acknowledged. */
  readonly count: number;
  /**
   * The stream that stored them (from the acknowledgements; the stream of
   * the subject when none was published); `undefined` only from a
   * {@linkcode PublishWindow} that published nothing.
   */
  readonly stream: string | undefined;
  /** The highest stream sequence acknowledged (0 when none was). */
  readonly lastSequence: number;
}

/** How long a publish may wait for its acknowledgement while none arrives, in ms. */
export const ACK_TIMEOUT_MS = 10_000;

/** A message published and not yet acknowledged. */
interface Pending {
  readonly what: string;
  readonly subject: string;
}

/**
 * Publishes with JetStream acknowledgements, at most `maxPending` awaited
 * at once: a publish waits for room when the window is full. After a
 * failure it publishes nothing more; {@linkcode flush} then waits for what
 * is in flight and throws.
 *
 * It speaks JetStream's publish protocol itself rather than calling the
 * client's `js.publish` once per message: each message is a core NATS
 * publish whose reply subject is `<inbox>.<n>`, and one subscription on
 * `<inbox>.*` reads the acknowledgements (`{"stream":…,"seq":…}`, or
 * `{"error":{…}}`, turned into the client's `JetStreamApiError`). That is
 * what `js.publish` sends too, without a request object, a promise and a
 * timer per message: measured here with 20 000 messages of 50 bytes and
 * 1000 in flight, 15 500–34 000 messages/s against 4 200–5 700 through
 * `js.publish` (a loaded 2-core machine). Acknowledgements come back in
 * publish order for one stream, so the first failure recorded is the
 * earliest message that failed. When none arrives for
 * {@linkcode ACK_TIMEOUT_MS} while messages wait, the oldest waiting one
 * fails.
 */
export class PublishWindow {
  readonly #nc: NatsConnection;
  readonly #maxPending: number;
  readonly #inbox: string;
  readonly #subscription: Subscription;
  readonly #pending = new Map<number, Pending>();
  #next = 0;
  #count = 0;
  #stream: string | undefined;
  #lastSequence = 0;
  #failure: Error | undefined;
  #progress: (() => void) | undefined;
  #lastProgressAt = performance.now();
  readonly #watchdogTimer: ReturnType<typeof setInterval>;
  #closed = false;

  /**
   * An empty window, subscribed to its acknowledgements until
   * {@linkcode flush}.
   * @param nc the connection to publish on.
   * @param maxPending acknowledgements awaited at most at once (default {@linkcode DEFAULT_MAX_PENDING_ACKS}).
   */
  constructor(nc: NatsConnection, maxPending: number = DEFAULT_MAX_PENDING_ACKS) {
    this.#nc = nc;
    this.#maxPending = maxPending;
    this.#inbox = createInbox();
    this.#subscription = nc.subscribe(`${this.#inbox}.*`, {
      callback: (error, msg) => this.#acknowledged(error, msg),
    });
    this.#watchdogTimer = setInterval(() => this.#watchdog(), 1000);
    Deno.unrefTimer(Number(this.#watchdogTimer)); // never keeps the process alive on its own
  }

  #fail(entry: Pending | undefined, reason: string, cause?: unknown): void {
    this.#failure ??= new Error(
      `Cannot publish ${entry?.what ?? "a message"} to ${
        entry?.subject ?? "its subject"
      }: ${reason}`,
      cause === undefined ? undefined : { cause },
    );
  }

  #acknowledged(error: Error | null, msg: Msg): void {
    if (error !== null) {
      this.#fail(this.#pending.values().next().value, error.message, error);
    } else {
      const id = Number(msg.subject.slice(this.#inbox.length + 1));
      const entry = this.#pending.get(id);
      if (entry !== undefined) {
        this.#pending.delete(id);
        if (msg.headers?.code === 503) {
          this.#fail(entry, "no stream stores the subject (503 no responders)");
        } else {
          try {
            const ack = JSON.parse(utf8.decode(msg.data)) as {
              stream?: string;
              seq?: number;
              error?: { code: number; err_code: number; description: string };
            };
            if (ack.error !== undefined) {
              const apiError = new jetstreamApi.JetStreamApiError(ack.error);
              this.#fail(entry, apiError.message, apiError);
            } else if (typeof ack.stream !== "string" || typeof ack.seq !== "number") {
              this.#fail(entry, `unexpected acknowledgement ${JSON.stringify(ack)}`);
            } else {
              this.#count++;
              this.#stream = ack.stream;
              if (ack.seq > this.#lastSequence) this.#lastSequence = ack.seq;
            }
          } catch (cause) {
            this.#fail(entry, "the acknowledgement is not JSON", cause);
          }
        }
      }
    }
    this.#wake();
  }

  /** Checks every second that acknowledgements keep arriving (see {@linkcode ACK_TIMEOUT_MS}). */
  #watchdog(): void {
    if (this.#pending.size === 0) {
      this.#lastProgressAt = performance.now();
      return;
    }
    if (performance.now() - this.#lastProgressAt < ACK_TIMEOUT_MS) return;
    this.#fail(
      this.#pending.values().next().value,
      `no acknowledgement within ${ACK_TIMEOUT_MS} ms`,
    );
    this.#pending.clear();
    this.#wake();
  }

  #wake(): void {
    this.#lastProgressAt = performance.now();
    const progress = this.#progress;
    this.#progress = undefined;
    progress?.();
  }

  /** Resolves at the next acknowledgement (or when the watchdog gives up). */
  #awaitProgress(): Promise<void> {
    return new Promise((resolve) => this.#progress = resolve);
  }

  /**
   * Publishes one message; resolves once the window has room for the next.
   * @param subject the subject (no wildcards).
   * @param data the payload.
   * @param what the message for errors, e.g. `line 7 of in.jsonl`.
   * @param headers the message's headers, if any.
   * @throws {Error} (after {@linkcode flush}-ing what is in flight) naming
   *   `what` and the subject of the first publish that failed.
   */
  async publish(
    subject: string,
    data: Uint8Array,
    what: string,
    headers?: MsgHdrs,
  ): Promise<void> {
    if (this.#failure !== undefined) await this.flush();
    const id = this.#next++;
    this.#pending.set(id, { what, subject });
    try {
      this.#nc.publish(subject, data, {
        reply: `${this.#inbox}.${id}`,
        ...(headers === undefined ? {} : { headers }),
      });
    } catch (error) {
      this.#pending.delete(id);
      this.#fail({ what, subject }, error instanceof Error ? error.message : String(error), error);
    }
    while (this.#pending.size >= this.#maxPending && this.#failure === undefined) {
      await this.#awaitProgress();
    }
    if (this.#failure !== undefined) await this.flush();
  }

  /**
   * Waits for every acknowledgement in flight and ends the subscription.
   * @returns what was stored.
   * @throws {Error} the first failed publish's error, followed by how many
   *   messages were stored and the last sequence.
   */
  async flush(): Promise<PublishTotals> {
    while (this.#pending.size > 0) await this.#awaitProgress();
    if (!this.#closed) {
      this.#closed = true;
      clearInterval(this.#watchdogTimer);
      this.#subscription.unsubscribe();
    }
    if (this.#failure !== undefined) {
      const failure = this.#failure;
      throw new Error(
        `${failure.message} (${this.#count} messages of this command were stored${
          this.#count > 0 ? `, up to sequence ${this.#lastSequence} of stream ${this.#stream}` : ""
        })`,
        { cause: failure.cause },
      );
    }
    return { count: this.#count, stream: this.#stream, lastSequence: this.#lastSequence };
  }
}

const utf8 = new TextDecoder();

/**
 * Checks a subject to publish to: valid tokens and no wildcards.
 * @param subject the subject given.
 * @returns `subject`.
 * @throws {UsageError} naming the subject and what is wrong.
 */
export function checkPublishSubject(subject: string): string {
  const where = `the subject ${JSON.stringify(subject)}`;
  checkSubject(subject, where);
  if (subject.split(".").some((t) => t === "*" || t === ">")) {
    throw new UsageError(`${where} has a wildcard: a message is published to one subject`);
  }
  return subject;
}

/**
 * Reads `--header K:V` flags.
 * @param specs the flags' values.
 * @returns `[key, value]` pairs in order (the value may contain `:`).
 * @throws {UsageError} naming the flag without `:` or with an empty
 *   or spaced key.
 */
export function parseHeaderFlags(specs: readonly string[]): [string, string][] {
  return specs.map((spec) => {
    const colon = spec.indexOf(":");
    const key = colon < 0 ? "" : spec.slice(0, colon).trim();
    if (colon < 0 || key === "" || /\s/.test(key)) {
      throw new UsageError(
        `--header must be KEY:VALUE with a key without spaces: current value is ${
          JSON.stringify(spec)
        }`,
      );
    }
    return [key, spec.slice(colon + 1).trim()];
  });
}

function headersOf(pairs: readonly [string, string][]): MsgHdrs | undefined {
  if (pairs.length === 0) return undefined;
  const h = natsHeaders();
  for (const [k, v] of pairs) h.append(k, v);
  return h;
}

/**
 * The stream that stores `subject`.
 * @param nc a connection.
 * @param subject a subject without wildcards.
 * @returns the stream's name.
 * @throws {Error} naming the subject when no stream stores it, with the
 *   command that creates one.
 */
export async function streamOfSubject(nc: NatsConnection, subject: string): Promise<string> {
  const jsm = await jetstreamApi.jetstreamManager(nc);
  try {
    return await jsm.streams.find(subject);
  } catch (error) {
    if (error instanceof jetstreamApi.JetStreamApiError && error.code === 10059) {
      throw new Error(
        `No stream stores subject ${subject}; create one first, e.g. weir stream add NAME --subjects ${subject}`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Options of {@linkcode publishMessages} (`weir stream publish`). */
export interface PublishMessagesOptions {
  /** The subject (no wildcards). */
  readonly subject: string;
  /** The payload, published as given. */
  readonly data: Uint8Array;
  /** Messages to publish, each with the same payload (at least 1). */
  readonly count: number;
  /** Headers of every message, `[key, value]`. */
  readonly headers: readonly [string, string][];
}

/**
 * Publishes `count` copies of a payload, in order, with acknowledgements.
 * @param nc a connection.
 * @param options what to publish.
 * @returns what was stored.
 * @throws {Error} naming the subject when no stream stores it, when the
 *   payload exceeds the server's `max_payload`, or when a publish fails
 *   (naming the message number).
 */
export async function publishMessages(
  nc: NatsConnection,
  options: PublishMessagesOptions,
): Promise<PublishTotals> {
  const maxPayload = nc.info?.max_payload;
  if (maxPayload !== undefined && options.data.length > maxPayload) {
    throw new Error(
      `Cannot publish to ${options.subject}: the payload is ${options.data.length} bytes, more than the server's max_payload of ${maxPayload} bytes`,
    );
  }
  const stream = await streamOfSubject(nc, options.subject);
  const window = new PublishWindow(nc);
  for (let i = 1; i <= options.count; i++) {
    await window.publish(
      options.subject,
      options.data,
      `message ${i} of ${options.count}`,
      headersOf(options.headers),
    );
  }
  const totals = await window.flush();
  return { ...totals, stream: totals.stream ?? stream };
}

/** Payload formats of `weir stream load --format` (see the module docs). */
export type LoadFormat = "jsonl" | "msgpack";

/** Formats `--format` accepts. */
export const LOAD_FORMATS: readonly LoadFormat[] = ["jsonl", "msgpack"];

/** One line of a file, numbered from 1, without its line ending. */
export interface FileLine {
  /** The line number (1-based). */
  readonly line: number;
  /** The text, without `\n` or `\r\n`. */
  readonly text: string;
}

/**
 * The lines of a UTF-8 text file, streamed. A UTF-8 byte-order mark at the
 * start is dropped. The decoder is strict, so bytes that are not UTF-8 fail
 * naming the line they are in (a lenient line reader such as
 * `node:readline` would turn them into U+FFFD and change the records).
 * @param path the file.
 * @returns an async iterable of lines (a final line ending adds no empty line).
 * @throws {Error} naming the file when it is missing or a directory, and
 *   the file and line when it is not UTF-8.
 */
export async function* fileLines(path: string): AsyncGenerator<FileLine> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
    if ((await file.stat()).isDirectory) {
      file.close();
      throw new Error(`Cannot read ${path}: it is a directory`);
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new Error(`Cannot read ${path}: no such file`, { cause: error });
    }
    throw error;
  }
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const decode = (bytes: Uint8Array, line: number): FileLine => {
    let end = bytes.length;
    if (end > 0 && bytes[end - 1] === 13) end--;
    const begin = line === 1 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    try {
      return { line, text: decoder.decode(bytes.subarray(begin, end)) };
    } catch (error) {
      throw new Error(`${path}:${line}: the line is not UTF-8 text`, { cause: error });
    }
  };
  let line = 1;
  let carry = new Uint8Array(0);
  const reader = file.readable.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      let buffer = value;
      if (carry.length > 0) {
        buffer = new Uint8Array(carry.length + value.length);
        buffer.set(carry);
        buffer.set(value, carry.length);
      }
      let start = 0;
      for (let nl = buffer.indexOf(10, start); nl >= 0; nl = buffer.indexOf(10, start)) {
        yield decode(buffer.subarray(start, nl), line);
        line++;
        start = nl + 1;
      }
      carry = buffer.slice(start);
    }
    if (carry.length > 0) yield decode(carry, line);
  } finally {
    await reader.cancel().catch(() => {});
  }
}

const encoder = new TextEncoder();

/** Characters of a bad line quoted at most in an error. */
const QUOTED_CHARS = 80;

/**
 * The payload of one JSON-lines line (see the module docs).
 * @param text the line.
 * @param format the payload format.
 * @param where the file and line for errors, e.g. `in.jsonl:7`.
 * @returns the payload bytes (a fresh copy).
 * @throws {Error} naming `where` when the line is not JSON.
 */
export function encodeJsonLine(text: string, format: LoadFormat, where: string): Uint8Array {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const quoted = text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}…` : text;
    throw new Error(
      `${where}: not a JSON value (${error instanceof Error ? error.message : String(error)}): ${
        JSON.stringify(quoted)
      }`,
      { cause: error },
    );
  }
  return format === "jsonl" ? encoder.encode(text) : new Uint8Array(pack(value));
}

/** Options of {@linkcode loadJsonLines} (`weir stream load`). */
export interface LoadOptions {
  /** The JSON-lines file. */
  readonly path: string;
  /** The subject to publish every line to (no wildcards). */
  readonly subject: string;
  /** The payload format (default `jsonl`). */
  readonly format?: LoadFormat;
  /** Headers of every message, `[key, value]`. */
  readonly headers?: readonly [string, string][];
  /** Acknowledgements awaited at most at once (default {@linkcode DEFAULT_MAX_PENDING_ACKS}). */
  readonly maxPending?: number;
}

/** What {@linkcode loadJsonLines} did. */
export interface LoadTotals extends PublishTotals {
  /** Blank lines skipped. */
  readonly blankLines: number;
}

/**
 * Checks every line of a JSON-lines file, then publishes one message per
 * non-blank line, in order (see the module docs).
 * @param nc a connection.
 * @param options the file, subject and format.
 * @returns what was stored and how many blank lines were skipped.
 * @throws {Error} naming the file when it is missing, the file and line
 *   when a line is not UTF-8 or JSON or too large for one message (then
 *   nothing is published), the subject when no stream stores it, and the
 *   line when a publish fails.
 */
export async function loadJsonLines(
  nc: NatsConnection,
  options: LoadOptions,
): Promise<LoadTotals> {
  const format = options.format ?? "jsonl";
  const maxPayload = nc.info?.max_payload;
  let blankLines = 0;
  for await (const { line, text } of fileLines(options.path)) {
    if (text.trim() === "") {
      blankLines++;
      continue;
    }
    const where = `${options.path}:${line}`;
    const payload = encodeJsonLine(text, format, where);
    if (maxPayload !== undefined && payload.length > maxPayload) {
      throw new Error(
        `${where}: the message would be ${payload.length} bytes, more than the server's max_payload of ${maxPayload} bytes`,
      );
    }
  }
  const stream = await streamOfSubject(nc, options.subject);
  const window = new PublishWindow(nc, options.maxPending);
  const pairs = options.headers ?? [];
  try {
    for await (const { line, text } of fileLines(options.path)) {
      if (text.trim() === "") continue;
      const where = `line ${line} of ${options.path}`;
      await window.publish(
        options.subject,
        encodeJsonLine(text, format, `${options.path}:${line}`),
        where,
        headersOf(pairs),
      );
    }
  } catch (error) {
    // The file changed between the passes, or a publish failed: settle what is in flight first.
    await window.flush().catch(() => {});
    throw error;
  }
  const totals = await window.flush();
  return { ...totals, stream: totals.stream ?? stream, blankLines };
}
