/**
 * Asynchronous JetStream publishing with a window of acknowledgements (the
 * Go client's `PublishAsync`): each message is published on core NATS with
 * a reply subject under one inbox, and the stream's acknowledgement (a
 * `PubAck`) arrives on that subject. Unlike one request per message (what
 * `JetStreamClient.publish` does), it costs no timer and no error object
 * per message, which matters at one record per message.
 *
 * ## Invariants
 *
 * - Every publish settles exactly once: with the acknowledgement, with the
 *   stream's error, with "no stream stores the subject" (a 503 status: no
 *   responders), or with a timeout after `attempts` tries of `ackTimeoutMs`
 *   each. A try after a timeout republishes the same bytes and headers, so
 *   with a `Nats-Msg-Id` the stream stores the message once.
 * - {@linkcode AsyncPublisher.close} rejects what is still pending.
 *
 * @module
 */

import {
  createInbox,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from "../../runtime/actor/nats_deps.ts";

/** A stream's acknowledgement of a stored message. */
export interface PubAck {
  /** The stream that stored it. */
  readonly stream: string;
  /** Its stream sequence. */
  readonly seq: number;
  /** True when the stream had it already (same `Nats-Msg-Id` within the duplicate window). */
  readonly duplicate: boolean;
  /**
   * True when this acknowledgement answers a try after a timeout; a
   * `duplicate` on the first try means another message had the same
   * `Nats-Msg-Id` (added by the breaker: tests/breaker_sinks_test.ts).
   */
  readonly retried: boolean;
}

/** A publish failed: the stream refused it, no stream stores the subject, or no ack came. */
export class PublishError extends Error {
  /** The subject published to. */
  readonly subject: string;
  /**
   * Creates the error.
   * @param message what went wrong.
   * @param subject the subject published to.
   */
  constructor(message: string, subject: string) {
    super(message);
    this.name = "PublishError";
    this.subject = subject;
  }
}

/** Options of {@linkcode AsyncPublisher}. */
export interface AsyncPublisherOptions {
  /** How long to wait for an acknowledgement before trying again, in ms (default 5000). */
  readonly ackTimeoutMs?: number;
  /** Tries per message, the first included (default 3). */
  readonly attempts?: number;
}

interface Pending {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: MsgHdrs;
  readonly resolve: (ack: PubAck) => void;
  readonly reject: (error: Error) => void;
  sentAt: number;
  tries: number;
}

const decoder = new TextDecoder();

/** The default wait for an acknowledgement before a try is sent again, in ms. */
export const DEFAULT_ACK_TIMEOUT_MS = 5000;
/** The default tries per message, the first included. */
export const DEFAULT_PUBLISH_ATTEMPTS = 3;

/** Publishes to JetStream without a request per message; see the module docs. */
export class AsyncPublisher {
  readonly #nc: NatsConnection;
  readonly #inbox: string;
  readonly #sub: Subscription;
  readonly #ackTimeoutMs: number;
  readonly #attempts: number;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  /**
   * Subscribes to a fresh inbox on `nc` (which the caller closes).
   * @throws {RangeError} when an option is not a positive integer.
   */
  constructor(nc: NatsConnection, options: AsyncPublisherOptions = {}) {
    this.#ackTimeoutMs = positive("ackTimeoutMs", options.ackTimeoutMs ?? DEFAULT_ACK_TIMEOUT_MS);
    this.#attempts = positive("attempts", options.attempts ?? DEFAULT_PUBLISH_ATTEMPTS);
    this.#nc = nc;
    this.#inbox = createInbox();
    this.#sub = nc.subscribe(`${this.#inbox}.*`, {
      callback: (error, msg) => {
        if (error) this.#failAll(error.message);
        else this.#onAck(msg);
      },
    });
  }

  /** Publishes awaiting their acknowledgement. */
  get pending(): number {
    return this.#pending.size;
  }

  /**
   * Publishes `data` to `subject` with `headers`.
   * @returns the acknowledgement.
   * @throws {PublishError} (rejection) naming the subject; see the module docs.
   */
  publish(subject: string, data: Uint8Array, headers: MsgHdrs): Promise<PubAck> {
    if (this.#closed) {
      return Promise.reject(new PublishError(`the publisher is closed`, subject));
    }
    return new Promise<PubAck>((resolve, reject) => {
      this.#send({ subject, data, headers, resolve, reject, sentAt: 0, tries: 0 });
      this.#timer ??= setInterval(() => this.#expire(), Math.max(1, this.#ackTimeoutMs / 4));
    });
  }

  /** Stops listening; what is still pending is rejected. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#failAll("the publisher was closed before the acknowledgement came");
    this.#sub.unsubscribe();
  }

  #send(p: Pending): void {
    const id = this.#nextId++;
    p.sentAt = performance.now();
    p.tries++;
    this.#pending.set(id, p);
    try {
      this.#nc.publish(p.subject, p.data, { reply: `${this.#inbox}.${id}`, headers: p.headers });
    } catch (error) {
      this.#pending.delete(id);
      p.reject(
        new PublishError(error instanceof Error ? error.message : String(error), p.subject),
      );
    }
  }

  #onAck(msg: Msg): void {
    const id = Number(msg.subject.slice(this.#inbox.length + 1));
    const p = this.#pending.get(id);
    if (p === undefined) return; // a late ack of a try that timed out: the retry's counts
    this.#pending.delete(id);
    this.#stopTimerIfIdle();
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      p.reject(new PublishError("no stream stores the subject (no responders)", p.subject));
      return;
    }
    let reply: {
      stream?: string;
      seq?: number;
      duplicate?: boolean;
      error?: { description?: string; err_code?: number };
    };
    try {
      reply = JSON.parse(decoder.decode(msg.data));
    } catch {
      p.reject(new PublishError(`the acknowledgement is not JSON`, p.subject));
      return;
    }
    if (
      reply.error !== undefined || typeof reply.stream !== "string" || typeof reply.seq !== "number"
    ) {
      const e = reply.error;
      p.reject(
        new PublishError(
          e
            ? `the stream refused it: ${e.description} (error ${e.err_code})`
            : "invalid acknowledgement",
          p.subject,
        ),
      );
      return;
    }
    p.resolve({
      stream: reply.stream,
      seq: reply.seq,
      duplicate: reply.duplicate === true,
      retried: p.tries > 1,
    });
  }

  #expire(): void {
    const now = performance.now();
    for (const [id, p] of this.#pending) {
      if (now - p.sentAt < this.#ackTimeoutMs) break; // in send order: the rest is younger
      this.#pending.delete(id);
      if (p.tries < this.#attempts) {
        this.#send(p);
      } else {
        p.reject(
          new PublishError(
            `no acknowledgement after ${p.tries} tries of ${this.#ackTimeoutMs} ms`,
            p.subject,
          ),
        );
      }
    }
    this.#stopTimerIfIdle();
  }

  #stopTimerIfIdle(): void {
    if (this.#pending.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #failAll(reason: string): void {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#stopTimerIfIdle();
    for (const p of pending) p.reject(new PublishError(reason, p.subject));
  }
}

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      `AsyncPublisher: '${name}' must be a positive integer: current value is ${value}`,
    );
  }
  return value;
}
