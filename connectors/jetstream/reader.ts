/**
 * Reading a stream that a transactional sink writes, with Kafka's
 * isolation levels: {@linkcode readCommitted} delivers only what committed
 * transactions wrote (and non-transactional records), in stream order; see
 * `protocol.ts` for the format and `read_committed.ts` for the rules.
 * {@linkcode runReadCommand} is the `weir read` command. A record batch
 * (`Weir-Batch` header, see `protocol.ts`) is unpacked: each of its records
 * is delivered on its own, with the message's sequence and its index in
 * the batch; a malformed batch ends the read with a `RecordBatchError`
 * naming the stream, sequence and byte offset.
 *
 * ## Bounded reads
 *
 * With `bounded: true` the read stops at the stream's last sequence when it
 * starts, like a Kafka consumer reading to its end offsets: under
 * `read_committed` it ends as soon as it has read that far and either
 * delivered everything or reached a record of a transaction still open
 * (the last stable offset); it does not wait for that transaction.
 *
 * ```ts ignore
 * import { readCommitted } from "./reader.ts";
 *
 * const connection = { servers: "nats://127.0.0.1:4222" };
 * for await (const record of readCommitted({ connection, stream: "totals", bounded: true })) {
 *   console.log(record.seq, new TextDecoder().decode(record.data));
 * }
 * ```
 *
 * @module
 */

