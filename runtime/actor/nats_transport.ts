/**
 * The NATS {@linkcode Transport}: cluster mode's message bus, a thin layer
 * over one core NATS connection (`@nats-io/transport-node`) that gives it
 * exactly the contract of `types.ts`, the one the in-process transport keeps.
 *
 * ## Design
 *
 * - **Publish** checks the subject (cached per subject, so the data plane's
 *   few subjects are checked once) and the size, then hands the bytes to the
 *   client, which writes them on a later microtask. Nothing is copied and no
 *   headers are sent, so a payload of exactly `maxPayload` bytes fits (NATS
 *   counts headers in `max_payload`).
 * - **Delivery** uses the client's callback subscriptions: the client parses
 *   what the socket delivered and calls each handler in turn, so handlers run
 *   one message at a time, never inside `publish`, with no promise per
 *   message. A subscription that was unsubscribed drops what the client
 *   still had for it.
 * - **Request/reply** uses one wildcard subscription per transport,
 *   `_INBOX.<nuid>.*`, made on the first request; each request gets the
 *   reply subject `_INBOX.<nuid>.<n>` and its own timer. The server answers a
 *   request nobody subscribes to with a status message 503 (NATS's "no
 *   responders", on by default since server 2.2), which becomes
 *   {@linkcode NoRespondersError}.
 * - **Ownership:** `new NatsTransport(nc)` borrows the connection (several
 *   transports may share one); {@linkcode NatsTransport.connect} and
 *   `ownsConnection: true` make `close()` drain and close it.
 *
 * ## Invariants
 *
 * - The errors are those of `types.ts`, thrown synchronously by `publish`
 *   and `subscribe`, and as rejections by `request` and `flush`.
 * - `reply` is `undefined`, never `""`, on a message without a reply subject.
 * - `data` is a plain `Uint8Array` (never a Node `Buffer`, whose `slice()`
 *   does not copy), a view of the bytes the socket delivered.
 * - After `close()`, no handler of this transport runs and every pending
 *   request has failed with {@linkcode TransportClosedError}.
 * - Delivery is at most once, as NATS core's: a slow consumer's connection
 *   is cut by the server, and messages published while disconnected may be
 *   lost. The data plane's sequence numbers detect it and its credits
 *   prevent the slow consumer (FACTS.md, "A slow subscriber loses data
 *   silently").
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NatsTransport } from "./nats_transport.ts";
 *
 * const transport = await NatsTransport.connect({ servers: "nats://127.0.0.1:4222" });
 * const subject = `example_${crypto.randomUUID().slice(0, 8)}.echo`;
 * transport.subscribe(subject, (message) => transport.publish(message.reply!, message.data));
 * await transport.flush(); // the server knows the subscription
 * const reply = await transport.request(subject, new Uint8Array([42]), { timeoutMs: 2_000 });
 * assert.deepEqual(reply.data, new Uint8Array([42]));
 * await transport.close();
 * ```
 *
 * @module
 */

import {
  errors as natsErrors,
  type Msg,
  type NatsConnection,
  nuid,
  type Subscription as NatsSubscription,
} from "./nats_deps.ts";
import { connectNats, type NatsConnectionOptions } from "./nats_connect.ts";
import type { DropFilter } from "./in_process.ts";
import {
  closedError,
  InvalidSubjectError,
  NoRespondersError,
  payloadTooLarge,
  PayloadTooLargeError,
  type RequestOptions,
  type Subscription,
  type Transport,
  TransportClosedError,
  TransportError,
  type TransportMessage,
  validateSubject,
} from "./types.ts";
import { PendingRequests } from "./pending_requests.ts";
import { logger } from "../log.ts";

const log = logger("nats");

/** `maxPayload` when the server has not said (it always does on connect): NATS's default, 1 MiB. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
/** The valid-subject cache is emptied when it reaches this many subjects. */
const SUBJECT_CACHE_LIMIT = 10_000;
/** How long `close()` waits for an owned connection to drain before it closes it, in ms. */
const DRAIN_TIMEOUT_MS = 5_000;

/** Options of the {@linkcode NatsTransport} constructor. */
export interface NatsTransportOptions {
  /**
   * Whether {@linkcode NatsTransport.close} drains and closes the connection.
   * Default false: the connection is borrowed.
   */
  readonly ownsConnection?: boolean;
  /**
   * Test hook: an outgoing message (publish, request or reply) for which it
   * returns `true` is silently not published, to simulate NATS losing it; a
   * dropped request times out. Called once per publish, after validation.
   */
  readonly dropFilter?: DropFilter;
  /**
   * Names the transport in error messages, e.g. `"job j1 worker w1"`.
   * Default `"nats-<client id>"`, the server's id of the connection.
   */
  readonly name?: string;
}

