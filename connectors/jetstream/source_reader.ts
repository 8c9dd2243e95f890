/**
 * The reader of one `JetStreamSource` subtask (Flink's `KafkaSourceReader`,
 * on JetStream): it reads its splits, each through a {@linkcode MessageFeed}
 * (an ordered consumer behind read-committed isolation), and emits their
 * records through per-split outputs, within the source's rate limit. What
 * it emits, when and why is described in `source.ts` ("Records", "Rate
 * limit", "A stream that does not exist"); the message's metadata, dead
 * letters and deserialization errors are in `source_records.ts`.
 *
 * ## Invariants
 *
 * - `pollNext` is synchronous: it emits at most `batchSize` records (dead
 *   letters count) from the splits in turn, within the rate limit, and
 *   never waits; `isAvailable` resolves when a split has something to emit
 *   and the rate limit lets a record go.
 * - `pollNext` never stops inside a message, so a split's offset (the
 *   sequence of the last message emitted or skipped) is exact at every
 *   checkpoint; one call may emit up to one batch more than `batchSize`.
 * - Each reader has its own NATS connection, opened in `start()` and closed
 *   in `close()`, with every split's feed and the transaction state tracker.
 * - A split's output is created at the first `pollNext` after the split is
 *   added and released once, when a bounded split ends.
 *
 * @module
 */

