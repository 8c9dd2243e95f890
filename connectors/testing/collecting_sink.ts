/**
 * An exactly-once sink in miniature, for tests: it collects what a job
 * commits, so a test can assert exactly-once output (after Bytewax's
 * `TestingSink`, made transactional after Flink's SinkV2 writer/committer
 * split and `TwoPhaseCommitSinkFunction`).
 *
 * ## The protocol, in memory
 *
 * It is a `SinkV2` (`kind: "v2"`) whose committables and writer state are
 * transactions; the transaction methods below are its building blocks (and
 * stay public, so a test can drive them by hand or override them).
 *
 * - A transaction is plain data, `{ id, subtask, records }`: records are
 *   staged in it, so it survives a MessagePack round trip in a checkpoint.
 *   Ids read `<jobId>/<uid>-<subtask>-a<attempt>-<n>`, unique across attempts and runs.
 * - The writer keeps one open transaction: `write` stages into it;
 *   `prepareCommit` pre-commits it, returns it as the committable and begins
 *   the next; `snapshotState` returns `[open transaction]`, which a restore
 *   aborts; `close` aborts it.
 * - `preCommit` copies the transaction's records into a *prepared* store
 *   keyed by id.
 * - The committer's `commit` moves a prepared transaction into the
 *   *committed* log, once: committing an id already committed does nothing
 *   (counted in `duplicateCommits`, signalled `signalAlreadyCommitted`). A
 *   transaction that was never prepared in this store (restored from a
 *   checkpoint) is committed from its own records.
 * - `abort` discards a transaction, prepared or not; it is idempotent, and
 *   aborting a committed transaction changes nothing. Committing an aborted
 *   one is a protocol violation: the request fails with a known reason (the
 *   job fails without restarts).
 * - Nothing appears in {@linkcode CollectingSink.committed} before its
 *   commit (read-committed visibility).
 * - Restored transactions pass {@linkcode CollectingSink.checkCommittable}:
 *   anything but `{ id: string, subtask: integer >= 0, records: array }` is
 *   a `SinkStateError`.
 *
 * ## Sharing
 *
 * The store lives in an object that the sink references; every subtask's
 * writer and committer, of every attempt, use the one sink object (and any
 * copy of it shares the store): read it from the sink object the test
 * created. This needs the subtasks in the test's own JS realm (local mode,
 * not workers).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { CollectingSink } from "./collecting_sink.ts";
 *
 * const sink = new CollectingSink<string>();
 * const context = { subtaskIndex: 0, parallelism: 1, attempt: 0, uid: "out", jobId: "job" };
 * const txn = sink.beginTransaction(context);
 * sink.invoke(txn, "a", { timestamp: undefined });
 * sink.preCommit(txn);
 * assert.deepEqual(sink.committed(), []); // invisible until commit
 * sink.commit(txn);
 * sink.commit(txn); // idempotent
 * assert.deepEqual(sink.committed(), ["a"]);
 * assert.deepEqual(sink.committedTransactions(), ["job/out-0-a0-0"]);
 * ```
 *
 * @module
 */

import type { SinkContext, SinkInitContext } from "../../runtime/api/sink.ts";
import {
  type CommitRequest,
  type Committer,
  type DeliveryGuarantee,
  SinkStateError,
  type SinkV2,
  type SinkWriter,
  type WriterInitContext,
} from "../../runtime/api/sink_v2.ts";

/** A {@linkcode CollectingSink} transaction. Plain data, MessagePack-encodable if the records are. */
export interface CollectingTxn<T = unknown> {
  /** `<jobId>/<uid>-<subtask>-a<attempt>-<n>`, `n` counting from 0 per subtask and attempt. */
  id: string;
  /** The sink subtask that opened it. */
  subtask: number;
  /** The records staged in it, in arrival order. */
  records: T[];
}

/** Counters of a {@linkcode CollectingSink}, in transactions except where noted. */
export interface CollectingSinkStats {
  /** Transactions committed (each once). */
  committed: number;
  /** Transactions aborted. */
  aborted: number;
  /** Transactions pre-committed and not yet committed or aborted. */
  prepared: number;
  /** Calls of `commit`, duplicates included. */
  commitCalls: number;
  /** Calls of `commit` for a transaction already committed. */
  duplicateCommits: number;
}

interface CommittedTxn<T> {
  readonly id: string;
  readonly subtask: number;
  readonly records: readonly T[];
}

/** The state shared by all subtask copies of one sink. */
interface Store<T> {
  readonly prepared: Map<string, CommittedTxn<T>>;
  readonly log: CommittedTxn<T>[];
  readonly committedIds: Set<string>;
  readonly abortedIds: Set<string>;
  /** Next transaction number per `<uid>-<subtask>-a<attempt>`. */
  readonly counters: Map<string, number>;
  parallelism: number;
  commitCalls: number;
  duplicateCommits: number;
}

