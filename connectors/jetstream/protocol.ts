/**
 * Weir's transactions on JetStream, the wire format: Kafka's transactions
 * emulated with what NATS 2.9 offers (no atomic batch publish): message
 * headers, `Nats-Msg-Id` deduplication and compare-and-set on a KV bucket.
 * This module is pure (no I/O): names, record shapes and the decisions of
 * every state transition; `transactions.ts` runs them against NATS.
 *
 * A reader can be written with any NATS client from this description.
 *
 * ## Data messages
 *
 * A data message is one JetStream message on the sink's target stream:
 *
 * - header `Weir-Txn: <txnId>`: the transaction it belongs to. A message
 *   without this header is non-transactional and visible at once.
 * - header `Nats-Msg-Id: <txnId>:<n>`, `n` the message's index in its
 *   transaction (0, 1, ...), so a retried publish is deduplicated by the
 *   stream (within its `duplicate_window`, 2 minutes by default).
 * - header `Weir-Batch: <count>` when the message is a record batch (see
 *   below); without it the message is one record.
 * - payload: one record (the sink's serializer's bytes, by default the
 *   value as JSON, UTF-8), or a record batch.
 *
 * ## Record batches
 *
 * A message with header `Weir-Batch: <count>` holds `count` records (a
 * decimal from 1 to 2^24, no sign, no leading zero). Its payload is the
 * records one after the other, each a 4-byte unsigned big-endian length
 * followed by that many bytes; the lengths cover the payload exactly:
 *
 * ```text
 * | len0 (u32 BE) | record 0 | len1 (u32 BE) | record 1 | ... | len(count-1) | record count-1 |
 * ```
 *
 * A reader that finds the lengths disagreeing with the count or the
 * payload fails, naming the stream, sequence and byte offset
 * (`record_batch.ts`); it never delivers part of a batch. Every record of
 * a batch has the message's subject, sequence, timestamp and transaction;
 * a record is addressed by (sequence, index in the batch). A message
 * without the header stays one record, so plain publishers and the sink
 * interoperate on one stream. The transactional sink cuts a batch per
 * subject at `maxBatchBytes` of payload (the server's `max_payload`, 1 MiB
 * by default, bounds it) and at every pre-commit, so batches never span
 * transactions. Records of different subjects in one transaction may
 * therefore reach the stream in another order than written; the order of
 * one subject's records is kept (as Kafka keeps it per partition).
 *
 * ## Transaction state: a KV bucket
 *
 * The bucket (default `weir-txn`, history 1, created if missing) holds:
 *
 * - `txn.<txnId>` → JSON {@linkcode TxnRecord}:
 *   `{ "state": "open"|"committed"|"aborted", "producer": <transactionalId>,
 *   "epoch": n, "records": n, "messages"?: n, "firstSeq"?: n, "lastSeq"?: n,
 *   "preCommitted"?: true }`: `records` counts records (a batch counts
 *   its `count`), `messages` the stream messages (absent: one per record),
 *   `firstSeq`/`lastSeq` the sequences of its first and last message.
 * - `producer.<transactionalId>` → JSON {@linkcode ProducerRecord}:
 *   `{ "epoch": n, "parallelism": n, "settledEpoch": n }`.
 *
 * Every write is a compare-and-set on the key's revision (a KV create for a
 * new key). The only transitions are open → open (pre-commit, which adds
 * `preCommitted`, `records`, `firstSeq`, `lastSeq`), open → committed and
 * open → aborted; committed and aborted are final, so a committed
 * transaction never becomes aborted, nor the reverse.
 *
 * ## Names
 *
 * - transactionalId = `<prefix>.<subtaskIndex>` (Kafka's
 *   `transactional.id`); the prefix is the user's (Kafka's
 *   `transactionalIdPrefix`) or `<stream>.<uid>` (see
 *   {@linkcode defaultTransactionalIdPrefix}), not the job id, so a resumed
 *   job fences and cleans up after the run it resumes.
 * - txnId = `<transactionalId>.<epoch>.<counter>`, unique forever: the epoch
 *   grows with every start of the subtask and the counter within it.
 * - Prefix tokens hold only `A-Z a-z 0-9 _ - =`, so every name is a valid KV
 *   key and header value; other characters of a stream name or uid are
 *   escaped as `=XX` (hex of each UTF-8 byte).
 *
 * The record carries no checkpoint id: nothing in the protocol needs it
 * (the sink operator keeps each committable with its checkpoint, and the
 * committer commits what it is handed).
 *
 * ## Writers (`producer.ts` runs this)
 *
 * 1. Start: for each transactionalId it owns, a writer bumps
 *    `producer.<id>`'s epoch with compare-and-set (epoch 0 when new).
 * 2. Begin: create `txn.<txnId>` open (a KV create), then read
 *    `producer.<id>`: an epoch other than the writer's means it is fenced
 *    (it aborts the transaction it just created, and stops).
 * 3. Publish the records, in batches (see above); they are invisible to
 *    read-committed readers while the transaction is open.
 * 4. Pre-commit: once every message is acknowledged, check the epoch, then
 *    open → open with `preCommitted`, `records`, `messages`, `firstSeq`,
 *    `lastSeq`.
 * 5. Commit (the committer, `committer.ts`; only transactions of
 *    completed checkpoints are committed, so no epoch is checked): check
 *    that the transaction's messages are still in the stream (stream
 *    state, boundary messages, deleted sequences: `retention.ts`; gone:
 *    the job fails without restarts), then open → committed (already
 *    committed: done; aborted or missing: a loud failure). Abort: open →
 *    aborted.
 * 6. Lingering transactions of older epochs of the owned ids are aborted
 *    (`lingering.ts`): at the first begin those not pre-committed, and
 *    those pre-committed once the committer's first commit of a checkpoint
 *    after the restored one shows every subtask has committed what it
 *    restored; then `settledEpoch` = the writer's epoch, and later writers
 *    scan only epochs from there.
 *
 * ## Read-committed visibility (Kafka's `isolation.level=read_committed`)
 *
 * Records are delivered in stream order. A record of an open transaction
 * (or one whose state is not known yet) blocks everything after it: that
 * record is the last stable offset. Records of committed transactions and
 * non-transactional records are delivered; records of aborted transactions
 * are skipped. The writer creates `txn.<txnId>` before it publishes any
 * record of the transaction, so a reader always finds the state of a
 * transaction it sees. See `read_committed.ts`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { decideCommit, parseTxnId, transactionalIdOf, txnIdOf } from "./protocol.ts";
 *
 * const id = txnIdOf(transactionalIdOf("orders=2Fout.sink", 1), 4, 17);
 * assert.equal(id, "orders=2Fout.sink.1.4.17");
 * assert.deepEqual(parseTxnId(id), {
 *   transactionalId: "orders=2Fout.sink.1",
 *   prefix: "orders=2Fout.sink",
 *   subtask: 1,
 *   epoch: 4,
 *   counter: 17,
 * });
 * const open = { state: "open", producer: "orders=2Fout.sink.1", epoch: 4, records: 3 } as const;
 * assert.equal(decideCommit(open).kind, "write");
 * assert.deepEqual(decideCommit({ ...open, state: "committed" }), { kind: "done", outcome: "already-committed" });
 * ```
 *
 * @module
 */

