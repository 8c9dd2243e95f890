/**
 * The JetStream sink, a native SinkV2 (`runtime/api/sink_v2.ts`, after
 * Flink's `KafkaSink`): with `deliveryGuarantee: "exactly-once"` (the
 * default) Kafka's transactional producer emulated on JetStream (protocol
 * in `protocol.ts`); with `"at-least-once"` or `"none"` plain publishing
 * without transactions. Records go out in record batches, many per
 * message, in every mode.
 *
 * ## Exactly-once: when each hook runs, and what it does
 *
 * - `createCommitter` (first, on start and restore): a connection and the
 *   transaction log; the restored committables are committed then (see
 *   `committer.ts`: each transaction's messages are checked to be still in
 *   the stream, then open → committed; idempotent).
 * - `createWriter`: connects, checks the target stream, creates the KV
 *   bucket if missing, bumps the epochs of the subtask's transactionalIds
 *   (fencing older attempts and runs), aborts the lingering transactions
 *   never pre-committed, and begins a transaction (`transactional_writer.ts`).
 * - `write`: adds the record to its subject's batch; a batch of
 *   `maxBatchBytes` is published asynchronously with the `Weir-Txn`,
 *   `Weir-Batch` and `Nats-Msg-Id` headers, within a window of
 *   `maxInFlight` acknowledgements (and `maxInFlightBytes`); a failed
 *   publish fails the attempt.
 * - `flush` + `prepareCommit` (at the barrier): publishes the open
 *   batches, awaits every acknowledgement, marks the transaction
 *   pre-committed with its record and message counts and sequences, and
 *   begins the next one. The pre-committed transaction is the committable.
 * - commit (when the checkpoint completes, and again on restore):
 *   open → committed. A transaction that was aborted, or whose messages
 *   left the stream (retention, purge), fails the job without restarts:
 *   pre-committed data is never dropped quietly.
 * - `close`: closes the connections; the open transaction is aborted by
 *   the next start.
 *
 * ## Failures a restart cannot fix
 *
 * A target stream that does not exist (JetStream API error 10059, checked
 * when the writer opens) and a record whose subject the stream does not
 * store (a "no responders" publish while the stream exists with other
 * subjects, looked up after the failure: `subject_check.ts`) fail the job
 * once, naming the stream (and the subject with the stream's subjects).
 * NATS being down or restarting keeps restarting the job.
 *
 * Read the output with `readCommitted` (`reader.ts`), with
 * `JetStreamSource` (read-committed by default), or with any client
 * following the protocol; plain consumers see every record, aborted ones
 * included.
 *
 * ## At-least-once and none
 *
 * See `plain_writer.ts`: messages without `Weir-Txn`, visible at once; a
 * batch is also published `lingerMs` after its first record.
 * `"at-least-once"` awaits every acknowledgement at each barrier, so a
 * restore may write records again but never loses one; `"none"` does not
 * wait for the stream at all.
 *
 * ## What users must size
 *
 * - The target stream's limits (`max_age`, `max_msgs`, `max_bytes`,
 *   discard policy) apply to transactional records too: a commit whose
 *   records the stream already removed fails the job (see
 *   `retention.ts`), and with `discard: new` a full stream fails the
 *   sink's publishes (the job restarts). No timeout ever aborts a
 *   pre-committed transaction, so a stopped job leaves its last
 *   transaction open until it runs again.
 * - `maxBatchBytes` below the server's `max_payload` (1 MiB by default).
 * - The stream's `duplicate_window` (2 minutes by default) bounds the
 *   retry of a publish that timed out: the exactly-once writer refuses a
 *   stream whose window is below `MIN_DUPLICATE_WINDOW_MS` (15 s, see
 *   `duplicate_window.ts`), once.
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
 * assert.equal(sink.kind, "v2");
 * assert.equal(sink.deliveryGuarantee, "exactly-once");
 * ```
 *
 * @module
 */

