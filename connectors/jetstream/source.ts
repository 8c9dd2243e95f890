/**
 * A replayable JetStream source (Flink's `KafkaSource`, on JetStream):
 * splits are subject partitions of a stream, a split's offset is a stream
 * sequence, and by default it reads with read-committed isolation, so it
 * sees only what committed transactions of `JetStreamSink` wrote.
 *
 * ## Splits and offsets
 *
 * - Without `filterSubject`, one split reads the whole stream (split id
 *   `<stream>`).
 * - With `filterSubject`, one split per subject of the stream that matches
 *   it at the job's first start, sorted (split id `<stream>:<subject>`): the
 *   stream's info with `subjects_filter`. A filter without wildcards is one
 *   split. Subjects that appear later are discovered (see "Split
 *   discovery"); with discovery off, they are not read, and a wildcard that
 *   matches nothing at the first start is one split of the wildcard.
 * - Splits are owned by subtask `splitOwner(splitId, parallelism)` (a hash
 *   of the id; `runtime/api/split_assignment.ts`) and restored from union
 *   state, so a resume at another parallelism gives every split, with its
 *   offset, to exactly one subtask.
 * - A split's offset is the sequence of the last record emitted (or skipped:
 *   aborted, or dead-lettered), checkpointed by `snapshotState`; a restore
 *   reads on right after it with a new ordered consumer, so no record is
 *   emitted twice or lost.
 * - `startPosition` is resolved to an offset when the splits are
 *   enumerated, on the job's first start: `"earliest"` (0), `"latest"` (the
 *   stream's last sequence then), `{ sequence: n }` (n - 1) or
 *   `{ time: ms }` (before the first message of the split stored at or
 *   after that time). A restart before the first completed checkpoint
 *   enumerates again, so `"latest"` moves on.
 * - `bounded: true` ends each split at the stream's last sequence at
 *   enumeration (kept in the split, so restores end at the same place),
 *   after every transaction up to it is decided.
 * - Checkpointed splits are checked when they come back
 *   (`split_state.ts`): damaged split state fails the job without restarts
 *   (`JetStreamSplitStateError`), naming the split, field and value.
 *
 * ## Split discovery
 *
 * An unbounded source with a wildcard `filterSubject` looks for new
 * matching subjects every `discoveryIntervalMs` (default 10 000 ms, as a
 * period like Kafka's `partition.discovery.interval.ms`; 0 turns it off),
 * in every source subtask (`split_discovery.ts`); each subtask reads the
 * new subjects it owns. A discovered subject is read from its first message
 * (offset 0), whatever `startPosition` says: its records were published
 * before the discovery saw them and must not be lost. Once added, a split
 * is in the subtask's next checkpoint; a split discovered after the last
 * completed checkpoint is discovered again after a failure and read again
 * from its first message, as everything downstream rolls back too. A
 * record of a new subject may be behind the watermark (it arrives when
 * discovered): with event time, give the strategy out-of-orderness or
 * allowed lateness for it.
 *
 * Discovery is off for bounded reads (`bounded: true` reads what exists at
 * the first start, so nothing new belongs to it), without `filterSubject`
 * (the one split reads every subject) and for a filter without wildcards
 * (one subject). With discovery on, a wildcard that matches nothing at the
 * first start gives no split (the subjects are discovered when they
 * appear), and a restored split of a wildcard (written with discovery off)
 * fails the job without restarts rather than be read beside the discovered
 * splits of its subjects.
 *
 * ## Records
 *
 * A message with a `Weir-Batch` header is a record batch (`protocol.ts`):
 * its records are emitted in order, each deserialized on its own with
 * `index` its position in the batch. `pollNext` never stops inside a
 * message, so every checkpoint falls on a message boundary and the
 * split's offset (a sequence) stays exact: a restore neither repeats nor
 * skips records of a batch. A `pollNext` call may therefore emit up to one
 * batch more than `batchSize`. A malformed batch fails the job (a
 * `RecordBatchError`, no restarts) or, with `onMalformed: "dead-letter"`,
 * becomes one dead letter of the whole message.
 *
 * The deserializer gets the payload and `{ subject, seq, index, headers }`
 * (default: JSON of UTF-8). The event timestamp is the stream's timestamp
 * of the message (ms), or `timestamp(value, meta)` when given. Each split
 * emits through its own split output, so each has its own watermarks and
 * idleness (a quiet subject does not hold back event time when the
 * strategy has `withIdleness`); a bounded split's output is released at its
 * end. When the
 * deserializer throws, `onMalformed: "fail"` (the default) fails the job
 * with a {@linkcode JetStreamDeserializationError} naming stream, subject
 * and sequence (no restarts: the input stays malformed), and
 * `"dead-letter"` emits a {@linkcode JetStreamDeadLetter} to
 * {@linkcode JETSTREAM_DEAD_LETTER} and goes on.
 *
 * ## A stream that does not exist
 *
 * When the server says the stream does not exist (JetStream API error
 * 10059, "stream not found") at enumeration, at a subject discovery or
 * when a split's reading starts, or when a running split's consumer is
 * deleted and the stream turns out to be gone, the job fails without
 * restarts: a `JetStreamStreamNotFoundError` naming the stream, with the
 * server's error as `cause` (`stream_not_found.ts`). A restart would find
 * the stream missing again. NATS being unreachable or restarting stays an
 * ordinary failure that the restart strategy retries.
 *
 * ## Rate limit
 *
 * With `recordsPerSecond` = *r*, each of the `p` source subtasks emits at
 * most *r* ÷ *p* records (dead letters count, skipped records do not) per
 * second of processing time on average, as Flink's source `RateLimiter`
 * (FLIP-238) does: a token bucket holding at most 100 ms worth of records
 * (at least one), refilled on the reader context's clock, so tests can
 * drive it with a `ManualClock`.
 *
 * ## Invariants
 *
 * - `pollNext` is synchronous: it emits at most `batchSize` records (dead
 *   letters count) from the splits in turn, within the rate limit, and
 *   never waits; `isAvailable` resolves when a split has something to emit
 *   and the rate limit lets a record go.
 * - Each source subtask has its own connection, opened in `start()` and
 *   closed in `close()`; the source object holds only options.
 *
 * ## Files
 *
 * This file holds the source: its options and their checks, split
 * enumeration, boundedness and the discovery wiring. The reader of a
 * subtask is in `source_reader.ts`; a message's metadata, its dead letter
 * and the deserialization error are in `source_records.ts` (re-exported
 * here); split state and its checks are in `split_state.ts`, subject
 * discovery in `split_discovery.ts`, the per-split feed in `feed.ts`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { JetStreamSource } from "./source.ts";
 *
 * const orders = new JetStreamSource<{ id: string }>({
 *   connection: { servers: "nats://127.0.0.1:4222" },
 *   stream: "orders",
 *   filterSubject: "orders.*",
 *   startPosition: "earliest",
 *   bounded: true,
 * });
 * assert.equal(orders.boundedness, "bounded");
 * ```
 *
 * @module
 */