/**
 * An exactly-once sink that commits into memory (see the module docs).
 * Exactly-once: a record is in {@linkcode CollectingSink.committed} once
 * iff the checkpoint that pre-committed its transaction completed (or was
 * restored from).
 */
export class CollectingSink<T> implements SinkV2<T, CollectingTxn<T>, CollectingTxn<T>> {
  /** Always `"v2"`. */
  readonly kind = "v2" as const;
  /** Always `"exactly-once"`. */
  readonly deliveryGuarantee: DeliveryGuarantee = "exactly-once";
  /** Shared by every shallow copy of this sink. */
  private readonly store: Store<T>;

  /** Creates a sink with an empty store. */
  constructor() {
    this.store = {
      prepared: new Map(),
      log: [],
      committedIds: new Set(),
      abortedIds: new Set(),
      counters: new Map(),
      parallelism: 0,
      commitCalls: 0,
      duplicateCommits: 0,
    };
  }

  /**
   * The subtask's writer: records the parallelism ({@linkcode CollectingSink.open}),
   * aborts the restored open transactions, begins a transaction.
   */
  async createWriter(
    context: WriterInitContext<CollectingTxn<T>>,
  ): Promise<SinkWriter<T, CollectingTxn<T>, CollectingTxn<T>>> {
    this.open(context);
    for (const txn of context.restoredState) await this.abort(txn);
    const init: SinkInitContext = {
      subtaskIndex: context.subtaskIndex,
      parallelism: context.parallelism,
      attempt: context.attempt,
      uid: context.uid,
      jobId: context.jobId,
    };
    return new CollectingWriter(this, init, await this.beginTransaction(init));
  }

  /** The subtask's committer (see the module docs). */
  createCommitter(): Committer<CollectingTxn<T>> {
    return new CollectingCommitter(this);
  }

  /**
   * Reads a transaction back from a checkpoint.
   * @throws {SinkStateError} unless `raw` is `{ id: string, subtask: integer >= 0, records: array }`.
   */
  checkCommittable(raw: unknown): CollectingTxn<T> {
    return checkTxn<T>(raw);
  }

  /**
   * Reads an open transaction back from a checkpoint; as {@linkcode CollectingSink.checkCommittable}.
   * @throws {SinkStateError} when `raw` is not a transaction.
   */
  checkWriterState(raw: unknown): CollectingTxn<T> {
    return checkTxn<T>(raw);
  }

  /** Records the parallelism, so {@linkcode CollectingSink.committedBySubtask} has a list per subtask. */
  open(context: SinkInitContext): void {
    this.store.parallelism = Math.max(this.store.parallelism, context.parallelism);
  }

  /** A new, empty transaction with a unique id. */
  beginTransaction(context: SinkInitContext): CollectingTxn<T> {
    const scope = `${context.jobId}/${context.uid}-${context.subtaskIndex}-a${context.attempt}`;
    const n = this.store.counters.get(scope) ?? 0;
    this.store.counters.set(scope, n + 1);
    return { id: `${scope}-${n}`, subtask: context.subtaskIndex, records: [] };
  }

  /** Stages `value` in `txn` (as it is, not copied). */
  invoke(txn: CollectingTxn<T>, value: T, _context: SinkContext): void | Promise<void> {
    txn.records.push(value);
  }

  /**
   * Copies `txn`'s records into the prepared store, still invisible.
   * @throws {Error} when `txn` was already committed or aborted.
   */
  preCommit(txn: CollectingTxn<T>): void | Promise<void> {
    const { store } = this;
    if (store.committedIds.has(txn.id) || store.abortedIds.has(txn.id)) {
      throw new Error(
        `CollectingSink cannot pre-commit transaction ${txn.id}: it was already ${
          store.committedIds.has(txn.id) ? "committed" : "aborted"
        }`,
      );
    }
    store.prepared.set(txn.id, { id: txn.id, subtask: txn.subtask, records: [...txn.records] });
  }

  /**
   * Makes `txn`'s records visible, once per id (see the module docs).
   * @throws {Error} when `txn` was aborted.
   */
  commit(txn: CollectingTxn<T>): void | Promise<void> {
    const { store } = this;
    store.commitCalls++;
    if (store.committedIds.has(txn.id)) {
      store.duplicateCommits++;
      return;
    }
    if (store.abortedIds.has(txn.id)) {
      throw new Error(`CollectingSink cannot commit transaction ${txn.id}: it was aborted`);
    }
    const prepared = store.prepared.get(txn.id) ??
      { id: txn.id, subtask: txn.subtask, records: [...txn.records] };
    store.prepared.delete(txn.id);
    store.committedIds.add(txn.id);
    store.log.push(prepared);
  }

