/**
 * The port {@linkcode Transport}: exchanges between the slot threads of one
 * worker process go through `MessagePort`s (`postMessage` with the payload's
 * `ArrayBuffer` transferred, not copied) instead of through the NATS server;
 * everything else goes through the wrapped NATS transport (DESIGN.md §15:
 * "Between threads of one process: transferred `ArrayBuffer`s"; issue 13
 * item 2). Flink's counterpart is the `LocalInputChannel`, which a
 * `SingleInputGate` uses instead of a `RemoteInputChannel` when the
 * producing subpartition lives in the same TaskManager.
 *
 * ## Design
 *
 * - **Peers.** Each slot thread has one `PortTransport` wrapping its NATS
 *   transport (the *remote*). The worker process brokers one
 *   `MessageChannel` between every two slot threads of a job and hands each
 *   end to its thread, which calls {@linkcode PortTransport.connectPeer}. A
 *   transport is also its own peer, through a channel of its own, so that two
 *   subtasks in one thread exchange bytes without NATS either.
 * - **Interest.** Every subscription is made on the remote (so publishers in
 *   other processes reach it) and announced to every peer (`sub`/`unsub`,
 *   NATS's interest propagation between servers). {@linkcode PortTransport.flush}
 *   is a ping round trip on every port besides the remote's flush, so once
 *   it resolves every peer knows this transport's subscriptions, as the NATS
 *   server does.
 * - **Routing.** A publish on a *routable* subject (the `routable` option;
 *   cluster mode: the subtask mailboxes `weir.<job>.<attempt>.task.…`) that
 *   some peer (or this transport) subscribes to goes to those peers' ports
 *   only; anything else goes to the remote. A routable subject's subscribers
 *   must therefore all live in one worker process when one of them does: a
 *   subtask's mailbox has exactly one subscriber, its subtask.
 * - **Order.** A port is FIFO, and a publisher keeps a subject on the path
 *   its first publish took: a subject first published on NATS (no peer had
 *   announced interest yet) stays on NATS, so that one publisher's messages
 *   on one subject never overtake each other on two paths. (A wildcard
 *   subscription matching two subjects that took different paths may see
 *   them out of order; the data plane subscribes to exact subjects only.)
 * - **Loss.** A peer thread that ends (a slot crash, or the process
 *   terminating it) is reported with {@linkcode PortTransport.peerLost}:
 *   from then on, publishing on a subject this transport had sent to that
 *   peer throws a {@linkcode TransportError} naming the peer, so the
 *   publishing subtask fails as it would after losing a NATS peer, never
 *   silently. Messages posted to a port before the loss are lost with the
 *   thread; the data plane's sequence numbers and the coordinator (told of
 *   the thread's end by the worker process) fail the attempt.
 * - **Fencing** is unchanged: subjects carry the attempt, and receivers drop
 *   messages of another attempt by their `att` field.
 *
 * ## Invariants
 *
 * - The contract of `types.ts` holds (the conformance suite runs over two
 *   peers): handlers run one message at a time, never inside `publish`;
 *   each subscription owns its `data` (a second subscription in the same
 *   thread gets a copy); `reply` is `undefined` without a reply subject.
 * - `publish` takes ownership of `data`: when `data` spans its whole
 *   `ArrayBuffer`, the buffer is transferred to the (last) receiving port
 *   and `data` is detached (length 0) after the call. A view of part of a
 *   buffer is copied.
 * - Requests always go through the remote (their reply subjects are the
 *   remote's `_INBOX.…`, and NATS answers "no responders"); local
 *   subscribers receive them because they are also remote subscribers.
 *
 * @example
 * ```ts ignore
 * const transport = new PortTransport({
 *   remote: await NatsTransport.connect({ servers: "nats://127.0.0.1:4222" }),
 *   ownsRemote: true,
 *   name: "slot w1-s0",
 *   routable: isTaskSubject,
 * });
 * transport.connectPeer("w1-s1", portFromTheWorkerProcess);
 * ```
 *
 * @module
 */

import {
  closedError,
  payloadTooLarge,
  type RequestOptions,
  type Subscription,
  type Transport,
  TransportError,
  type TransportMessage,
  validateSubject,
} from "./types.ts";

/** Options of {@linkcode PortTransport}. */
export interface PortTransportOptions {
  /** The transport to other processes (NATS); also used for requests. */
  readonly remote: Transport;
  /** Whether {@linkcode PortTransport.close} closes `remote`. Default false. */
  readonly ownsRemote?: boolean;
  /** Names the transport in errors, e.g. `"slot w1-s0"`. Default `"port"`. */
  readonly name?: string;
  /**
   * Which subjects may go through ports (see the module docs). Default:
   * every subject. Cluster mode: {@linkcode isTaskSubject}.
   */
  readonly routable?: (subject: string) => boolean;
}

