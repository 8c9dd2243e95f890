/**
 * The MariaDB/MySQL idempotent upsert sink: `INSERT … ON DUPLICATE KEY
 * UPDATE` in multi-row batches, sent when a batch is full and at every
 * checkpoint barrier (Flink's JDBC upsert sink with at-least-once flushing).
 *
 * ```ts ignore
 * import { mariaDbUpsertSink } from "./connectors/mariadb/mod.ts";
 *
 * totals.sinkTo(mariaDbUpsertSink<Total>({
 *   connection: { host: "127.0.0.1", user: "weir", database: "billing" },
 *   table: "account_totals",
 *   columns: ["account", "total"],
 *   keyColumns: ["account"],
 *   values: (t) => [t.account, t.total],
 *   deliveryGuarantee: "exactly-once",
 * })).uid("totals-sink");
 * ```
 *
 * ## Eventually exactly-once (the seeds' caveat)
 *
 * With deterministic keys *and* values (the same input gives the same rows
 * with the same keys), writing a row twice leaves the table as writing it
 * once did: a replay after a failure rewrites the rows written since the
 * restored checkpoint, and the table converges to the failure-free result.
 * In between, earlier values are visible again: a key updated 5 → 10 → 15
 * before a crash whose restore replays those updates shows 5, then 10, then
 * 15 again. Readers see the sequence 5 → 10 → 15 → 5 → 10 → 15, never a
 * value the failure-free run would not have produced, and end on the same
 * value. Declare `"exactly-once"` only when keys are deterministic (not,
 * for instance, a processing-time window or a random id); otherwise
 * `"at-least-once"` (the default) is what it gives.
 *
 * | `deliveryGuarantee`         | sends at a barrier | what it promises |
 * |-----------------------------|--------------------|------------------|
 * | `"exactly-once"`            | yes | eventually exactly-once, as above (the job checks exactly-once checkpointing) |
 * | `"at-least-once"` (default) | yes | every row written at least once |
 * | `"none"`                    | no  | rows buffered at a failure are lost |
 *
 * At start the writer checks that `keyColumns` are exactly the columns of
 * the table's primary key or of one of its unique keys; otherwise `ON
 * DUPLICATE KEY` would not find the row to update and a replay would
 * insert it again. That error is a configuration error and fails the job
 * without restarts ({@linkcode UpsertKeyError}).
 *
 * @module
 */

import type { SinkInitContext } from "../../runtime/api/sink.ts";
import {
  checkDeliveryGuarantee,
  type DeliveryGuarantee,
  type SinkV2,
  type WriterInitContext,
} from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { AutocommitBatchWriter } from "./batch_writer.ts";
import { checkBatchIntervalMs } from "../_sql/batch_interval.ts";
import {
  checkConnectionOptions,
  type MariaDbConnectionOptions,
  openConnection,
  releaseConnection,
  type SqlConnection,
} from "./connection.ts";
import { parseInsertStatement, quoteIdentifier } from "./statement.ts";
import { keyColumnsProblem } from "../_sql/key_columns.ts";
import { checkOptions, type OptionsShape } from "../../runtime/api/options_check.ts";

/** The known keys of {@linkcode MariaDbUpsertSinkOptions} and the kinds of their values. */
const UPSERT_SINK_OPTIONS: OptionsShape<MariaDbUpsertSinkOptions<unknown>> = {
  connection: "object",
  table: "any",
  columns: "object",
  keyColumns: "object",
  values: "any",
  deliveryGuarantee: "any",
  batchSize: "number",
  batchIntervalMs: "number",
};

/** What {@linkcode mariaDbUpsertSink} is built from. */
export interface MariaDbUpsertSinkOptions<T> {
  /** Where to connect. */
  readonly connection: MariaDbConnectionOptions;
  /** The table (maybe `schema.table`). */
  readonly table: string;
  /** The columns written, in the order `values` returns them. */
  readonly columns: readonly string[];
  /** The key columns: a subset of `columns`, exactly the table's primary or a unique key. */
  readonly keyColumns: readonly string[];
  /** A record's values, one per column. */
  readonly values: (record: T) => readonly unknown[];
  /** What the sink promises (default `"at-least-once"`); see the module docs. */
  readonly deliveryGuarantee?: DeliveryGuarantee;
  /** Rows per statement (default 1000). */
  readonly batchSize?: number;
  /**
   * How long the first row of a batch waits before the batch is sent
   * although not full, in ms (Flink's `JdbcExecutionOptions.batchIntervalMs`;
   * default 200, 0: only full batches, barriers and the end of input send).
   */
  readonly batchIntervalMs?: number;
}

/** The guarantees the upsert sink can give. */
export const MARIADB_UPSERT_SINK_GUARANTEES: readonly DeliveryGuarantee[] = [
  "none",
  "at-least-once",
  "exactly-once",
];

/**
 * The upsert sink's key columns are not a key of its table: upserts could
 * not find rows to update. A retry cannot fix it.
 */
export class UpsertKeyError extends SuppressRestartsError {
  /**
   * Builds the error.
   * @param message names the table, the key columns and the table's keys.
   */
  constructor(message: string) {
    super(message);
    this.name = "UpsertKeyError";
  }
}

/**
 * The upsert statement: `INSERT INTO t (c…) VALUES (?…) ON DUPLICATE KEY
 * UPDATE v = VALUES(v), …` for every non-key column (`k = k` when every
 * column is a key). Performs no I/O.
 * @param options table, columns and key columns.
 * @returns the SQL text.
 * @throws {RangeError} when `columns` is empty or has duplicates, or
 *   `keyColumns` is empty or not a subset of `columns` (naming the values).
 */