/**
 * A {@linkcode Transport} over one NATS connection (see the module docs).
 *
 * Hand `publish` bytes you will not modify: the client writes them to the
 * socket on a later microtask.
 */
export class NatsTransport implements Transport {
  /** The underlying connection. */
  readonly connection: NatsConnection;
  /** The transport's name, as used in error messages. */
  readonly name: string;
  readonly #owns: boolean;
  readonly #dropFilter: DropFilter | undefined;
  #closed = false;
  #validSubjects = new Set<string>();
  #subscriptions = new Set<NatsTransportSubscription>();
  #inbox: { prefix: string; subscription: NatsSubscription } | undefined = undefined;
  #requests: PendingRequests;

  /**
   * Wraps a connection (e.g. from {@linkcode connectNats}).
   *
   * @param connection An open NATS connection.
   * @param options Ownership of the connection, the drop filter and the name.
   */
  constructor(connection: NatsConnection, options: NatsTransportOptions = {}) {
    this.connection = connection;
    this.#owns = options.ownsConnection ?? false;
    this.#dropFilter = options.dropFilter;
    this.name = options.name ?? `nats-${connection.info?.client_id ?? "unknown"}`;
    this.#requests = new PendingRequests(this.name);
  }

  /**
   * Connects to NATS with {@linkcode connectNats} and wraps the connection,
   * which the transport then owns.
   *
   * @param options Servers, credentials and TLS files.
   * @param transportOptions The drop filter and the name.
   * @returns A transport that closes its connection on `close()`.
   * @throws {Error} naming the server URL(s) and the cause when the connect fails.
   */
  static async connect(
    options: NatsConnectionOptions,
    transportOptions: Omit<NatsTransportOptions, "ownsConnection"> = {},
  ): Promise<NatsTransport> {
    const connection = await connectNats(options);
    return new NatsTransport(connection, { ...transportOptions, ownsConnection: true });
  }

  /** Largest payload accepted by {@linkcode NatsTransport.publish}, in bytes: the server's `max_payload`. */
  get maxPayload(): number {
    return this.connection.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
  }

