/**
 * A transactional producer on JetStream, one per sink subtask (Kafka's
 * transactional `KafkaProducer`): it owns transactionalIds, fences their
 * older epochs, publishes records of its open transaction in record batches
 * (one builder per subject, cut at `maxBatchBytes` and at every flush) with
 * a window of asynchronous acknowledgements, and moves transaction records
 * through the protocol of `protocol.ts`.
 *
 * ## Epochs and fencing
 *
 * {@linkcode TransactionalProducer.init} bumps the epoch of each owned
 * transactionalId with compare-and-set (Kafka's `initTransactions`). A
 * producer whose epoch is no longer current throws
 * {@linkcode ProducerFencedError} when it begins or pre-commits:
 *
 * - begin creates `txn.<id>` (open) first and checks the epoch after, so a
 *   transaction a fenced producer creates after the new owner listed the
 *   lingering ones is aborted by its own creator (or never gets a record);
 * - pre-commit checks the epoch before its compare-and-set.
 *
 * Commits are the committer's (`committer.ts`): only transactions of
 * completed checkpoints are committed, whoever commits them.
 *
 * ## Lingering transactions
 *
 * At the first `begin`, open transactions of older epochs of the owned ids
 * that were never pre-committed (no checkpoint holds them) are aborted
 * (`lingering.ts`); the pre-committed ones wait for the committer's first
 * commit after the restore.
 *
 * ## Invariants
 *
 * - One transaction is open at a time; `preCommit` publishes the open
 *   batches and awaits every outstanding acknowledgement, so its record
 *   and message counts and first and last sequences are complete, and a
 *   failed publish fails the transaction. A batch never spans two
 *   transactions.
 * - At most `maxInFlight` messages await their acknowledgement; `send`
 *   returns a promise only while the window is full.
 * - The open batches of all subjects hold at most
 *   {@linkcode MAX_OPEN_BATCH_BYTES} (then all are published), and a
 *   subject's buffer starts at {@linkcode INITIAL_BATCH_BYTES}, so many
 *   subjects cost little memory.
 * - Publishing goes through an {@linkcode AsyncPublisher}: a publish whose
 *   acknowledgement times out is sent again with the same `Nats-Msg-Id`, so
 *   the stream stores it once. An acknowledgement marked `duplicate` for a
 *   first try means an earlier message had that `Nats-Msg-Id` (txn ids that
 *   started again, e.g. after the bucket was deleted): the transaction
 *   fails rather than count a message the stream dropped. A collision whose
 *   first try timed out as well is not told apart (a double fault).
 * - A record that would take its subject's open batch past
 *   {@linkcode MAX_BATCH_PAYLOAD_BYTES} goes in the next batch, so only a
 *   record alone can exceed `max_payload`; it fails the job once
 *   (`RecordTooLargeError`).
 *
 * @module
 */