/** Counters of a {@linkcode PortTransport}, since it was made. */
export interface PortTransportStats {
  /** Messages posted to a port (a peer's or this transport's own), one per receiving peer. */
  readonly portMessages: number;
  /** Payload bytes posted to ports. */
  readonly portBytes: number;
  /** Messages published on the remote (requests included). */
  readonly remoteMessages: number;
  /** Payload bytes published on the remote. */
  readonly remoteBytes: number;
}

/** What two port transports send each other over a port. */
export type PortWireMessage =
  | { readonly t: "sub"; readonly id: number; readonly subject: string }
  | { readonly t: "unsub"; readonly id: number }
  | {
    readonly t: "msg";
    readonly subject: string;
    readonly data: Uint8Array;
    readonly reply?: string;
  }
  | { readonly t: "ping"; readonly n: number }
  | { readonly t: "pong"; readonly n: number }
  /** The sender closed: forget its subscriptions (not a loss). */
  | { readonly t: "bye" };

/**
 * Whether `subject` is a subtask mailbox, `weir.<job>.<attempt>.task.<vertex>.<subtask>`
 * (see `taskSubject` in `../task/messages.ts`): the subjects cluster mode
 * routes through ports.
 */
export function isTaskSubject(subject: string): boolean {
  return TASK_SUBJECT.test(subject);
}

const TASK_SUBJECT = /^weir\.[A-Za-z0-9_-]+\.\d+\.task\.[A-Za-z0-9_-]+\.\d+$/;
const SELF = "\u0000self";

interface LocalSubscription {
  readonly id: number;
  readonly subject: string;
  readonly tokens: readonly string[];
  readonly handler: (message: TransportMessage) => void;
  closed: boolean;
}

interface Peer {
  readonly id: string;
  readonly port: MessagePort;
  /** The peer's subscriptions by id, as token lists. */
  readonly interest: Map<number, readonly string[]>;
  /** Routable subjects this transport has posted to the peer. */
  readonly sent: Set<string>;
  readonly pings: Map<number, () => void>;
}

/** A {@linkcode Transport} that routes to peer threads through ports (see the module docs). */
export class PortTransport implements Transport {
  /** The transport's name, as used in error messages. */
  readonly name: string;
  readonly #remote: Transport;
  readonly #owns: boolean;
  readonly #routable: (subject: string) => boolean;
  readonly #peers = new Map<string, Peer>();
  readonly #self: Peer;
  readonly #selfChannel = new MessageChannel();
  readonly #subscriptions = new Map<number, LocalSubscription>();
  readonly #remoteSubscriptions = new Map<number, Subscription>();
  /** Routable subjects whose first publish went to the remote: they stay there. */
  readonly #onRemote = new Set<string>();
  /** Routable subjects whose peer was lost, with the reason. */
  readonly #lost = new Map<string, string>();
  #nextId = 0;
  #nextPing = 0;
  #closed = false;
  #portMessages = 0;
  #portBytes = 0;
  #remoteMessages = 0;
  #remoteBytes = 0;

