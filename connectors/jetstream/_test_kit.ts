/**
 * Test support for the JetStream connectors: unique stream and bucket names
 * on the shared NATS server (`WEIR_TEST_NATS_URL`, see
 * `tests/_nats_server.ts`), removed in `finally`, and helpers to drive
 * transactions by hand ({@linkcode HandDrivenTransactions}).
 *
 * @module
 */

import { jetstreamApi, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { connectNats, type NatsConnectionOptions } from "../../runtime/actor/nats_connect.ts";
import type { SinkInitContext } from "../../runtime/api/sink.ts";
import type { SourceReader } from "../../runtime/api/source.ts";
import { ManualClock } from "../../runtime/time/manual_clock.ts";
import type { JetStreamSource, JetStreamSplit } from "./source.ts";
import { readCommitted, type ReadOptions } from "./reader.ts";
import { commitTransaction } from "./committer.ts";
import { type JetStreamTxn, TransactionalProducer } from "./producer.ts";
import { TransactionLog } from "./transactions.ts";
import { TEST_NATS_URL } from "../../tests/_nats_server.ts";

/** The NATS server of the tests: `TEST_NATS_URL` of `tests/_nats_server.ts`. */
export const NATS_URL: string = TEST_NATS_URL;

/** Connection options for the test server. */
export const CONNECTION: NatsConnectionOptions = { servers: NATS_URL, name: "weir-test" };

/** `<base>-<8 random hex digits>`: a name no other test run uses. */
export function uniqueName(base: string): string {
  return `${base}-${crypto.randomUUID().slice(0, 8)}`;
}

/** What {@linkcode withJetStream} gives the test body. */
export interface TestJetStream {
  /** An open connection. */
  readonly nc: NatsConnection;
  /** A JetStream client on it. */
  readonly js: jetstreamApi.JetStreamClient;
  /** A fresh stream's name (capturing `<name>.>`). */
  readonly stream: string;
  /** A fresh KV bucket name (not created). */
  readonly bucket: string;
}

/**
 * Runs `body` with a fresh stream capturing `<stream>.>` and a fresh bucket
 * name; deletes both afterwards (the bucket only if something created it).
 */
export async function withJetStream<R>(
  body: (t: TestJetStream) => Promise<R>,
  streamConfig: Partial<jetstreamApi.StreamConfig> = {},
): Promise<R> {
  const nc = await connectNats(CONNECTION);
  const jsm = await jetstreamApi.jetstreamManager(nc);
  const stream = uniqueName("weir-test");
  const bucket = uniqueName("weir-test-txn");
  try {
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`], ...streamConfig });
    return await body({ nc, js: jetstreamApi.jetstream(nc), stream, bucket });
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
    await jsm.streams.delete(`KV_${bucket}`).catch(() => {});
    await nc.close();
  }
}

/** A sink's init context for subtask `subtask` of `parallelism`. */
export function initContext(
  subtask: number,
  parallelism: number,
  attempt = 0,
  uid = "out",
): SinkInitContext {
  return { subtaskIndex: subtask, parallelism, attempt, uid, jobId: "jetstream-test" };
}

/**
 * The started reader of subtask 0 of 1 of `source`, on a `ManualClock` at 0
 * (so a rate limit stays where it is), with `splits` added.
 */
export async function startReader<T>(
  source: JetStreamSource<T>,
  splits: JetStreamSplit[],
  operatorName = "jetstream",
): Promise<SourceReader<T, JetStreamSplit>> {
  const clock = new ManualClock();
  const reader = source.createReader({
    subtaskIndex: 0,
    parallelism: 1,
    attempt: 0,
    operatorName,
    currentProcessingTime: () => clock.now(),
    clock,
  });
  await reader.start?.();
  reader.addSplits(splits);
  return reader;
}

/** Publishes each value as JSON to `subject`, non-transactionally, and waits for the acks. */
export async function publishJson(
  js: jetstreamApi.JetStreamClient,
  subject: string,
  values: readonly unknown[],
): Promise<void> {
  const encoder = new TextEncoder();
  await Promise.all(values.map((v) => js.publish(subject, encoder.encode(JSON.stringify(v)))));
}

/**
 * Reads `stream` to its last sequence at start (bounded) and returns the
 * payloads parsed as JSON.
 */
export async function readJson(
  stream: string,
  options: Partial<Omit<ReadOptions, "stream" | "connection">> = {},
): Promise<unknown[]> {
  const values: unknown[] = [];
  for await (
    const record of readCommitted({ connection: CONNECTION, stream, bounded: true, ...options })
  ) {
    values.push(JSON.parse(new TextDecoder().decode(record.data)));
  }
  return values;
}

/**
 * Transactions driven by hand, record by record, with the sink's building
 * blocks (the producer, the committer's `commitTransaction`), for tests of
 * readers that need open, committed and aborted transactions in a chosen
 * order. Records are JSON, on `subject`.
 */
export class HandDrivenTransactions {
  readonly #nc: NatsConnection;
  readonly #producer: TransactionalProducer;
  readonly #log: TransactionLog;
  readonly #stream: string;
  readonly #subject: string;

  private constructor(
    nc: NatsConnection,
    producer: TransactionalProducer,
    log: TransactionLog,
    t: { stream: string; subject: string },
  ) {
    this.#nc = nc;
    this.#producer = producer;
    this.#log = log;
    this.#stream = t.stream;
    this.#subject = t.subject;
  }

  /**
   * Connects and takes subtask 0 of 1 of `prefix` (default `hand`) in
   * `t.bucket` (created if missing), as attempt 0 of job `jetstream-test`.
   */
  static async open(
    t: { stream: string; bucket: string },
    subject: string,
    prefix = "hand",
  ): Promise<HandDrivenTransactions> {
    const nc = await connectNats(CONNECTION);
    const log = await TransactionLog.open(nc, t.bucket, { create: true });
    const producer = await TransactionalProducer.init({
      nc,
      log,
      stream: t.stream,
      prefix,
      subtask: 0,
      parallelism: 1,
      jobId: "jetstream-test",
      attempt: 0,
      maxInFlight: 100,
      maxBatchBytes: 64 * 1024,
    });
    return new HandDrivenTransactions(nc, producer, log, { stream: t.stream, subject });
  }

  /** Begins a transaction. */
  beginTransaction(_context?: unknown): Promise<JetStreamTxn> {
    return this.#producer.begin();
  }

  /** Adds `value` (JSON) to `txn`'s batch. */
  invoke(txn: JetStreamTxn, value: unknown, _context?: unknown): void | Promise<void> {
    return this.#producer.send(txn, this.#subject, new TextEncoder().encode(JSON.stringify(value)));
  }

  /** Publishes `txn`'s batch and pre-commits it. */
  preCommit(txn: JetStreamTxn): Promise<void> {
    return this.#producer.preCommit(txn);
  }

  /** Commits `txn` as the committer does. */
  async commit(txn: JetStreamTxn): Promise<void> {
    const jsm = await jetstreamApi.jetstreamManager(this.#nc);
    await commitTransaction(
      { log: this.#log, jsm, js: jetstreamApi.jetstream(this.#nc), stream: this.#stream },
      txn,
    );
  }

  /** Publishes the open batch and awaits its acknowledgement. */
  flush(): Promise<void> {
    return this.#producer.flush();
  }

  /** Aborts `txn`. */
  abort(txn: JetStreamTxn): Promise<void> {
    return this.#producer.abort(txn);
  }

  /** Closes the producer and the connection; aborts nothing (a crash). */
  async close(): Promise<void> {
    await this.#producer.close();
    await this.#nc.close();
  }
}
