/**
 * A {@linkcode Transport} for one thread of many (a cluster worker's slot
 * thread): messages between subscriptions and publishers of this thread
 * stay in the thread, everything else goes through the transport it wraps
 * (NATS). Subtasks of one job on one slot share a thread (`slot.ts`), so a
 * keyBy or rebalance edge between two of them is handed over without
 * encoding (`Transport.publishValue`; DESIGN.md §15, "inside a thread").
 *
 * ## Rules
 *
 * - A subscription to a subject without wildcards is made on the wrapped
 *   transport *and* in the thread. From then until it is unsubscribed,
 *   everything this transport publishes on that subject, bytes or values,
 *   goes in the thread only (through an {@linkcode InProcessBus} of its own),
 *   so one publisher's messages keep their order. Subscriptions with
 *   wildcards, requests and replies go through the wrapped transport only.
 * - {@linkcode ThreadLocalTransport.publishValue} hands a value over when the
 *   subject has a subscription in this thread and returns `false` otherwise:
 *   the caller then encodes and publishes bytes.
 * - A subscriber elsewhere (another thread, a monitor on the NATS server)
 *   does not see messages published in the thread on a subject this thread
 *   subscribes. Weir's task subjects have exactly one subscriber, the
 *   subtask, so nothing is missed; other uses must not rely on such
 *   subjects being visible on the server.
 * - The same payload limit as the wrapped transport, for bytes; values have
 *   none.
 *
 * The data plane's guarantees do not depend on the path: sequence numbers,
 * credits and in-band events are the same messages either way.
 *
 * @module
 */

import { InProcessBus, type InProcessTransport } from "./in_process.ts";
import type { RequestOptions, Subscription, Transport, TransportMessage } from "./types.ts";
import { closedError, validateSubject } from "./types.ts";

/** Options of {@linkcode ThreadLocalTransport}. */
export interface ThreadLocalTransportOptions {
  /** Names the in-thread connection in error messages. Default `"thread-local"`. */
  readonly name?: string;
}

/**
 * Wraps a transport so that messages between this thread's publishers and
 * subscriptions stay in the thread (see the module docs).
 */
export class ThreadLocalTransport implements Transport {
  readonly #inner: Transport;
  readonly #local: InProcessTransport;
  /** Subscriptions in this thread per literal subject. */
  readonly #localSubjects = new Map<string, number>();
  #closed = false;

  /**
   * Wraps `inner`; this object owns it from now on (`close` closes it).
   *
   * @param inner The transport between threads and processes (NATS).
   * @param options The in-thread connection's name.
   */
  constructor(inner: Transport, options: ThreadLocalTransportOptions = {}) {
    this.#inner = inner;
    this.#local = new InProcessBus({ maxPayload: inner.maxPayload }).connect({
      name: options.name ?? "thread-local",
    });
  }

  /** The wrapped transport's limit, in bytes (values have none). */
  get maxPayload(): number {
    return this.#inner.maxPayload;
  }

  /** Whether `subject` has a subscription in this thread (then publishing on it stays here). */
  isInThread(subject: string): boolean {
    return this.#localSubjects.has(subject);
  }

  /**
   * Publishes `data` in the thread when `subject` has a subscription here
   * and no reply subject is given, else on the wrapped transport.
   *
   * @throws {TransportClosedError} after {@linkcode ThreadLocalTransport.close}.
   * @throws {PayloadTooLargeError} when `data.byteLength > maxPayload`.
   * @throws {InvalidSubjectError} for a malformed subject.
   */
  publish(subject: string, data: Uint8Array, options?: { reply?: string }): void {
    if (options?.reply === undefined && this.#localSubjects.has(subject)) {
      this.#local.publish(subject, data);
    } else {
      this.#inner.publish(subject, data, options);
    }
  }

  /**
   * Hands `value` to this thread's subscriptions of `subject`, unencoded.
   *
   * @returns `true` when handed over; `false`, publishing nothing, when
   * `subject` has no subscription in this thread.
   * @throws {TransportClosedError} after {@linkcode ThreadLocalTransport.close}.
   * @throws {TypeError} when `value` is `undefined`.
   */
  publishValue(subject: string, value: unknown): boolean {
    if (this.#closed) throw closedError(this.#local.name, `publish a value on '${subject}'`);
    if (!this.#localSubjects.has(subject)) return false;
    return this.#local.publishValue(subject, value);
  }

  /**
   * Subscribes on the wrapped transport and, for a subject without
   * wildcards, in this thread too; `handler` gets messages from both.
   *
   * @throws {TransportClosedError} after {@linkcode ThreadLocalTransport.close}.
   * @throws {InvalidSubjectError} for a malformed subject.
   */
  subscribe(subject: string, handler: (message: TransportMessage) => void): Subscription {
    const tokens = validateSubject(subject, true);
    const remote = this.#inner.subscribe(subject, handler);
    if (tokens.includes("*") || tokens.includes(">")) return remote;
    let local: Subscription;
    try {
      local = this.#local.subscribe(subject, handler);
    } catch (error) {
      remote.unsubscribe();
      throw error;
    }
    this.#localSubjects.set(subject, (this.#localSubjects.get(subject) ?? 0) + 1);
    let active = true;
    return {
      subject,
      unsubscribe: () => {
        if (!active) return;
        active = false;
        remote.unsubscribe();
        local.unsubscribe();
        const n = this.#localSubjects.get(subject)! - 1;
        if (n === 0) this.#localSubjects.delete(subject);
        else this.#localSubjects.set(subject, n);
      },
    };
  }

  /** Requests on the wrapped transport (requests never stay in the thread). */
  request(subject: string, data: Uint8Array, options: RequestOptions): Promise<TransportMessage> {
    return this.#inner.request(subject, data, options);
  }

  /** Flushes the wrapped transport (in-thread messages need no flush). */
  flush(): Promise<void> {
    return this.#inner.flush();
  }

  /** Closes the in-thread connection and the wrapped transport. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#localSubjects.clear();
    await this.#local.close();
    await this.#inner.close();
  }
}
