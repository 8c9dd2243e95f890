/**
 * Upserts *and deletes* by key, for sinks fed a changelog (a SQL table with
 * a PRIMARY KEY): the changes of a batch are reduced to the last one per
 * key, then sent as one `DELETE … WHERE (k…) IN ((?…), …)` for the deleted
 * keys and one multi-row upsert (`INSERT … ON DUPLICATE KEY UPDATE`) for
 * the others. This is Flink's JDBC `TableBufferReducedStatementExecutor`.
 *
 * ## Why reducing is exact
 *
 * Applying a sequence of upserts and deletes of one key leaves that key in
 * the state its last change says (the row it upserts, or absent), whatever
 * came before. A batch is sent inside one statement pair, in one
 * transaction for the XA sink, so nothing observes the states in between;
 * and after reduction each key appears once, so the DELETE and the upsert
 * touch disjoint rows and their order does not matter.
 *
 * Same shape as {@linkcode RowBatch} (`rows`, `add`, `send`, `clear`), so
 * the XA and autocommit writers take either. Performs no I/O but in `send`.
 *
 * @module
 */

import type { SqlConnection } from "./connection.ts";
import { rethrowMariaDbError } from "./errors.ts";
import {
  multiRowSql,
  type MultiRowStatement,
  quoteIdentifier,
  rowParameters,
} from "./statement.ts";

/**
 * How a sink tells deletes from upserts, and a record's key (the
 * `changelog` option of `mariaDbXaSink`).
 */
export interface MariaDbChangelog<T> {
  /** The table rows are deleted from: the upsert statement's table. */
  readonly table: string;
  /** The table's primary key (or a unique key) columns. */
  readonly keyColumns: readonly string[];
  /** A record's key values, one per key column (also for upserts: the batch reduces by key). */
  readonly key: (record: T) => readonly unknown[];
  /** Whether a record deletes its key; otherwise it is upserted through the sink's `sql`. */
  readonly isDelete: (record: T) => boolean;
}

/**
 * The `DELETE` of `rows` keys: `DELETE FROM t WHERE (a, b) IN ((?, ?), …)`
 * (`WHERE a IN (?, …)` for a one-column key).
 * @throws {RangeError} for a bad table or column name, or `rows` < 1.
 */
export function deleteSql(table: string, keyColumns: readonly string[], rows: number): string {
  if (!Number.isSafeInteger(rows) || rows < 1) {
    throw new RangeError(`deleteSql: rows must be an integer >= 1: current value is ${rows}`);
  }
  if (keyColumns.length === 0) {
    throw new RangeError(
      "deleteSql: keyColumns must name at least one column: current value is []",
    );
  }
  const columns = keyColumns.map((c) => quoteIdentifier(c, "key column"));
  const one = keyColumns.length === 1 ? "?" : `(${keyColumns.map(() => "?").join(", ")})`;
  const target = keyColumns.length === 1 ? columns[0]! : `(${columns.join(", ")})`;
  return `DELETE FROM ${quoteIdentifier(table, "table")} WHERE ${target} IN (${
    Array(rows).fill(one).join(", ")
  })`;
}

/** A batch of changes reduced to the last one per key (see the module docs). */
export class ChangelogRowBatch<T> {
  readonly #statement: MultiRowStatement;
  readonly #parameters: (record: T) => readonly unknown[];
  readonly #changelog: MariaDbChangelog<T>;
  readonly #where: string;
  /** The last change per key (by the JSON of its key values), in first-seen order. */
  #changes = new Map<string, { readonly key: readonly unknown[]; readonly upsert: T | null }>();

  /**
   * An empty batch.
   * @param statement the parsed one-row upsert.
   * @param parameters a record's values, one per `?` of the upsert's tuple.
   * @param changelog what deletes and what the key is.
   * @param where the sink and subtask, for errors.
   */
  constructor(
    statement: MultiRowStatement,
    parameters: (record: T) => readonly unknown[],
    changelog: MariaDbChangelog<T>,
    where: string,
  ) {
    this.#statement = statement;
    this.#parameters = parameters;
    this.#changelog = changelog;
    this.#where = where;
  }

  /** How many keys have a change buffered. */
  get rows(): number {
    return this.#changes.size;
  }

  /**
   * Buffers one change, replacing the key's earlier one.
   * @throws {TypeError} when `key` does not give one value per key column.
   */
  add(record: T): void {
    const key = this.#changelog.key(record);
    if (!Array.isArray(key) || key.length !== this.#changelog.keyColumns.length) {
      throw new TypeError(
        `${this.#where}: key(record) must return one value per key column (${
          this.#changelog.keyColumns.join(", ")
        }): current value is ${JSON.stringify(key)}`,
      );
    }
    const id = JSON.stringify(key);
    this.#changes.delete(id); // re-inserted last: a key's change keeps the latest position
    this.#changes.set(id, { key, upsert: this.#changelog.isDelete(record) ? null : record });
  }

  /**
   * Sends the deletes, then the upserts, and empties the batch.
   * @returns how many keys were changed.
   * @throws {MariaDbRejectedError} for a statement the server refuses for
   *   good (`errors.ts`); the driver's error otherwise.
   */
  async send(connection: SqlConnection): Promise<number> {
    const changes = [...this.#changes.values()];
    this.#changes = new Map();
    if (changes.length === 0) return 0;
    const deletes: unknown[] = [];
    let deleted = 0;
    const upserts: unknown[] = [];
    let upserted = 0;
    for (const change of changes) {
      if (change.upsert === null) {
        deletes.push(...change.key);
        deleted++;
      } else {
        const values = rowParameters(
          this.#statement,
          this.#parameters,
          change.upsert,
          this.#where,
        );
        upserts.push(...values);
        upserted++;
      }
    }
    const { table, keyColumns } = this.#changelog;
    if (deleted > 0) {
      try {
        await connection.query(deleteSql(table, keyColumns, deleted), deletes);
      } catch (e) {
        rethrowMariaDbError(e, `${this.#where}: deleting ${deleted} keys from ${table}`);
      }
    }
    if (upserted > 0) {
      try {
        await connection.query(multiRowSql(this.#statement, upserted), upserts);
      } catch (e) {
        rethrowMariaDbError(e, `${this.#where}: upserting ${upserted} rows into ${table}`);
      }
    }
    return changes.length;
  }

  /** Drops the buffered changes (the writer failed or closes). */
  clear(): void {
    this.#changes = new Map();
  }
}
