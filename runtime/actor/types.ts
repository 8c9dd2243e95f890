/**
 * The transport contract every Weir actor talks through.
 *
 * A transport has exactly NATS core semantics and nothing more:
 *
 * - **Subjects** are dot-separated tokens. A subscription may use `*` (one
 *   token) and `>` (one or more trailing tokens) wildcards.
 * - **Ordering** is per publisher: two messages published by the same
 *   {@linkcode Transport} instance on subjects that reach the same
 *   subscription arrive at that subscription in publish order. There is no
 *   ordering across publishers.
 * - **Delivery** is at most once. A transport may drop messages (NATS drops
 *   them for slow consumers); the data plane detects loss with sequence
 *   numbers and prevents it with credits, so the transport need not.
 * - **Request/reply** sends one message with a reply subject and waits for the
 *   first answer, or fails with {@linkcode TransportTimeoutError}.
 * - Payloads are bytes (`Uint8Array`), at most {@linkcode Transport.maxPayload}
 *   bytes each.
 *
 * Handlers are called asynchronously (never inside `publish`), one message at
 * a time per subscription.
 *
 * ## In-thread values (optional)
 *
 * A transport that knows which subscriptions run in the publisher's thread
 * may also offer {@linkcode Transport.publishValue}: it hands an object to
 * the matching subscriptions as it is, with no encoding and no payload limit
 * (DESIGN.md §15, "inside a thread: records pass as values"), or returns
 * `false` when the subject is not one it delivers within the thread (then
 * the caller encodes and publishes bytes). Values and byte payloads
 * published by one connection share the same per-subscription order, and
 * handlers still never run inside the publish. Every matching subscription
 * receives the same object: neither publisher nor receivers may change it
 * afterwards (the object-reuse contract of Flink's
 * `ExecutionConfig.enableObjectReuse`). The in-process transport delivers
 * every subject in-thread; `thread_local.ts` adds it to NATS for the
 * subjects a slot thread subscribes itself; the bare NATS transport leaves
 * it out.
 *
 * @module
 */

/** A message as a subscriber receives it. */
export interface TransportMessage {
  /** The subject the message was published on (never a wildcard). */
  readonly subject: string;
  /** The payload bytes. The receiver owns them. Empty for an in-thread value. */
  readonly data: Uint8Array;
  /**
   * The object handed over by {@linkcode Transport.publishValue} (then
   * `data` is empty), else `undefined`. Shared with the publisher and with
   * the other receivers: read it, never change it.
   */
  readonly value?: unknown;
  /** The reply subject, when the publisher expects an answer. */
  readonly reply?: string;
}

/** Handle of one subscription; see {@linkcode Transport.subscribe}. */
export interface Subscription {
  /** The subject (possibly with wildcards) this subscription listens on. */
  readonly subject: string;
  /** Stops delivery. Messages already queued for the handler are discarded. Idempotent. */
  unsubscribe(): void;
}

/** Options of {@linkcode Transport.request}. */
export interface RequestOptions {
  /** How long to wait for the first reply, in ms. */
  readonly timeoutMs: number;
}

/**
 * A message bus with NATS core semantics (see the module docs).
 *
 * Implementations: the in-process transport (local mode and unit tests) and
 * the NATS transport (cluster mode). Both pass the shared conformance suite in
 * `transport_conformance.ts`.
 */
