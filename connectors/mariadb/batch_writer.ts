/**
 * Rows batched into multi-row statements ({@linkcode RowBatch}), and the
 * sink writer that sends them in autocommit mode
 * ({@linkcode AutocommitBatchWriter}): the XA sink's `"at-least-once"` and
 * `"none"` modes and the upsert sink use it.
 *
 * ## When rows reach the database
 *
 * - a batch is sent when it holds `batchSize` rows (`write` then returns
 *   the send's promise, which is the backpressure);
 * - at every checkpoint barrier (`flush(false)`) when `flushOnCheckpoint`
 *   (at-least-once: a completed checkpoint covers only records already in
 *   the database);
 * - at the end of bounded input (`flush(true)`), always;
 * - `batchIntervalMs` after the first row of a batch that has not been sent
 *   otherwise (Flink's `JdbcExecutionOptions.batchIntervalMs`; default 200
 *   ms, 0 turns it off): so that a job without checkpointing writes its
 *   rows while it runs (`connectors/_sql/batch_interval.ts`).
 *
 * Without `flushOnCheckpoint` (guarantee `"none"`) the rows buffered at a
 * failure are lost. Each statement commits on its own (autocommit); a
 * failure after some statements leaves them in the table, and the replay
 * from the last checkpoint sends their rows again.
 *
 * @module
 */

import type { SinkContext } from "../../runtime/api/sink.ts";
import type { SinkWriter } from "../../runtime/api/sink_v2.ts";
import {
  type MariaDbConnectionOptions,
  openConnection,
  releaseConnection,
  type SqlConnection,
} from "./connection.ts";
import { insertTarget, rethrowMariaDbError } from "./errors.ts";
import { BatchIntervalFlusher } from "../_sql/batch_interval.ts";
import { multiRowSql, type MultiRowStatement, rowParameters } from "./statement.ts";
import { ChangelogRowBatch, type MariaDbChangelog } from "./changelog_batch.ts";

/** Rows waiting to be sent as one multi-row statement. */
export class RowBatch<T> {
  readonly #statement: MultiRowStatement;
  readonly #parameters: (record: T) => readonly unknown[];
  readonly #where: string;
  #values: unknown[] = [];
  #rows = 0;

  /**
   * @param statement the parsed one-row statement.
   * @param parameters a record's values, one per `?` of the tuple.
   * @param where the sink and subtask, for errors.
   */
  constructor(
    statement: MultiRowStatement,
    parameters: (record: T) => readonly unknown[],
    where: string,
  ) {
    this.#statement = statement;
    this.#parameters = parameters;
    this.#where = where;
  }

  /** How many rows are buffered. */
  get rows(): number {
    return this.#rows;
  }

  /**
   * Buffers one record's row.
   * @throws {TypeError} when `parameters` returns something other than an
   *   array of as many values as the tuple has `?`.
   */
  add(record: T): void {
    const values = rowParameters(this.#statement, this.#parameters, record, this.#where);
    for (const v of values) this.#values.push(v);
    this.#rows++;
  }

  /**
   * Sends the buffered rows as one statement and empties the batch.
   * @param connection where to send them.
   * @returns how many rows were sent.
   * @throws {MariaDbRejectedError} when the server refuses the statement
   *   for a reason a restart cannot fix (`errors.ts`), naming the table;
   *   the driver's error otherwise.
   */
  async send(connection: SqlConnection): Promise<number> {
    const rows = this.#rows;
    if (rows === 0) return 0;
    const values = this.#values;
    this.#values = [];
    this.#rows = 0;
    try {
      await connection.query(multiRowSql(this.#statement, rows), values);
    } catch (e) {
      rethrowMariaDbError(
        e,
        `${this.#where}: inserting ${rows} rows into ${insertTarget(this.#statement.sql)}`,
      );
    }
    return rows;
  }

  /** Drops the buffered rows (the writer failed or closes). */
  clear(): void {
    this.#values = [];
    this.#rows = 0;
  }
}

/** What every MariaDB sink writer batches rows with: where, which statement, which values. */
export interface RowWriterOptions<T> {
  /** Where to connect. */
  readonly connection: MariaDbConnectionOptions;
  /** The parsed one-row statement. */
  readonly statement: MultiRowStatement;
  /** A record's values, one per `?`. */
  readonly parameters: (record: T) => readonly unknown[];
  /** Deletes and the key of a changelog, when the sink writes one (`changelog_batch.ts`). */
  readonly changelog?: MariaDbChangelog<T>;
  /** Rows per statement. */
  readonly batchSize: number;
}

/** What an {@linkcode AutocommitBatchWriter} is built from. */
export interface AutocommitBatchWriterOptions<T> extends RowWriterOptions<T> {
  /** Whether `flush(false)` (a barrier) sends the batch: at-least-once. */
  readonly flushOnCheckpoint: boolean;
  /** How long a batch's first row waits for a send, in ms; 0: until full, a barrier or the end. */
  readonly batchIntervalMs: number;
  /** The sink and subtask, for errors. */
  readonly where: string;
}

/** Sends batches in autocommit mode (see the module docs for when). */
export class AutocommitBatchWriter<T> implements SinkWriter<T> {
  readonly #options: AutocommitBatchWriterOptions<T>;
  readonly #batch: RowBatch<T> | ChangelogRowBatch<T>;
  readonly #interval: BatchIntervalFlusher;
  #connection: Promise<SqlConnection> | undefined;
  #closed = false;

  /** @param options see {@linkcode AutocommitBatchWriterOptions}. */
  constructor(options: AutocommitBatchWriterOptions<T>) {
    this.#options = options;
    this.#batch = options.changelog === undefined
      ? new RowBatch(options.statement, options.parameters, options.where)
      : new ChangelogRowBatch(
        options.statement,
        options.parameters,
        options.changelog,
        options.where,
      );
    this.#interval = new BatchIntervalFlusher(options.batchIntervalMs, () => this.#send());
  }

  /**
   * Buffers the record; sends the batch when it is full.
   * @throws the failure of an earlier timed send.
   */
  write(value: T, _context: SinkContext): void | Promise<void> {
    this.#interval.throwIfFailed();
    this.#batch.add(value);
    if (this.#batch.rows >= this.#options.batchSize) return this.#send();
    this.#interval.arm();
  }

  /**
   * Sends the batch at a barrier (when `flushOnCheckpoint`) and at the end of input.
   * @throws the failure of an earlier timed send.
   */
  flush(endOfInput: boolean): void | Promise<void> {
    this.#interval.throwIfFailed();
    if (endOfInput || this.#options.flushOnCheckpoint) return this.#send();
  }

  async #send(): Promise<void> {
    this.#interval.cancel();
    if (this.#batch.rows === 0) return;
    if (this.#closed) throw new Error(`${this.#options.where}: the writer is closed`);
    // One connection however many sends start before it is open (a timed send and a full batch).
    this.#connection ??= openConnection(this.#options.connection);
    await this.#batch.send(await this.#connection);
  }

  /** Releases the connection; buffered rows are dropped (the replay writes them again). */
  close(): void {
    this.#closed = true;
    this.#interval.cancel();
    this.#batch.clear();
    this.#connection?.then(releaseConnection, () => {});
    this.#connection = undefined;
  }
}
