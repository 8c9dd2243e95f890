/**
 * A core NATS sink: publishes each record on a subject, at-most-once. A
 * `SinkV2` with a writer and no committer.
 *
 * ## Guarantee: at-most-once (`deliveryGuarantee: "none"` only)
 *
 * Core NATS has no acknowledgement: a publish is handed to the client's
 * buffer and the server forwards it to the subscriptions that exist at that
 * moment. A message published with no subscriber listening, to a
 * subscriber that is too slow, or while the connection is down beyond the
 * client's reconnect buffer, is gone, and the publisher is not told. There
 * is no transaction to make a replay invisible either: after a restore, the
 * records between the checkpoint and the failure are published again. So
 * the sink promises nothing and accepts only `deliveryGuarantee: "none"`;
 * `"at-least-once"` or `"exactly-once"` is a `DeliveryGuaranteeError`. For
 * guarantees use the JetStream sink (`connectors/jetstream`), which has
 * acknowledged, deduplicated and transactional modes.
 *
 * ## When it publishes
 *
 * - `write`: publishes at once (the client buffers); every
 *   `flushEveryRecords` records (default 10 000) it waits for the server to
 *   have read them (a `flush` round trip), which bounds the client's buffer
 *   and slows the job to the server's pace.
 * - `flush` (at each checkpoint barrier and at the end of input): waits for
 *   that round trip too, so a finished job has handed every record to the
 *   server.
 * - `close`: closes the connection.
 *
 * A subject function that returns an invalid subject (empty, a wildcard)
 * fails the job without restarts (a `SuppressRestartsError`): the same
 * record would give the same subject again.
 *
 * @module
 */

