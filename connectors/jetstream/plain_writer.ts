/**
 * The JetStream sink's writer without transactions (Flink's `KafkaWriter`
 * with `DeliveryGuarantee.AT_LEAST_ONCE` or `NONE`): records go out in
 * record batches (`protocol.ts`), one open batch per subject, published
 * when it reaches `maxBatchBytes` or `lingerMs` after its first record,
 * and at every flush (all of them also once together they pass
 * `MAX_OPEN_BATCH_BYTES`). Its messages carry no `Weir-Txn`, so every reader
 * sees them at once.
 *
 * - `"at-least-once"`: each batch is published with an acknowledgement
 *   (an {@linkcode AsyncPublisher}, at most `maxInFlight` awaiting, with a
 *   `Nats-Msg-Id` of `<writer>:<n>` so a retried publish is stored once);
 *   `flush`, which the sink operator calls at every checkpoint barrier
 *   before the snapshot, publishes the open batches and awaits every
 *   acknowledgement, and a failed publish fails the attempt. So every
 *   record before a completed checkpoint is stored; a restore replays the
 *   records after it, which may be stored twice.
 * - `"none"`: batches are published on core NATS without waiting for the
 *   stream (fire and forget); a batch the stream refuses, or one lost in a
 *   disconnection, is lost without an error. `flush` only flushes the
 *   connection.
 *
 * @module
 */

