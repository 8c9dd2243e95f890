/**
 * The in-process {@linkcode Transport}: NATS core semantics inside one
 * process, for local mode and unit tests.
 *
 * An {@linkcode InProcessBus} plays the NATS server; each
 * {@linkcode InProcessTransport} is one connection to it (one per actor, as
 * with NATS). `new InProcessTransport()` makes a connection with a bus of its
 * own; `transport.bus.connect()` adds connections to that bus.
 *
 * ## Design
 *
 * - **Routing.** Subscriptions live in a token trie (like the NATS server's
 *   sublist), so resolving a subject costs O(tokens), not O(subscriptions).
 *   The result is cached per subject; any subscribe or unsubscribe clears the
 *   cache. A cached subject is known valid, so the hot path of `publish` is a
 *   size check, one map lookup and one array push.
 * - **Delivery.** Each subscription has a FIFO queue. One `setImmediate` task
 *   per bus drains every subscription that has messages; each drain delivers
 *   only what was queued when it reached that subscription, so a handler that
 *   publishes never starves timers or I/O. No promise is made per message.
 * - **Ownership.** `publish` hands `data` over: the first matching
 *   subscription receives that very array, every further one gets a copy, so
 *   each receiver owns its bytes. Do not modify `data` after publishing it
 *   (with NATS the client may also still hold it until it is flushed).
 * - **In-thread values.** A bus lives in one thread, so every subscriber
 *   shares the publisher's thread: `publishValue` queues an object, as it
 *   is, in the same FIFO as byte payloads (no encoding, no payload limit).
 *   Every matching subscription gets the same object; nobody may change it
 *   afterwards (see `types.ts`).
 * - **Request/reply** uses one wildcard subscription per connection,
 *   `_INBOX.<random>.*`, made on the first request; each request gets the
 *   reply subject `_INBOX.<random>.<n>`.
 *
 * ## Invariants
 *
 * - Handlers never run inside `publish`, and one at a time per subscription.
 * - Messages from one connection reach each subscription in publish order.
 * - Nothing is dropped, except by the test hook
 *   {@linkcode InProcessBus.setDropFilter}: queues are unbounded and the data
 *   plane's credits bound them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InProcessBus } from "./in_process.ts";
 *
 * const bus = new InProcessBus();
 * const a = bus.connect({ name: "source[0]" });
 * const b = bus.connect({ name: "map[0]" });
 * b.subscribe("job.*.echo", (message) => b.publish(message.reply!, message.data));
 * const reply = await a.request("job.j1.echo", new Uint8Array([42]), { timeoutMs: 1_000 });
 * assert.deepEqual(reply.data, new Uint8Array([42]));
 * await a.close();
 * await b.close();
 * ```
 *
 * @module
 */

import { setImmediate } from "node:timers";
import {
  closedError,
  NoRespondersError,
  payloadTooLarge,
  PayloadTooLargeError,
  type RequestOptions,
  type Subscription,
  type Transport,
  TransportClosedError,
  type TransportMessage,
  validateSubject,
} from "./types.ts";
import { PendingRequests } from "./pending_requests.ts";

/** The default {@linkcode InProcessBus.maxPayload}: 1 MiB, as NATS's default `max_payload`. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/**
 * A test hook deciding whether to drop a published message; returns `true`
 * to drop it. Called once per publish (before fan-out), after the publish
 * was validated. For an in-thread value (`publishValue`), `data` is empty
 * and `value` is the object; for bytes, `value` is `undefined`.
 */
export type DropFilter = (subject: string, data: Uint8Array, value?: unknown) => boolean;

/** Options of {@linkcode InProcessBus}. */
export interface InProcessBusOptions {
  /** Largest payload in bytes; a positive integer. Default {@linkcode DEFAULT_MAX_PAYLOAD}. */
  readonly maxPayload?: number;
}

/** Options of {@linkcode InProcessBus.connect}. */
export interface ConnectOptions {
  /** Names the connection in error messages, e.g. `"job j1 map[2]"`. Default `"in-process-<n>"`. */
  readonly name?: string;
}

/** Options of the {@linkcode InProcessTransport} constructor. */
export interface InProcessTransportOptions extends InProcessBusOptions, ConnectOptions {
  /**
   * The bus to connect to (same as `bus.connect()`); default: a new bus of
   * its own, with `maxPayload`. Give one or the other, not both.
   */
  readonly bus?: InProcessBus;
}

