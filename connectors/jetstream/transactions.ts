/**
 * The transaction log: the KV bucket of transaction and producer records
 * (format in `protocol.ts`), with every write a compare-and-set on the
 * key's revision. It executes the pure decisions of `protocol.ts`.
 *
 * ## Invariants
 *
 * - A transition reads the record, decides, and writes with the revision it
 *   read; a concurrent writer makes the write fail, and the transition reads
 *   and decides again. So two parties can never both move a record out of
 *   `open` (one commits or aborts, the other sees the result).
 * - Reads go to the stream leader (no direct get), so a read after a write
 *   that was acknowledged sees it.
 * - Transient failures (timeouts, no responders, a lost connection) are
 *   retried {@linkcode KV_ATTEMPTS} times with a doubling delay, then thrown
 *   with the key, the bucket and the cause.
 *
 * @module
 */

import {
  ConnectionError,
  jetstreamApi,
  kvApi,
  type NatsConnection,
  NoRespondersError,
  RequestError,
  TimeoutError,
} from "../../runtime/actor/nats_deps.ts";
import {
  decideAbort,
  decideEpochBump,
  parseProducerRecord,
  parseTxnRecord,
  PRODUCER_KEY_PREFIX,
  ProducerFencedError,
  producerKey,
  type ProducerRecord,
  type Transition,
  TXN_KEY_PREFIX,
  txnKey,
  type TxnRecord,
} from "./protocol.ts";

/** Attempts of a KV operation that fails transiently. */
export const KV_ATTEMPTS = 6;
/** First delay between two attempts, in ms; it doubles each time. */
const FIRST_DELAY_MS = 50;

const encoder = new TextEncoder();

/** A record with the revision it was read at. */
export interface Versioned<R> {
  /** The record. */
  readonly value: R;
  /** Its KV revision (the stream sequence of the write). */
  readonly revision: number;
}

/** What a transition did. */
export type TransitionResult =
  | { readonly kind: "written"; readonly record: TxnRecord }
  | Exclude<Transition, { kind: "write" }>;

/** True for failures worth another attempt: timeouts, no responders, connection trouble. */
export function isTransient(error: unknown): boolean {
  return error instanceof TimeoutError || error instanceof NoRespondersError ||
    error instanceof RequestError || error instanceof ConnectionError;
}

function isWrongLastSequence(error: unknown): boolean {
  return error instanceof jetstreamApi.JetStreamApiError &&
    (error.code === jetstreamApi.JetStreamApiCodes.StreamWrongLastSequence ||
      error.code === jetstreamApi.JetStreamApiCodes.StreamWrongLastSequenceUnknown);
}