  /**
   * Publishes `data` on `subject`. Do not modify `data` afterwards.
   *
   * @param subject A subject without wildcards.
   * @param data The payload, at most {@linkcode NatsTransport.maxPayload} bytes.
   * @param options `reply`: a subject (no wildcards) for the receiver to answer on.
   * @throws {TransportClosedError} after {@linkcode NatsTransport.close}, or
   * when the connection was closed under it.
   * @throws {PayloadTooLargeError} when `data.byteLength > maxPayload`.
   * @throws {InvalidSubjectError} when `subject` or `reply` is empty, has an
   * empty token, whitespace or a wildcard.
   */
  publish(subject: string, data: Uint8Array, options?: { reply?: string }): void {
    if (this.#closed) throw this.#closedError(`publish on '${subject}'`);
    if (data.byteLength > this.maxPayload) throw this.#tooLarge(subject, data);
    if (!this.#validSubjects.has(subject)) this.#checkPublishSubject(subject);
    const reply = options?.reply;
    if (reply !== undefined) validateSubject(reply, false);
    if (this.#dropFilter?.(subject, data) === true) return;
    try {
      this.connection.publish(subject, data, reply === undefined ? undefined : { reply });
    } catch (error) {
      throw this.#clientError(error, `publish on '${subject}'`);
    }
  }

  /**
   * Calls `handler` for each message later published on a subject matching
   * `subject`, by any NATS client (this one included), one at a time and
   * never inside `publish`. The handler is not awaited. If it throws, the
   * error goes to `reportError` (an uncaught error, which ends the process
   * unless a global `error` listener prevents it) and delivery goes on.
   *
   * The server knows the subscription once {@linkcode NatsTransport.flush}
   * resolves; messages other clients publish before that may miss it.
   *
   * @param subject A subject; `*` matches one token, a final `>` one or more.
   * @param handler Receives each message; it owns `message.data`.
   * @returns The subscription, to unsubscribe.
   * @throws {TransportClosedError} after {@linkcode NatsTransport.close}.
   * @throws {InvalidSubjectError} when `subject` is empty, has an empty token
   * or whitespace, or has `>` before its last token.
   */
  subscribe(subject: string, handler: (message: TransportMessage) => void): Subscription {
    if (this.#closed) throw this.#closedError(`subscribe to '${subject}'`);
    validateSubject(subject, true);
    const subscription = new NatsTransportSubscription(subject, handler, () => {
      this.#subscriptions.delete(subscription);
    });
    try {
      subscription.attach(this.connection, this.name);
    } catch (error) {
      throw this.#clientError(error, `subscribe to '${subject}'`);
    }
    this.#subscriptions.add(subscription);
    return subscription;
  }

  /**
   * Publishes `data` on `subject` with a fresh reply subject and resolves
   * with the first reply.
   *
   * @param subject A subject without wildcards.
   * @param data The payload, at most {@linkcode NatsTransport.maxPayload} bytes.
   * @param options `timeoutMs`: how long to wait for the reply, in ms.
   * @returns The first reply.
   * @throws {NoRespondersError} (as a rejection) when the server knows no
   * subscription on `subject` (its status 503).
   * @throws {TransportTimeoutError} (as a rejection) when no reply arrives
   * within `timeoutMs`.
   * @throws {TransportClosedError} (as a rejection) after
   * {@linkcode NatsTransport.close}, also when it closes while waiting.
   * @throws {PayloadTooLargeError} (as a rejection) when `data` is too large.
   * @throws {InvalidSubjectError} (as a rejection) for a malformed subject.
   */
  request(subject: string, data: Uint8Array, options: RequestOptions): Promise<TransportMessage> {
    let reply: string;
    const token = this.#requests.nextToken();
    try {
      if (this.#closed) throw this.#closedError(`request on '${subject}'`);
      if (data.byteLength > this.maxPayload) throw this.#tooLarge(subject, data);
      if (!this.#validSubjects.has(subject)) this.#checkPublishSubject(subject);
      reply = `${(this.#inbox ?? this.#openInbox()).prefix}.${token}`;
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#requests.wait(token, subject, options.timeoutMs, () => {
      if (this.#dropFilter?.(subject, data) === true) return;
      try {
        this.connection.publish(subject, data, { reply });
      } catch (error) {
        throw this.#clientError(error, `request on '${subject}'`);
      }
    });
  }

  /**
   * Resolves once the server has processed everything this connection sent
   * so far (a PING/PONG round trip): its subscriptions are known and its
   * messages routed.
   *
   * @throws {TransportClosedError} (as a rejection) after {@linkcode NatsTransport.close}.
   * @throws {TransportError} (as a rejection) when the connection drops before the PONG.
   */
  async flush(): Promise<void> {
    if (this.#closed) throw this.#closedError("flush");
    try {
      await this.connection.flush();
    } catch (error) {
      throw this.#clientError(error, "flush");
    }
  }

  /**
   * Unsubscribes every subscription of this transport (discarding their
   * queued messages), fails pending requests with
   * {@linkcode TransportClosedError}, and makes later calls throw it. An
   * owned connection is then drained (what was published is still sent)
   * and closed; a borrowed one stays open. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const subscription of [...this.#subscriptions]) subscription.unsubscribe();
    if (this.#inbox !== undefined) unsubscribeQuietly(this.#inbox.subscription);
    const pending = this.#requests.takeAll();
    try {
      if (this.#owns) await this.#closeConnection();
    } finally {
      // Rejected last, as close() resolves, so that a caller awaiting close()
      // and then its requests handles their rejections in time.
      for (const request of pending) {
        request.reject(this.#closedError(`wait for the reply on '${request.subject}'`));
      }
    }
  }

  /** Drains the connection (bounded by {@linkcode DRAIN_TIMEOUT_MS}), then closes it. */
  async #closeConnection(): Promise<void> {
    if (this.connection.isClosed()) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), DRAIN_TIMEOUT_MS);
    });
    try {
      const drained = this.connection.drain().then(() => false, () => false);
      if (await Promise.race([drained, timedOut])) {
        log.warn(
          `${this.name}: the connection did not drain in ${DRAIN_TIMEOUT_MS} ms; closing it`,
        );
      }
    } finally {
      clearTimeout(timer);
      if (!this.connection.isClosed()) await this.connection.close().catch(() => {});
    }
  }

  #openInbox(): { prefix: string; subscription: NatsSubscription } {
    const prefix = `_INBOX.${nuid.next()}`;
    let subscription: NatsSubscription;
    try {
      subscription = this.connection.subscribe(`${prefix}.*`, {
        callback: (error, msg) => {
          if (error !== null) {
            log.error(`${this.name}: the reply subscription ${prefix}.* failed: ${error.message}`);
            return;
          }
          this.#onReply(msg, prefix);
        },
      });
    } catch (error) {
      throw this.#clientError(error, "subscribe to its reply subject");
    }
    this.#inbox = { prefix, subscription };
    return this.#inbox;
  }

  #onReply(msg: Msg, prefix: string): void {
    const token = msg.subject.slice(prefix.length + 1);
    const request = this.#requests.take(token);
    if (request === undefined) return; // timed out, or a second reply
    if (msg.headers?.code === 503 && msg.data.byteLength === 0) {
      request.reject(
        new NoRespondersError(
          `No responders for the request of connection '${this.name}' on '${request.subject}'`,
        ),
      );
      return;
    }
    request.resolve({ subject: msg.subject, data: plainBytes(msg.data) });
  }