import {
  checkDeliveryGuarantee,
  type DeliveryGuarantee,
  type SinkV2,
  type SinkWriter,
  type WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
import type { SinkContext } from "../../runtime/api/sink.ts";
import {
  connectNats,
  type NatsConnectionOptions,
  watchReconnects,
} from "../../runtime/actor/nats_connect.ts";
import type { NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { logger } from "../../runtime/log.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { checkOptions, type OptionsShape } from "../../runtime/api/options_check.ts";

/** The known keys of {@linkcode NatsSinkOptions} and the kinds of their values. */
const NATS_SINK_OPTIONS: OptionsShape<NatsSinkOptions<unknown>> = {
  connection: "object",
  subject: "any",
  serializer: "function",
  deliveryGuarantee: "any",
  flushEveryRecords: "number",
};

const log = logger("nats-sink");

/** Default of {@linkcode NatsSinkOptions.flushEveryRecords}. */
export const DEFAULT_FLUSH_EVERY_RECORDS = 10_000;

/** Options of {@linkcode NatsSink}. */
export interface NatsSinkOptions<T> {
  /** How to reach NATS. */
  readonly connection: NatsConnectionOptions;
  /** The subject of every record, or a function giving each record's subject (no wildcards). */
  readonly subject: string | ((record: T) => string);
  /** Record to payload. Default: `String(record)` encoded as UTF-8. */
  readonly serializer?: (record: T) => Uint8Array;
  /** Only `"none"` (the default) is accepted; see the module docs. */
  readonly deliveryGuarantee?: DeliveryGuarantee;
  /** Wait for the server after every this many records (a positive integer, default 10 000). */
  readonly flushEveryRecords?: number;
}

const utf8 = new TextEncoder();

/**
 * Publishes records on core NATS subjects, at-most-once (see the module docs).
 *
 * @example
 * ```ts
 * import { NatsSink } from "./sink.ts";
 * const sink = new NatsSink<{ id: string }>({
 *   connection: { servers: "nats://127.0.0.1:4222" },
 *   subject: (r) => `alerts.${r.id}`,
 *   serializer: (r) => new TextEncoder().encode(JSON.stringify(r)),
 * });
 * console.assert(sink.deliveryGuarantee === "none");
 * ```
 */
export class NatsSink<T> implements SinkV2<T> {
  /** Always `"v2"`. */
  readonly kind = "v2" as const;
  /** Always `"none"`: core NATS is at-most-once. */
  readonly deliveryGuarantee: DeliveryGuarantee;
  /** The validated options, with their defaults. */
  readonly options: Readonly<Required<Omit<NatsSinkOptions<T>, "deliveryGuarantee">>>;

  /**
   * Creates the sink; nothing connects until a writer is created.
   * @param options see {@linkcode NatsSinkOptions}.
   * @throws {DeliveryGuaranteeError} for a `deliveryGuarantee` other than `"none"`.
   * @throws {RangeError} for an empty or wildcard subject, or a
   *   `flushEveryRecords` that is not a positive integer., or an unknown option
   *   (`checkOptions`); a `TypeError` for an option of the wrong type.
   */
  constructor(options: NatsSinkOptions<T>) {
    checkOptions("NatsSink", options, NATS_SINK_OPTIONS);
    this.deliveryGuarantee = checkDeliveryGuarantee(
      "NatsSink (core NATS is at-most-once; use the JetStream sink for guarantees)",
      options.deliveryGuarantee ?? "none",
      ["none"],
    );
    if (typeof options.subject === "string") checkSubject(options.subject, "NatsSink 'subject'");
    else if (typeof options.subject !== "function") {
      throw new RangeError(
        `NatsSink 'subject' must be a string or a function: current value is ${
          JSON.stringify(options.subject)
        }`,
      );
    }
    const flushEveryRecords = options.flushEveryRecords ?? DEFAULT_FLUSH_EVERY_RECORDS;
    if (!(Number.isSafeInteger(flushEveryRecords) && flushEveryRecords >= 1)) {
      throw new RangeError(
        `NatsSink 'flushEveryRecords' must be a positive integer: current value is ${flushEveryRecords}`,
      );
    }
    this.options = {
      connection: options.connection,
      subject: options.subject,
      serializer: options.serializer ?? ((record: T) => utf8.encode(String(record))),
      flushEveryRecords,
    };
  }

  /** Connects and returns the subtask's writer. */
  async createWriter(context: WriterInitContext<never>): Promise<SinkWriter<T>> {
    const where = `NatsSink '${context.uid}' (subtask ${
      context.subtaskIndex + 1
    }/${context.parallelism})`;
    const nc = await connectNats({
      name: `weir-nats-sink-${context.uid}`,
      ...this.options.connection,
    });
    watchReconnects(nc, () =>
      log.warn(
        `${where}: the connection to NATS was lost and re-established; records published meanwhile may be lost (core NATS is at-most-once)`,
      ));
    return new NatsWriter(nc, this.options, where);
  }
}

function checkSubject(subject: string, what: string): void {
  if (
    typeof subject !== "string" || subject === "" || /[\s*>]/.test(subject) ||
    subject.startsWith(".") || subject.endsWith(".") || subject.includes("..")
  ) {
    throw new RangeError(
      `${what} must be a non-empty subject without wildcards or spaces: current value is ${
        JSON.stringify(subject)
      }`,
    );
  }
}

class NatsWriter<T> implements SinkWriter<T> {
  readonly #nc: NatsConnection;
  readonly #options: NatsSink<T>["options"];
  readonly #where: string;
  #sinceFlush = 0;
  #closed = false;

  constructor(nc: NatsConnection, options: NatsSink<T>["options"], where: string) {
    this.#nc = nc;
    this.#options = options;
    this.#where = where;
  }

  write(value: T, _context: SinkContext): void | Promise<void> {
    const { subject, serializer } = this.#options;
    let target: string;
    if (typeof subject === "string") target = subject;
    else {
      target = subject(value);
      try {
        checkSubject(target, `${this.#where}: the subject function's result`);
      } catch (error) {
        // The same record gives the same subject after a restart: fail once.
        throw new SuppressRestartsError((error as Error).message, { cause: error });
      }
    }
    this.#nc.publish(target, serializer(value));
    if (++this.#sinceFlush >= this.#options.flushEveryRecords) return this.#flush();
  }

  flush(_endOfInput: boolean): Promise<void> {
    return this.#flush();
  }

  async #flush(): Promise<void> {
    this.#sinceFlush = 0;
    try {
      await this.#nc.flush();
    } catch (error) {
      throw new Error(
        `${this.#where}: NATS did not confirm the published records: ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#nc.close();
  }
}