/** The route cache is emptied when it reaches this many subjects. */
const routeCacheLimit = 10_000;
const inboxRoot = "_INBOX";
const resolved: Promise<void> = Promise.resolve();
/** The `data` of an in-thread value's message. */
const NO_BYTES = new Uint8Array(0);

let routerOf!: (bus: InProcessBus) => Router;

/**
 * An in-process message bus: the "server" that {@linkcode InProcessTransport}
 * connections share. See the module docs for its semantics.
 */
export class InProcessBus {
  /** Largest payload accepted by a publish, in bytes. */
  readonly maxPayload: number;
  #router = new Router();

  static {
    routerOf = (bus) => bus.#router;
  }

  /**
   * Makes an empty bus.
   *
   * @param options The payload limit.
   * @throws {RangeError} when `maxPayload` is not a positive integer.
   */
  constructor(options: InProcessBusOptions = {}) {
    const maxPayload = options.maxPayload ?? DEFAULT_MAX_PAYLOAD;
    if (!Number.isSafeInteger(maxPayload) || maxPayload <= 0) {
      throw new RangeError(
        `Cannot create the bus as 'maxPayload' must be a positive integer: current value is ${maxPayload}`,
      );
    }
    this.maxPayload = maxPayload;
  }

  /**
   * Opens a new connection to this bus.
   *
   * @param options The connection's name.
   * @returns A transport that shares this bus.
   */
  connect(options: ConnectOptions = {}): InProcessTransport {
    return new InProcessTransport({ ...options, bus: this });
  }

  /**
   * Test hook: drops every published message for which `filter` returns
   * `true`, to simulate NATS losing messages. A dropped request is not
   * answered, so it times out. `undefined` removes the filter.
   *
   * @param filter The filter, or `undefined`.
   */
  setDropFilter(filter: DropFilter | undefined): void {
    this.#router.dropFilter = filter;
  }
}

/**
 * One connection to an {@linkcode InProcessBus}; implements
 * {@linkcode Transport} with NATS core semantics (see the module docs).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { InProcessTransport } from "./in_process.ts";
 *
 * import { yieldToEventLoop } from "./async.ts";
 *
 * const transport = new InProcessTransport();
 * const got: string[] = [];
 * transport.subscribe("weir.>", (message) => got.push(message.subject));
 * transport.publish("weir.j1.data.0", new Uint8Array());
 * assert.deepEqual(got, []); // never delivered inside publish
 * await yieldToEventLoop();
 * assert.deepEqual(got, ["weir.j1.data.0"]);
 * await transport.close();
 * ```
 */
export class InProcessTransport implements Transport {
  /** The bus this connection belongs to; `bus.connect()` opens another. */
  readonly bus: InProcessBus;
  /** Largest payload accepted by {@linkcode InProcessTransport.publish}, in bytes. */
  readonly maxPayload: number;
  /** The connection's name, as used in error messages. */
  readonly name: string;
  #router: Router;
  #closed = false;
  #subscriptions = new Set<InProcessSubscription>();
  #inbox: string | undefined = undefined;
  #requests: PendingRequests;

  /**
   * Opens a connection: to `options.bus` when given (prefer
   * {@linkcode InProcessBus.connect}), otherwise to a new bus of its own.
   *
   * @param options The payload limit of a new bus (not allowed with `bus`)
   * and the connection's name.
   * @throws {TypeError} when both `bus` and `maxPayload` are given.
   * @throws {RangeError} when `maxPayload` is not a positive integer.
   */
  constructor(options: InProcessTransportOptions = {}) {
    if (options.bus !== undefined && options.maxPayload !== undefined) {
      throw new TypeError(
        "Cannot connect with both 'bus' and 'maxPayload': the bus sets the payload limit",
      );
    }
    const bus = options.bus ??
      new InProcessBus(options.maxPayload === undefined ? {} : { maxPayload: options.maxPayload });
    this.bus = bus;
    this.maxPayload = bus.maxPayload;
    this.#router = routerOf(bus);
    this.name = options.name ?? `in-process-${++this.#router.connections}`;
    this.#requests = new PendingRequests(this.name);
  }