import { headers as natsHeaders, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { logger } from "../../runtime/log.ts";
import {
  decidePreCommit,
  MSG_ID_HEADER,
  msgIdOf,
  ownedSubtasks,
  ProducerFencedError,
  transactionalIdOf,
  TransactionStateError,
  TXN_HEADER,
  txnIdOf,
} from "./protocol.ts";
import type { TransactionLog } from "./transactions.ts";
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
import { abortLingering } from "./lingering.ts";

const log = logger("jetstream-sink");

/**
 * A transaction handle: plain data, checkpointed with the sink's state
 * (MessagePack-encodable).
 */
export interface JetStreamTxn {
  /** The txnId, `<transactionalId>.<epoch>.<counter>`. */
  id: string;
  /** `<prefix>.<subtask>`. */
  transactionalId: string;
  /** The producer epoch that began it. */
  epoch: number;
  /** Records published in it. */
  records: number;
  /** Messages published in it (a record batch is one message). */
  messages: number;
  /** Stream sequence of its first message (0: none yet). */
  firstSeq: number;
  /** Stream sequence of its last message (0: none yet). */
  lastSeq: number;
}

/** Options of {@linkcode TransactionalProducer.init}. */
export interface ProducerOptions {
  /** An open connection (the caller closes it). */
  readonly nc: NatsConnection;
  /** The transaction log. */
  readonly log: TransactionLog;
  /** The target stream: every acknowledgement must come from it. */
  readonly stream: string;
  /** The transactionalId prefix. */
  readonly prefix: string;
  /** The sink subtask. */
  readonly subtask: number;
  /** The sink's parallelism. */
  readonly parallelism: number;
  /** The job (epochs of one job follow its attempts). */
  readonly jobId: string;
  /** The execution attempt of the starting sink subtask. */
  readonly attempt: number;
  /** Messages awaiting acknowledgement at most. */
  readonly maxInFlight: number;
  /** A record batch is published once its payload reaches this many bytes. */
  readonly maxBatchBytes: number;
}

interface Owned {
  readonly transactionalId: string;
  readonly epoch: number;
  readonly settledEpoch: number;
  settled: boolean;
}

/** A sink subtask's transactional producer; see the module docs. */
export class TransactionalProducer {
  readonly #o: ProducerOptions;
  readonly #publisher: AsyncPublisher;
  readonly #owned: Owned[];
  #counter = 0;
  #cleanedAtBegin = false;
  #inflight: (Promise<void> | undefined)[] = [];
  #head = 0;
  #failure: Error | undefined;
  /** Open batches by subject; the last one used is cached. */
  readonly #batches = new Map<string, RecordBatchBuilder>();
  #lastSubject: string | undefined;
  #lastBatch: RecordBatchBuilder | undefined;
  /** The transaction the open batches belong to. */
  #batchTxn: JetStreamTxn | undefined;
  /** Bytes in the open batches of all subjects. */
  #openBytes = 0;

  private constructor(options: ProducerOptions, owned: Owned[]) {
    this.#o = options;
    this.#publisher = new AsyncPublisher(options.nc);
    this.#owned = owned;
  }

  /**
   * Takes ownership of the subtask's transactionalIds: bumps their epochs
   * (see the module docs).
   * @throws {Error} naming the bucket and key when the KV bucket cannot be used.
   */
  static async init(options: ProducerOptions): Promise<TransactionalProducer> {
    const known = await options.log.listProducerSubtasks(options.prefix);
    const owned: Owned[] = [];
    for (const subtask of ownedSubtasks(options.subtask, options.parallelism, known)) {
      const transactionalId = transactionalIdOf(options.prefix, subtask);
      const { value } = await options.log.bumpEpoch(transactionalId, options.parallelism, {
        jobId: options.jobId,
        attempt: options.attempt,
      });
      owned.push({
        transactionalId,
        epoch: value.epoch,
        settledEpoch: value.settledEpoch,
        settled: value.settledEpoch >= value.epoch,
      });
    }
    return new TransactionalProducer(options, owned);
  }

  /** The subtask's own transactionalId. */
  get transactionalId(): string {
    return this.#owned[0]!.transactionalId;
  }

  /** This producer's epoch of its own transactionalId. */
  get epoch(): number {
    return this.#owned[0]!.epoch;
  }

  /**
   * Begins a transaction: `txn.<id>` is created open before any record.
   * The first call aborts lingering transactions first (see the module docs).
   * @throws {ProducerFencedError} when a newer epoch owns the transactionalId.
   */
  async begin(): Promise<JetStreamTxn> {
    if (this.#failure) throw this.#failure;
    if (!this.#cleanedAtBegin) {
      await this.#cleanUp();
      this.#cleanedAtBegin = true;
    }
    const { transactionalId, epoch } = this;
    const id = txnIdOf(transactionalId, epoch, this.#counter++);
    const created = await this.#o.log.createTxn(id, {
      state: "open",
      producer: transactionalId,
      epoch,
      records: 0,
    });
    if (created === "exists") {
      // Ours when a retried create had landed; otherwise a newer owner wrote it aborted.
      const existing = await this.#o.log.getTxn(id);
      if (existing?.value.state !== "open" || existing.value.preCommitted) {
        throw await this.#fenced(`begins transaction ${id}`);
      }
    }
    await this.#checkEpoch(`begins transaction ${id}`, id);
    return { id, transactionalId, epoch, records: 0, messages: 0, firstSeq: 0, lastSeq: 0 };
  }

  /**
   * Adds one record of `txn` for `subject` to that subject's open batch;
   * publishes the batch, without waiting for its acknowledgement, once it
   * reaches `maxBatchBytes`.
   * @returns a promise only while the window of acknowledgements is full.
   * @throws {Error} naming the subject, stream and transaction when an earlier publish failed.
   */
  send(txn: JetStreamTxn, subject: string, data: Uint8Array): void | Promise<void> {
    if (this.#failure) throw this.#failure;
    if (this.#batchTxn !== txn) {
      if (this.#batchTxn !== undefined) this.#publishBatches();
      this.#batchTxn = txn;
    }
    txn.records++;
    let batch = this.#lastBatch;
    if (subject !== this.#lastSubject || batch === undefined) {
      batch = this.#batches.get(subject);
      if (batch === undefined) {
        batch = new RecordBatchBuilder(INITIAL_BATCH_BYTES);
        this.#batches.set(subject, batch);
      }
      this.#lastSubject = subject;
      this.#lastBatch = batch;
    }
    // Breaker fix: a record that would take the batch past max_payload goes in the next batch
    // (and the window is checked after that publish too).
    const cut = batch.wouldExceed(data.byteLength, MAX_BATCH_PAYLOAD_BYTES);
    if (cut) this.#publish(txn, subject, batch);
    batch.add(data);
    this.#openBytes += RECORD_LENGTH_BYTES + data.byteLength;
    if (batch.byteLength >= this.#o.maxBatchBytes) this.#publish(txn, subject, batch);
    else if (this.#openBytes > MAX_OPEN_BATCH_BYTES) this.#publishBatches();
    else if (!cut) return;
    if (this.#inflight.length - this.#head >= this.#o.maxInFlight) return this.#awaitWindow();
  }

  /** Publishes `batch` (non-empty) as the next message of `txn`. */
  #publish(txn: JetStreamTxn, subject: string, batch: RecordBatchBuilder): void {
    const count = batch.count;
    this.#openBytes -= batch.byteLength;
    const payload = batch.finish();
    const n = txn.messages++;
    const headers = natsHeaders();
    headers.set(TXN_HEADER, txn.id);
    const msgId = msgIdOf(txn.id, n);
    headers.set(MSG_ID_HEADER, msgId);
    headers.set(RECORD_BATCH_HEADER, String(count));
    const stream = this.#o.stream;
    const published = this.#publisher.publish(subject, payload, headers).then((ack) => {
      if (ack.stream !== stream) {
        throw new Error(`the subject is stored by stream ${ack.stream}, not by the sink's stream`);
      }
      if (ack.duplicate && !ack.retried) {
        // Breaker fix: the stream dropped this message as a duplicate of an earlier run's
        // message with the same Nats-Msg-Id; committing would show that run's records instead.
        throw new Error(
          `the stream already stores a message with ${MSG_ID_HEADER} ${msgId} (sequence ${ack.seq}) ` +
            `within its duplicate_window, so it dropped this one: the epochs of ${txn.transactionalId} ` +
            `started again (was bucket ${this.#o.log.bucket} deleted or expired?); a restart takes a newer epoch`,
        );
      }
      if (txn.firstSeq === 0 || ack.seq < txn.firstSeq) txn.firstSeq = ack.seq;
      if (ack.seq > txn.lastSeq) txn.lastSeq = ack.seq;
    }).catch((error) => {
      this.#failure ??= new Error(
        `Cannot publish message ${n} (${count} records, ${payload.byteLength} bytes) of transaction ${txn.id} ` +
          `to subject ${subject} of stream ${stream}: ${
            error instanceof Error ? error.message : error
          }`,
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
    });
    this.#inflight.push(published);
  }

  /** Publishes every open batch (of `#batchTxn`). */
  #publishBatches(): void {
    const txn = this.#batchTxn;
    if (txn === undefined) return;
    for (const [subject, batch] of this.#batches) {
      if (batch.count > 0) this.#publish(txn, subject, batch);
    }
    if (this.#batches.size > 64) {
      this.#batches.clear();
      this.#lastSubject = undefined;
      this.#lastBatch = undefined;
    }
  }

  /**
   * Publishes the open batches and awaits every outstanding acknowledgement.
   * @throws {Error} naming the subject, stream and transaction when a publish failed.
   */
  async flush(): Promise<void> {
    this.#publishBatches();
    while (this.#head < this.#inflight.length) await this.#takeOldest();
    this.#inflight = [];
    this.#head = 0;
    if (this.#failure) throw this.#failure;
  }

  /**
   * Pre-commits `txn`: awaits its acknowledgements and records its count and
   * sequences in the handle and in `txn.<id>` (still open).
   * @throws {ProducerFencedError} when a newer epoch owns the transactionalId or aborted `txn`.
   * @throws {TransactionStateError} when `txn` is committed or has no record.
   */
  async preCommit(txn: JetStreamTxn): Promise<void> {
    await this.flush();
    await this.#checkEpoch(`pre-commits transaction ${txn.id}`);
    const result = await this.#o.log.transition(txn.id, (current) =>
      decidePreCommit(current, {
        records: txn.records,
        messages: txn.messages,
        firstSeq: txn.firstSeq,
        lastSeq: txn.lastSeq,
      }));
    if (result.kind !== "refuse") return;
    if (result.reason === "aborted") throw await this.#fenced(`pre-commits transaction ${txn.id}`);
    throw new TransactionStateError(
      `Cannot pre-commit transaction ${txn.id} in bucket ${this.#o.log.bucket}: it is ${result.reason}`,
      txn.id,
    );
  }

  /** Aborts `txn` (open → aborted); idempotent; a committed transaction stays committed. */
  async abort(txn: JetStreamTxn): Promise<void> {
    const result = await this.#o.log.abort(txn.id, txn.transactionalId, txn.epoch);
    if (result.kind === "done" && result.outcome === "already-committed") {
      log.warn(
        `transaction ${txn.id} in bucket ${this.#o.log.bucket} was to be aborted but is committed; it stays committed`,
      );
    }
  }

  /** Waits for outstanding publishes (their failures are dropped: the transaction is abandoned). */
  async close(): Promise<void> {
    this.#batches.clear();
    this.#openBytes = 0;
    this.#lastSubject = undefined;
    this.#lastBatch = undefined;
    this.#batchTxn = undefined;
    this.#publisher.close();
    await Promise.allSettled(this.#inflight.slice(this.#head));
    this.#inflight = [];
    this.#head = 0;
  }

  async #takeOldest(): Promise<void> {
    const oldest = this.#inflight[this.#head];
    this.#inflight[this.#head] = undefined;
    this.#head++;
    await oldest;
  }

  async #awaitWindow(): Promise<void> {
    // Down to half, so that the next publishes go out in a burst (one socket write for many).
    const low = Math.floor(this.#o.maxInFlight / 2);
    while (this.#inflight.length - this.#head > low) await this.#takeOldest();
    if (this.#head > 4096 && this.#head * 2 > this.#inflight.length) {
      this.#inflight = this.#inflight.slice(this.#head);
      this.#head = 0;
    }
    if (this.#failure) throw this.#failure;
  }

  /** Throws {@linkcode ProducerFencedError} (aborting `txnId` first, if given) unless our epoch is current. */
  async #checkEpoch(action: string, txnId?: string): Promise<void> {
    const current = await this.#o.log.getProducer(this.transactionalId);
    if (current?.value.epoch === this.epoch) return;
    if (txnId !== undefined) {
      await this.#o.log.abort(txnId, this.transactionalId, this.epoch).catch(() => {});
    }
    throw new ProducerFencedError({
      transactionalId: this.transactionalId,
      epoch: this.epoch,
      currentEpoch: current?.value.epoch,
      action,
      bucket: this.#o.log.bucket,
    });
  }

  async #fenced(action: string): Promise<ProducerFencedError> {
    const current = await this.#o.log.getProducer(this.transactionalId).catch(() => undefined);
    return new ProducerFencedError({
      transactionalId: this.transactionalId,
      epoch: this.epoch,
      currentEpoch: current?.value.epoch,
      action,
      bucket: this.#o.log.bucket,
    });
  }

  /** Aborts the lingering transactions never pre-committed; see the module docs. */
  async #cleanUp(): Promise<void> {
    for (const owned of this.#owned) {
      if (owned.settled) continue;
      owned.settled = await abortLingering(this.#o.log, owned, false) === "settled";
    }
  }
}