export function upsertSql(
  options: Pick<MariaDbUpsertSinkOptions<unknown>, "table" | "columns" | "keyColumns">,
): string {
  const { columns, keyColumns } = options;
  if (!Array.isArray(columns) || columns.length === 0 || new Set(columns).size !== columns.length) {
    throw new RangeError(
      `mariaDbUpsertSink: columns must be a non-empty list of distinct names: current value is ${
        JSON.stringify(columns)
      }`,
    );
  }
  const problem = keyColumnsProblem(columns, keyColumns);
  if (problem !== undefined) throw new RangeError(`mariaDbUpsertSink: ${problem}`);
  const table = quoteIdentifier(options.table, "table");
  const quoted = columns.map((c) => quoteIdentifier(c, "column"));
  const updates = columns.filter((c) => !keyColumns.includes(c)).map((c) => {
    const q = quoteIdentifier(c, "column");
    return `${q} = VALUES(${q})`;
  });
  const first = quoteIdentifier(keyColumns[0]!, "column");
  return `INSERT INTO ${table} (${quoted.join(", ")}) VALUES (${
    columns.map(() => "?").join(", ")
  }) ON DUPLICATE KEY UPDATE ${updates.length > 0 ? updates.join(", ") : `${first} = ${first}`}`;
}

/**
 * The columns of each unique key (primary or unique index) of `table`.
 * @param connection a connection to the sink's database.
 * @param table the table (maybe `schema.table`).
 * @returns index name → its columns in order.
 */
export async function uniqueKeys(
  connection: SqlConnection,
  table: string,
): Promise<Map<string, string[]>> {
  const dot = table.indexOf(".");
  const [schemaSql, schemaArgs] = dot < 0 ? ["DATABASE()", []] : ["?", [table.slice(0, dot)]];
  const rows = await connection.query(
    `SELECT INDEX_NAME AS name, COLUMN_NAME AS col FROM information_schema.STATISTICS ` +
      `WHERE TABLE_SCHEMA = ${schemaSql} AND TABLE_NAME = ? AND NON_UNIQUE = 0 ` +
      `ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
    [...schemaArgs, dot < 0 ? table : table.slice(dot + 1)],
  ) as { name: string; col: string }[];
  const keys = new Map<string, string[]>();
  for (const row of rows) {
    const list = keys.get(row.name) ?? [];
    list.push(row.col);
    keys.set(row.name, list);
  }
  return keys;
}

/**
 * Builds the upsert sink (see the module docs).
 * @param options see {@linkcode MariaDbUpsertSinkOptions}.
 * @returns a SinkV2 without a committer.
 * @throws {DeliveryGuaranteeError} for an unknown `deliveryGuarantee`.
 * @throws {RangeError} for bad columns, key columns, table name, `batchSize` or `batchIntervalMs`.
 * @throws {TypeError} for connection options without `user` or `database`,
 *   or a `values` that is not a function.
 * @throws {RangeError} for an unknown option, here or in `connection` (`checkOptions`).
 * @throws {TypeError} for an option of the wrong type (`batchSize: "100"`).
 */
export function mariaDbUpsertSink<T>(options: MariaDbUpsertSinkOptions<T>): SinkV2<T> {
  checkOptions("mariaDbUpsertSink", options, UPSERT_SINK_OPTIONS);
  const guarantee = checkDeliveryGuarantee(
    "mariaDbUpsertSink",
    options.deliveryGuarantee ?? "at-least-once",
    MARIADB_UPSERT_SINK_GUARANTEES,
  );
  const connection = checkConnectionOptions(options.connection, "mariaDbUpsertSink");
  const statement = parseInsertStatement(upsertSql(options));
  if (typeof options.values !== "function") {
    throw new TypeError(
      `mariaDbUpsertSink: values must be a function: current value is ${typeof options.values}`,
    );
  }
  const batchSize = options.batchSize ?? 1000;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
    throw new RangeError(
      `mariaDbUpsertSink: batchSize must be a positive integer: current value is ${batchSize}`,
    );
  }
  const batchIntervalMs = checkBatchIntervalMs("mariaDbUpsertSink", options.batchIntervalMs);
  const keySet = [...options.keyColumns].sort();
  const where = (context: SinkInitContext) =>
    `MariaDbUpsertSink "${context.uid}" subtask ${context.subtaskIndex}/${context.parallelism} ` +
    `(job ${context.jobId}, attempt ${context.attempt}, table ${options.table})`;
  return {
    kind: "v2",
    deliveryGuarantee: guarantee,
    async createWriter(context: WriterInitContext<never>): Promise<AutocommitBatchWriter<T>> {
      const probe = await openConnection(connection);
      try {
        const keys = await uniqueKeys(probe, options.table);
        const matches = [...keys.values()].some((cols) =>
          JSON.stringify([...cols].sort()) === JSON.stringify(keySet)
        );
        if (!matches) {
          throw new UpsertKeyError(
            `${where(context)}: keyColumns ${
              JSON.stringify(options.keyColumns)
            } must be the columns of the table's primary key or of one of its unique keys: ${
              keys.size === 0
                ? `table ${options.table} has none, or does not exist in database ${connection.database}`
                : `its unique keys are ${JSON.stringify(Object.fromEntries(keys))}`
            }`,
          );
        }
      } finally {
        await probe.end().catch(() => releaseConnection(probe));
      }
      return new AutocommitBatchWriter<T>({
        connection,
        statement,
        parameters: options.values,
        batchSize,
        flushOnCheckpoint: guarantee !== "none",
        batchIntervalMs,
        where: where(context),
      });
    },
  };
}