/** The header that names a record's transaction. */
export const TXN_HEADER = "Weir-Txn";
/** JetStream's deduplication header. */
export const MSG_ID_HEADER = "Nats-Msg-Id";
/** The default KV bucket of transaction state. */
export const DEFAULT_TXN_BUCKET = "weir-txn";
/** Key prefix of transaction records. */
export const TXN_KEY_PREFIX = "txn.";
/** Key prefix of producer records. */
export const PRODUCER_KEY_PREFIX = "producer.";

/** A transaction's state. `committed` and `aborted` are final. */
export type TxnState = "open" | "committed" | "aborted";

/** The value of `txn.<txnId>` (JSON). */
export interface TxnRecord {
  /** The state; see the module docs for the transitions. */
  readonly state: TxnState;
  /** The transactionalId that began it. */
  readonly producer: string;
  /** The producer's epoch when it began it. */
  readonly epoch: number;
  /** Records published in it (known once pre-committed; 0 before). */
  readonly records: number;
  /** Messages published in it, once pre-committed (absent in records of older writers: one per record). */
  readonly messages?: number;
  /** Stream sequence of its first record, once pre-committed with records. */
  readonly firstSeq?: number;
  /** Stream sequence of its last record, once pre-committed with records. */
  readonly lastSeq?: number;
  /** True once pre-committed: every record is stored, and it may be in a checkpoint. */
  readonly preCommitted?: boolean;
}

/** The value of `producer.<transactionalId>` (JSON). */
export interface ProducerRecord {
  /** The current epoch: the latest start of the subtask that owns the id. */
  readonly epoch: number;
  /** The sink's parallelism at that start. */
  readonly parallelism: number;
  /** Every transaction of an epoch below this one is committed, aborted or empty. */
  readonly settledEpoch: number;
  /**
   * The job and execution attempt whose sink took the current epoch. A sink
   * subtask of an older attempt of the same job that starts late (a zombie
   * still deploying while the coordinator already restarted) must not take
   * the epoch from the newer attempt: see {@linkcode decideEpochBump}.
   */
  readonly owner?: { readonly jobId: string; readonly attempt: number };
}

