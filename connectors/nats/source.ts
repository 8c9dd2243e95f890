/**
 * A core NATS source: the messages published on a subject while the job
 * runs, at-most-once.
 *
 * ## Guarantee: at-most-once, whatever the checkpointing
 *
 * Core NATS keeps nothing: a message goes to the subscriptions that exist
 * when it is published, and there is no acknowledgement and no replay.
 * So:
 *
 * - messages published before the source subscribed, or while its
 *   connection was down (the client reconnects by itself; each reconnection
 *   is logged as a warning), are never seen;
 * - after a failure the job restores its last checkpoint and subscribes
 *   again: the messages read between that checkpoint and the failure are
 *   lost (their effects were rolled back, and nobody sends them again);
 * - a server that finds the subscriber too slow (about 10 s behind) closes
 *   its connection and drops what it held (see FACTS: "a slow subscriber
 *   loses data silently").
 *
 * Checkpointing does not make it better. For replay and exactly-once use
 * the JetStream source (`connectors/jetstream`).
 *
 * ## Parallelism
 *
 * One split per source subtask, `nats-<subject>-<i>`. With parallelism above
 * 1 the subtasks must share the messages through a NATS queue group
 * (`queueGroup`), or each would get every message; `enumerateSplits`
 * refuses a parallelism above 1 without one.
 *
 * ## Memory
 *
 * Core NATS has no flow control: the client pushes messages as they come.
 * The reader queues at most `maxBufferedMessages` (default 100 000); when a
 * message arrives with the queue full, `overflow` decides: `"fail"` (the
 * default) fails the attempt with a {@linkcode NatsSourceOverflowError}
 * naming the subject and the limit; `"drop"` drops the message and logs a
 * warning with the running count of dropped messages (the first drop, then
 * every 10 000th).
 *
 * ## Boundedness
 *
 * Unbounded by default. With `maxMessages` each source subtask ends after
 * emitting that many messages (a bounded job, for demos and tests).
 *
 * @module
 */

import type {
  Boundedness,
  InputStatus,
  ReaderOutput,
  Source,
  SourceOutput,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
  SplitEnumeratorContext,
} from "../../runtime/api/source.ts";
import {
  connectNats,
  type NatsConnectionOptions,
  watchReconnects,
} from "../../runtime/actor/nats_connect.ts";
import type { NatsConnection, Subscription } from "../../runtime/actor/nats_deps.ts";
import { logger } from "../../runtime/log.ts";
import { MessageQueue } from "./_message_queue.ts";
import { checkCountingSplit } from "../../runtime/api/counting_split.ts";
import { checkOptions, type OptionsShape } from "../../runtime/api/options_check.ts";

/** The known keys of {@linkcode NatsSourceOptions} and the kinds of their values. */
const NATS_SOURCE_OPTIONS: OptionsShape<NatsSourceOptions<unknown>> = {
  connection: "object",
  subject: "any",
  queueGroup: "string",
  deserializer: "function",
  maxBufferedMessages: "number",
  overflow: "any",
  maxMessages: "number",
};

const log = logger("nats-source");

/** Records emitted per `pollNext` at most. */
const BATCH_SIZE = 1000;

/** Default of {@linkcode NatsSourceOptions.maxBufferedMessages}. */
export const DEFAULT_MAX_BUFFERED_MESSAGES = 100_000;

/** Turns a message's payload into a record; `subject` is the message's subject. */
export type NatsDeserializer<T> = (data: Uint8Array, subject: string) => T;

/** Options of {@linkcode NatsSource}. */
export interface NatsSourceOptions<T> {
  /** How to reach NATS. */
  readonly connection: NatsConnectionOptions;
  /** The subject to subscribe to; wildcards (`*`, `>`) allowed. */
  readonly subject: string;
  /** The NATS queue group the subtasks share; required for parallelism above 1. */
  readonly queueGroup?: string;
  /**
   * Payload to record. Default: the payload decoded as UTF-8 (a `string`).
   * An error it throws fails the attempt, naming the subject and the
   * payload's first bytes; after a restart that message is gone (no replay).
   */
  readonly deserializer?: NatsDeserializer<T>;
  /** Messages queued in the reader at most (a positive integer, default 100 000). */
  readonly maxBufferedMessages?: number;
  /** What a message arriving with the queue full does: `"fail"` (default) or `"drop"`. */
  readonly overflow?: "fail" | "drop";
  /** End each source subtask after this many messages (a positive integer); default: never. */
  readonly maxMessages?: number;
}

/** The split of one source subtask. Plain data, MessagePack-encodable. */
export interface NatsSplit extends SourceSplit {
  /** `nats-<subject>-<i>`. */
  readonly splitId: string;
  /** Messages this split emitted so far, over restores. */
  readonly emitted: number;
}

/**
 * A core NATS source's queue was full when a message arrived
 * (`overflow: "fail"`): the job reads slower than the subject is published.
 */
