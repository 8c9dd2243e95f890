/**
 * An exactly-once JetStream sink: Kafka's transactional producer, emulated
 * on JetStream (protocol in `protocol.ts`), driven by Weir's two-phase
 * commit (`runtime/api/sink.ts`, after Flink's `KafkaSink` with
 * `DeliveryGuarantee.EXACTLY_ONCE`).
 *
 * ## When each hook runs, and what it does
 *
 * - `open`: connects, checks the target stream, creates the KV bucket if
 *   missing, and bumps the epochs of the subtask's transactionalIds
 *   (fencing older attempts and runs).
 * - `beginTransaction` (at start and after each pre-commit): the first call
 *   aborts lingering transactions; then `txn.<id>` is created open.
 * - `invoke`: publishes the record asynchronously, with the `Weir-Txn` and
 *   `Nats-Msg-Id` headers, within a window of `maxInFlight`
 *   acknowledgements; a failed publish fails the attempt.
 * - `preCommit` (at the barrier): awaits every acknowledgement, then marks
 *   the transaction pre-committed with its record count and sequences.
 * - `commit` (when the checkpoint completes, and again on restore):
 *   open → committed; idempotent. It throws, failing the job, when the
 *   transaction was aborted: pre-committed data is never dropped quietly.
 * - `abort`: open → aborted; idempotent.
 *
 * Read the output with `readCommitted` (`reader.ts`), with
 * `JetStreamSource` (read-committed by default), or with any client
 * following the protocol; plain consumers see every record, aborted ones
 * included.
 *
 * ## What users must size
 *
 * - The target stream's limits (`max_age`, `max_msgs`, `max_bytes`,
 *   discard policy) apply to transactional records too: a stream that
 *   removes records before readers read them loses them, and with
 *   `discard: new` a full stream fails the sink's publishes (the job
 *   restarts). No timeout ever aborts a pre-committed transaction, so a
 *   stopped job leaves its last transaction open until it runs again.
 * - The stream's `duplicate_window` (2 minutes by default) bounds the
 *   retry of a publish that timed out.
 * - The KV bucket keeps one small record per transaction (one per
 *   checkpoint per subtask); give it a `max_age` longer than the target
 *   stream's if it must not grow forever. A record whose transaction has
 *   no state fails read-committed readers.
 * - JetStream on NATS 2.9 fsyncs every 2 minutes by default: set
 *   `sync_interval` for durability across power failures.
 * - One job at a time per transactionalId prefix: two jobs with the same
 *   prefix fence each other.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { JetStreamSink } from "./sink.ts";
 *
 * const sink = new JetStreamSink<{ key: string; total: number }>({
 *   connection: { servers: "nats://127.0.0.1:4222" },
 *   stream: "totals",
 *   subject: (r) => `totals.${r.key}`,
 * });
 * assert.equal(sink.kind, "two-phase-commit");
 * ```
 *
 * @module
 */