/**
 * Whether a sink subtask of `jobId`/`attempt` may bump the epoch of a
 * transactionalId whose record is `current`: always, unless the record's
 * owner is a newer attempt of the same job (then the caller is a zombie
 * and must stop). Epochs then follow attempts, not the order in which sink
 * subtasks happened to start. A different job id (a resumed run) always
 * takes over, as with Kafka's transactional ids.
 */
export function decideEpochBump(
  current: ProducerRecord | undefined,
  jobId: string,
  attempt: number,
): "bump" | "fenced" {
  const owner = current?.owner;
  return owner !== undefined && owner.jobId === jobId && owner.attempt > attempt
    ? "fenced"
    : "bump";
}

/**
 * A transaction's record is in a state that forbids an operation: e.g. a
 * commit of an aborted transaction, a transition out of a final state, or
 * a record without state. The message names the transaction, the bucket
 * and the state.
 */
export class TransactionStateError extends Error {
  /** The transaction. */
  readonly txnId: string;
  /**
   * Creates the error.
   * @param message what was wrong and where.
   * @param txnId the transaction concerned.
   * @param options the underlying error, if any.
   */
  constructor(message: string, txnId: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "TransactionStateError";
    this.txnId = txnId;
  }
}

/**
 * A producer whose epoch is no longer the current one (a zombie of an older
 * attempt or run) tried to begin, pre-commit or commit a transaction
 * (Kafka's `ProducerFencedException`). The newer owner of the
 * transactionalId has fenced it off; nothing it does becomes visible.
 */
export class ProducerFencedError extends Error {
  /** The transactionalId. */
  readonly transactionalId: string;
  /** The fenced producer's epoch. */
  readonly epoch: number;
  /** The current epoch (undefined when the producer record is gone). */
  readonly currentEpoch: number | undefined;
  /**
   * Creates the error.
   * @param options who was fenced, by which epoch, while doing what.
   */
  constructor(options: {
    transactionalId: string;
    epoch: number;
    currentEpoch: number | undefined;
    action: string;
    bucket: string;
  }) {
    super(
      `Producer ${options.transactionalId} with epoch ${options.epoch} is fenced while it ${options.action}: ` +
        `the current epoch in bucket ${options.bucket} is ${
          options.currentEpoch ?? "absent"
        }; a newer attempt of the sink owns this transactionalId`,
    );
    this.name = "ProducerFencedError";
    this.transactionalId = options.transactionalId;
    this.epoch = options.epoch;
    this.currentEpoch = options.currentEpoch;
  }
}

const TOKEN = /^[A-Za-z0-9_=-]+$/;
const PLAIN = /[A-Za-z0-9_-]/;
const TXN_ID = /^((?:[A-Za-z0-9_=-]+\.)*[A-Za-z0-9_=-]+)\.(\d+)\.(\d+)\.(\d+)$/;
/** Longest prefix accepted, in characters (KV keys and headers stay short). */
export const MAX_PREFIX_LENGTH = 200;

/**
 * Escapes `text` into one key token: letters, digits, `_` and `-` stay,
 * every other UTF-8 byte becomes `=XX` (upper-case hex).
 * @param text any string (a stream name, a uid).
 * @returns a non-empty token (`=` for the empty string).
 */
export function escapeToken(text: string): string {
  if (text === "") return "=";
  let out = "";
  for (const char of text) {
    if (PLAIN.test(char)) {
      out += char;
      continue;
    }
    for (const byte of new TextEncoder().encode(char)) {
      out += `=${byte.toString(16).toUpperCase().padStart(2, "0")}`;
    }
  }
  return out;
}

/**
 * The default transactionalId prefix: `<stream>.<uid>`, each escaped with
 * {@linkcode escapeToken}. Stable across attempts and resumed runs of a job.
 */
export function defaultTransactionalIdPrefix(stream: string, uid: string): string {
  return `${escapeToken(stream)}.${escapeToken(uid)}`;
}

/**
 * Checks a transactionalId prefix: dot-separated tokens of `A-Z a-z 0-9 _ - =`,
 * at most {@linkcode MAX_PREFIX_LENGTH} characters.
 * @returns the prefix.
 * @throws {TypeError} naming the prefix when it is not valid.
 */