export class NatsSourceOverflowError extends Error {
  /**
   * Builds the error.
   * @param message names the subject, the subtask and the limit.
   */
  constructor(message: string) {
    super(message);
    this.name = "NatsSourceOverflowError";
  }
}

const utf8 = new TextDecoder();

/**
 * Checks a core NATS split read back from a checkpoint (it passed through
 * MessagePack, so it may be anything a corrupt or foreign checkpoint holds).
 *
 * @param raw the restored split.
 * @param where names the source, for the message.
 * @returns the split, as `{ splitId, emitted }`.
 * @throws {SuppressRestartsError} naming the field that is wrong and its
 *   current value: a restart would read the same checkpoint again.
 */
export function checkNatsSplit(raw: unknown, where: string): NatsSplit {
  return checkCountingSplit(raw, where, {
    kind: "core NATS split",
    prefix: "nats-",
    countField: "emitted",
  });
}

function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!(Number.isSafeInteger(v) && v >= 1)) {
    throw new RangeError(`NatsSource '${name}' must be a positive integer: current value is ${v}`);
  }
  return v;
}

/**
 * Messages of a core NATS subject, at-most-once (see the module docs).
 *
 * @example
 * ```ts
 * import { NatsSource } from "./source.ts";
 * const source = new NatsSource({ connection: { servers: "nats://127.0.0.1:4222" }, subject: "sensors.>" });
 * console.assert(source.boundedness === "continuous-unbounded");
 * ```
 */
export class NatsSource<T = string> implements Source<T, NatsSplit> {
  /** `"bounded"` with `maxMessages`, else `"continuous-unbounded"`. */
  readonly boundedness: Boundedness;
  /** The validated options, with their defaults. */
  readonly options: Readonly<
    Required<Omit<NatsSourceOptions<T>, "queueGroup" | "maxMessages">> & {
      queueGroup: string | undefined;
      maxMessages: number | undefined;
    }
  >;

  /**
   * Creates the source; nothing connects until a reader starts.
   * @param options see {@linkcode NatsSourceOptions}.
   * @throws {RangeError} for an empty subject or queue group, or an option
   *   out of range (naming it and its current value)., or an unknown option
   *   (`checkOptions`); a `TypeError` for an option of the wrong type.
   */
  constructor(options: NatsSourceOptions<T>) {
    checkOptions("NatsSource", options, NATS_SOURCE_OPTIONS);
    if (typeof options.subject !== "string" || options.subject.trim() === "") {
      throw new RangeError(
        `NatsSource 'subject' must be a non-empty string: current value is ${
          JSON.stringify(options.subject)
        }`,
      );
    }
    if (options.queueGroup !== undefined && options.queueGroup.trim() === "") {
      throw new RangeError(`NatsSource 'queueGroup' must not be empty: current value is ""`);
    }
    const overflow = options.overflow ?? "fail";
    if (overflow !== "fail" && overflow !== "drop") {
      throw new RangeError(
        `NatsSource 'overflow' must be "fail" or "drop": current value is ${
          JSON.stringify(overflow)
        }`,
      );
    }
    const maxMessages = options.maxMessages === undefined
      ? undefined
      : positive("maxMessages", options.maxMessages, 1);
    this.options = {
      connection: options.connection,
      subject: options.subject,
      queueGroup: options.queueGroup,
      deserializer: options.deserializer ??
        ((data: Uint8Array) => utf8.decode(data) as unknown as T),
      maxBufferedMessages: positive(
        "maxBufferedMessages",
        options.maxBufferedMessages,
        DEFAULT_MAX_BUFFERED_MESSAGES,
      ),
      overflow,
      maxMessages,
    };
    this.boundedness = maxMessages === undefined ? "continuous-unbounded" : "bounded";
  }

  /**
   * One split per subtask.
   * @throws {RangeError} when `parallelism` is above 1 and no `queueGroup` is set.
   */
  enumerateSplits(context: SplitEnumeratorContext): NatsSplit[] {
    const { parallelism } = context;
    if (parallelism > 1 && this.options.queueGroup === undefined) {
      throw new RangeError(
        `NatsSource of subject ${this.options.subject} at parallelism ${parallelism} needs a 'queueGroup' (without one every subtask would get every message): current value is undefined`,
      );
    }
    return Array.from({ length: parallelism }, (_, i) => ({
      splitId: `nats-${this.options.subject}-${i}`,
      emitted: 0,
    }));
  }

  /** Creates the reader of one source subtask. */
  createReader(context: SourceReaderContext): SourceReader<T, NatsSplit> {
    return new NatsReader(this, context);
  }
}

interface Message {
  readonly subject: string;
  readonly data: Uint8Array;
}

class NatsReader<T> implements SourceReader<T, NatsSplit> {
  readonly #source: NatsSource<T>;
  readonly #where: string;
  #nc: NatsConnection | undefined;
  #subscription: Subscription | undefined;
  #split: { splitId: string; emitted: number; output: SourceOutput<T> | undefined } | undefined;
  readonly #queue: MessageQueue<Message>;
  #failure: Error | undefined;
  #wake: (() => void) | undefined;
  #closed = false;

