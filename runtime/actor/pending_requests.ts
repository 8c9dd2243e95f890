/**
 * The requests of one transport connection that wait for their reply, as
 * NATS clients keep them: each request gets a token, the reply subject is
 * `<inbox>.<token>`, and one subscription on `<inbox>.*` hands each reply to
 * the request of its token. Shared by the in-process and NATS transports.
 *
 * Invariants: a request is settled once (its reply, its timeout, a failed
 * send or the connection's close, whichever comes first); its timer is
 * cleared when it is settled otherwise than by the timeout; a reply to a
 * token no longer waiting (timed out, or a second reply) is dropped.
 *
 * @module
 */

import { type TransportMessage, TransportTimeoutError } from "./types.ts";

/** A request taken out of the table: settle it with its reply or an error. */
export interface TakenRequest {
  /** The request's subject, for messages. */
  readonly subject: string;
  /** Settles the request with its reply. */
  readonly resolve: (message: TransportMessage) => void;
  /** Settles the request with an error. */
  readonly reject: (error: Error) => void;
}

interface Waiting extends TakenRequest {
  readonly timer: ReturnType<typeof setTimeout>;
}

/** The waiting requests of one connection (see the module docs). */
export class PendingRequests {
  readonly #connection: string;
  readonly #waiting = new Map<string, Waiting>();
  #next = 0;

  /** @param connection the connection's name, for the timeout message. */
  constructor(connection: string) {
    this.#connection = connection;
  }

  /** A token no other request of this connection has (base 36). */
  nextToken(): string {
    return (this.#next++).toString(36);
  }

  /**
   * Registers request `token` on `subject`, then calls `send` to publish
   * it. The promise resolves with the reply given to {@linkcode take}'s
   * request, or rejects with a `TransportTimeoutError` after `timeoutMs`
   * ms, or with what `send` throws (the request then stops waiting).
   *
   * @param token from {@linkcode nextToken}.
   * @param subject the request's subject.
   * @param timeoutMs how long to wait for the reply, ms.
   * @param send publishes the request.
   * @returns the reply.
   */
  wait(
    token: string,
    subject: string,
    timeoutMs: number,
    send: () => void,
  ): Promise<TransportMessage> {
    return new Promise<TransportMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(token);
        reject(
          new TransportTimeoutError(
            `No reply to the request of connection '${this.#connection}' on '${subject}' within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      this.#waiting.set(token, { resolve, reject, timer, subject });
      try {
        send();
      } catch (error) {
        clearTimeout(timer);
        this.#waiting.delete(token);
        reject(error);
      }
    });
  }

  /**
   * Takes request `token` out of the table (its reply arrived), its timer
   * cleared.
   * @returns the request, or `undefined` when it no longer waits.
   */
  take(token: string): TakenRequest | undefined {
    const request = this.#waiting.get(token);
    if (request === undefined) return undefined;
    this.#waiting.delete(token);
    clearTimeout(request.timer);
    return request;
  }

  /**
   * Takes every waiting request out of the table (the connection closes),
   * their timers cleared; the caller rejects them.
   * @returns the requests, in the order they were made.
   */
  takeAll(): TakenRequest[] {
    const all = [...this.#waiting.values()];
    this.#waiting.clear();
    for (const request of all) clearTimeout(request.timer);
    return all;
  }
}