/** Runs `op`, retrying transient failures; `what` names the operation in the error. */
export async function withRetries<R>(what: string, op: () => Promise<R>): Promise<R> {
  let delayMs = FIRST_DELAY_MS;
  for (let attempt = 1;; attempt++) {
    try {
      return await op();
    } catch (error) {
      if (!isTransient(error) || attempt >= KV_ATTEMPTS) {
        throw new Error(
          `Cannot ${what}${attempt > 1 ? ` after ${attempt} attempts` : ""}: ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs *= 2;
    }
  }
}

/**
 * The KV bucket of transaction state, opened on a connection the caller
 * owns.
 */
export class TransactionLog {
  /** The bucket's name. */
  readonly bucket: string;
  readonly #kv: kvApi.KV;
  readonly #js: jetstreamApi.JetStreamClient;
  readonly #jsm: jetstreamApi.JetStreamManager;

  private constructor(
    bucket: string,
    kv: kvApi.KV,
    js: jetstreamApi.JetStreamClient,
    jsm: jetstreamApi.JetStreamManager,
  ) {
    this.bucket = bucket;
    this.#kv = kv;
    this.#js = js;
    this.#jsm = jsm;
  }

  /**
   * Opens `bucket`, creating it (history 1) when `create` and it is missing.
   * @throws {Error} naming the bucket when it cannot be created or opened.
   */
  static async open(
    nc: NatsConnection,
    bucket: string,
    options: { readonly create: boolean },
  ): Promise<TransactionLog> {
    const kvm = new kvApi.Kvm(nc);
    if (options.create) {
      try {
        await withRetries(`create KV bucket ${bucket}`, () => kvm.create(bucket, { history: 1 }));
      } catch (error) {
        // It may exist with another configuration (e.g. more replicas): use it as it is.
        const exists = await kvm.open(bucket).then((kv) => kv.status()).then(
          () => true,
          () => false,
        );
        if (!exists) throw error;
      }
    }
    // Bound without direct get: reads go to the leader and see every acknowledged write.
    const kv = await kvm.open(bucket);
    const jsm = await jetstreamApi.jetstreamManager(nc);
    return new TransactionLog(bucket, kv, jetstreamApi.jetstream(nc), jsm);
  }

  /** The record of `txnId`, or undefined when there is none. */
  async getTxn(txnId: string): Promise<Versioned<TxnRecord> | undefined> {
    const entry = await withRetries(
      `read key ${txnKey(txnId)} of bucket ${this.bucket}`,
      () => this.#kv.get(txnKey(txnId)),
    );
    if (entry === null || entry.operation !== "PUT") return undefined;
    return {
      value: parseTxnRecord(entry.string(), txnId, this.bucket),
      revision: entry.revision,
    };
  }

  /** The producer record of `transactionalId`, or undefined when there is none. */
  async getProducer(transactionalId: string): Promise<Versioned<ProducerRecord> | undefined> {
    const key = producerKey(transactionalId);
    const entry = await withRetries(
      `read key ${key} of bucket ${this.bucket}`,
      () => this.#kv.get(key),
    );
    if (entry === null || entry.operation !== "PUT") return undefined;
    return {
      value: parseProducerRecord(entry.string(), transactionalId, this.bucket),
      revision: entry.revision,
    };
  }

  /**
   * Creates `txn.<txnId>`.
   * @returns `"created"`, or `"exists"` when the key is already there.
   */
  async createTxn(txnId: string, record: TxnRecord): Promise<"created" | "exists"> {
    return (await this.#create(txnKey(txnId), record)) === undefined ? "exists" : "created";
  }

  /**
   * Moves `txn.<txnId>` with `decide` (see the module docs): reads, decides
   * and writes with compare-and-set until the write succeeds or `decide`
   * returns something else than a write.
   */
  async transition(
    txnId: string,
    decide: (current: TxnRecord | undefined) => Transition,
  ): Promise<TransitionResult> {
    for (;;) {
      const current = await this.getTxn(txnId);
      const decision = decide(current?.value);
      if (decision.kind !== "write") return decision;
      const key = txnKey(txnId);
      const revision = current === undefined
        ? await this.#create(key, decision.next)
        : await this.#update(key, decision.next, current.revision);
      if (revision !== undefined) return { kind: "written", record: decision.next };
    }
  }

  /**
   * Starts a new epoch of `transactionalId` (Kafka's `initTransactions`):
   * epoch + 1 with compare-and-set, or epoch 0 when the id is new, recording
   * `owner` (the job and attempt of the starting sink subtask).
   * @returns the new record and its revision.
   * @throws {ProducerFencedError} when a newer attempt of the same job owns the id
   *   (see `decideEpochBump`).
   */
  async bumpEpoch(
    transactionalId: string,
    parallelism: number,
    owner: { jobId: string; attempt: number },
  ): Promise<Versioned<ProducerRecord>> {
    const key = producerKey(transactionalId);
    for (;;) {
      const current = await this.getProducer(transactionalId);
      if (decideEpochBump(current?.value, owner.jobId, owner.attempt) === "fenced") {
        throw new ProducerFencedError({
          transactionalId,
          epoch: current!.value.epoch,
          currentEpoch: current!.value.epoch,
          action: `starts for attempt ${owner.attempt} of job ${owner.jobId} (attempt ` +
            `${current!.value.owner!.attempt} already owns it)`,
          bucket: this.bucket,
        });
      }
      const next: ProducerRecord = current === undefined
        ? { epoch: 0, parallelism, settledEpoch: 0, owner }
        : { ...current.value, epoch: current.value.epoch + 1, parallelism, owner };
      const revision = current === undefined
        ? await this.#create(key, next)
        : await this.#update(key, next, current.revision);
      if (revision !== undefined) return { value: next, revision };
    }
  }

  /**
   * Records that every transaction of epochs below `epoch` is decided, if
   * `epoch` is still the current one.
   * @returns false when a newer epoch started meanwhile (the caller is fenced).
   */
  async settle(transactionalId: string, epoch: number): Promise<boolean> {
    for (;;) {
      const current = await this.getProducer(transactionalId);
      if (current === undefined || current.value.epoch !== epoch) return false;
      if (current.value.settledEpoch >= epoch) return true;
      const next = { ...current.value, settledEpoch: epoch };
      const revision = await this.#update(producerKey(transactionalId), next, current.revision);
      if (revision !== undefined) return true;
    }
  }

  /** The subtask indices with a producer record under `prefix`. */
  async listProducerSubtasks(prefix: string): Promise<number[]> {
    const head = `${PRODUCER_KEY_PREFIX}${prefix}.`;
    const latest = await this.#latest(`${head}*`);
    return [...latest.keys()].map((k) => Number(k.slice(head.length)))
      .filter((n) => Number.isSafeInteger(n) && n >= 0);
  }

  /**
   * The open transactions of `transactionalId`'s epoch `epoch`, in counter
   * order, from one pass over the latest values of `txn.<transactionalId>.<epoch>.*`.
   */
  async openTxns(transactionalId: string, epoch: number): Promise<string[]> {
    const base = `${transactionalId}.${epoch}.`;
    const open: string[] = [];
    for (const [key, text] of await this.#latest(`${TXN_KEY_PREFIX}${base}*`)) {
      const txnId = key.slice(TXN_KEY_PREFIX.length);
      if (parseTxnRecord(text, txnId, this.bucket).state === "open") open.push(txnId);
    }
    return open.sort((a, b) => Number(a.slice(base.length)) - Number(b.slice(base.length)));
  }

  /**
   * Aborts `txnId` (see `decideAbort`).
   * @returns what happened.
   */
  async abort(txnId: string, producer: string, epoch: number): Promise<TransitionResult> {
    return await this.transition(txnId, (current) => decideAbort(current, { producer, epoch }));
  }

  /**
   * The latest value of every key matching `filter` (key → text): an
   * ordered consumer over the bucket's stream, last message per key, read
   * until it reports nothing pending or passes the stream's last sequence
   * when the scan began. (The KV client's `keys()` may wait for a 30 s
   * heartbeat when keys change during the scan.) Deleted keys are left out.
   */
  async #latest(filter: string): Promise<Map<string, string>> {
    return await withRetries(`list keys ${filter} of bucket ${this.bucket}`, async () => {
      const stream = `KV_${this.bucket}`;
      const subjectPrefix = `$KV.${this.bucket}.`;
      const lastSeq = (await this.#jsm.streams.info(stream)).state.last_seq;
      const consumer = await this.#js.consumers.get(stream, {
        filter_subjects: `${subjectPrefix}${filter}`,
        deliver_policy: jetstreamApi.DeliverPolicy.LastPerSubject,
      });
      const latest = new Map<string, { seq: number; text: string | undefined }>();
      try {
        if ((await consumer.info(true)).num_pending === 0) return new Map<string, string>();
        for await (const m of await consumer.consume()) {
          const key = m.subject.slice(subjectPrefix.length);
          const operation = m.headers?.get("KV-Operation");
          const deleted = operation === "DEL" || operation === "PURGE";
          if ((latest.get(key)?.seq ?? 0) < m.seq) {
            latest.set(key, { seq: m.seq, text: deleted ? undefined : m.string() });
          }
          if (m.info.pending === 0 || m.seq >= lastSeq) break;
        }
      } finally {
        await consumer.delete().catch(() => {});
      }
      const values = new Map<string, string>();
      for (const [key, { text }] of latest) if (text !== undefined) values.set(key, text);
      return values;
    });
  }

  /** Creates `key`; its revision, or undefined when the key exists. */
  async #create(key: string, value: unknown): Promise<number | undefined> {
    try {
      return await withRetries(
        `create key ${key} of bucket ${this.bucket}`,
        () => this.#kv.create(key, encoder.encode(JSON.stringify(value))),
      );
    } catch (error) {
      if (isWrongLastSequence((error as Error).cause)) return undefined;
      throw error;
    }
  }

  /** Writes `value` if the key is still at `revision`: the new revision, or undefined when it moved on. */
  async #update(key: string, value: unknown, revision: number): Promise<number | undefined> {
    try {
      return await withRetries(
        `update key ${key} of bucket ${this.bucket} at revision ${revision}`,
        () => this.#kv.update(key, encoder.encode(JSON.stringify(value)), revision),
      );
    } catch (error) {
      if (isWrongLastSequence((error as Error).cause)) return undefined;
      throw error;
    }
  }
}