import { headers as natsHeaders, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import type { SinkContext } from "../../runtime/api/sink.ts";
import type { SinkWriter } from "../../runtime/api/sink_v2.ts";
import { MSG_ID_HEADER } from "./protocol.ts";
import { AsyncPublisher } from "./publisher.ts";
import {
  classifyPublishFailure,
  INITIAL_BATCH_BYTES,
  MAX_BATCH_PAYLOAD_BYTES,
  MAX_OPEN_BATCH_BYTES,
  RECORD_BATCH_HEADER,
  RECORD_LENGTH_BYTES,
  RecordBatchBuilder,
} from "./record_batch.ts";

/** Options of {@linkcode PlainWriter}. */
export interface PlainWriterOptions<T> {
  /** An open connection; closed by `close`. */
  readonly nc: NatsConnection;
  /** `"at-least-once"` or `"none"` (see the module docs). */
  readonly guarantee: "at-least-once" | "none";
  /** The target stream (acknowledgements must come from it). */
  readonly stream: string;
  /** The subject of every record, or of each record. */
  readonly subject: string | ((value: T) => string);
  /** Turns a record into bytes (copied before the next call). */
  readonly serializer: (value: T) => Uint8Array;
  /** A batch is published once its payload reaches this many bytes. */
  readonly maxBatchBytes: number;
  /** A batch is published at most this many ms after its first record. */
  readonly lingerMs: number;
  /** Messages awaiting acknowledgement at most (at-least-once). */
  readonly maxInFlight: number;
  /** Unique per writer: the `Nats-Msg-Id` prefix. */
  readonly writerId: string;
}

/** A writer without transactions; see the module docs. */
export class PlainWriter<T> implements SinkWriter<T, never, never> {
  readonly #o: PlainWriterOptions<T>;
  readonly #publisher: AsyncPublisher | undefined;
  readonly #batches = new Map<string, RecordBatchBuilder>();
  #inflight: Promise<void>[] = [];
  #messages = 0;
  /** Bytes in the open batches of all subjects. */
  #openBytes = 0;
  #failure: Error | undefined;
  #linger: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  /** Creates the writer on an open connection. */
  constructor(options: PlainWriterOptions<T>) {
    this.#o = options;
    this.#publisher = options.guarantee === "at-least-once"
      ? new AsyncPublisher(options.nc)
      : undefined;
  }

  /**
   * Adds `value` to its subject's batch.
   * @returns a promise only while the acknowledgement window is full.
   * @throws {Error} naming the subject and stream when an earlier publish failed.
   */
  write(value: T, _context: SinkContext): void | Promise<void> {
    if (this.#failure) throw this.#failure;
    const subject = typeof this.#o.subject === "string" ? this.#o.subject : this.#o.subject(value);
    let batch = this.#batches.get(subject);
    if (batch === undefined) {
      batch = new RecordBatchBuilder(INITIAL_BATCH_BYTES);
      this.#batches.set(subject, batch);
    }
    const data = this.#o.serializer(value);
    // Breaker fix: a record that would take the batch past max_payload goes in the next batch
    // (and the window is checked after that publish too).
    const cut = batch.wouldExceed(data.byteLength, MAX_BATCH_PAYLOAD_BYTES);
    if (cut) this.#publish(subject, batch);
    batch.add(data);
    this.#openBytes += RECORD_LENGTH_BYTES + data.byteLength;
    if (batch.byteLength >= this.#o.maxBatchBytes || this.#openBytes > MAX_OPEN_BATCH_BYTES) {
      if (batch.byteLength >= this.#o.maxBatchBytes) this.#publish(subject, batch);
      else this.#publishAll();
      if (this.#inflight.length >= this.#o.maxInFlight) return this.#awaitInflight();
    } else {
      if (this.#linger === undefined) {
        this.#linger = setTimeout(() => {
          this.#linger = undefined;
          this.#publishAll();
        }, this.#o.lingerMs);
      }
      if (cut && this.#inflight.length >= this.#o.maxInFlight) return this.#awaitInflight();
    }
  }

  /**
   * Publishes the open batches; at-least-once awaits every acknowledgement.
   * @throws {Error} naming the subject and stream when a publish failed.
   */
  async flush(_endOfInput: boolean): Promise<void> {
    this.#publishAll();
    if (this.#publisher === undefined) {
      await this.#o.nc.flush();
      return;
    }
    await this.#awaitInflight();
  }

  /** Stops the linger timer and closes the connection; open batches are dropped (a restore replays them). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#linger !== undefined) clearTimeout(this.#linger);
    this.#batches.clear();
    this.#publisher?.close();
    await Promise.allSettled(this.#inflight);
    await this.#o.nc.close();
  }

  async #awaitInflight(): Promise<void> {
    const inflight = this.#inflight;
    this.#inflight = [];
    await Promise.all(inflight);
    if (this.#failure) throw this.#failure;
  }

  #publishAll(): void {
    if (this.#closed) return;
    if (this.#linger !== undefined) {
      clearTimeout(this.#linger);
      this.#linger = undefined;
    }
    for (const [subject, batch] of this.#batches) {
      if (batch.count > 0) this.#publish(subject, batch);
    }
    if (this.#batches.size > 64) this.#batches.clear();
  }

  #publish(subject: string, batch: RecordBatchBuilder): void {
    const count = batch.count;
    this.#openBytes -= batch.byteLength;
    const payload = batch.finish();
    const headers = natsHeaders();
    headers.set(RECORD_BATCH_HEADER, String(count));
    const n = this.#messages++;
    headers.set(MSG_ID_HEADER, `${this.#o.writerId}:${n}`);
    if (this.#publisher === undefined) {
      // Fire and forget: what the stream does with it is not awaited (a closed connection throws).
      try {
        this.#o.nc.publish(subject, payload, { headers });
      } catch (error) {
        throw classifyPublishFailure(error, {
          subject,
          stream: this.#o.stream,
          count,
          bytes: payload.byteLength,
          maxPayload: this.#o.nc.info?.max_payload,
        });
      }
      return;
    }
    const stream = this.#o.stream;
    this.#inflight.push(
      this.#publisher.publish(subject, payload, headers).then((ack) => {
        if (ack.stream !== stream) {
          throw new Error(
            `the subject is stored by stream ${ack.stream}, not by the sink's stream`,
          );
        }
      }).catch((error) => {
        this.#failure ??= new Error(
          `Cannot publish a batch of ${count} records (${payload.byteLength} bytes) to subject ${subject} ` +
            `of stream ${stream}: ${error instanceof Error ? error.message : error}`,
          {
            cause: classifyPublishFailure(error, {
              subject,
              stream,
              count,
              bytes: payload.byteLength,
              maxPayload: this.#o.nc.info?.max_payload,
            }),
          },
        );
      }),
    );
  }
}