import { jetstreamApi, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { connectNats, type NatsConnectionOptions } from "../../runtime/actor/nats_connect.ts";
import type { SinkInitContext } from "../../runtime/api/sink.ts";
import {
  checkDeliveryGuarantee,
  type Committer,
  type CommitterInitContext,
  type DeliveryGuarantee,
  type SinkV2,
  type SinkWriter,
  type WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
import { checkJetStreamCommittable } from "./committable.ts";
import { JetStreamCommitter } from "./committer.ts";
import { PlainWriter } from "./plain_writer.ts";
import { type JetStreamTxn, TransactionalProducer } from "./producer.ts";
import { checkPrefix, DEFAULT_TXN_BUCKET, defaultTransactionalIdPrefix } from "./protocol.ts";
import { TransactionalWriter } from "./transactional_writer.ts";
import { TransactionLog } from "./transactions.ts";
import { streamError } from "./stream_not_found.ts";
import { checkDuplicateWindow } from "./duplicate_window.ts";
import { explainPublishFailures } from "./subject_check.ts";
import { checkOptions, type OptionsShape } from "../../runtime/api/options_check.ts";

/** The known keys of {@linkcode JetStreamSinkOptions} and the kinds of their values. */
const SINK_OPTIONS: OptionsShape<JetStreamSinkOptions<unknown>> = {
  connection: "object",
  stream: "any", // checked below, with a message of its own
  subject: "any",
  serializer: "function",
  deliveryGuarantee: "any",
  lingerMs: "number",
  transactionalIdPrefix: "string",
  txnBucket: "string",
  maxInFlight: "number",
  maxInFlightBytes: "number",
  maxBatchBytes: "number",
};

/** Default messages awaiting acknowledgement per sink subtask. */
export const DEFAULT_MAX_IN_FLIGHT = 1000;
/** Default payload bytes awaiting acknowledgement per sink subtask (8 MiB); see `maxInFlightBytes`. */
export const DEFAULT_MAX_IN_FLIGHT_BYTES = 8 * 1024 * 1024;
/** Default payload size at which a record batch is published, in bytes (128 KiB). */
export const DEFAULT_MAX_BATCH_BYTES = 128 * 1024;
/** Default time a batch waits for more records without transactions, in ms. */
export const DEFAULT_LINGER_MS = 50;
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
  /**
   * Turns a record into its bytes (default: JSON, UTF-8). The sink copies
   * them into a batch before the next call, so a serializer may reuse one
   * buffer.
   */
  readonly serializer?: (value: T) => Uint8Array;
  /**
   * `"exactly-once"` (default: transactions), `"at-least-once"` (plain
   * publishes, every acknowledgement awaited at each barrier) or `"none"`
   * (fire and forget); see the module docs.
   */
  readonly deliveryGuarantee?: DeliveryGuarantee;
  /**
   * Without transactions: a batch is published at most this many ms after
   * its first record (default {@linkcode DEFAULT_LINGER_MS}). Exactly-once
   * batches wait for `maxBatchBytes` or the barrier (nobody can read them
   * before the commit).
   */
  readonly lingerMs?: number;
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
   * Payload bytes awaiting acknowledgement at most, counted as full batches
   * (default {@linkcode DEFAULT_MAX_IN_FLIGHT_BYTES}): the window is
   * `min(maxInFlight, max(4, floor(maxInFlightBytes / maxBatchBytes)))`
   * messages, 64 with the defaults. A deep window of large batches only
   * holds memory and lengthens the wait at each barrier.
   */
  readonly maxInFlightBytes?: number;
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

/** The sink's settings, resolved. */
interface Config<T> {
  readonly connection: NatsConnectionOptions;
  readonly subject: string | ((value: T) => string);
  readonly serializer: (value: T) => Uint8Array;
  readonly prefix: string | undefined;
  readonly bucket: string;
  readonly maxInFlight: number;
  readonly maxBatchBytes: number;
  readonly lingerMs: number;
}

/** The JetStream sink; see the module docs. */
export class JetStreamSink<T> implements SinkV2<T, JetStreamTxn, never> {
  /** Always `"v2"`. */
  readonly kind = "v2" as const;
  /** What this sink promises; see the module docs. */
  readonly deliveryGuarantee: DeliveryGuarantee;
  /** The target stream. */
  readonly stream: string;
  readonly #config: Config<T>;

  /**
   * Creates the sink (no I/O until a subtask starts).
   * @throws {TypeError} when `stream` or `subject` is empty, the prefix is not
   *   valid, or an option has the wrong type (`lingerMs: "5"`).
   * @throws {RangeError} for an unknown option (`checkOptions`), or when `maxInFlight`, `maxInFlightBytes`, `maxBatchBytes` or `lingerMs` is out of range.
   * @throws {DeliveryGuaranteeError} when `deliveryGuarantee` is not one of the three.
   */
  constructor(options: JetStreamSinkOptions<T>) {
    checkOptions("JetStreamSink", options, SINK_OPTIONS);
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
    const name = `JetStreamSink of stream ${options.stream}`;
    const maxInFlight = integer(
      name,
      "maxInFlight",
      options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
      1,
      Number.MAX_SAFE_INTEGER,
    );
    const maxBatchBytes = integer(
      name,
      "maxBatchBytes",
      options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES,
      1,
      MAX_BATCH_BYTES_LIMIT,
    );
    const maxInFlightBytes = integer(
      name,
      "maxInFlightBytes",
      options.maxInFlightBytes ?? DEFAULT_MAX_IN_FLIGHT_BYTES,
      1,
      Number.MAX_SAFE_INTEGER,
    );
    const lingerMs = integer(name, "lingerMs", options.lingerMs ?? DEFAULT_LINGER_MS, 0, 60_000);
    this.deliveryGuarantee = checkDeliveryGuarantee(
      name,
      options.deliveryGuarantee ?? "exactly-once",
      ["none", "at-least-once", "exactly-once"],
    );
    this.stream = options.stream;
    this.#config = {
      connection: options.connection,
      subject: options.subject,
      serializer: options.serializer ?? ((value: T) => encoder.encode(JSON.stringify(value))),
      prefix: options.transactionalIdPrefix === undefined
        ? undefined
        : checkPrefix(options.transactionalIdPrefix),
      bucket: options.txnBucket ?? DEFAULT_TXN_BUCKET,
      maxInFlight: Math.min(maxInFlight, Math.max(4, Math.floor(maxInFlightBytes / maxBatchBytes))),
      maxBatchBytes,
      lingerMs,
    };
    if (this.deliveryGuarantee === "exactly-once") {
      this.createCommitter = (context) => this.#createCommitter(context);
    }
  }

  async #createCommitter(context: CommitterInitContext): Promise<Committer<JetStreamTxn>> {
    const nc = await this.#connect(context, "committer");
    try {
      const log = await TransactionLog.open(nc, this.#config.bucket, { create: true });
      return new JetStreamCommitter({
        nc,
        log,
        stream: this.stream,
        prefix: this.#prefix(context),
        context,
      });
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  /**
   * Creates the subtask's writer: transactional for exactly-once, plain otherwise.
   * @throws {Error} naming the stream or bucket when they cannot be used, or
   *   the servers when NATS cannot be reached.
   * @throws {ProducerFencedError} when a newer attempt owns the transactionalId.
   */
  async createWriter(
    context: WriterInitContext<never>,
  ): Promise<SinkWriter<T, JetStreamTxn, never>> {
    const c = this.#config;
    const nc = await this.#connect(context, "writer");
    const explained = (writer: SinkWriter<T, JetStreamTxn, never>) =>
      explainPublishFailures(writer, {
        nc,
        stream: this.stream,
        where: `JetStreamSink (uid ${context.uid}, subtask ${context.subtaskIndex})`,
      });
    try {
      await this.#checkStream(nc, context);
      if (this.deliveryGuarantee !== "exactly-once") {
        return explained(
          new PlainWriter<T>({
            nc,
            guarantee: this.deliveryGuarantee,
            stream: this.stream,
            subject: c.subject,
            serializer: c.serializer,
            maxBatchBytes: c.maxBatchBytes,
            lingerMs: c.lingerMs,
            maxInFlight: c.maxInFlight,
            writerId: `${context.jobId}.${context.uid}.${context.subtaskIndex}.${context.attempt}.${
              crypto.randomUUID().slice(0, 8)
            }`,
          }) as SinkWriter<T, JetStreamTxn, never>,
        );
      }
      const log = await TransactionLog.open(nc, c.bucket, { create: true });
      const producer = await TransactionalProducer.init({
        nc,
        log,
        stream: this.stream,
        prefix: this.#prefix(context),
        subtask: context.subtaskIndex,
        parallelism: context.parallelism,
        jobId: context.jobId,
        attempt: context.attempt,
        maxInFlight: c.maxInFlight,
        maxBatchBytes: c.maxBatchBytes,
      });
      return explained(
        await TransactionalWriter.start<T>({
          nc,
          producer,
          subject: c.subject,
          serializer: c.serializer,
        }),
      );
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  /**
   * Creates the subtask's committer (see `committer.ts`); present for
   * exactly-once only (the writers without transactions have nothing to
   * commit).
   * @throws {Error} naming the bucket or the servers when they cannot be used.
   */
  readonly createCommitter?: (context: CommitterInitContext) => Promise<Committer<JetStreamTxn>>;

  /**
   * Validates a committable read back from a checkpoint (see `committable.ts`).
   * @throws {SinkStateError} naming the field and its value.
   */
  checkCommittable(raw: unknown): JetStreamTxn {
    return checkJetStreamCommittable(raw);
  }

  #prefix(context: SinkInitContext): string {
    return this.#config.prefix ?? defaultTransactionalIdPrefix(this.stream, context.uid);
  }

  async #connect(context: SinkInitContext, role: string): Promise<NatsConnection> {
    return await connectNats({
      name: `weir-sink-${this.stream}-${context.uid}-${context.subtaskIndex}-${role}`,
      ...this.#config.connection,
    });
  }

  async #checkStream(nc: NatsConnection, context: SinkInitContext): Promise<void> {
    let info: jetstreamApi.StreamInfo;
    try {
      info = await (await jetstreamApi.jetstreamManager(nc)).streams.info(this.stream);
    } catch (error) {
      throw streamError(
        `JetStreamSink (uid ${context.uid}) cannot write to stream ${this.stream}: ${
          error instanceof Error ? error.message : error
        }`,
        this.stream,
        error,
      );
    }
    // Breaker fix (duplicate_window.ts): a window shorter than a publish's retries would commit a
    // retried message twice.
    if (this.deliveryGuarantee === "exactly-once") {
      checkDuplicateWindow(
        `JetStreamSink (uid ${context.uid}, subtask ${context.subtaskIndex})`,
        this.stream,
        info.config.duplicate_window,
      );
    }
  }
}

function integer(name: string, field: string, value: number, min: number, max: number): number {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(
      `${name}: '${field}' must be an integer from ${min} to ${max}: current value is ${value}`,
    );
  }
  return value;
}