import { jetstreamApi, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { connectNats, type NatsConnectionOptions } from "../../runtime/actor/nats_connect.ts";
import type {
  Boundedness,
  Source,
  SourceReader,
  SourceReaderContext,
  SplitDiscovery,
  SplitEnumeratorContext,
} from "../../runtime/api/source.ts";
import { hasWildcard, JetStreamSubjectDiscoverer } from "./split_discovery.ts";
import { streamError } from "./stream_not_found.ts";
import type { JetStreamSplit } from "./split_state.ts";
import { DEFAULT_TXN_BUCKET } from "./protocol.ts";
import type { Isolation } from "./read_committed.ts";
import { DEFAULT_MAX_BUFFERED } from "./reader.ts";
import { type MessageMeta, messageOf } from "./source_records.ts";
import { JetStreamReader } from "./source_reader.ts";
import { RateLimiter } from "../../runtime/time/rate_limiter.ts";
import { checkOptions, type OptionsShape } from "../../runtime/api/options_check.ts";

/** The known keys of {@linkcode JetStreamSourceOptions} and the kinds of their values. */
const SOURCE_OPTIONS: OptionsShape<JetStreamSourceOptions<unknown>> = {
  connection: "object",
  stream: "any", // checked below, with a message of its own
  filterSubject: "string",
  startPosition: "any",
  deserializer: "function",
  isolation: "any",
  txnBucket: "string",
  bounded: "boolean",
  onMalformed: "any",
  timestamp: "function",
  batchSize: "number",
  maxBuffered: "number",
  recordsPerSecond: "number",
  discoveryIntervalMs: "number",
};

const DEFAULT_BATCH_SIZE = 1000;

/** Where a split starts on the job's first start; see the module docs. */
export type StartPosition = "earliest" | "latest" | { readonly sequence: number } | {
  readonly time: number;
};

export type { JetStreamSplit } from "./split_state.ts";
export { JetStreamSplitStateError } from "./split_state.ts";
export {
  JETSTREAM_DEAD_LETTER,
  type JetStreamDeadLetter,
  JetStreamDeserializationError,
  type MessageMeta,
} from "./source_records.ts";

/** Default of `discoveryIntervalMs` (ms) for an unbounded source with a wildcard filter. */
export const DEFAULT_DISCOVERY_INTERVAL_MS = 10_000;

/** Options of {@linkcode JetStreamSource}. */
export interface JetStreamSourceOptions<T> {
  /** How each source subtask connects to NATS. */
  readonly connection: NatsConnectionOptions;
  /** The stream to read. */
  readonly stream: string;
  /** Only these subjects, one split per matching subject (see the module docs). */
  readonly filterSubject?: string;
  /** Where to start on the job's first start (default `"earliest"`). */
  readonly startPosition?: StartPosition;
  /** Turns a payload into a record (default: JSON of UTF-8). */
  readonly deserializer?: (data: Uint8Array, meta: MessageMeta) => T;
  /** `read_committed` (default) or `read_uncommitted`. */
  readonly isolation?: Isolation;
  /** The KV bucket of transaction state (default `weir-txn`). */
  readonly txnBucket?: string;
  /** Stop at the stream's last sequence at the job's first start (default false). */
  readonly bounded?: boolean;
  /** What a message the deserializer rejects does (default `"fail"`). */
  readonly onMalformed?: "fail" | "dead-letter";
  /** The record's event timestamp in ms (default: the stream's timestamp of the message). */
  readonly timestamp?: (value: T, meta: MessageMeta) => number;
  /** Records per `pollNext` call at most (default 1000). */
  readonly batchSize?: number;
  /** Messages buffered per split at most (default 10 000; their payloads also at most `MAX_BUFFERED_BYTES` of `feed.ts`, 16 MiB). */
  readonly maxBuffered?: number;
  /**
   * The total rate over all source subtasks, in records per second of
   * processing time (> 0); see "Rate limit" in the module docs. Unlimited
   * when absent.
   */
  readonly recordsPerSecond?: number;
  /**
   * How often each source subtask looks for new subjects matching a
   * wildcard `filterSubject`, in ms of processing time (an integer ≥ 0; 0:
   * never). Default {@linkcode DEFAULT_DISCOVERY_INTERVAL_MS} when
   * unbounded with a wildcard filter; see "Split discovery" in the module
   * docs. A value > 0 with `bounded: true`, or without a wildcard filter,
   * is refused.
   */
  readonly discoveryIntervalMs?: number;
}

const utf8 = new TextDecoder();

/** A source of a JetStream stream's records; see the module docs. */
export class JetStreamSource<T> implements Source<T, JetStreamSplit> {
  /** `"bounded"` with `bounded: true`, else `"continuous-unbounded"`. */
  readonly boundedness: Boundedness;
  /** The options, with defaults filled in. */
  readonly options:
    & Readonly<
      Required<
        Omit<JetStreamSourceOptions<T>, "filterSubject" | "timestamp" | "recordsPerSecond">
      >
    >
    & {
      /** The discovery period in ms; 0 when discovery is off (see the module docs). */
      readonly discoveryIntervalMs: number;
      readonly filterSubject: string | undefined;
      readonly timestamp: ((value: T, meta: MessageMeta) => number) | undefined;
      readonly recordsPerSecond: number | undefined;
    };

  /**
   * Creates the source (no I/O until a subtask starts).
   * @throws {TypeError} when `stream` is empty or an option has a wrong value
   *   or type (`bounded: "yes"`).
   * @throws {RangeError} for an unknown option (`checkOptions`), or when `batchSize`, `maxBuffered` or a start sequence is not a positive
   *   integer, `recordsPerSecond` is not a positive finite number, or
   *   `discoveryIntervalMs` is not an integer ≥ 0 or is > 0 where discovery
   *   does not apply (bounded, or no wildcard filter).
   */
  constructor(options: JetStreamSourceOptions<T>) {
    checkOptions("JetStreamSource", options, SOURCE_OPTIONS);
    if (typeof options.stream !== "string" || options.stream === "") {
      throw new TypeError(
        `A JetStreamSource needs a stream name: current value is ${JSON.stringify(options.stream)}`,
      );
    }
    const onMalformed = options.onMalformed ?? "fail";
    if (onMalformed !== "fail" && onMalformed !== "dead-letter") {
      throw new TypeError(
        `JetStreamSource of stream ${options.stream}: 'onMalformed' must be "fail" or "dead-letter": current value is ${
          JSON.stringify(onMalformed)
        }`,
      );
    }
    const isolation = options.isolation ?? "read_committed";
    if (isolation !== "read_committed" && isolation !== "read_uncommitted") {
      throw new TypeError(
        `JetStreamSource of stream ${options.stream}: 'isolation' must be "read_committed" or "read_uncommitted": current value is ${
          JSON.stringify(isolation)
        }`,
      );
    }
    const start = options.startPosition ?? "earliest";
    if (typeof start === "object" && "sequence" in start) {
      positive("startPosition.sequence", start.sequence, options.stream);
    }
    const rate = options.recordsPerSecond;
    if (rate !== undefined && !(rate > 0 && Number.isFinite(rate))) {
      throw new RangeError(
        `JetStreamSource of stream ${options.stream}: 'recordsPerSecond' must be a positive number: current value is ${rate}`,
      );
    }
    const discoverable = !options.bounded && options.filterSubject !== undefined &&
      hasWildcard(options.filterSubject);
    const discovery = options.discoveryIntervalMs ??
      (discoverable ? DEFAULT_DISCOVERY_INTERVAL_MS : 0);
    if (!Number.isSafeInteger(discovery) || discovery < 0) {
      throw new RangeError(
        `JetStreamSource of stream ${options.stream}: 'discoveryIntervalMs' must be an integer >= 0 (ms): current value is ${discovery}`,
      );
    }
    if (discovery > 0 && !discoverable) {
      throw new RangeError(
        `JetStreamSource of stream ${options.stream}: 'discoveryIntervalMs' must be 0 ${
          options.bounded ? "for a bounded read" : "without a wildcard 'filterSubject'"
        } (there is nothing to discover): current value is ${discovery}`,
      );
    }
    this.boundedness = options.bounded ? "bounded" : "continuous-unbounded";
    this.options = {
      discoveryIntervalMs: discovery,
      connection: options.connection,
      stream: options.stream,
      filterSubject: options.filterSubject,
      startPosition: start,
      deserializer: options.deserializer ??
        ((data: Uint8Array) => JSON.parse(utf8.decode(data)) as T),
      isolation,
      txnBucket: options.txnBucket ?? DEFAULT_TXN_BUCKET,
      bounded: options.bounded ?? false,
      onMalformed,
      timestamp: options.timestamp,
      batchSize: positive("batchSize", options.batchSize ?? DEFAULT_BATCH_SIZE, options.stream),
      maxBuffered: positive(
        "maxBuffered",
        options.maxBuffered ?? DEFAULT_MAX_BUFFERED,
        options.stream,
      ),
      recordsPerSecond: rate,
    };
    const { connection, stream, filterSubject } = this.options;
    this.splitDiscovery = {
      intervalMs: discovery,
      createDiscoverer: () =>
        new JetStreamSubjectDiscoverer({ connection, stream, filterSubject: filterSubject ?? ">" }),
    };
  }

  /**
   * Owner assignment, union restore and, when `discoveryIntervalMs` > 0,
   * periodic subject discovery (see "Split discovery" in the module docs
   * and in `runtime/api/source.ts`). Present for every JetStream source, so
   * that turning discovery on or off keeps checkpoints restorable.
   */
  readonly splitDiscovery: SplitDiscovery<JetStreamSplit>;

  /**
   * The splits at the job's first start: one per matching subject, sorted, or
   * one for the stream, with their start offsets resolved (see the module docs).
   * @throws {JetStreamStreamNotFoundError} naming the stream when it does not
   *   exist (the job fails without restarts).
   * @throws {Error} naming the stream when NATS cannot be reached.
   */
  async enumerateSplits(_context: SplitEnumeratorContext): Promise<JetStreamSplit[]> {
    const { stream, filterSubject } = this.options;
    const nc = await connectNats({ name: `weir-source-${stream}`, ...this.options.connection });
    try {
      const jsm = await jetstreamApi.jetstreamManager(nc);
      let info: jetstreamApi.StreamInfo;
      try {
        info = filterSubject === undefined
          ? await jsm.streams.info(stream)
          : await jsm.streams.info(stream, { subjects_filter: filterSubject });
      } catch (error) {
        throw streamError(
          `Cannot enumerate the splits of stream ${stream}: ${messageOf(error)}`,
          stream,
          error,
        );
      }
      const lastSeq = info.state.last_seq;
      let subjects: (string | null)[] = [null];
      if (filterSubject !== undefined) {
        const matching = Object.keys(info.state.subjects ?? {}).sort();
        subjects = !hasWildcard(filterSubject)
          ? [filterSubject]
          : matching.length > 0 || this.options.discoveryIntervalMs > 0
          ? matching
          : [filterSubject];
      }
      const splits: JetStreamSplit[] = [];
      for (const subject of subjects) {
        splits.push({
          splitId: subject === null ? stream : `${stream}:${subject}`,
          stream,
          subject,
          offset: await this.#startOffset(nc, subject, lastSeq),
          stopAt: this.options.bounded ? lastSeq : null,
        });
      }
      return splits;
    } finally {
      await nc.close();
    }
  }

  /** Creates the reader of one source subtask; its rate is `recordsPerSecond / parallelism`. */
  createReader(context: SourceReaderContext): SourceReader<T, JetStreamSplit> {
    const rate = this.options.recordsPerSecond;
    return new JetStreamReader(
      this.options,
      context,
      rate === undefined ? undefined : new RateLimiter(rate / context.parallelism),
    );
  }

  async #startOffset(nc: NatsConnection, subject: string | null, lastSeq: number): Promise<number> {
    const start = this.options.startPosition;
    if (start === "earliest") return 0;
    if (start === "latest") return lastSeq;
    if ("sequence" in start) return start.sequence - 1;
    const js = jetstreamApi.jetstream(nc);
    const options: Partial<jetstreamApi.OrderedConsumerOptions> = {
      opt_start_time: new Date(start.time).toISOString(),
    };
    if (subject !== null) options.filter_subjects = subject;
    const consumer = await js.consumers.get(this.options.stream, options);
    try {
      if ((await consumer.info(true)).num_pending === 0) return lastSeq;
      const first = await consumer.next({ expires: 5_000 });
      if (first === null) {
        throw new Error(
          `Cannot find the first message at or after ${options.opt_start_time} in stream ${this.options.stream}`,
        );
      }
      return first.seq - 1;
    } finally {
      await consumer.delete().catch(() => {});
    }
  }
}

function positive(name: string, value: number, stream: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      `JetStreamSource of stream ${stream}: '${name}' must be a positive integer: current value is ${value}`,
    );
  }
  return value;
}