import { jetstreamApi, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { connectNats } from "../../runtime/actor/nats_connect.ts";
import type {
  InputStatus,
  ReaderOutput,
  SourceOutput,
  SourceReader,
  SourceReaderContext,
} from "../../runtime/api/source.ts";
import { type Sleep, sleepUntil } from "../../runtime/time/clock.ts";
import type { RateLimiter } from "../../runtime/time/rate_limiter.ts";
import { type FeedMessage, MessageFeed } from "./feed.ts";
import { decodeRecordBatch, RECORD_BATCH_HEADER } from "./record_batch.ts";
import type { JetStreamSource } from "./source.ts";
import {
  deadLetterOf,
  JETSTREAM_DEAD_LETTER,
  JetStreamDeserializationError,
  type MessageMeta,
} from "./source_records.ts";
import { hasWildcard } from "./split_discovery.ts";
import {
  decodeJetStreamSplit,
  type JetStreamSplit,
  JetStreamSplitStateError,
} from "./split_state.ts";
import { TxnStateTracker } from "./txn_states.ts";

interface ActiveSplit<T> {
  readonly split: JetStreamSplit;
  readonly feed: MessageFeed;
  done: boolean;
  /** The split's output, created at the first `pollNext` after the split was added. */
  output: SourceOutput<T> | undefined;
}

/**
 * Reads the splits of one source subtask; see the module docs. Created by
 * `JetStreamSource.createReader`.
 */
export class JetStreamReader<T> implements SourceReader<T, JetStreamSplit> {
  readonly #options: JetStreamSource<T>["options"];
  readonly #operatorName: string;
  readonly #context: SourceReaderContext;
  readonly #limiter: RateLimiter | undefined;
  #rateWait: Sleep | undefined;
  #nc: NatsConnection | undefined;
  #tracker: Promise<TxnStateTracker> | undefined;
  #splits: ActiveSplit<T>[] = [];
  /** Splits were added since the last `pollNext`: their outputs are still to be created. */
  #newSplits = false;
  #next = 0;
  #wake: (() => void) | undefined;
  #waiting: Promise<void> | undefined;
  #closed = false;

  /**
   * Creates the reader (no I/O until `start`).
   * @param options the source's options, with defaults filled in.
   * @param context the subtask's reader context (its clock drives the rate limit).
   * @param limiter this subtask's share of `recordsPerSecond`, or `undefined` when unlimited.
   */
  constructor(
    options: JetStreamSource<T>["options"],
    context: SourceReaderContext,
    limiter: RateLimiter | undefined,
  ) {
    this.#options = options;
    this.#operatorName = context.operatorName;
    this.#context = context;
    this.#limiter = limiter;
  }

  /** Opens this subtask's NATS connection. */
  async start(): Promise<void> {
    const { connection, stream } = this.#options;
    this.#nc = await connectNats({ name: `weir-source-${stream}`, ...connection });
  }

  /**
   * Starts reading `splits` (assigned, restored or discovered).
   * @throws {JetStreamSplitStateError} naming the split, field and value
   *   when a split's state is damaged, or when a restored split of a
   *   wildcard meets discovery.
   */
  addSplits(splits: JetStreamSplit[]): void {
    const o = this.#options;
    const nc = this.#nc!;
    const where = `JetStreamSource '${this.#operatorName}' of stream ${o.stream}`;
    for (const raw of splits) {
      const split = decodeJetStreamSplit(raw, where);
      if (o.discoveryIntervalMs > 0 && split.subject !== null && hasWildcard(split.subject)) {
        throw new JetStreamSplitStateError(
          `Cannot restore split ${
            JSON.stringify(split.splitId)
          } of ${where}: a split of a wildcard (checkpointed with subject discovery off) cannot be read with discovery on, which reads its subjects as splits of their own; resume with 'discoveryIntervalMs: 0'`,
        );
      }
      const feed = new MessageFeed({
        js: jetstreamApi.jetstream(nc),
        stream: split.stream,
        filterSubject: split.subject ?? undefined,
        afterSeq: split.offset,
        stopAt: split.stopAt ?? undefined,
        isolation: o.isolation,
        states: () => this.#tracker ??= TxnStateTracker.open(nc, o.txnBucket),
        maxBuffered: o.maxBuffered,
        maxPayload: nc.info?.max_payload,
        onChange: () => this.#notify(),
      });
      this.#splits.push({ split, feed, done: false, output: undefined });
      this.#newSplits = true;
      feed.start();
    }
  }

  pollNext(output: ReaderOutput<T>): InputStatus {
    const o = this.#options;
    if (this.#newSplits) {
      this.#newSplits = false;
      for (const s of this.#splits) s.output ??= output.createOutputForSplit(s.split.splitId);
    }
    const count = this.#splits.length;
    const limiter = this.#limiter;
    const allowed = limiter === undefined
      ? o.batchSize
      : Math.min(o.batchSize, limiter.available(this.#context.currentProcessingTime()));
    if (allowed === 0) return "NOTHING_AVAILABLE";
    // Skipped records count as work too, so one call stays bounded behind a large aborted transaction.
    let work = 0;
    let emitted = 0;
    let idle = 0;
    while (work < o.batchSize && emitted < allowed && idle < count) {
      const active = this.#splits[this.#next % count]!;
      const step = active.done ? { kind: "end" as const } : active.feed.next();
      if (step.kind === "record" || step.kind === "skipped") {
        let records = 1;
        if (step.kind === "record") {
          records = this.#emit(step.message, active.output!, output);
          emitted += records;
        }
        work += records;
        idle = 0;
        if (step.kind === "record") this.#next++;
        continue;
      }
      if (step.kind === "end" && !active.done) {
        active.done = true;
        output.releaseOutputForSplit(active.split.splitId);
      }
      idle++;
      this.#next++;
    }
    limiter?.take(emitted);
    if (work > 0) return "MORE_AVAILABLE";
    if (o.bounded && this.#splits.every((s) => s.done)) return "END_OF_INPUT";
    return "NOTHING_AVAILABLE";
  }

  isAvailable(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const limiter = this.#limiter;
    if (limiter !== undefined) {
      if (this.#rateWait !== undefined) return this.#rateWait.promise;
      const now = this.#context.currentProcessingTime();
      if (limiter.available(now) === 0) {
        const wait = sleepUntil(this.#context.clock, limiter.nextAt(now));
        this.#rateWait = wait;
        wait.promise.then(() => {
          if (this.#rateWait === wait) this.#rateWait = undefined;
        });
        return wait.promise;
      }
    }
    if (this.#splits.some((s) => !s.done && s.feed.ready)) return Promise.resolve();
    if (this.#options.bounded && this.#splits.every((s) => s.done)) return Promise.resolve();
    return this.#waiting ??= new Promise((resolve) => this.#wake = resolve);
  }

  snapshotState(_checkpointId: number): JetStreamSplit[] {
    return this.#splits.map(({ split, feed }) => ({ ...split, offset: feed.position }));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#rateWait?.cancel();
    this.#notify();
    await Promise.all(this.#splits.map((s) => s.feed.close()));
    if (this.#tracker) await this.#tracker.then((t) => t.close(), () => {});
    await this.#nc?.close();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    this.#waiting = undefined;
    wake?.();
  }

  /**
   * Emits a message's records into its split's output, or their dead
   * letters into the main output.
   * @returns the records and dead letters emitted.
   */
  #emit(message: FeedMessage, split: SourceOutput<T>, output: ReaderOutput<T>): number {
    const o = this.#options;
    const meta = { subject: message.subject, seq: message.seq, index: 0, headers: message.headers };
    const header = message.headers?.has(RECORD_BATCH_HEADER)
      ? message.headers.get(RECORD_BATCH_HEADER)
      : undefined;
    if (header === undefined) {
      this.#emitRecord(message.data, meta, message.timestamp, split, output);
      return 1;
    }
    let records: Uint8Array[];
    try {
      records = decodeRecordBatch(message.data, header, {
        stream: o.stream,
        seq: message.seq,
        subject: message.subject,
      });
    } catch (error) {
      if (o.onMalformed === "fail") throw error;
      this.#deadLetter(message.data, meta, error, output);
      return 1;
    }
    for (let i = 0; i < records.length; i++) {
      meta.index = i;
      this.#emitRecord(records[i]!, meta, message.timestamp, split, output);
    }
    return records.length;
  }

  #emitRecord(
    data: Uint8Array,
    meta: MessageMeta,
    timestamp: number,
    split: SourceOutput<T>,
    output: ReaderOutput<T>,
  ): void {
    const o = this.#options;
    let value: T;
    try {
      value = o.deserializer(data, meta);
    } catch (cause) {
      if (o.onMalformed === "fail") {
        throw new JetStreamDeserializationError({
          stream: o.stream,
          subject: meta.subject,
          seq: meta.seq,
          index: meta.index,
          data,
          cause,
        });
      }
      this.#deadLetter(data, meta, cause, output);
      return;
    }
    split.collect(value, o.timestamp ? o.timestamp(value, meta) : timestamp);
  }

  #deadLetter(data: Uint8Array, meta: MessageMeta, cause: unknown, output: ReaderOutput<T>): void {
    output.output(
      JETSTREAM_DEAD_LETTER,
      deadLetterOf({ stream: this.#options.stream, meta, data, cause }),
    );
  }
}
