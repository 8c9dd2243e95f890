/**
 * Upserts *and deletes* by key for the PostgreSQL sinks fed a changelog (a
 * SQL table with a PRIMARY KEY): the changes of a batch are reduced to the
 * last one per key (Flink's JDBC `TableBufferReducedStatementExecutor`) and
 * sent as one statement:
 *
 * - upserts only: `INSERT … VALUES … ON CONFLICT (k…) DO UPDATE SET …`;
 * - deletes only: `DELETE FROM t WHERE (k…) IN (($1, …), …)`;
 * - both: `WITH deleted AS (DELETE …) INSERT … ON CONFLICT …`.
 *
 * Reducing is exact: a key's state after a sequence of upserts and deletes
 * is what its last change says, and a batch is applied at once. PostgreSQL
 * runs the parts of a `WITH` statement on one snapshot without seeing each
 * other's changes, which is safe here because after reduction they touch
 * disjoint keys; and `ON CONFLICT DO UPDATE` refuses a key twice in one
 * statement, which reduction also rules out.
 *
 * Same surface as {@linkcode InsertBatch} (`rows`, `add`, `take`,
 * `clear`), so the prepared and autocommit writers take either. Pure: no
 * I/O.
 *
 * @module
 */

import { keyColumnsProblem } from "../_sql/key_columns.ts";
import {
  checkRow,
  type PostgresValue,
  quoteIdentifier,
  type TableSpec,
  upsertClause,
} from "./statements.ts";

/** How a PostgreSQL sink tells deletes from upserts (its `changelog` option). */
export interface PostgresChangelog<T> {
  /** The table's primary key (or a unique key) columns: the conflict target, and what deletes match. */
  readonly keyColumns: readonly string[];
  /** Whether a record deletes its key (its row's key columns); otherwise it is upserted. */
  readonly isDelete: (record: T) => boolean;
}

/**
 * Checks a `changelog` option against the written columns.
 * @throws {TypeError} naming what is wrong (no function, an empty or
 *   repeated key column, one not written).
 */
export function checkChangelog<T>(
  where: string,
  spec: TableSpec,
  changelog: PostgresChangelog<T>,
): PostgresChangelog<T> {
  if (typeof changelog !== "object" || typeof changelog?.isDelete !== "function") {
    throw new TypeError(`${where}: changelog.isDelete must be a function`);
  }
  const problem = keyColumnsProblem(spec.columns, changelog.keyColumns);
  if (problem !== undefined) throw new TypeError(`${where}: changelog.${problem}`);
  return changelog;
}

/** The rows of one batch: the last change per key (see the module docs). */
export class ChangelogInsertBatch {
  readonly #where: string;
  readonly #spec: TableSpec;
  readonly #keyIndexes: readonly number[];
  readonly #upsert: string;
  #changes = new Map<
    string,
    { readonly row: readonly PostgresValue[]; readonly deletes: boolean }
  >();

  /**
   * An empty batch.
   * @param where names the writer, for messages.
   * @param spec the table and columns (checked by the sink).
   * @param keyColumns the key columns (checked by {@linkcode checkChangelog}).
   */
  constructor(where: string, spec: TableSpec, keyColumns: readonly string[]) {
    this.#where = where;
    this.#spec = spec;
    this.#keyIndexes = keyColumns.map((k) => spec.columns.indexOf(k));
    this.#upsert = upsertClause(where, spec, keyColumns);
  }

  /** How many keys have a change buffered. */
  get rows(): number {
    return this.#changes.size;
  }

  /**
   * Buffers one change, replacing its key's earlier one.
   * @param row the row's values, one per column (a delete's non-key values are not sent).
   * @param deletes whether the change deletes the row's key.
   * @returns the keys now buffered.
   * @throws {RowShapeError} when `row` does not hold one value per column.
   */
  add(row: readonly PostgresValue[], deletes = false): number {
    const checked = checkRow(this.#where, this.#spec, row);
    const id = JSON.stringify(this.#keyIndexes.map((i) => keyText(checked[i])));
    this.#changes.delete(id);
    this.#changes.set(id, { row: checked, deletes });
    return this.#changes.size;
  }

  /**
   * Empties the batch.
   * @returns its changes (≥ 1), their parameters in order and the statement.
   * @throws {RangeError} when the batch is empty.
   */
  take(): { readonly rows: number; readonly params: PostgresValue[]; readonly statement: string } {
    const changes = [...this.#changes.values()];
    this.#changes = new Map();
    if (changes.length === 0) throw new RangeError(`${this.#where}: take() of an empty batch`);
    const params: PostgresValue[] = [];
    const keyTuples: string[] = [];
    for (const c of changes) {
      if (!c.deletes) continue;
      keyTuples.push(`(${this.#keyIndexes.map((i) => `$${params.push(c.row[i]!)}`).join(", ")})`);
    }
    const valueTuples: string[] = [];
    for (const c of changes) {
      if (c.deletes) continue;
      valueTuples.push(`(${c.row.map((v) => `$${params.push(v)}`).join(", ")})`);
    }
    const table = quoteIdentifier("table", this.#spec.table);
    const keys = this.#keyIndexes.map((i) => quoteIdentifier("column", this.#spec.columns[i]));
    const deleteSql = keyTuples.length === 0
      ? ""
      : `DELETE FROM ${table} WHERE (${keys.join(", ")}) IN (${keyTuples.join(", ")})`;
    const insertSql = valueTuples.length === 0
      ? ""
      : `INSERT INTO ${table} (${
        this.#spec.columns.map((c) => quoteIdentifier("column", c)).join(", ")
      }) VALUES ${valueTuples.join(", ")} ${this.#upsert}`;
    const statement = deleteSql === ""
      ? insertSql
      : insertSql === ""
      ? deleteSql
      : `WITH deleted AS (${deleteSql}) ${insertSql}`;
    return { rows: changes.length, params, statement };
  }

  /** Drops the buffered changes. */
  clear(): void {
    this.#changes = new Map();
  }
}

/** A key value as text for reduction: distinct values of distinct types stay distinct. */
function keyText(value: PostgresValue | undefined): unknown {
  if (value instanceof Date) return `date:${value.toISOString()}`;
  if (value instanceof Uint8Array) return `bytes:${[...value].join(",")}`;
  if (typeof value === "bigint") return `bigint:${value}`;
  return value ?? null;
}