  /**
   * Wraps `options.remote`.
   *
   * @param options The remote, its ownership, the name and the routable subjects.
   */
  constructor(options: PortTransportOptions) {
    this.#remote = options.remote;
    this.#owns = options.ownsRemote ?? false;
    this.name = options.name ?? "port";
    this.#routable = options.routable ?? (() => true);
    this.#self = {
      id: SELF,
      port: this.#selfChannel.port1,
      interest: new Map(),
      sent: new Set(),
      pings: new Map(),
    };
    this.#selfChannel.port2.onmessage = (e: MessageEvent<PortWireMessage>) =>
      this.#onWire(this.#self, e.data);
  }

  /** Largest payload accepted, in bytes: the remote's. */
  get maxPayload(): number {
    return this.#remote.maxPayload;
  }

  /** Message and byte counts by path (a monitoring counter; see {@linkcode PortTransportStats}). */
  get stats(): PortTransportStats {
    return {
      portMessages: this.#portMessages,
      portBytes: this.#portBytes,
      remoteMessages: this.#remoteMessages,
      remoteBytes: this.#remoteBytes,
    };
  }

  /** Ids of the connected peers (this transport itself not included). */
  get peers(): string[] {
    return [...this.#peers.keys()];
  }

  /**
   * Connects a peer transport in another thread (or this one) through its
   * end of a `MessageChannel`, and announces this transport's subscriptions
   * to it. The other end must be handed to the peer's `connectPeer`.
   *
   * @param peerId Names the peer in errors (cluster mode: its slot id).
   * @param port This transport's end of the channel.
   * @throws {TransportError} when a peer of that id is connected already.
   * @throws {TransportClosedError} after {@linkcode PortTransport.close}.
   */
  connectPeer(peerId: string, port: MessagePort): void {
    if (this.#closed) throw closedError(this.name, `connect peer '${peerId}'`);
    if (this.#peers.has(peerId) || peerId === SELF) {
      throw new TransportError(
        `Transport '${this.name}' is connected to a peer '${peerId}' already`,
      );
    }
    const peer: Peer = { id: peerId, port, interest: new Map(), sent: new Set(), pings: new Map() };
    this.#peers.set(peerId, peer);
    port.onmessage = (e: MessageEvent<PortWireMessage>) => this.#onWire(peer, e.data);
    for (const s of this.#subscriptions.values()) {
      port.postMessage({ t: "sub", id: s.id, subject: s.subject } satisfies PortWireMessage);
    }
  }

  /**
   * Disconnects a peer whose thread ended. Publishing later on a subject
   * this transport had sent to it throws a {@linkcode TransportError}
   * carrying `reason`; pending flushes stop waiting for it. Unknown ids are
   * ignored (the peer may have closed first).
   *
   * @param peerId The id given to {@linkcode PortTransport.connectPeer}.
   * @param reason Why it ended, e.g. "the slot thread of w1-s1 ended".
   */
  peerLost(peerId: string, reason: string): void {
    const peer = this.#peers.get(peerId);
    if (peer === undefined) return;
    this.#dropPeer(peer);
    for (const subject of peer.sent) this.#lost.set(subject, reason);
  }

  /**
   * Publishes `data` on `subject`: to the ports of the peers subscribing to
   * it when it is routable and some do, else on the remote. Takes ownership
   * of `data` (see the module docs).
   *
   * @throws {TransportClosedError} after {@linkcode PortTransport.close}.
   * @throws {PayloadTooLargeError} when `data.byteLength > maxPayload`.
   * @throws {InvalidSubjectError} for a malformed subject or reply subject.
   * @throws {TransportError} when the peer that subscribed to `subject` was lost.
   */
  publish(subject: string, data: Uint8Array, options?: { reply?: string }): void {
    if (this.#closed) throw closedError(this.name, `publish on '${subject}'`);
    if (data.byteLength > this.maxPayload) throw payloadTooLarge(subject, data, this.maxPayload);
    const reply = options?.reply;
    if (this.#routable(subject) && !this.#onRemote.has(subject)) {
      const tokens = validateSubject(subject, false);
      if (reply !== undefined) validateSubject(reply, false);
      const lost = this.#lost.get(subject);
      if (lost !== undefined) {
        throw new TransportError(
          `Cannot publish on '${subject}' from '${this.name}': its subscriber's thread was lost (${lost})`,
        );
      }
      const targets = this.#interested(tokens);
      if (targets.length > 0) {
        for (let i = 0; i < targets.length; i++) {
          const last = i === targets.length - 1;
          this.#post(targets[i]!, subject, last ? data : data.slice(), reply);
        }
        return;
      }
      this.#onRemote.add(subject);
    }
    this.#remote.publish(subject, data, options);
    this.#remoteMessages++;
    this.#remoteBytes += data.byteLength;
  }

  /**
   * Calls `handler` for each message published on a matching subject, by
   * a peer through a port or by anyone through the remote.
   *
   * @throws {TransportClosedError} after {@linkcode PortTransport.close}.
   * @throws {InvalidSubjectError} for a malformed subject.
   */
  subscribe(subject: string, handler: (message: TransportMessage) => void): Subscription {
    if (this.#closed) throw closedError(this.name, `subscribe to '${subject}'`);
    const tokens = validateSubject(subject, true);
    const remote = this.#remote.subscribe(subject, handler);
    const id = this.#nextId++;
    const local: LocalSubscription = { id, subject, tokens, handler, closed: false };
    this.#subscriptions.set(id, local);
    this.#remoteSubscriptions.set(id, remote);
    for (const peer of this.#peers.values()) {
      peer.port.postMessage({ t: "sub", id, subject } satisfies PortWireMessage);
    }
    return {
      subject,
      unsubscribe: () => {
        if (local.closed) return;
        local.closed = true;
        remote.unsubscribe();
        this.#subscriptions.delete(id);
        this.#remoteSubscriptions.delete(id);
        for (const peer of this.#peers.values()) {
          peer.port.postMessage({ t: "unsub", id } satisfies PortWireMessage);
        }
      },
    };
  }

  /**
   * A request through the remote (see the module docs); the subject then
   * stays on the remote for this publisher.
   *
   * @throws {TransportTimeoutError} (as a rejection) when no reply arrives in time.
   * @throws {NoRespondersError} (as a rejection) when nobody subscribes.
   * @throws {TransportClosedError} (as a rejection) after {@linkcode PortTransport.close}.
   */
  request(subject: string, data: Uint8Array, options: RequestOptions): Promise<TransportMessage> {
    if (this.#closed) {
      return Promise.reject(closedError(this.name, `request on '${subject}'`));
    }
    if (this.#routable(subject)) this.#onRemote.add(subject);
    this.#remoteMessages++;
    this.#remoteBytes += data.byteLength;
    return this.#remote.request(subject, data, options);
  }

  /**
   * Resolves once the remote flushed and every peer has processed what this
   * transport posted to it before (a ping round trip per port).
   *
   * @throws {TransportClosedError} (as a rejection) after {@linkcode PortTransport.close}.
   */
  async flush(): Promise<void> {
    if (this.#closed) throw closedError(this.name, "flush");
    const pings = [...this.#peers.values()].map((peer) =>
      new Promise<void>((resolve) => {
        const n = this.#nextPing++;
        peer.pings.set(n, resolve);
        peer.port.postMessage({ t: "ping", n } satisfies PortWireMessage);
      })
    );
    await Promise.all([this.#remote.flush(), ...pings]);
  }

  /**
   * Unsubscribes everything, tells the peers (they forget this transport's
   * subscriptions), closes the ports, and closes the remote when owned.
   * Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    for (const s of this.#subscriptions.values()) s.closed = true;
    for (const remote of this.#remoteSubscriptions.values()) remote.unsubscribe();
    this.#subscriptions.clear();
    this.#remoteSubscriptions.clear();
    for (const peer of [...this.#peers.values()]) {
      peer.port.postMessage({ t: "bye" } satisfies PortWireMessage);
      this.#dropPeer(peer);
    }
    this.#closed = true;
    this.#selfChannel.port1.close();
    this.#selfChannel.port2.close();
    if (this.#owns) await this.#remote.close();
  }

  #dropPeer(peer: Peer): void {
    this.#peers.delete(peer.id);
    peer.port.onmessage = null;
    peer.port.close();
    for (const resolve of peer.pings.values()) resolve();
    peer.pings.clear();
  }

  /** The peers (this transport as {@linkcode SELF} included) with a subscription matching `tokens`. */
  #interested(tokens: readonly string[]): Peer[] {
    const targets: Peer[] = [];
    for (const s of this.#subscriptions.values()) {
      if (matches(s.tokens, tokens)) {
        targets.push(this.#self);
        break;
      }
    }
    for (const peer of this.#peers.values()) {
      for (const pattern of peer.interest.values()) {
        if (matches(pattern, tokens)) {
          targets.push(peer);
          break;
        }
      }
    }
    return targets;
  }

  #post(peer: Peer, subject: string, data: Uint8Array, reply: string | undefined): void {
    const message: PortWireMessage = reply === undefined
      ? { t: "msg", subject, data }
      : { t: "msg", subject, data, reply };
    const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength &&
      data.buffer instanceof ArrayBuffer;
    this.#portMessages++;
    this.#portBytes += data.byteLength;
    peer.sent.add(subject);
    if (whole) peer.port.postMessage(message, [data.buffer as ArrayBuffer]);
    else peer.port.postMessage({ ...message, data: data.slice() });
  }

  #onWire(peer: Peer, m: PortWireMessage): void {
    if (this.#closed) return;
    switch (m.t) {
      case "msg":
        return this.#deliver(m.subject, m.data, m.reply);
      case "sub":
        peer.interest.set(m.id, validateSubject(m.subject, true));
        return;
      case "unsub":
        peer.interest.delete(m.id);
        return;
      case "ping":
        peer.port.postMessage({ t: "pong", n: m.n } satisfies PortWireMessage);
        return;
      case "pong": {
        const resolve = peer.pings.get(m.n);
        peer.pings.delete(m.n);
        resolve?.();
        return;
      }
      case "bye":
        this.#dropPeer(peer);
        return;
    }
  }

  #deliver(subject: string, data: Uint8Array, reply: string | undefined): void {
    const tokens = subject.split(".");
    let first = true;
    for (const s of this.#subscriptions.values()) {
      if (s.closed || !matches(s.tokens, tokens)) continue;
      const bytes = first ? data : data.slice();
      first = false;
      const message: TransportMessage = reply === undefined
        ? { subject, data: bytes }
        : { subject, data: bytes, reply };
      try {
        s.handler(message);
      } catch (error) {
        reportError(error);
      }
    }
  }
}

/** Whether the subscription `pattern` (with `*` and a final `>`) matches the subject `tokens`. */
function matches(pattern: readonly string[], tokens: readonly string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    if (p === ">") return tokens.length > i;
    if (i >= tokens.length) return false;
    if (p !== "*" && p !== tokens[i]) return false;
  }
  return pattern.length === tokens.length;
}