import { jetstreamApi, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { connectNats, type NatsConnectionOptions } from "../../runtime/actor/nats_connect.ts";
import type { SinkContext, SinkInitContext, TwoPhaseCommitSink } from "../../runtime/api/sink.ts";
import { type JetStreamTxn, TransactionalProducer } from "./producer.ts";
import { checkPrefix, DEFAULT_TXN_BUCKET, defaultTransactionalIdPrefix } from "./protocol.ts";
import { TransactionLog } from "./transactions.ts";

/** Default messages awaiting acknowledgement per sink subtask. */
export const DEFAULT_MAX_IN_FLIGHT = 1000;
/** Default payload size at which a record batch is published, in bytes (128 KiB). */
export const DEFAULT_MAX_BATCH_BYTES = 128 * 1024;
/** The largest `maxBatchBytes` accepted: NATS's default `max_payload` (1 MiB) less 64 KiB of room. */
export const MAX_BATCH_BYTES_LIMIT = 1024 * 1024 - 64 * 1024;

/** Options of {@linkcode JetStreamSink}. */
export interface JetStreamSinkOptions<T> {
  /** How each sink subtask connects to NATS. */
  readonly connection: NatsConnectionOptions;
  /** The target stream; every subject written must be stored by it. */
  readonly stream: string;
  /** The subject of every record, or of each record. */
  readonly subject: string | ((value: T) => string);
  /** Turns a record into the payload (default: JSON, UTF-8). */
  readonly serializer?: (value: T) => Uint8Array;
  /**
   * Kafka's `transactionalIdPrefix` (dot-separated tokens of letters,
   * digits, `_`, `-`, `=`). Default `<stream>.<uid>`, escaped: stable across
   * attempts and resumed runs, so a new run fences and cleans up the old.
   */
  readonly transactionalIdPrefix?: string;
  /** The KV bucket of transaction state (default `weir-txn`); created if missing, history 1. */
  readonly txnBucket?: string;
  /** Messages awaiting acknowledgement at most (default {@linkcode DEFAULT_MAX_IN_FLIGHT}). */
  readonly maxInFlight?: number;
  /**
   * A subject's record batch is published once its payload reaches this
   * many bytes (default {@linkcode DEFAULT_MAX_BATCH_BYTES}, at most
   * {@linkcode MAX_BATCH_BYTES_LIMIT}); open batches are published at every
   * pre-commit. A record larger than this goes alone in its batch, and the
   * server refuses a message above its `max_payload`.
   */
  readonly maxBatchBytes?: number;
}

const encoder = new TextEncoder();

/** What a subtask's copy of the sink holds after `open`. */
interface Opened {
  readonly nc: NatsConnection;
  readonly producer: TransactionalProducer;
}

/** The transactional JetStream sink; see the module docs. */
export class JetStreamSink<T> implements TwoPhaseCommitSink<T, JetStreamTxn> {
  /** Always `"two-phase-commit"`. */
  readonly kind = "two-phase-commit" as const;
  /** The target stream. */
  readonly stream: string;
  // TypeScript-private fields: the engine copies the sink per subtask (shallowly).
  private readonly config: {
    readonly connection: NatsConnectionOptions;
    readonly subject: string | ((value: T) => string);
    readonly serializer: (value: T) => Uint8Array;
    readonly prefix: string | undefined;
    readonly bucket: string;
    readonly maxInFlight: number;
    readonly maxBatchBytes: number;
  };
  private opened: Opened | undefined;

  /**
   * Creates the sink (no I/O until a subtask opens it).
   * @throws {TypeError} when `stream` or `subject` is empty or the prefix is not valid.
   * @throws {RangeError} when `maxInFlight` is not a positive integer.
   */
  constructor(options: JetStreamSinkOptions<T>) {
    if (typeof options.stream !== "string" || options.stream === "") {
      throw new TypeError(
        `A JetStreamSink needs a stream name: current value is ${JSON.stringify(options.stream)}`,
      );
    }
    if (options.subject === "" || options.subject === undefined) {
      throw new TypeError(
        `JetStreamSink of stream ${options.stream} needs a subject: current value is ${
          JSON.stringify(options.subject)
        }`,
      );
    }
    const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    if (!Number.isSafeInteger(maxInFlight) || maxInFlight < 1) {
      throw new RangeError(
        `JetStreamSink of stream ${options.stream}: 'maxInFlight' must be a positive integer: current value is ${maxInFlight}`,
      );
    }
    const maxBatchBytes = options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
    if (
      !Number.isSafeInteger(maxBatchBytes) || maxBatchBytes < 1 ||
      maxBatchBytes > MAX_BATCH_BYTES_LIMIT
    ) {
      throw new RangeError(
        `JetStreamSink of stream ${options.stream}: 'maxBatchBytes' must be an integer from 1 to ${MAX_BATCH_BYTES_LIMIT}: current value is ${maxBatchBytes}`,
      );
    }
    this.stream = options.stream;
    this.config = {
      connection: options.connection,
      subject: options.subject,
      serializer: options.serializer ?? ((value: T) => encoder.encode(JSON.stringify(value))),
      prefix: options.transactionalIdPrefix === undefined
        ? undefined
        : checkPrefix(options.transactionalIdPrefix),
      bucket: options.txnBucket ?? DEFAULT_TXN_BUCKET,
      maxInFlight,
      maxBatchBytes,
    };
    this.opened = undefined;
  }

  /**
   * Connects and takes ownership of the subtask's transactionalIds (see the module docs).
   * @throws {Error} naming the stream or bucket when they cannot be used, or the servers when NATS cannot be reached.
   */
  async open(context: SinkInitContext): Promise<void> {
    const { connection, bucket, maxInFlight, maxBatchBytes } = this.config;
    const stream = this.stream;
    const nc = await connectNats({
      name: `weir-sink-${stream}-${context.uid}-${context.subtaskIndex}`,
      ...connection,
    });
    try {
      try {
        await (await jetstreamApi.jetstreamManager(nc)).streams.info(stream);
      } catch (error) {
        throw new Error(
          `JetStreamSink (uid ${context.uid}) cannot write to stream ${stream}: ${
            error instanceof Error ? error.message : error
          }`,
          { cause: error },
        );
      }
      const log = await TransactionLog.open(nc, bucket, { create: true });
      const producer = await TransactionalProducer.init({
        nc,
        log,
        stream,
        prefix: this.config.prefix ?? defaultTransactionalIdPrefix(stream, context.uid),
        subtask: context.subtaskIndex,
        parallelism: context.parallelism,
        jobId: context.jobId,
        attempt: context.attempt,
        maxInFlight,
        maxBatchBytes,
      });
      this.opened = { nc, producer };
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  /** Begins a transaction (the first one aborts lingering transactions first). */
  beginTransaction(_context: SinkInitContext): Promise<JetStreamTxn> {
    return this.producer().begin();
  }

  /** Publishes `value` in `txn`, asynchronously. */
  invoke(txn: JetStreamTxn, value: T, _context: SinkContext): void | Promise<void> {
    const { subject, serializer } = this.config;
    return this.producer().send(
      txn,
      typeof subject === "string" ? subject : subject(value),
      serializer(value),
    );
  }

  /** Awaits `txn`'s acknowledgements and marks it pre-committed. */
  preCommit(txn: JetStreamTxn): Promise<void> {
    return this.producer().preCommit(txn);
  }

  /** Makes `txn` visible to read-committed readers; idempotent. */
  commit(txn: JetStreamTxn): Promise<void> {
    return this.producer().commit(txn);
  }

  /** Discards `txn`; idempotent. */
  abort(txn: JetStreamTxn): Promise<void> {
    return this.producer().abort(txn);
  }

  /** Waits for outstanding publishes and closes the connection. */
  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (!opened) return;
    try {
      await opened.producer.close();
    } finally {
      await opened.nc.close();
    }
  }

  /** The subtask's producer; throws when the sink is not open. */
  private producer(): TransactionalProducer {
    if (!this.opened) {
      throw new Error(
        `JetStreamSink of stream ${this.stream} is used before open() or after close()`,
      );
    }
    return this.opened.producer;
  }
}