export function checkPrefix(prefix: string): string {
  if (
    typeof prefix !== "string" || prefix.length === 0 || prefix.length > MAX_PREFIX_LENGTH ||
    !prefix.split(".").every((t) => TOKEN.test(t))
  ) {
    throw new TypeError(
      `A transactionalIdPrefix must be dot-separated tokens of letters, digits, '_', '-' and '=' ` +
        `(at most ${MAX_PREFIX_LENGTH} characters): current value is ${JSON.stringify(prefix)}`,
    );
  }
  return prefix;
}

/** `<prefix>.<subtask>`. */
export function transactionalIdOf(prefix: string, subtask: number): string {
  return `${prefix}.${subtask}`;
}

/** `<transactionalId>.<epoch>.<counter>`. */
export function txnIdOf(transactionalId: string, epoch: number, counter: number): string {
  return `${transactionalId}.${epoch}.${counter}`;
}

/** The parts of a txnId. */
export interface TxnIdParts {
  /** `<prefix>.<subtask>`. */
  readonly transactionalId: string;
  /** The transactionalId prefix. */
  readonly prefix: string;
  /** The sink subtask that owns the transactionalId. */
  readonly subtask: number;
  /** The producer epoch. */
  readonly epoch: number;
  /** The transaction's number within the epoch. */
  readonly counter: number;
}

/**
 * Parses a txnId (e.g. a `Weir-Txn` header).
 * @returns its parts, or undefined when it is not a txnId.
 */
export function parseTxnId(txnId: string): TxnIdParts | undefined {
  const match = TXN_ID.exec(txnId);
  if (!match) return undefined;
  const [, prefix, subtask, epoch, counter] = match;
  const numbers = [subtask, epoch, counter].map(Number);
  if (!numbers.every(Number.isSafeInteger)) return undefined;
  return {
    transactionalId: `${prefix}.${subtask}`,
    prefix: prefix!,
    subtask: numbers[0]!,
    epoch: numbers[1]!,
    counter: numbers[2]!,
  };
}

/** `txn.<txnId>`. */
export function txnKey(txnId: string): string {
  return `${TXN_KEY_PREFIX}${txnId}`;
}

/** `producer.<transactionalId>`. */
export function producerKey(transactionalId: string): string {
  return `${PRODUCER_KEY_PREFIX}${transactionalId}`;
}

/** The `Nats-Msg-Id` of message `n` of `txnId`: `<txnId>:<n>`. */
export function msgIdOf(txnId: string, n: number): string {
  return `${txnId}:${n}`;
}

/**
 * The transactionalIds a sink subtask owns: its own, and on a scale-down
 * every older one `j >= parallelism` with `j % parallelism == subtask`.
 * @param known subtask indices that have a producer record under the prefix.
 * @returns the owned indices, ascending, the subtask's own first.
 */
export function ownedSubtasks(subtask: number, parallelism: number, known: number[]): number[] {
  const extra = known.filter((j) => j >= parallelism && j % parallelism === subtask);
  return [subtask, ...[...new Set(extra)].sort((a, b) => a - b)];
}

/**
 * Parses a `txn.<txnId>` value.
 * @throws {TransactionStateError} naming the key and bucket when it is not a valid record.
 */
export function parseTxnRecord(text: string, txnId: string, bucket: string): TxnRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new TransactionStateError(
      `Key ${txnKey(txnId)} of bucket ${bucket} is not JSON: ${JSON.stringify(text.slice(0, 200))}`,
      txnId,
      { cause },
    );
  }
  const v = value as Partial<Record<keyof TxnRecord, unknown>>;
  const state = v?.state;
  if (
    typeof value !== "object" || value === null ||
    (state !== "open" && state !== "committed" && state !== "aborted") ||
    typeof v.producer !== "string" || !isCount(v.epoch) || !isCount(v.records) ||
    (v.messages !== undefined && !isCount(v.messages)) ||
    (v.firstSeq !== undefined && !isCount(v.firstSeq)) ||
    (v.lastSeq !== undefined && !isCount(v.lastSeq))
  ) {
    throw new TransactionStateError(
      `Key ${txnKey(txnId)} of bucket ${bucket} is not a transaction record: ${text.slice(0, 200)}`,
      txnId,
    );
  }
  return value as TxnRecord;
}

/**
 * Parses a `producer.<transactionalId>` value.
 * @throws {TypeError} naming the key and bucket when it is not a valid record.
 */
