/**
 * One ordered feed of a stream (optionally filtered to one subject) through
 * a {@linkcode ReadCommittedBuffer}: the I/O edge of read-committed reading,
 * shared by the reader (`reader.ts`) and the source (`source.ts`).
 *
 * A pump reads an ordered consumer (JetStream's ordered pull consumer,
 * starting right after `afterSeq`) into the buffer, looks up the state of
 * each new transaction and takes state changes from a
 * {@linkcode TxnStateTracker}; {@linkcode MessageFeed.next} hands out
 * records synchronously, in stream order.
 *
 * ## Invariants
 *
 * - {@linkcode MessageFeed.position} is the stream sequence of the last
 *   record delivered or skipped (or `afterSeq`): everything up to it has
 *   been dealt with, nothing after it has, so a feed restarted after it
 *   neither repeats nor loses a record.
 * - At most `maxBuffered` messages, and at most
 *   {@linkcode MAX_BUFFERED_BYTES} of payload (a message of record batches
 *   may hold thousands of records), wait in the buffer: the pump stops
 *   reading until both drain to half. The consumer pulls by bytes,
 *   {@linkcode PULL_MAX_BYTES} per request (or twice the server's
 *   `max_payload`), so the client's own buffer stays bounded whatever the
 *   size of the messages.
 * - With `stopAt`, the feed reads no record after that sequence; it ends
 *   when every record up to it was delivered or skipped (when a consumer
 *   reports nothing more pending, the records up to `stopAt` that it did
 *   not deliver no longer exist).
 *
 * @module
 */

import { jetstreamApi } from "../../runtime/actor/nats_deps.ts";
import { TXN_HEADER } from "./protocol.ts";
import { type Isolation, ReadCommittedBuffer, type Sequenced } from "./read_committed.ts";
import type { TxnStateTracker } from "./txn_states.ts";
import { isStreamNotFound, streamError } from "./stream_not_found.ts";

/** Payload bytes buffered per feed at most before the pump pauses (16 MiB). */
export const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

/**
 * Bytes one pull request asks for at least (4 MiB); a pull asks for twice
 * the server's `max_payload` when that is more (a message larger than a
 * pull is never delivered).
 */
export const PULL_MAX_BYTES = 4 * 1024 * 1024;

/** A message's headers, read-only (the NATS client's `MsgHdrs` fits it). */
export interface MessageHeaders {
  /** The first value of header `name`, or `""` when it is absent. */
  get(name: string): string;
  /** Whether header `name` is present. */
  has(name: string): boolean;
  /** Every value of header `name`. */
  values(name: string): string[];
  /** The header names. */
  keys(): string[];
}

/** A message of a feed. */
export interface FeedMessage extends Sequenced {
  /** The stream sequence. */
  readonly seq: number;
  /** The `Weir-Txn` header, if any. */
  readonly txn: string | undefined;
  /** The message's subject. */
  readonly subject: string;
  /** The payload. */
  readonly data: Uint8Array;
  /** The headers, if any. */
  readonly headers: MessageHeaders | undefined;
  /** When the stream stored it, in ms since the epoch. */
  readonly timestamp: number;
}

/** Options of {@linkcode MessageFeed}. */
export interface FeedOptions {
  /** A JetStream client on an open connection. */
  readonly js: jetstreamApi.JetStreamClient;
  /** The stream. */
  readonly stream: string;
  /** Only messages of this subject (may have wildcards); all when undefined. */
  readonly filterSubject: string | undefined;
  /** Start right after this stream sequence (0: from the first). */
  readonly afterSeq: number;
  /** Read nothing after this sequence, and end there (inclusive); unbounded when undefined. */
  readonly stopAt: number | undefined;
  /** Kafka's isolation level. */
  readonly isolation: Isolation;
  /** The transaction states, opened on first need (read-committed only). */
  readonly states: () => Promise<TxnStateTracker>;
  /** Records buffered at most before the pump pauses. */
  readonly maxBuffered: number;
  /** Called whenever `next()` may return something new. */
  readonly onChange: () => void;
  /** The server's `max_payload` in bytes (the connection's server info), if known. */
  readonly maxPayload?: number | undefined;
}