  #checkPublishSubject(subject: string): void {
    validateSubject(subject, false);
    if (this.#validSubjects.size >= SUBJECT_CACHE_LIMIT) this.#validSubjects.clear();
    this.#validSubjects.add(subject);
  }

  /** Maps an error of the NATS client to the transport's errors. */
  #clientError(error: unknown, action: string): Error {
    if (
      error instanceof natsErrors.ClosedConnectionError ||
      error instanceof natsErrors.DrainingConnectionError
    ) {
      return new TransportClosedError(
        `Cannot ${action} as the NATS connection of '${this.name}' is ${
          error instanceof natsErrors.DrainingConnectionError ? "draining" : "closed"
        }`,
        { cause: error },
      );
    }
    if (error instanceof natsErrors.InvalidSubjectError) {
      return new InvalidSubjectError(`Cannot ${action}: ${error.message}`, { cause: error });
    }
    return new TransportError(
      `Cannot ${action} on connection '${this.name}': ${
        error instanceof Error ? error.message : error
      }`,
      { cause: error },
    );
  }

  #closedError(action: string): TransportClosedError {
    return closedError(this.name, action);
  }

  #tooLarge(subject: string, data: Uint8Array): PayloadTooLargeError {
    return payloadTooLarge(subject, data, this.maxPayload);
  }
}

/** One subscription: a NATS callback subscription behind a closed flag. */
class NatsTransportSubscription implements Subscription {
  readonly subject: string;
  #handler: (message: TransportMessage) => void;
  #onClose: () => void;
  #inner: NatsSubscription | undefined = undefined;
  #closed = false;

  constructor(subject: string, handler: (message: TransportMessage) => void, onClose: () => void) {
    this.subject = subject;
    this.#handler = handler;
    this.#onClose = onClose;
  }

  /** Subscribes on `connection`; throws what the client throws. */
  attach(connection: NatsConnection, name: string): void {
    this.#inner = connection.subscribe(this.subject, {
      callback: (error, msg) => {
        if (this.#closed) return;
        if (error !== null) {
          log.error(`${name}: the subscription to '${this.subject}' failed: ${error.message}`);
          return;
        }
        const reply = msg.reply;
        const data = plainBytes(msg.data);
        const message: TransportMessage = reply === undefined || reply === ""
          ? { subject: msg.subject, data }
          : { subject: msg.subject, data, reply };
        try {
          this.#handler(message);
        } catch (error) {
          reportError(error);
        }
      },
    });
  }

  unsubscribe(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#inner !== undefined) unsubscribeQuietly(this.#inner);
    this.#onClose();
  }
}

/**
 * The same bytes as a plain `Uint8Array` (no copy). The client hands out
 * views of the socket's chunks, which are Node `Buffer`s, whose `slice()`
 * does not copy: a receiver that copies with `slice()` (e.g. to align a
 * `Float64Array`) would get a view at the same offset.
 */
function plainBytes(data: Uint8Array): Uint8Array {
  return Object.getPrototypeOf(data) === Uint8Array.prototype
    ? data
    : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Unsubscribes, ignoring a connection that is already closed (its subscriptions are gone). */
function unsubscribeQuietly(subscription: NatsSubscription): void {
  try {
    subscription.unsubscribe();
  } catch (error) {
    if (
      !(error instanceof natsErrors.ClosedConnectionError ||
        error instanceof natsErrors.DrainingConnectionError)
    ) {
      throw error;
    }
  }
}
