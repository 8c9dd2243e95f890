/**
 * Read-committed delivery, as a pure state machine (no I/O): it is fed the
 * messages of a stream in order and the states of their transactions, and
 * says what to deliver (Kafka's `isolation.level`, after KIP-98).
 *
 * ## Rules (`read_committed`)
 *
 * - Records leave in stream order.
 * - A record without a transaction, or of a committed one, is delivered.
 * - A record of an aborted transaction is skipped.
 * - A record of an open transaction, or of one whose state is not known
 *   yet, blocks: nothing after it leaves until its transaction is decided
 *   (it is the *last stable offset*).
 *
 * Under `read_uncommitted` every record is delivered at once.
 *
 * ## States
 *
 * A transaction's state only moves forward: unknown → open → committed or
 * aborted. A stale `open` reported after a decision is ignored (a lookup
 * that raced with the watch); a decided transaction reported with the other
 * decision is a protocol violation and throws. States are kept only for
 * transactions of records pushed: for those still queued, and for the
 * {@linkcode DEFAULT_REMEMBERED} most recently decided ones (a later record
 * of a forgotten transaction asks for its state again).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ReadCommittedBuffer } from "./read_committed.ts";
 *
 * const buffer = new ReadCommittedBuffer<{ seq: number; txn: string | undefined }>();
 * assert.equal(buffer.push({ seq: 1, txn: "p.0.0.0" }), "p.0.0.0"); // look its state up
 * buffer.push({ seq: 2, txn: undefined });
 * assert.deepEqual(buffer.next(), { kind: "blocked", txn: "p.0.0.0", state: "unknown" });
 * buffer.setState("p.0.0.0", "committed");
 * assert.deepEqual(buffer.next(), { kind: "deliver", record: { seq: 1, txn: "p.0.0.0" } });
 * assert.deepEqual(buffer.next(), { kind: "deliver", record: { seq: 2, txn: undefined } });
 * assert.deepEqual(buffer.next(), { kind: "empty" });
 * ```
 *
 * @module
 */

import { TransactionStateError, type TxnState } from "./protocol.ts";

/** Kafka's isolation levels. */
export type Isolation = "read_committed" | "read_uncommitted";

/** What the buffer needs of a message: its stream sequence and its transaction, if any. */
export interface Sequenced {
  /** The stream sequence. */
  readonly seq: number;
  /** The `Weir-Txn` header, or undefined for a non-transactional record. */
  readonly txn: string | undefined;
}

/** What {@linkcode ReadCommittedBuffer.next} found at the head. */
export type Step<M> =
  | { readonly kind: "deliver"; readonly record: M }
  | { readonly kind: "skip"; readonly record: M }
  | { readonly kind: "blocked"; readonly txn: string; readonly state: "open" | "unknown" }
  | { readonly kind: "empty" };

/** Decided transactions remembered without queued records. */
export const DEFAULT_REMEMBERED = 4096;

/** What a buffer knows of a transaction's state. */
export type KnownState = TxnState | "unknown";

/** Read-committed (or uncommitted) ordering of one ordered feed of messages; see the module docs. */
export class ReadCommittedBuffer<M extends Sequenced> {
  /** The isolation level. */
  readonly isolation: Isolation;
  readonly #remembered: number;
  #queue: M[] = [];
  #head = 0;
  #lastSeq = 0;
  readonly #states = new Map<string, KnownState>();
  readonly #queued = new Map<string, number>();
  /** Decided transactions without queued records, oldest first. */
  readonly #idle = new Set<string>();

  /**
   * Creates an empty buffer.
   * @param options `isolation` (default `read_committed`) and how many decided
   *   transactions without queued records to remember (default {@linkcode DEFAULT_REMEMBERED}).
   */
  constructor(options: { isolation?: Isolation; remembered?: number } = {}) {
    this.isolation = options.isolation ?? "read_committed";
    this.#remembered = options.remembered ?? DEFAULT_REMEMBERED;
  }

  /** Records queued (pushed and not yet delivered or skipped). */
  get size(): number {
    return this.#queue.length - this.#head;
  }

  /** The sequence of the last record pushed (0 before the first). */
  get lastPushedSeq(): number {
    return this.#lastSeq;
  }

  /**
   * Appends the next message of the feed.
   * @returns the transaction whose state must be looked up (its first record
   *   since its state was unknown or forgotten), or undefined.
   * @throws {RangeError} when `record.seq` does not follow the last one pushed.
   */
  push(record: M): string | undefined {
    if (!(record.seq > this.#lastSeq)) {
      throw new RangeError(
        `Records must be pushed in stream order: sequence ${record.seq} after ${this.#lastSeq}`,
      );
    }
    this.#lastSeq = record.seq;
    this.#queue.push(record);
    const txn = record.txn;
    if (txn === undefined || this.isolation === "read_uncommitted") return undefined;
    this.#queued.set(txn, (this.#queued.get(txn) ?? 0) + 1);
    this.#idle.delete(txn);
    if (this.#states.has(txn)) return undefined;
    this.#states.set(txn, "unknown");
    return txn;
  }

  /**
   * Reports the state of `txn` (from a lookup or a watch). Ignored for a
   * transaction the buffer does not track, and for a stale `open`.
   * @returns true when the state of a tracked transaction changed.
   * @throws {TransactionStateError} when a decided transaction is reported with the other decision.
   */
  setState(txn: string, state: TxnState): boolean {
    const known = this.#states.get(txn);
    if (known === undefined || known === state) return false;
    if (known === "committed" || known === "aborted") {
      if (state === "open") return false;
      throw new TransactionStateError(
        `Transaction ${txn} was reported ${state} after ${known}: the transaction log broke the protocol`,
        txn,
      );
    }
    this.#states.set(txn, state);
    if (state !== "open" && (this.#queued.get(txn) ?? 0) === 0) this.#markIdle(txn);
    return true;
  }

  /** The state known for `txn`: `unknown`, a state, or undefined when not tracked. */
  stateOf(txn: string): KnownState | undefined {
    return this.#states.get(txn);
  }

  /** Looks at the head without consuming it. */
  peek(): Step<M> {
    if (this.#head >= this.#queue.length) return { kind: "empty" };
    const record = this.#queue[this.#head]!;
    const txn = record.txn;
    if (txn === undefined || this.isolation === "read_uncommitted") {
      return { kind: "deliver", record };
    }
    const state = this.#states.get(txn) ?? "unknown";
    if (state === "committed") return { kind: "deliver", record };
    if (state === "aborted") return { kind: "skip", record };
    return { kind: "blocked", txn, state };
  }

  /** Consumes the head when it can be delivered or skipped; otherwise reports why not. */
  next(): Step<M> {
    const step = this.peek();
    if (step.kind !== "deliver" && step.kind !== "skip") return step;
    this.#queue[this.#head] = undefined as unknown as M;
    this.#head++;
    if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    const txn = step.record.txn;
    if (txn !== undefined && this.isolation === "read_committed") {
      const left = (this.#queued.get(txn) ?? 1) - 1;
      if (left > 0) this.#queued.set(txn, left);
      else {
        this.#queued.delete(txn);
        this.#markIdle(txn);
      }
    }
    return step;
  }

  #markIdle(txn: string): void {
    this.#idle.add(txn);
    while (this.#idle.size > this.#remembered) {
      const oldest = this.#idle.values().next().value as string;
      this.#idle.delete(oldest);
      this.#states.delete(oldest);
    }
  }
}
