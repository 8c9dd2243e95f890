/**
 * Transaction states for readers: a watch on the `txn.>` keys of the
 * transaction bucket, plus lookups of single transactions, broadcast to
 * listeners (the read-committed buffers of `read_committed.ts`).
 *
 * ## Invariants
 *
 * - The watch (updates only) is created before the first lookup, so a
 *   decision written after a lookup read `open` always reaches the
 *   listeners.
 * - A record's transaction always has a state (the writer creates it
 *   before it publishes), so a lookup that finds no key fails the reader
 *   with an error naming the key and the bucket instead of waiting forever.
 *
 * @module
 */

import { kvApi, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { parseTxnRecord, TXN_KEY_PREFIX, txnKey, type TxnState } from "./protocol.ts";
import { withRetries } from "./transactions.ts";
import { isStreamNotFound, JetStreamStreamNotFoundError } from "./stream_not_found.ts";
import { SuppressRestartsError } from "../../runtime/cluster/restart_strategy.ts";

/** Receives a transaction's state. */
export type TxnStateListener = (txn: string, state: TxnState) => void;

/** Watches and looks up transaction states in one bucket; see the module docs. */
export class TxnStateTracker {
  /** The bucket. */
  readonly bucket: string;
  readonly #kv: kvApi.KV;
  readonly #watch: AsyncIterable<kvApi.KvWatchEntry> & { stop(): void };
  readonly #listeners = new Set<TxnStateListener>();
  readonly #errorListeners = new Set<(error: Error) => void>();
  #closed = false;

  private constructor(
    bucket: string,
    kv: kvApi.KV,
    watch: AsyncIterable<kvApi.KvWatchEntry> & { stop(): void },
  ) {
    this.bucket = bucket;
    this.#kv = kv;
    this.#watch = watch;
    this.#run();
  }

  /**
   * Opens the tracker: binds `bucket` and starts the watch.
   * @throws {JetStreamStreamNotFoundError} naming the bucket and its stream
   *   (`KV_<bucket>`) when the bucket does not exist (a restart would not
   *   find it either, so the job fails without restarts).
   * @throws {Error} naming the bucket when it cannot be watched otherwise.
   */
  static async open(nc: NatsConnection, bucket: string): Promise<TxnStateTracker> {
    const kv = await new kvApi.Kvm(nc).open(bucket);
    let watch: AsyncIterable<kvApi.KvWatchEntry> & { stop(): void };
    try {
      watch = await withRetries(
        `watch the transactions of KV bucket ${bucket}`,
        () => kv.watch({ key: `${TXN_KEY_PREFIX}>`, include: kvApi.KvWatchInclude.UpdatesOnly }),
      );
    } catch (error) {
      if (!isStreamNotFound(error)) throw error;
      throw new JetStreamStreamNotFoundError(
        `Cannot watch the transactions of KV bucket ${bucket}: the bucket does not exist (set ` +
          `txnBucket to the bucket the sink writes its transactions to)`,
        { stream: `KV_${bucket}`, cause: error },
      );
    }
    return new TxnStateTracker(bucket, kv, watch);
  }

  /** Adds a listener of state changes; returns a function that removes it. */
  subscribe(listener: TxnStateListener, onError: (error: Error) => void): () => void {
    this.#listeners.add(listener);
    this.#errorListeners.add(onError);
    return () => {
      this.#listeners.delete(listener);
      this.#errorListeners.delete(onError);
    };
  }

  /**
   * Reads the state of `txn`.
   * @throws {SuppressRestartsError} naming the key and bucket when the transaction has no
   *   state (restarting would not help, so the job fails without restarts).
   */
  async lookup(txn: string): Promise<TxnState> {
    const key = txnKey(txn);
    const entry = await withRetries(
      `read key ${key} of KV bucket ${this.bucket}`,
      () => this.#kv.get(key),
    );
    if (entry === null || entry.operation !== "PUT") {
      // Deterministic bad input: restarting cannot make the state appear.
      throw new SuppressRestartsError(
        `Transaction ${txn} has no state: KV bucket ${this.bucket} holds no key ${key}; ` +
          `the sink writes its transactions to another bucket (set txnBucket), or the key was deleted`,
      );
    }
    return parseTxnRecord(entry.string(), txn, this.bucket).state;
  }

  /** Stops the watch. */
  close(): void {
    this.#closed = true;
    this.#watch.stop();
  }

  #run(): void {
    (async () => {
      for await (const entry of this.#watch) {
        if (entry.operation !== "PUT" || !entry.key.startsWith(TXN_KEY_PREFIX)) continue;
        const txn = entry.key.slice(TXN_KEY_PREFIX.length);
        let state: TxnState;
        try {
          state = parseTxnRecord(entry.string(), txn, this.bucket).state;
        } catch {
          continue; // a stray value; a lookup of a transaction that matters reports it
        }
        for (const listener of this.#listeners) listener(txn, state);
      }
      if (!this.#closed) throw new Error("the watch ended");
    })().catch((error) => {
      if (this.#closed) return;
      const failure = new Error(
        `The watch of transaction states in KV bucket ${this.bucket} failed: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
      for (const listener of this.#errorListeners) listener(failure);
    });
  }
}