import { jetstreamApi, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { connectNats, type NatsConnectionOptions } from "../../runtime/actor/nats_connect.ts";
import { MessageFeed, type MessageHeaders } from "./feed.ts";
import { DEFAULT_TXN_BUCKET } from "./protocol.ts";
import { decodeRecordBatch, RECORD_BATCH_HEADER } from "./record_batch.ts";
import type { Isolation } from "./read_committed.ts";
import { TxnStateTracker } from "./txn_states.ts";

/** Default records buffered per read while a transaction blocks the head. */
export const DEFAULT_MAX_BUFFERED = 10_000;

/** Options of {@linkcode readCommitted}. */
export interface ReadOptions {
  /** How to connect; the read opens its own connection and closes it when it ends. */
  readonly connection: NatsConnectionOptions;
  /** The stream to read. */
  readonly stream: string;
  /** Only this subject (wildcards allowed); default every subject. */
  readonly filterSubject?: string;
  /** The first stream sequence to read (default 1). */
  readonly fromSequence?: number;
  /** `read_committed` (default) or `read_uncommitted`. */
  readonly isolation?: Isolation;
  /** The KV bucket of transaction state (default `weir-txn`). */
  readonly txnBucket?: string;
  /** Stop at the stream's last sequence at start (see the module docs). Default false. */
  readonly bounded?: boolean;
  /** Messages buffered at most behind an open transaction (default {@linkcode DEFAULT_MAX_BUFFERED}; their payloads also at most 16 MiB). */
  readonly maxBuffered?: number;
}

/** A record delivered by {@linkcode readCommitted}. */
export interface ReadRecord {
  /** The stream sequence of its message. */
  readonly seq: number;
  /** Its index in its message's record batch (0 for a message without `Weir-Batch`). */
  readonly index: number;
  /** Records in its message (1 for a message without `Weir-Batch`). */
  readonly count: number;
  /** The subject. */
  readonly subject: string;
  /** The record's bytes (a view into the message's payload for a batch). */
  readonly data: Uint8Array;
  /** The headers, if any. */
  readonly headers: MessageHeaders | undefined;
  /** When the stream stored it, in ms since the epoch. */
  readonly timestamp: number;
}

/**
 * Reads `options.stream` in order with the given isolation level.
 * @returns an async iterable; ending the iteration (e.g. `break`) releases its consumer.
 * @throws {Error} (from the iteration) naming the stream when it does not
 *   exist, and naming the stream, sequence and transaction when a record's
 *   transaction has no state in the bucket.
 * @throws {RecordBatchError} (from the iteration) naming the stream, sequence
 *   and byte offset when a record batch is malformed.
 * @throws {RangeError} when `fromSequence` is not a positive integer.
 */
export async function* readCommitted(options: ReadOptions): AsyncGenerator<ReadRecord> {
  const from = options.fromSequence ?? 1;
  if (!Number.isSafeInteger(from) || from < 1) {
    throw new RangeError(
      `Cannot read stream ${options.stream} as 'fromSequence' must be a positive integer: current value is ${from}`,
    );
  }
  const bucket = options.txnBucket ?? DEFAULT_TXN_BUCKET;
  const nc = await connectNats({ name: `weir-read-${options.stream}`, ...options.connection });
  let tracker: Promise<TxnStateTracker> | undefined;
  let feed: MessageFeed | undefined;
  try {
    let stopAt: number | undefined;
    if (options.bounded) {
      stopAt = await lastSequence(nc, options.stream);
      if (stopAt < from) return;
    }
    let wake: (() => void) | undefined;
    feed = new MessageFeed({
      js: jetstreamApi.jetstream(nc),
      stream: options.stream,
      filterSubject: options.filterSubject,
      afterSeq: from - 1,
      stopAt,
      isolation: options.isolation ?? "read_committed",
      states: () => tracker ??= TxnStateTracker.open(nc, bucket),
      maxBuffered: options.maxBuffered ?? DEFAULT_MAX_BUFFERED,
      maxPayload: nc.info?.max_payload,
      onChange: () => {
        const w = wake;
        wake = undefined;
        w?.();
      },
    });
    feed.start();
    for (;;) {
      const step = feed.next();
      if (step.kind === "record") {
        const { seq, subject, data, headers, timestamp } = step.message;
        const batch = headers?.has(RECORD_BATCH_HEADER)
          ? decodeRecordBatch(data, headers.get(RECORD_BATCH_HEADER), {
            stream: options.stream,
            seq,
            subject,
          })
          : undefined;
        if (batch === undefined) {
          yield { seq, index: 0, count: 1, subject, data, headers, timestamp };
          continue;
        }
        const count = batch.length;
        for (let index = 0; index < count; index++) {
          yield { seq, index, count, subject, data: batch[index]!, headers, timestamp };
        }
        continue;
      }
      if (step.kind === "skipped") continue;
      if (step.kind === "end") return;
      if (step.kind === "blocked" && step.state === "open" && feed.caughtUp) return;
      await new Promise<void>((resolve) => wake = resolve);
    }
  } finally {
    await feed?.close();
    if (tracker) await tracker.then((t) => t.close(), () => {});
    await nc.close();
  }
}

/** The last sequence of `stream` now; throws naming the stream when it does not exist. */
async function lastSequence(nc: NatsConnection, stream: string): Promise<number> {
  try {
    const jsm = await jetstreamApi.jetstreamManager(nc);
    return (await jsm.streams.info(stream)).state.last_seq;
  } catch (error) {
    throw new Error(
      `Cannot read stream ${stream}: ${error instanceof Error ? error.message : error}`,
      { cause: error },
    );
  }
}

/** Options of {@linkcode runReadCommand} (`weir read`). */
export interface ReadCommandOptions {
  /** `--nats URL`: where NATS is, as a URL or full connection options. */
  readonly nats: string | NatsConnectionOptions;
  /** `--stream S`. */
  readonly stream: string;
  /** `--committed`: read committed (default: read uncommitted, every record). */
  readonly committed?: boolean;
  /** `--from SEQ`: the first stream sequence (default 1). */
  readonly from?: number;
  /** `--subject F`: only this subject. */
  readonly filterSubject?: string;
  /** `--txn-bucket B` (default `weir-txn`). */
  readonly txnBucket?: string;
  /** `--follow`: keep reading new records instead of stopping at the last one at start. */
  readonly follow?: boolean;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const lossy = new TextDecoder("utf-8");

/**
 * The value of a record for printing: its payload parsed as JSON, else as a
 * UTF-8 string (invalid bytes become U+FFFD).
 */
export function printableValue(data: Uint8Array): unknown {
  let text: string;
  try {
    text = utf8.decode(data);
  } catch {
    return lossy.decode(data);
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * `weir read --nats URL --stream S [--committed] [--from SEQ]`: prints the
 * stream's records as JSON lines, `{"seq":…,"subject":…,"value":…}` (the
 * value parsed as JSON, else a string; a record of a record batch has
 * `"index":…` after `seq`, its index in the batch), up to the stream's last
 * sequence at start (see "Bounded reads"; with `follow`, until the process
 * ends).
 *
 * @param options what to read.
 * @param writeLine receives each line, without a line ending.
 * @returns the number of records printed.
 * @throws {Error} naming the servers when NATS cannot be reached, and naming
 *   the stream when it cannot be read.
 */
export async function runReadCommand(
  options: ReadCommandOptions,
  writeLine: (line: string) => void | Promise<void>,
): Promise<number> {
  const connection = typeof options.nats === "string"
    ? { servers: options.nats, name: "weir-read" }
    : options.nats;
  const records = readCommitted({
    connection,
    stream: options.stream,
    isolation: options.committed ? "read_committed" : "read_uncommitted",
    bounded: !options.follow,
    ...(options.from === undefined ? {} : { fromSequence: options.from }),
    ...(options.filterSubject === undefined ? {} : { filterSubject: options.filterSubject }),
    ...(options.txnBucket === undefined ? {} : { txnBucket: options.txnBucket }),
  });
  let count = 0;
  for await (const record of records) {
    await writeLine(
      JSON.stringify(
        record.count === 1 && record.index === 0 && !record.headers?.has(RECORD_BATCH_HEADER)
          ? { seq: record.seq, subject: record.subject, value: printableValue(record.data) }
          : {
            seq: record.seq,
            index: record.index,
            subject: record.subject,
            value: printableValue(record.data),
          },
      ),
    );
    count++;
  }
  return count;
}