  constructor(source: NatsSource<T>, context: SourceReaderContext) {
    this.#source = source;
    this.#queue = new MessageQueue(source.options.maxBufferedMessages, source.options.overflow);
    this.#where =
      `NatsSource '${context.operatorName}' (subject ${source.options.subject}, subtask ${
        context.subtaskIndex + 1
      }/${context.parallelism})`;
  }

  async start(): Promise<void> {
    const o = this.#source.options;
    this.#nc = await connectNats({ name: `weir-nats-source-${o.subject}`, ...o.connection });
    watchReconnects(this.#nc, () =>
      log.warn(
        `${this.#where}: the connection to NATS was lost and re-established; messages published meanwhile are lost (core NATS is at-most-once)`,
      ));
  }

  addSplits(splits: NatsSplit[]): void {
    for (const raw of splits) {
      const split = checkNatsSplit(raw, this.#where);
      if (this.#split !== undefined) {
        // Restored at a lower parallelism: one subscription reads for both.
        this.#split.emitted += split.emitted;
        continue;
      }
      this.#split = { splitId: split.splitId, emitted: split.emitted, output: undefined };
      this.#subscribe();
    }
  }

  #subscribe(): void {
    const o = this.#source.options;
    const nc = this.#nc;
    if (nc === undefined) throw new Error(`${this.#where}: addSplits before start`);
    this.#subscription = nc.subscribe(o.subject, {
      ...(o.queueGroup === undefined ? {} : { queue: o.queueGroup }),
      callback: (error, msg) => {
        if (error !== null) {
          this.#fail(
            new Error(`${this.#where}: subscription failed: ${error.message}`, {
              cause: error,
            }),
          );
          return;
        }
        this.#enqueue({ subject: msg.subject, data: msg.data });
      },
    });
  }

  #enqueue(message: Message): void {
    if (this.#closed || this.#failure !== undefined) return;
    const o = this.#source.options;
    switch (this.#queue.offer(message)) {
      case "queued":
        this.#notify();
        return;
      case "overflow":
        this.#fail(
          new NatsSourceOverflowError(
            `${this.#where}: ${o.maxBufferedMessages} messages are queued (maxBufferedMessages) and another arrived: the job reads slower than the subject is published (set overflow: "drop" to drop instead)`,
          ),
        );
        return;
      case "dropped": {
        const dropped = this.#queue.dropped;
        if (dropped === 1 || dropped % 10_000 === 0) {
          log.warn(
            `${this.#where}: queue full (maxBufferedMessages ${o.maxBufferedMessages}): ${dropped} messages dropped so far`,
          );
        }
        return;
      }
    }
  }

  #fail(error: Error): void {
    this.#failure ??= error;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  pollNext(output: ReaderOutput<T>): InputStatus {
    if (this.#failure !== undefined) throw this.#failure;
    const split = this.#split;
    if (split === undefined) return "END_OF_INPUT"; // no split: this subtask reads nothing
    const o = this.#source.options;
    const limit = o.maxMessages === undefined ? Infinity : o.maxMessages - split.emitted;
    if (limit <= 0) {
      this.#unsubscribe();
      if (split.output !== undefined) output.releaseOutputForSplit(split.splitId);
      split.output = undefined;
      return "END_OF_INPUT";
    }
    const messages = this.#queue.take(Math.min(BATCH_SIZE, limit));
    if (messages.length === 0) return "NOTHING_AVAILABLE";
    const out = split.output ??= output.createOutputForSplit(split.splitId);
    for (const message of messages) {
      let record: T;
      try {
        record = o.deserializer(message.data, message.subject);
      } catch (error) {
        const preview = JSON.stringify(utf8.decode(message.data.subarray(0, 64)));
        throw new Error(
          `${this.#where}: cannot deserialize a message of subject ${message.subject} (${message.data.length} bytes, starting ${preview}): ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
      split.emitted++;
      out.collect(record);
    }
    return "MORE_AVAILABLE";
  }

  isAvailable(): Promise<void> {
    if (this.#queue.size > 0 || this.#failure !== undefined || this.#closed) {
      return Promise.resolve();
    }
    const split = this.#split;
    const o = this.#source.options;
    if (split !== undefined && o.maxMessages !== undefined && split.emitted >= o.maxMessages) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#wake = resolve);
  }

  snapshotState(_checkpointId: number): NatsSplit[] {
    const split = this.#split;
    return split === undefined ? [] : [{ splitId: split.splitId, emitted: split.emitted }];
  }

  #unsubscribe(): void {
    try {
      this.#subscription?.unsubscribe();
    } catch {
      // the connection is closed already
    }
    this.#subscription = undefined;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe();
    this.#notify();
    const nc = this.#nc;
    this.#nc = undefined;
    await nc?.close();
  }
}