  /** Discards `txn` (idempotent; a committed transaction stays committed). */
  abort(txn: CollectingTxn<T>): void | Promise<void> {
    const { store } = this;
    if (store.committedIds.has(txn.id)) return;
    store.prepared.delete(txn.id);
    store.abortedIds.add(txn.id);
  }

  /** Every committed record, in commit order (transaction by transaction). */
  committed(): T[] {
    return this.store.log.flatMap((txn) => txn.records);
  }

  /**
   * The committed records of each subtask, in commit order: one list per
   * subtask up to the largest parallelism opened or subtask seen.
   */
  committedBySubtask(): T[][] {
    const { log, parallelism } = this.store;
    const count = Math.max(parallelism, ...log.map((txn) => txn.subtask + 1));
    const lists: T[][] = Array.from({ length: count }, () => []);
    for (const txn of log) lists[txn.subtask]!.push(...txn.records);
    return lists;
  }

  /** The ids of the committed transactions, in commit order. */
  committedTransactions(): string[] {
    return this.store.log.map((txn) => txn.id);
  }

  /** The ids of the pre-committed transactions not yet committed or aborted. */
  preparedTransactions(): string[] {
    return [...this.store.prepared.keys()];
  }

  /** The counters; see {@linkcode CollectingSinkStats}. */
  stats(): CollectingSinkStats {
    const { store } = this;
    return {
      committed: store.committedIds.size,
      aborted: store.abortedIds.size,
      prepared: store.prepared.size,
      commitCalls: store.commitCalls,
      duplicateCommits: store.duplicateCommits,
    };
  }

  /** Empties the store (all copies see it), e.g. between two runs of a test. */
  reset(): void {
    const { store } = this;
    store.prepared.clear();
    store.log.length = 0;
    store.committedIds.clear();
    store.abortedIds.clear();
    store.counters.clear();
    store.parallelism = 0;
    store.commitCalls = 0;
    store.duplicateCommits = 0;
  }
}

function describe(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.slice(0, 100);
  } catch {
    return String(value);
  }
}

function checkTxn<T>(raw: unknown): CollectingTxn<T> {
  const what = "CollectingSink transaction";
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new SinkStateError(
      what,
      `it must be an object { id, subtask, records }: current value is ${describe(raw)}`,
    );
  }
  const { id, subtask, records } = raw as Record<string, unknown>;
  if (typeof id !== "string") {
    throw new SinkStateError(what, `field 'id' must be a string: current value is ${describe(id)}`);
  }
  if (!Number.isSafeInteger(subtask) || (subtask as number) < 0) {
    throw new SinkStateError(
      what,
      `field 'subtask' of ${id} must be an integer >= 0: current value is ${describe(subtask)}`,
    );
  }
  if (!Array.isArray(records)) {
    throw new SinkStateError(
      what,
      `field 'records' of ${id} must be an array: current value is ${describe(records)}`,
    );
  }
  return { id, subtask: subtask as number, records: records as T[] };
}

/** A subtask's writer: one open transaction at a time (see the module docs). */
class CollectingWriter<T> implements SinkWriter<T, CollectingTxn<T>, CollectingTxn<T>> {
  readonly #sink: CollectingSink<T>;
  readonly #context: SinkInitContext;
  #txn: CollectingTxn<T>;
  #closed = false;

  constructor(sink: CollectingSink<T>, context: SinkInitContext, txn: CollectingTxn<T>) {
    this.#sink = sink;
    this.#context = context;
    this.#txn = txn;
  }

  write(value: T, context: SinkContext): void | Promise<void> {
    return this.#sink.invoke(this.#txn, value, context);
  }

  flush(): void {}

  async prepareCommit(): Promise<readonly CollectingTxn<T>[]> {
    const prepared = this.#txn;
    await this.#sink.preCommit(prepared);
    this.#txn = await this.#sink.beginTransaction(this.#context);
    return [prepared];
  }

  snapshotState(): readonly CollectingTxn<T>[] {
    return [this.#txn];
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#sink.abort(this.#txn);
  }
}

/** Commits transactions into the sink's store, signalling duplicates and protocol violations. */
class CollectingCommitter<T> implements Committer<CollectingTxn<T>> {
  readonly #sink: CollectingSink<T>;

  constructor(sink: CollectingSink<T>) {
    this.#sink = sink;
  }

  async commit(requests: readonly CommitRequest<CollectingTxn<T>>[]): Promise<void> {
    for (const request of requests) {
      const before = this.#sink.stats().duplicateCommits;
      try {
        await this.#sink.commit(request.committable);
      } catch (error) {
        request.signalFailedWithKnownReason(
          error instanceof Error ? error : new Error(String(error)),
        );
        continue;
      }
      if (this.#sink.stats().duplicateCommits > before) request.signalAlreadyCommitted();
    }
  }

  close(): void {}
}
