/**
 * {@linkcode PostgresPreparedSink}'s writer for `"at-least-once"` and
 * `"none"`: multi-row `INSERT`s in autocommit (each statement its own
 * transaction), no prepared transactions, so it works on servers with
 * `max_prepared_transactions = 0` (Flink's `JdbcSink.sink`).
 *
 * | `deliveryGuarantee` | sends at a barrier | a failure |
 * |---|---|---|
 * | `"at-least-once"` | yes (`flush(false)`) | the replay inserts the rows sent after the restored checkpoint again |
 * | `"none"` | no: only full batches, and the rest at the end of input | the buffered rows are lost; the sent ones are replayed |
 *
 * In both modes a batch that is not full is also sent `batchIntervalMs`
 * after its first row (Flink's `JdbcExecutionOptions.batchIntervalMs`;
 * `connectors/_sql/batch_interval.ts`), so that a job without
 * checkpointing writes its rows while it runs.
 *
 * @module
 */

import type { SinkContext } from "../../runtime/api/sink.ts";
import type { SinkWriter, WriterInitContext } from "../../runtime/api/sink_v2.ts";
import { closeNow, connect, type Sql } from "./_driver.ts";
import type { PostgresCommittable } from "./committable.ts";
import { describeError } from "./errors.ts";
import { statementFailure } from "./sqlstate.ts";
import {
  type PostgresWriterParts,
  rollBackLingering,
  type WriterBatch,
  writerBatch,
} from "./prepared_writer.ts";
import { BatchIntervalFlusher } from "../_sql/batch_interval.ts";

/** What an {@linkcode AutocommitWriter} is built from (checked by the sink). */
export interface AutocommitWriterParts<T> extends PostgresWriterParts<T> {
  /** Whether `flush(false)` (a barrier) sends the buffered rows: at-least-once. */
  readonly flushAtBarrier: boolean;
  /** How long a batch's first row waits for a send, in ms; 0: until full, a barrier or the end. */
  readonly batchIntervalMs: number;
}

/** Inserts batches in autocommit; returns no committables. */
export class AutocommitWriter<T> implements SinkWriter<T, PostgresCommittable, never> {
  readonly #p: AutocommitWriterParts<T>;
  readonly #sql: Sql;
  readonly #batch: WriterBatch;
  readonly #interval: BatchIntervalFlusher;

  /** Creates the writer's client; it connects in {@linkcode open}. */
  constructor(parts: AutocommitWriterParts<T>) {
    this.#p = parts;
    this.#batch = writerBatch(parts);
    this.#interval = new BatchIntervalFlusher(parts.batchIntervalMs, () => this.#send());
    this.#sql = connect({ url: parts.url, applicationName: `weir ${parts.name}`.slice(0, 63) });
  }

  /**
   * Rolls back the lingering prepared transactions this writer owns, left
   * by an exactly-once run of the same sink (none on a server without
   * prepared transactions): they would hold their locks forever.
   */
  async open(context: WriterInitContext<never>): Promise<void> {
    await rollBackLingering(this.#sql, {
      name: this.#p.name,
      gidPrefix: this.#p.gidPrefix,
      context,
    });
  }

  /**
   * Buffers one row; sends the batch when it is full.
   * @throws the failure of an earlier timed send.
   */
  write(value: T, _context: SinkContext): void | Promise<void> {
    this.#interval.throwIfFailed();
    const deletes = this.#p.changelog?.isDelete(value) ?? false;
    if (this.#batch.add(this.#p.values(value), deletes) >= this.#p.batchRows) return this.#send();
    this.#interval.arm();
  }

  /**
   * Sends the buffered rows at a barrier (at-least-once) and at the end of input.
   * @throws the failure of an earlier timed send.
   */
  async flush(endOfInput: boolean): Promise<void> {
    this.#interval.throwIfFailed();
    if (this.#batch.rows > 0 && (endOfInput || this.#p.flushAtBarrier)) await this.#send();
  }

  /** Nothing to pre-commit: the rows are committed as they are sent. */
  prepareCommit(_checkpointId: number): readonly PostgresCommittable[] {
    return [];
  }

  /** Drops the buffered rows and closes the connection. */
  async close(): Promise<void> {
    this.#interval.cancel();
    this.#batch.clear();
    await closeNow(this.#sql);
  }

  async #send(): Promise<void> {
    this.#interval.cancel();
    if (this.#batch.rows === 0) return;
    const { rows, params, statement } = this.#batch.take();
    try {
      // deno-lint-ignore no-explicit-any
      await this.#sql.unsafe(statement, params as any[]);
    } catch (error) {
      throw statementFailure(
        error,
        `${this.#p.name}: INSERT of ${rows} rows into ${this.#p.spec.table} failed: ${
          describeError(error)
        }`,
      );
    }
  }
}