/** What {@linkcode MessageFeed.next} returns. */
export type FeedStep =
  | { readonly kind: "record"; readonly message: FeedMessage }
  | { readonly kind: "skipped"; readonly message: FeedMessage }
  | { readonly kind: "blocked"; readonly txn: string; readonly state: "open" | "unknown" }
  | { readonly kind: "idle" }
  | { readonly kind: "end" };

/** A feed of one stream (or subject); see the module docs. */
export class MessageFeed {
  readonly #o: FeedOptions;
  readonly #buffer: ReadCommittedBuffer<FeedMessage>;
  #position: number;
  #pumpEnded = false;
  #error: Error | undefined;
  #closed = false;
  #messages: jetstreamApi.ConsumerMessages | undefined;
  #consumer: jetstreamApi.Consumer | undefined;
  #unsubscribe: (() => void) | undefined;
  #drained: (() => void) | undefined;
  #bufferedBytes = 0;
  #pump: Promise<void> | undefined;

  /** Creates the feed; {@linkcode MessageFeed.start} starts reading. */
  constructor(options: FeedOptions) {
    this.#o = options;
    this.#buffer = new ReadCommittedBuffer({ isolation: options.isolation });
    this.#position = options.afterSeq;
  }

  /** The sequence of the last record delivered or skipped (see the module docs). */
  get position(): number {
    return this.#position;
  }

  /** True once the pump read everything up to `stopAt` (bounded feeds only). */
  get caughtUp(): boolean {
    return this.#pumpEnded && this.#error === undefined;
  }

