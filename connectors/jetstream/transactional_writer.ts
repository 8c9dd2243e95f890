/**
 * The JetStream sink's exactly-once writer (Flink's `KafkaWriter` with
 * `DeliveryGuarantee.EXACTLY_ONCE`): one open transaction at a time,
 * records published in record batches through a
 * {@linkcode TransactionalProducer}.
 *
 * | SinkV2 hook | what it does |
 * |---|---|
 * | `createWriter` | connect, bump the epochs of the owned transactionalIds (fencing older attempts), abort the lingering transactions never pre-committed, begin a transaction |
 * | `write` | add the record to its subject's batch; a full batch is published, without waiting for its acknowledgement |
 * | `flush` | publish the open batches and await every acknowledgement |
 * | `prepareCommit(n)` | pre-commit the transaction (counts and sequences in its record), return it as the one committable, begin the next |
 * | `close` | stop publishing, abort the open transaction (never pre-committed, so in no checkpoint; if the abort fails, the next start aborts it), close the connection |
 *
 * It keeps no writer state: what a restore must abort it finds in the
 * transaction log by epoch (see `lingering.ts`).
 *
 * @module
 */

import type { NatsConnection } from "../../runtime/actor/nats_deps.ts";
import type { SinkContext } from "../../runtime/api/sink.ts";
import type { SinkWriter } from "../../runtime/api/sink_v2.ts";
import type { JetStreamTxn, TransactionalProducer } from "./producer.ts";
import { logger } from "../../runtime/log.ts";

const log = logger("jetstream-sink");

/** What the writer needs: the producer, the connection it closes, and how to write a record. */
export interface TransactionalWriterOptions<T> {
  /** An open connection; closed by `close`. */
  readonly nc: NatsConnection;
  /** The subtask's producer on it, initialized. */
  readonly producer: TransactionalProducer;
  /** The subject of every record, or of each record. */
  readonly subject: string | ((value: T) => string);
  /** Turns a record into bytes (copied before the next call). */
  readonly serializer: (value: T) => Uint8Array;
}

/** The exactly-once writer of one sink subtask; see the module docs. */
export class TransactionalWriter<T> implements SinkWriter<T, JetStreamTxn, never> {
  readonly #o: TransactionalWriterOptions<T>;
  readonly #subject: string | undefined;
  #txn: JetStreamTxn;
  /** False from the start of a pre-commit until the next transaction began: `#txn` is not to be aborted then. */
  #abortable = true;
  #closed = false;

  private constructor(options: TransactionalWriterOptions<T>, txn: JetStreamTxn) {
    this.#o = options;
    this.#subject = typeof options.subject === "string" ? options.subject : undefined;
    this.#txn = txn;
  }

  /**
   * Begins the first transaction (which aborts the lingering ones never pre-committed).
   * @throws {ProducerFencedError} when a newer attempt owns the transactionalId.
   */
  static async start<T>(options: TransactionalWriterOptions<T>): Promise<TransactionalWriter<T>> {
    return new TransactionalWriter(options, await options.producer.begin());
  }

  /** The open transaction's id. */
  get transactionId(): string {
    return this.#txn.id;
  }

  /** Adds `value` to the open transaction; a promise only while the acknowledgement window is full. */
  write(value: T, _context: SinkContext): void | Promise<void> {
    const subject = this.#subject ?? (this.#o.subject as (value: T) => string)(value);
    return this.#o.producer.send(this.#txn, subject, this.#o.serializer(value));
  }

  /** Publishes the open batches and awaits their acknowledgements. */
  async flush(_endOfInput: boolean): Promise<void> {
    await this.#o.producer.flush();
  }

  /**
   * Pre-commits the open transaction and begins the next.
   * @returns the pre-committed transaction, a copy (plain data).
   * @throws {ProducerFencedError} when a newer attempt owns the transactionalId.
   */
  async prepareCommit(_checkpointId: number): Promise<readonly JetStreamTxn[]> {
    const txn = this.#txn;
    this.#abortable = false;
    await this.#o.producer.preCommit(txn);
    this.#txn = await this.#o.producer.begin();
    this.#abortable = true;
    return [{ ...txn }];
  }

  /**
   * Stops publishing, aborts the open transaction (see the module docs) and
   * closes the connection.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#o.producer.close();
      if (!this.#abortable) return; // closed during a pre-commit: the next start decides
      await this.#o.producer.abort(this.#txn).catch((error) =>
        log.warn(
          `could not abort transaction ${this.#txn.id} at close (the next start aborts it): ${
            error instanceof Error ? error.message : error
          }`,
        )
      );
    } finally {
      await this.#o.nc.close();
    }
  }
}
