/**
 * The PostgreSQL idempotent upsert sink: `INSERT … ON CONFLICT (<keys>) DO
 * UPDATE` in multi-row batches, sent when a batch is full and at every
 * checkpoint barrier (Flink's JDBC upsert sink with at-least-once
 * flushing). It needs no prepared transactions, so it works on servers
 * with `max_prepared_transactions = 0`.
 *
 * ```ts ignore
 * totals.sinkTo(new PostgresUpsertSink<Total>({
 *   url: "postgres://weir@db:5432/billing",
 *   table: "account_totals",
 *   columns: ["account", "total"],
 *   keyColumns: ["account"],
 *   values: (t) => [t.account, t.total],
 *   deliveryGuarantee: "exactly-once",
 * })).uid("totals");
 * ```
 *
 * ## Eventually exactly-once (the seeds' caveat)
 *
 * With deterministic keys *and* values (the same input gives the same rows
 * with the same keys), writing a row twice leaves the table as writing it
 * once did: a replay after a failure rewrites the rows written since the
 * restored checkpoint, and the table converges to the failure-free result.
 * In between, earlier values are visible again: a key updated 5 → 10 → 15
 * before a crash whose restore replays those updates shows 5, then 10,
 * then 15 again. Readers see 5 → 10 → 15 → 5 → 10 → 15, never a value the
 * failure-free run would not have produced, and end on the same value.
 * Declare `"exactly-once"` only when keys and values are deterministic
 * (not, for instance, a processing-time window or a random id); otherwise
 * `"at-least-once"` (the default) is what it gives.
 *
 * | `deliveryGuarantee`         | sends at a barrier | what it promises |
 * |-----------------------------|--------------------|------------------|
 * | `"exactly-once"`            | yes | eventually exactly-once, as above (the job checks the checkpointing mode) |
 * | `"at-least-once"` (default) | yes | every row written at least once |
 * | `"none"`                    | no  | rows buffered at a failure are lost |
 *
 * ## Batches
 *
 * A batch holds at most one row per key: a later record of the same key
 * replaces the buffered row (PostgreSQL refuses a statement that updates
 * a row twice, and the last write wins either way). Each statement
 * commits on its own (autocommit). At start the writer plans the statement
 * (`EXPLAIN`), which checks the table, the columns and that `keyColumns`
 * match a unique index or primary key: without one `ON CONFLICT` could not
 * find the row to update, a {@linkcode UpsertKeyError} that fails the job
 * without restarts.
 *
 * @module
 */