export interface Transport {
  /** Largest payload accepted by {@linkcode Transport.publish}, in bytes (NATS: 1 MiB). */
  readonly maxPayload: number;
  /**
   * Publishes `data` on `subject` (no wildcards).
   *
   * @throws {TransportClosedError} after {@linkcode Transport.close}.
   * @throws {PayloadTooLargeError} when `data.byteLength > maxPayload`.
   * @throws {InvalidSubjectError} when the subject is empty, has empty tokens or wildcards.
   */
  publish(subject: string, data: Uint8Array, options?: { reply?: string }): void;
  /**
   * Optional: hands `value` (not `undefined`) to every subscription
   * matching `subject`, without encoding it and without a payload limit,
   * when this transport delivers `subject` within the publisher's thread.
   * The subscriber receives it as {@linkcode TransportMessage.value}, in
   * publish order with this connection's byte payloads. See the module docs
   * for the contract.
   *
   * @returns `true` when handed over; `false` when `subject` is not
   * delivered in this thread (nothing was published: encode and
   * {@linkcode Transport.publish} instead).
   * @throws {TransportClosedError} after {@linkcode Transport.close}.
   * @throws {InvalidSubjectError} when the subject is empty, has empty tokens or wildcards.
   */
  publishValue?(subject: string, value: unknown): boolean;
  /**
   * Calls `handler` for each message published on a matching subject from now on.
   *
   * @throws {TransportClosedError} after {@linkcode Transport.close}.
   * @throws {InvalidSubjectError} for a malformed subject.
   */
  subscribe(subject: string, handler: (message: TransportMessage) => void): Subscription;
  /**
   * Publishes `data` with a fresh reply subject and resolves with the first reply.
   *
   * @throws {TransportTimeoutError} when no reply arrives within `timeoutMs`.
   * @throws {NoRespondersError} when no subscription matches `subject` (NATS 503).
   * @throws {TransportClosedError} after {@linkcode Transport.close}.
   */
  request(subject: string, data: Uint8Array, options: RequestOptions): Promise<TransportMessage>;
  /** Resolves when everything published so far has been handed to the bus. */
  flush(): Promise<void>;
  /** Stops all subscriptions and rejects later calls. Idempotent. */
  close(): Promise<void>;
}

/** Base class of the transport's errors; `name` tells them apart. */
export class TransportError extends Error {
  /** The error class name. */
  override name = "TransportError";
}

/** The transport was used after {@linkcode Transport.close}. */
export class TransportClosedError extends TransportError {
  /** The error class name. */
  override name = "TransportClosedError";
}

/** A request got no reply in time. */
export class TransportTimeoutError extends TransportError {
  /** The error class name. */
  override name = "TransportTimeoutError";
}

/** A request found no subscriber on its subject. */
export class NoRespondersError extends TransportError {
  /** The error class name. */
  override name = "NoRespondersError";
}

/** A payload larger than {@linkcode Transport.maxPayload}. */
export class PayloadTooLargeError extends TransportError {
  /** The error class name. */
  override name = "PayloadTooLargeError";
}

/** A subject that is empty, has an empty token, or has wildcards where none are allowed. */
export class InvalidSubjectError extends TransportError {
  /** The error class name. */
  override name = "InvalidSubjectError";
}

/**
 * Splits a subject into tokens, checking it follows NATS's rules: not empty,
 * no empty token, no whitespace; wildcards only as whole tokens, only when
 * `wildcards` is true, and `>` only last. Every transport checks subjects
 * with it (the NATS client checks only emptiness and whitespace; the server
 * would drop the rest silently or close the connection).
 *
 * @throws {InvalidSubjectError} naming the subject and the rule it breaks.
 */
export function validateSubject(subject: string, wildcards: boolean): string[] {
  const fail = (rule: string) =>
    new InvalidSubjectError(`Invalid subject ${JSON.stringify(subject)}: ${rule}`);
  if (typeof subject !== "string" || subject.length === 0) throw fail("it is empty");
  if (/\s/.test(subject)) throw fail("it contains whitespace");
  const tokens = subject.split(".");
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.length === 0) throw fail(`token ${i + 1} is empty`);
    if (token === "*" || token === ">") {
      if (!wildcards) throw fail("a wildcard is not allowed here");
      if (token === ">" && i !== tokens.length - 1) throw fail("'>' must be the last token");
    }
  }
  return tokens;
}

/** The error of a call on a closed transport named `name`, doing `action` (e.g. "publish"). */
export function closedError(name: string, action: string): TransportClosedError {
  return new TransportClosedError(`Cannot ${action} as the connection '${name}' is closed`);
}

/** The error of publishing `data` on `subject` over the limit of `maxPayload` bytes. */
export function payloadTooLarge(
  subject: string,
  data: Uint8Array,
  maxPayload: number,
): PayloadTooLargeError {
  return new PayloadTooLargeError(
    `Cannot publish ${data.byteLength} bytes on '${subject}' as the limit is ${maxPayload} bytes`,
  );
}