export function parseProducerRecord(
  text: string,
  transactionalId: string,
  bucket: string,
): ProducerRecord {
  let value: Partial<Record<keyof ProducerRecord, unknown>> | undefined;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const owner = (value as { owner?: unknown } | undefined)?.owner;
  const ownerOk = owner === undefined ||
    (typeof owner === "object" && owner !== null &&
      typeof (owner as { jobId?: unknown }).jobId === "string" &&
      isCount((owner as { attempt?: unknown }).attempt));
  if (
    typeof value !== "object" || value === null || !isCount(value.epoch) ||
    !isCount(value.parallelism) || !isCount(value.settledEpoch) || !ownerOk
  ) {
    throw new TypeError(
      `Key ${producerKey(transactionalId)} of bucket ${bucket} is not a producer record: ${
        text.slice(0, 200)
      }`,
    );
  }
  return value as unknown as ProducerRecord;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** What to do with a transaction record: write `next` with compare-and-set, or nothing. */
export type Transition =
  | { readonly kind: "write"; readonly next: TxnRecord }
  | {
    readonly kind: "done";
    readonly outcome: "already-committed" | "already-aborted" | "left-open";
  }
  | {
    readonly kind: "refuse";
    readonly reason: "aborted" | "committed" | "missing" | "not-pre-committed";
  };

/**
 * Commit: open → committed; already committed → nothing (commit is
 * idempotent); aborted or missing → refuse (pre-committed data cannot be
 * committed: the job must fail loudly).
 */
export function decideCommit(current: TxnRecord | undefined): Transition {
  if (current === undefined) return { kind: "refuse", reason: "missing" };
  switch (current.state) {
    case "committed":
      return { kind: "done", outcome: "already-committed" };
    case "aborted":
      return { kind: "refuse", reason: "aborted" };
    case "open":
      return { kind: "write", next: { ...current, state: "committed" } };
  }
}

/**
 * Abort: open → aborted; already aborted → nothing; committed → nothing
 * (final; the caller reports it); missing → write an aborted record, so
 * that the transaction can never be opened later.
 */
export function decideAbort(
  current: TxnRecord | undefined,
  txn: { readonly producer: string; readonly epoch: number },
): Transition {
  if (current === undefined) {
    return {
      kind: "write",
      next: { state: "aborted", producer: txn.producer, epoch: txn.epoch, records: 0 },
    };
  }
  switch (current.state) {
    case "aborted":
      return { kind: "done", outcome: "already-aborted" };
    case "committed":
      return { kind: "done", outcome: "already-committed" };
    case "open":
      return { kind: "write", next: { ...current, state: "aborted" } };
  }
}

/** What a pre-commit records: the counts and the stream sequences of the messages. */
export interface PreCommitDetails {
  /** Records published in the transaction. */
  readonly records: number;
  /** Messages published in the transaction (a batch is one message). */
  readonly messages: number;
  /** Stream sequence of the first record (0: none). */
  readonly firstSeq: number;
  /** Stream sequence of the last record (0: none). */
  readonly lastSeq: number;
}

/**
 * Pre-commit: open → open with `preCommitted` and the details; refused when
 * the transaction was aborted (by a newer epoch: the producer is fenced),
 * committed (a protocol violation) or is missing.
 */
export function decidePreCommit(
  current: TxnRecord | undefined,
  details: PreCommitDetails,
): Transition {
  if (current === undefined) return { kind: "refuse", reason: "missing" };
  if (current.state !== "open") return { kind: "refuse", reason: current.state };
  const next: TxnRecord = details.records > 0
    ? {
      ...current,
      records: details.records,
      messages: details.messages,
      firstSeq: details.firstSeq,
      lastSeq: details.lastSeq,
      preCommitted: true,
    }
    : { ...current, records: 0, preCommitted: true };
  return { kind: "write", next };
}

/**
 * Cleanup of a lingering transaction of an older epoch (Kafka aborts them
 * when a new producer epoch starts). A transaction never pre-committed is
 * in no checkpoint: abort it at once. A pre-committed one may still be
 * committed by whichever subtask restored it (after a rescale, another
 * one), so it is aborted only once `restoredCommitsDone`: when the first
 * checkpoint of the new attempt has completed, every subtask has committed
 * what it restored. Decided transactions are left alone.
 */
export function decideLingering(
  current: TxnRecord | undefined,
  restoredCommitsDone: boolean,
): Transition {
  if (current === undefined || current.state !== "open") {
    return {
      kind: "done",
      outcome: current?.state === "committed" ? "already-committed" : "already-aborted",
    };
  }
  if (current.preCommitted && !restoredCommitsDone) return { kind: "done", outcome: "left-open" };
  return { kind: "write", next: { ...current, state: "aborted" } };
}