  /** True when {@linkcode MessageFeed.next} would return a record, a skip, the end or an error. */
  get ready(): boolean {
    if (this.#error !== undefined) return true;
    const head = this.#buffer.peek();
    return head.kind === "deliver" || head.kind === "skip" ||
      (head.kind === "empty" && this.#pumpEnded);
  }

  /** Starts the pump. */
  start(): void {
    this.#pump ??= this.#run();
  }

  /**
   * The next record in stream order, if it can leave.
   * @throws {Error} what failed the pump or a state lookup (naming stream and sequence).
   */
  next(): FeedStep {
    if (this.#error !== undefined) throw this.#error;
    const step = this.#buffer.next();
    switch (step.kind) {
      case "deliver":
      case "skip":
        this.#position = step.record.seq;
        this.#bufferedBytes -= step.record.data.byteLength;
        if (
          this.#drained && this.#buffer.size <= this.#o.maxBuffered / 2 &&
          this.#bufferedBytes <= MAX_BUFFERED_BYTES / 2
        ) {
          this.#drained();
          this.#drained = undefined;
        }
        return step.kind === "deliver"
          ? { kind: "record", message: step.record }
          : { kind: "skipped", message: step.record };
      case "blocked":
        return step;
      case "empty":
        if (!this.#pumpEnded) return { kind: "idle" };
        if (this.#o.stopAt !== undefined) this.#position = Math.max(this.#position, this.#o.stopAt);
        return { kind: "end" };
    }
  }

  /** Stops reading and releases the consumer. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
    this.#drained?.();
    this.#messages?.stop();
    await this.#pump;
    await this.#consumer?.delete().catch(() => {});
  }

  #where(seq?: number): string {
    const subject = this.#o.filterSubject === undefined ? "" : ` subject ${this.#o.filterSubject}`;
    return `stream ${this.#o.stream}${subject}${seq === undefined ? "" : ` sequence ${seq}`}`;
  }

  /**
   * Fails the feed. `ofStream`: the error is about the feed's stream itself,
   * so a "stream not found" ends the job without restarts
   * (`stream_not_found.ts`).
   */
  #fail(error: unknown, doing: string, ofStream = false): void {
    if (this.#closed || this.#error !== undefined) return;
    const message = `Cannot ${doing} in ${this.#where()}: ${
      error instanceof Error ? error.message : error
    }`;
    this.#error = ofStream
      ? streamError(message, this.#o.stream, error)
      : new Error(message, { cause: error });
    this.#o.onChange();
  }

  /**
   * Watches the consumer's notifications. The server deletes a stream's
   * consumers with it, and an ordered consumer whose consumer was deleted
   * waits for messages forever; so after "consumer deleted" (or "stream
   * not found") the feed asks whether the stream still exists, and fails
   * when it does not. Any other answer leaves the consumer to recover.
   */
  async #watchForDeletion(messages: jetstreamApi.ConsumerMessages): Promise<void> {
    for await (const status of messages.status()) {
      if (this.#closed || this.#error !== undefined) return;
      if (status.type !== "consumer_deleted" && status.type !== "stream_not_found") continue;
      try {
        const jsm = await this.#o.js.jetstreamManager(false);
        await jsm.streams.info(this.#o.stream);
      } catch (error) {
        if (isStreamNotFound(error)) {
          this.#fail(error, "read", true);
          messages.stop();
          return;
        }
      }
    }
  }

  async #run(): Promise<void> {
    const o = this.#o;
    try {
      if (o.stopAt !== undefined && o.afterSeq >= o.stopAt) {
        this.#pumpEnded = true;
        return;
      }
      const options: Partial<jetstreamApi.OrderedConsumerOptions> = {
        opt_start_seq: o.afterSeq + 1,
      };
      if (o.filterSubject !== undefined) options.filter_subjects = o.filterSubject;
      this.#consumer = await o.js.consumers.get(o.stream, options);
      if (this.#closed) return;
      if (o.stopAt !== undefined && (await this.#consumer.info(true)).num_pending === 0) {
        this.#pumpEnded = true;
        return;
      }
      this.#messages = await this.#consumer.consume({
        max_bytes: Math.max(PULL_MAX_BYTES, 2 * (o.maxPayload ?? 0)),
      });
      this.#watchForDeletion(this.#messages).catch((error) =>
        this.#fail(error, "watch the consumer")
      );
      for await (const m of this.#messages) {
        if (this.#closed) return;
        if (o.stopAt !== undefined && m.seq > o.stopAt) {
          this.#pumpEnded = true;
          return;
        }
        const txn = m.headers?.get(TXN_HEADER) || undefined;
        const message: FeedMessage = {
          seq: m.seq,
          txn,
          subject: m.subject,
          data: m.data,
          headers: m.headers,
          timestamp: Number(m.timestampNanos / 1_000_000n),
        };
        const lookup = this.#buffer.push(message);
        this.#bufferedBytes += m.data.byteLength;
        if (lookup !== undefined) this.#lookUp(lookup, m.seq);
        if (o.stopAt !== undefined && (m.seq >= o.stopAt || m.info.pending === 0)) {
          this.#pumpEnded = true;
          return;
        }
        o.onChange();
        if (this.#buffer.size >= o.maxBuffered || this.#bufferedBytes >= MAX_BUFFERED_BYTES) {
          await new Promise<void>((resolve) => this.#drained = resolve);
        }
      }
      if (!this.#closed) throw new Error("the consumer stopped");
    } catch (error) {
      this.#fail(error, "read", true);
    } finally {
      this.#messages?.stop();
      if (!this.#closed) o.onChange();
    }
  }

  #lookUp(txn: string, seq: number): void {
    this.#o.states().then(async (tracker) => {
      if (this.#closed) return;
      this.#unsubscribe ??= tracker.subscribe(
        (id, state) => {
          try {
            if (this.#buffer.setState(id, state)) this.#o.onChange();
          } catch (error) {
            this.#fail(error, `follow the state of transaction ${id}`);
          }
        },
        (error) => this.#fail(error, "follow transaction states"),
      );
      const state = await tracker.lookup(txn);
      if (this.#buffer.setState(txn, state)) this.#o.onChange();
    }).catch((error) =>
      this.#fail(error, `find the state of transaction ${txn} of sequence ${seq}`)
    );
  }
}