import type { SinkContext } from "../../runtime/api/sink.ts";
import {
  checkDeliveryGuarantee,
  type DeliveryGuarantee,
  type SinkV2,
  type SinkWriter,
  type WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { closeNow, connect, type Sql } from "./_driver.ts";
import { describeError, errorCode } from "./errors.ts";
import { statementFailure } from "./sqlstate.ts";
import {
  checkRow,
  checkRowSinkOptions,
  insertStatement,
  type PostgresValue,
  type TableSpec,
  upsertClause,
} from "./statements.ts";
import { checkOptions, type OptionsShape } from "../../runtime/api/options_check.ts";

/** The known keys of {@linkcode PostgresUpsertSinkOptions} and the kinds of their values. */
const UPSERT_SINK_OPTIONS: OptionsShape<PostgresUpsertSinkOptions<unknown>> = {
  url: "any",
  table: "any",
  columns: "object",
  keyColumns: "object",
  values: "any",
  batchSize: "number",
  deliveryGuarantee: "any",
};

/** Options of {@linkcode PostgresUpsertSink}. */
export interface PostgresUpsertSinkOptions<T> {
  /** `postgres://user:password@host:port/database`. */
  readonly url: string;
  /** The table: `name` or `schema.name`, case-sensitive as written. */
  readonly table: string;
  /** The columns each row fills, in the order of `row`'s values. */
  readonly columns: readonly string[];
  /** The columns of a unique index or primary key of `table` (a subset of `columns`). */
  readonly keyColumns: readonly string[];
  /** A record's row: one value per column. Throwing fails the attempt. */
  readonly values: (record: T) => readonly PostgresValue[];
  /** Rows per statement. Default 1000 (fewer when 65 535 parameters would not hold them). */
  readonly batchSize?: number;
  /** See the module docs. Default `"at-least-once"`. */
  readonly deliveryGuarantee?: DeliveryGuarantee;
}

/**
 * `keyColumns` do not match a unique index or primary key of the table (or
 * the table or a column does not exist): a configuration error a restart
 * cannot fix, so the job fails once.
 */
export class UpsertKeyError extends SuppressRestartsError {
  /**
   * Builds the error.
   * @param message names the sink, the table and the key columns.
   * @param options the driver's error.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "UpsertKeyError";
  }
}

/** SQLSTATEs of a statement that can never work: no matching unique index, no table, no column. */
const CONFIGURATION_SQLSTATES = new Set(["42P10", "42P01", "42703", "3F000"]);

/** Upserts records into a PostgreSQL table; see the module docs. */
export class PostgresUpsertSink<T> implements SinkV2<T, never, never> {
  /** Always `"v2"`. */
  readonly kind = "v2" as const;
  /** What the sink promises (see the module docs). */
  readonly deliveryGuarantee: DeliveryGuarantee;
  readonly #options: PostgresUpsertSinkOptions<T>;
  readonly #spec: TableSpec;
  readonly #clause: string;
  readonly #batchRows: number;
  readonly #keyIndexes: readonly number[];

  /**
   * Checks the options.
   * @throws {DeliveryGuaranteeError} for an unknown `deliveryGuarantee`.
   * @throws {TypeError} for a bad url, table, column or key column.
   * @throws {RangeError} for a bad `batchSize`., or an unknown option
   *   (`checkOptions`); a `TypeError` for an option of the wrong type.
   */
  constructor(options: PostgresUpsertSinkOptions<T>) {
    checkOptions("PostgresUpsertSink", options, UPSERT_SINK_OPTIONS);
    const where = "PostgresUpsertSink";
    this.deliveryGuarantee = checkDeliveryGuarantee(
      where,
      options.deliveryGuarantee ?? "at-least-once",
      ["none", "at-least-once", "exactly-once"],
    );
    const rowSink = checkRowSinkOptions(where, options);
    this.#spec = rowSink.spec;
    this.#batchRows = rowSink.batchRows;
    this.#clause = upsertClause(where, this.#spec, options.keyColumns);
    this.#keyIndexes = options.keyColumns.map((k) => options.columns.indexOf(k));
    this.#options = options;
  }

  /**
   * Opens the subtask's writer and checks the statement (see the module docs).
   * @throws {UpsertKeyError} when the table, a column or a matching unique index is missing.
   */
  async createWriter(context: WriterInitContext<never>): Promise<SinkWriter<T, never, never>> {
    const name = `PostgresUpsertSink '${context.uid}' subtask ${context.subtaskIndex}`;
    const sql = connect({ url: this.#options.url, applicationName: `weir ${name}`.slice(0, 63) });
    try {
      await sql.unsafe(
        `EXPLAIN ${insertStatement(this.#spec, 1, this.#clause)}`,
        this.#spec.columns.map(() => null),
      );
    } catch (error) {
      await closeNow(sql);
      if (CONFIGURATION_SQLSTATES.has(errorCode(error) ?? "")) {
        throw new UpsertKeyError(
          `${name}: cannot upsert into ${this.#spec.table} on key (${
            this.#options.keyColumns.join(", ")
          }): ${describeError(error)}. keyColumns must be the columns of a primary key or ` +
            `unique index of the table, and the table and columns must exist`,
          { cause: error },
        );
      }
      throw statementFailure(
        error,
        `${name}: checking the upsert into ${this.#spec.table} with EXPLAIN failed: ${
          describeError(error)
        }`,
      );
    }
    return new UpsertWriter<T>({
      name,
      sql,
      spec: this.#spec,
      clause: this.#clause,
      batchRows: this.#batchRows,
      keyIndexes: this.#keyIndexes,
      values: this.#options.values,
      flushAtBarrier: this.deliveryGuarantee !== "none",
    });
  }
}

interface UpsertParts<T> {
  readonly name: string;
  readonly sql: Sql;
  readonly spec: TableSpec;
  readonly clause: string;
  readonly batchRows: number;
  readonly keyIndexes: readonly number[];
  readonly values: (record: T) => readonly PostgresValue[];
  readonly flushAtBarrier: boolean;
}

/** One subtask's writer: a batch of rows by key, sent as one statement. */
class UpsertWriter<T> implements SinkWriter<T, never, never> {
  readonly #p: UpsertParts<T>;
  #batch = new Map<string, readonly PostgresValue[]>();
  #statements = new Map<number, string>();

  constructor(parts: UpsertParts<T>) {
    this.#p = parts;
  }

  write(value: T, _context: SinkContext): void | Promise<void> {
    const row = checkRow(this.#p.name, this.#p.spec, this.#p.values(value));
    const key = rowKey(row, this.#p.keyIndexes);
    if (key === undefined) {
      const nulls = this.#p.keyIndexes.filter((i) => row[i] === null || row[i] === undefined)
        .map((i) => this.#p.spec.columns[i]);
      throw new UpsertKeyError(
        `${this.#p.name}: key column(s) ${nulls.join(", ")} of a row for ${this.#p.spec.table} ` +
          `are null: ON CONFLICT never matches a null key, so a replay would insert the row ` +
          `again; values(record) must give every key column a value`,
      );
    }
    this.#batch.set(key, row);
    if (this.#batch.size >= this.#p.batchRows) return this.#send();
  }

  async flush(endOfInput: boolean): Promise<void> {
    if (this.#batch.size > 0 && (endOfInput || this.#p.flushAtBarrier)) await this.#send();
  }

  async close(): Promise<void> {
    this.#batch.clear();
    await closeNow(this.#p.sql);
  }

  async #send(): Promise<void> {
    const rows = [...this.#batch.values()];
    this.#batch = new Map();
    let statement = this.#statements.get(rows.length);
    if (statement === undefined) {
      statement = insertStatement(this.#p.spec, rows.length, this.#p.clause);
      this.#statements.set(rows.length, statement);
    }
    try {
      // deno-lint-ignore no-explicit-any
      await this.#p.sql.unsafe(statement, rows.flat() as any[]);
    } catch (error) {
      throw statementFailure(
        error,
        `${this.#p.name}: upsert of ${rows.length} rows into ${this.#p.spec.table} failed: ${
          describeError(error)
        }`,
      );
    }
  }
}

/**
 * A string that is equal for two rows exactly when their key values are:
 * each value tagged with its kind (so `1` and `"1"` differ; `1` and `1n`
 * do not, as in PostgreSQL).
 * @returns the key, or `undefined` when a key value is null.
 */
export function rowKey(
  row: readonly PostgresValue[],
  keyIndexes: readonly number[],
): string | undefined {
  let key = "";
  for (const i of keyIndexes) {
    const v = row[i];
    if (v === null || v === undefined) return undefined;
    if (v instanceof Date) key += `d${v.getTime()};`;
    else if (v instanceof Uint8Array) key += `b${Array.from(v).join(",")};`;
    else if (typeof v === "string") key += `s${v.length}:${v};`;
    else if (typeof v === "boolean") key += `t${v};`;
    else key += `#${String(v)};`;
  }
  return key;
}