  /**
   * Hands `data` to every subscription matching `subject`; handlers run
   * later. Do not modify `data` afterwards.
   *
   * @param subject A subject without wildcards.
   * @param data The payload, at most {@linkcode InProcessTransport.maxPayload} bytes.
   * @param options `reply`: a subject (no wildcards) for the receiver to answer on.
   * @throws {TransportClosedError} after {@linkcode InProcessTransport.close}.
   * @throws {PayloadTooLargeError} when `data.byteLength > maxPayload`.
   * @throws {InvalidSubjectError} when `subject` or `reply` is empty, has an
   * empty token, whitespace or a wildcard.
   */
  publish(subject: string, data: Uint8Array, options?: { reply?: string }): void {
    if (this.#closed) throw this.#closedError(`publish on '${subject}'`);
    if (data.byteLength > this.maxPayload) throw this.#tooLarge(subject, data);
    const reply = options?.reply;
    if (reply !== undefined) validateSubject(reply, false);
    this.#router.publish(subject, data, reply);
  }

  /**
   * Hands `value` to every subscription matching `subject`, as it is (no
   * encoding, no payload limit); handlers run later and receive it as
   * `message.value`, with empty `data`, in order with this connection's
   * byte payloads. Neither the caller nor the receivers may change `value`
   * afterwards (every receiver gets the same object).
   *
   * @param subject A subject without wildcards.
   * @param value The object to hand over; not `undefined`.
   * @returns `true`: a bus delivers every subject within its thread.
   * @throws {TransportClosedError} after {@linkcode InProcessTransport.close}.
   * @throws {InvalidSubjectError} when `subject` is empty, has an empty
   * token, whitespace or a wildcard.
   * @throws {TypeError} when `value` is `undefined`.
   */
  publishValue(subject: string, value: unknown): boolean {
    if (this.#closed) throw this.#closedError(`publish a value on '${subject}'`);
    if (value === undefined) {
      throw new TypeError(
        `Cannot publish a value on '${subject}' as the value must not be undefined: current value is undefined`,
      );
    }
    this.#router.publishValue(subject, value);
    return true;
  }

  /**
   * Calls `handler` for each message later published on a subject matching
   * `subject`, from any connection of the bus (this one included), one at a
   * time and never inside `publish`. The handler is not awaited. If it
   * throws, the error goes to `reportError` (an uncaught error, which ends
   * the process unless a global `error` listener prevents it) and delivery
   * goes on.
   *
   * @param subject A subject; `*` matches one token, a final `>` one or more.
   * @param handler Receives each message; it owns `message.data`.
   * @returns The subscription, to unsubscribe.
   * @throws {TransportClosedError} after {@linkcode InProcessTransport.close}.
   * @throws {InvalidSubjectError} when `subject` is empty, has an empty token
   * or whitespace, or has `>` before its last token.
   */
  subscribe(subject: string, handler: (message: TransportMessage) => void): Subscription {
    if (this.#closed) throw this.#closedError(`subscribe to '${subject}'`);
    const tokens = validateSubject(subject, true);
    const subscription = new InProcessSubscription(subject, tokens, handler, this.#router, () => {
      this.#subscriptions.delete(subscription);
    });
    this.#subscriptions.add(subscription);
    this.#router.add(subscription);
    return subscription;
  }

  /**
   * Publishes `data` on `subject` with a fresh reply subject and resolves
   * with the first reply.
   *
   * @param subject A subject without wildcards.
   * @param data The payload, at most {@linkcode InProcessTransport.maxPayload} bytes.
   * @param options `timeoutMs`: how long to wait for the reply, in ms.
   * @returns The first reply.
   * @throws {NoRespondersError} (as a rejection) when no subscription matches
   * `subject` at the time of the request.
   * @throws {TransportTimeoutError} (as a rejection) when no reply arrives
   * within `timeoutMs`.
   * @throws {TransportClosedError} (as a rejection) after
   * {@linkcode InProcessTransport.close}, also when it closes while waiting.
   * @throws {PayloadTooLargeError} (as a rejection) when `data` is too large.
   * @throws {InvalidSubjectError} (as a rejection) for a malformed subject.
   */
  request(subject: string, data: Uint8Array, options: RequestOptions): Promise<TransportMessage> {
    try {
      if (this.#closed) throw this.#closedError(`request on '${subject}'`);
      if (data.byteLength > this.maxPayload) throw this.#tooLarge(subject, data);
      if (this.#router.match(subject).length === 0) {
        throw new NoRespondersError(
          `No responders for the request of connection '${this.name}' on '${subject}'`,
        );
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const inbox = this.#inbox ?? this.#openInbox();
    const token = this.#requests.nextToken();
    return this.#requests.wait(token, subject, options.timeoutMs, () => {
      this.#router.publish(subject, data, `${inbox}.${token}`);
    });
  }

  /**
   * Resolves at once: `publish` hands each message to the bus before it
   * returns.
   *
   * @throws {TransportClosedError} (as a rejection) after {@linkcode InProcessTransport.close}.
   */
  flush(): Promise<void> {
    if (this.#closed) return Promise.reject(this.#closedError("flush"));
    return resolved;
  }

  /**
   * Unsubscribes every subscription of this connection (discarding their
   * queued messages), fails pending requests with
   * {@linkcode TransportClosedError}, and makes later calls throw it.
   * Messages this connection already published are still delivered.
   * Idempotent.
   */
  close(): Promise<void> {
    if (this.#closed) return resolved;
    this.#closed = true;
    for (const subscription of [...this.#subscriptions]) subscription.unsubscribe();
    for (const request of this.#requests.takeAll()) {
      request.reject(this.#closedError(`wait for the reply on '${request.subject}'`));
    }
    return resolved;
  }

  #openInbox(): string {
    const inbox = `${inboxRoot}.${crypto.randomUUID().replaceAll("-", "")}`;
    this.subscribe(`${inbox}.*`, (message) => {
      const token = message.subject.slice(inbox.length + 1);
      // undefined: timed out, or a second reply
      this.#requests.take(token)?.resolve(message);
    });
    this.#inbox = inbox;
    return inbox;
  }

  #closedError(action: string): TransportClosedError {
    return closedError(this.name, action);
  }

  #tooLarge(subject: string, data: Uint8Array): PayloadTooLargeError {
    return payloadTooLarge(subject, data, this.maxPayload);
  }
}

/** A subscription with its delivery queue. */
class InProcessSubscription implements Subscription {
  readonly subject: string;
  /** The validated tokens of `subject`. */
  readonly tokens: readonly string[];
  closed = false;
  /** Whether the router has this subscription in its ready list. */
  ready = false;
  #handler: (message: TransportMessage) => void;
  #router: Router;
  #onClose: () => void;
  #queue: (TransportMessage | undefined)[] = [];
  #head = 0;

  constructor(
    subject: string,
    tokens: readonly string[],
    handler: (message: TransportMessage) => void,
    router: Router,
    onClose: () => void,
  ) {
    this.subject = subject;
    this.tokens = tokens;
    this.#handler = handler;
    this.#router = router;
    this.#onClose = onClose;
  }

  unsubscribe(): void {
    if (this.closed) return;
    this.closed = true;
    this.#queue = [];
    this.#head = 0;
    this.#router.remove(this);
    this.#onClose();
  }

  enqueue(message: TransportMessage): void {
    this.#queue.push(message);
    if (!this.ready) {
      this.ready = true;
      this.#router.markReady(this);
    }
  }

  /**
   * Delivers the messages queued now (not those queued by the handlers it
   * calls). @returns whether messages are left for a later turn.
   */
  deliver(): boolean {
    const queue = this.#queue;
    const end = queue.length;
    let i = this.#head;
    while (i < end) {
      const message = queue[i]!;
      queue[i++] = undefined;
      this.#head = i;
      try {
        this.#handler(message);
      } catch (error) {
        reportError(error);
      }
      if (this.closed) return false;
    }
    if (end === queue.length) {
      queue.length = 0;
      this.#head = 0;
      return false;
    }
    if (i > 1024 && i * 2 > queue.length) {
      queue.splice(0, i);
      this.#head = 0;
    }
    return true;
  }
}

/** A node of the subscription trie: one per distinct token path. */
class TrieNode {
  readonly children = new Map<string, TrieNode>();
  /** Subscriptions whose subject ends at this node. */
  readonly here = new Set<InProcessSubscription>();
  /** Subscriptions whose subject ends with `>` after this node's path. */
  readonly rest = new Set<InProcessSubscription>();

  isEmpty(): boolean {
    return this.children.size === 0 && this.here.size === 0 && this.rest.size === 0;
  }
}

/** Routes and schedules messages for one bus. */
class Router {
  dropFilter: DropFilter | undefined = undefined;
  /** How many connections were opened, to name them. */
  connections = 0;
  #root = new TrieNode();
  #routes = new Map<string, readonly InProcessSubscription[]>();
  #ready: InProcessSubscription[] = [];
  #spare: InProcessSubscription[] = [];
  #scheduled = false;

  add(subscription: InProcessSubscription): void {
    const tokens = subscription.tokens;
    const last = tokens.length - 1;
    let node = this.#root;
    for (let i = 0; i < last; i++) node = childOf(node, tokens[i]!);
    if (tokens[last] === ">") node.rest.add(subscription);
    else childOf(node, tokens[last]!).here.add(subscription);
    this.#routes.clear();
  }

  remove(subscription: InProcessSubscription): void {
    const tokens = subscription.tokens;
    const last = tokens.length - 1;
    const path: TrieNode[] = [this.#root];
    for (let i = 0; i < last; i++) {
      const next = path[i]!.children.get(tokens[i]!);
      if (next === undefined) return;
      path.push(next);
    }
    if (tokens[last] === ">") path[last]!.rest.delete(subscription);
    else {
      const leaf = path[last]!.children.get(tokens[last]!);
      if (leaf === undefined) return;
      leaf.here.delete(subscription);
      path.push(leaf);
    }
    for (let i = path.length - 1; i > 0 && path[i]!.isEmpty(); i--) {
      path[i - 1]!.children.delete(tokens[i - 1]!);
    }
    this.#routes.clear();
  }

  /**
   * The subscriptions matching `subject`, from the cache when possible.
   * @throws {InvalidSubjectError} for a malformed or wildcard subject.
   */
  match(subject: string): readonly InProcessSubscription[] {
    const cached = this.#routes.get(subject);
    if (cached !== undefined) return cached;
    const tokens = validateSubject(subject, false);
    const found: InProcessSubscription[] = [];
    collect(this.#root, tokens, 0, found);
    if (!subject.startsWith(inboxRoot + ".")) { // reply subjects are used once
      if (this.#routes.size >= routeCacheLimit) this.#routes.clear();
      this.#routes.set(subject, found);
    }
    return found;
  }

  publish(subject: string, data: Uint8Array, reply: string | undefined): void {
    const targets = this.match(subject);
    if (this.dropFilter?.(subject, data) === true) return;
    const count = targets.length;
    if (count === 0) return;
    targets[0]!.enqueue(reply === undefined ? { subject, data } : { subject, data, reply });
    for (let i = 1; i < count; i++) {
      const copy = new Uint8Array(data);
      targets[i]!.enqueue(
        reply === undefined ? { subject, data: copy } : { subject, data: copy, reply },
      );
    }
  }

  publishValue(subject: string, value: unknown): void {
    const targets = this.match(subject);
    if (this.dropFilter?.(subject, NO_BYTES, value) === true) return;
    const count = targets.length;
    if (count === 0) return;
    const message = { subject, data: NO_BYTES, value };
    for (let i = 0; i < count; i++) targets[i]!.enqueue(message);
  }

  markReady(subscription: InProcessSubscription): void {
    this.#ready.push(subscription);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#drain);
    }
  }

  #drain = (): void => {
    this.#scheduled = false;
    const batch = this.#ready;
    this.#ready = this.#spare;
    for (let i = 0; i < batch.length; i++) {
      const subscription = batch[i]!;
      if (subscription.closed) continue;
      if (subscription.deliver()) {
        this.markReady(subscription); // still flagged ready; requeue for the next turn
      } else if (!subscription.closed) {
        subscription.ready = false;
      }
    }
    batch.length = 0;
    this.#spare = batch;
  };
}

function childOf(node: TrieNode, token: string): TrieNode {
  let child = node.children.get(token);
  if (child === undefined) {
    child = new TrieNode();
    node.children.set(token, child);
  }
  return child;
}

function collect(
  node: TrieNode,
  tokens: readonly string[],
  i: number,
  found: InProcessSubscription[],
): void {
  if (i === tokens.length) {
    for (const subscription of node.here) found.push(subscription);
    return;
  }
  for (const subscription of node.rest) found.push(subscription);
  const literal = node.children.get(tokens[i]!);
  if (literal !== undefined) collect(literal, tokens, i + 1, found);
  const star = node.children.get("*");
  if (star !== undefined) collect(star, tokens, i + 1, found);
}
