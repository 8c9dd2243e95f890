/**
 * The write-ahead-log sink's PostgreSQL target: each committed batch is
 * inserted into a table of the user's, and its {@linkcode WalCommitId} into
 * a committer table, in ONE transaction, so a replayed batch is recognised
 * and skipped: exactly-once (`atomicity: "atomic"`). No prepared
 * transactions are needed (`max_prepared_transactions = 0` is fine).
 *
 * Driver: `postgres` (postgres.js) from npm.
 *
 * ## The committer table
 *
 * Created when absent (under an advisory lock, so parallel subtasks do not
 * race on `CREATE TABLE IF NOT EXISTS`):
 *
 * ```sql
 * CREATE TABLE weir_wal_committed (
 *   sink_id       text    NOT NULL,  -- the sink's uid, or options.sinkId
 *   job_id        text    NOT NULL,
 *   attempt       integer NOT NULL,
 *   subtask       integer NOT NULL,
 *   checkpoint_id bigint  NOT NULL,
 *   part          integer NOT NULL,
 *   value_count   integer NOT NULL,  -- 0 from PostgresCheckpointCommitter
 *   committed_at  timestamptz NOT NULL DEFAULT now(),
 *   PRIMARY KEY (sink_id, job_id, attempt, subtask, checkpoint_id, part))
 * ```
 *
 * One transaction per batch: `INSERT … ON CONFLICT DO NOTHING RETURNING`
 * the batch's row; when no row comes back, the batch was committed before
 * and nothing more is written; else the values are inserted in statements
 * of at most `maxRowsPerStatement` rows (and at most 65 535 parameters),
 * then the transaction commits. A second writer of the same batch (a
 * zombie of an older attempt) blocks on the primary key until the first
 * transaction ends, then finds the row: never twice.
 *
 * Rows stay in the committer table (one per subtask, checkpoint and part;
 * about 100 bytes each). A row is needed for as long as a checkpoint that
 * holds its batch can be restored; rows of jobs that are gone may be
 * deleted (`DELETE FROM weir_wal_committed WHERE job_id = …`).
 *
 * {@linkcode PostgresCheckpointCommitter} offers the same table to a
 * non-atomic target (`atomicity: "separate"`), at-least-once.
 *
 * ## Errors
 *
 * A PostgreSQL error whose SQLSTATE class a restart cannot fix (22 data
 * exception, 23 integrity constraint violation, 42 syntax error or access
 * rule violation such as an undefined table or column, 0A, 28, 3D, 3F: the
 * list is shared with the PostgreSQL sinks in
 * `connectors/postgres/sqlstate.ts`), and a value
 * whose row lacks a column, are rejections a retry cannot fix: they throw a
 * {@linkcode WalTargetRejectedError} and the job fails without restarts.
 * Other errors (connection loss, serialization failures) are retried.
 *
 * @example
 * ```ts ignore
 * import { WriteAheadSink } from "./wal_sink.ts";
 * import { PostgresWalTarget } from "./postgres_wal_target.ts";
 *
 * const sink = new WriteAheadSink<{ account: string; amount: number }>({
 *   target: new PostgresWalTarget({
 *     connection: { host: "127.0.0.1", port: 5432, user: "postgres", database: "postgres" },
 *     table: "bills",
 *     columns: ["account", "amount"],
 *     toRow: (bill) => bill,
 *   }),
 * });
 * ```
 *
 * @module
 */

import postgres from "npm:postgres@3.4.9";
import type { CommitterInitContext } from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import type { AtomicWalTarget, CheckpointCommitter, WalCommitId, WalSendOutcome } from "./types.ts";
import { describeWalCommitId } from "./wal_committable.ts";
import { classifySqlState } from "../postgres/sqlstate.ts";

/** Default committer table: `weir_wal_committed`. */
export const DEFAULT_WAL_COMMITTER_TABLE = "weir_wal_committed";

/** Default of {@linkcode PostgresWalTargetOptions.maxRowsPerStatement}: 1000 rows. */
export const DEFAULT_MAX_ROWS_PER_STATEMENT = 1000;

/** PostgreSQL's limit of bind parameters in one statement. */
const MAX_PARAMETERS = 65_535;

/** How to reach the PostgreSQL server. */
export interface PostgresConnectionOptions {
  /** Host name or address. */
  readonly host: string;
  /** TCP port. */
  readonly port: number;
  /** User name. */
  readonly user: string;
  /** Password, if the server asks for one. */
  readonly password?: string;
  /** Database name. */
  readonly database: string;
}

/** Where a committer table lives (shared by the target and the separate committer). */
export interface PostgresCommitterTableOptions {
  /** The server. */
  readonly connection: PostgresConnectionOptions;
  /** The committer table (see the module docs); default {@linkcode DEFAULT_WAL_COMMITTER_TABLE}. */
  readonly committerTable?: string;
  /** Names this sink in the committer table; default the sink's uid. */
  readonly sinkId?: string;
}

/** Options of {@linkcode PostgresWalTarget}. */
export interface PostgresWalTargetOptions<T> extends PostgresCommitterTableOptions {
  /** The table the values go into; it must exist. */
  readonly table: string;
  /** The columns written, in the table's names; at least one. */
  readonly columns: readonly string[];
  /**
   * The row of one value: an object with a property for each of `columns`
   * (`null` for SQL NULL, never `undefined`); other properties are ignored.
   */
  readonly toRow: (value: T) => object;
  /** The most rows in one `INSERT` statement; an integer ≥ 1. */
  readonly maxRowsPerStatement?: number;
}

/**
 * PostgreSQL refused a batch for a reason a retry cannot fix (see the
 * module docs): the job fails without restarts. Carries the SQLSTATE when
 * the server gave one.
 */
export class WalTargetRejectedError extends SuppressRestartsError {
  /** The SQLSTATE code, or `undefined` when the error was found before the server was asked. */
  readonly sqlState: string | undefined;
  /**
   * Builds the error.
   * @param message names the table, the batch and the reason.
   * @param options the SQLSTATE and the driver's error.
   */
  constructor(message: string, options: { sqlState?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "WalTargetRejectedError";
    this.sqlState = options.sqlState;
  }
}

/** Turns a driver error into a rejection when a retry cannot fix it (`connectors/postgres/sqlstate.ts`). */
function classify(error: unknown, what: string): unknown {
  const decided = classifySqlState(error);
  if (decided.kind === "permanent") {
    const sqlState = decided.sqlState;
    return new WalTargetRejectedError(
      `${what}: PostgreSQL refused it (SQLSTATE ${sqlState}): ${(error as Error).message}`,
      { sqlState, cause: error },
    );
  }
  return error;
}

type Sql = ReturnType<typeof postgres>;

function connect(options: PostgresConnectionOptions): Sql {
  return postgres({
    host: options.host,
    port: options.port,
    user: options.user,
    database: options.database,
    ...(options.password === undefined ? {} : { password: options.password }),
    max: 1,
    onnotice: () => {},
  });
}

function checkName(owner: string, name: string, value: unknown): string {
  if (typeof value !== "string" || value.length === 0 || value.length > 63) {
    throw new RangeError(
      `${owner}: '${name}' must be a table or column name of 1 to 63 characters: current value is ${
        JSON.stringify(value)
      }`,
    );
  }
  return value;
}

async function ensureCommitterTable(sql: Sql, table: string): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext(${"weir_wal_committer:" + table}))`;
    await tx`CREATE TABLE IF NOT EXISTS ${tx(table)} (
      sink_id text NOT NULL,
      job_id text NOT NULL,
      attempt integer NOT NULL,
      subtask integer NOT NULL,
      checkpoint_id bigint NOT NULL,
      part integer NOT NULL,
      value_count integer NOT NULL,
      committed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (sink_id, job_id, attempt, subtask, checkpoint_id, part))`;
  });
}

async function closeQuietly(sql: Sql): Promise<void> {
  await sql.end({ timeout: 0 });
}

/**
 * The atomic PostgreSQL target of {@linkcode WriteAheadSink} (a
 * `WalTargetFactory` with `atomicity: "atomic"`): values and the batch's
 * committer row in one transaction (see the module docs).
 */
export class PostgresWalTarget<T> {
  /** Always `"atomic"`: the sink may promise exactly-once. */
  readonly atomicity = "atomic" as const;
  readonly #o: PostgresWalTargetOptions<T>;
  readonly #committerTable: string;
  readonly #rowsPerStatement: number;

  /**
   * Checks the options; connects only in `open`.
   * @param options the server, the tables and the row mapping.
   * @throws {RangeError} naming a bad table or column name, an empty
   *   `columns`, or a `maxRowsPerStatement` that is not an integer ≥ 1.
   */
  constructor(options: PostgresWalTargetOptions<T>) {
    const owner = "PostgresWalTarget";
    checkName(owner, "table", options.table);
    this.#committerTable = checkName(
      owner,
      "committerTable",
      options.committerTable ?? DEFAULT_WAL_COMMITTER_TABLE,
    );
    if (options.columns.length === 0) {
      throw new RangeError(
        `${owner}: 'columns' must name at least one column: current value is []`,
      );
    }
    options.columns.forEach((c, i) => checkName(owner, `columns[${i}]`, c));
    const max = options.maxRowsPerStatement ?? DEFAULT_MAX_ROWS_PER_STATEMENT;
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new RangeError(
        `${owner}: 'maxRowsPerStatement' must be an integer >= 1: current value is ${max}`,
      );
    }
    this.#rowsPerStatement = Math.min(max, Math.floor(MAX_PARAMETERS / options.columns.length));
    this.#o = options;
  }

  /**
   * Connects for one sink subtask's committer and creates the committer
   * table when absent.
   * @throws the driver's error when the server cannot be reached.
   */
  async open(context: CommitterInitContext): Promise<AtomicWalTarget<T>> {
    const sql = connect(this.#o.connection);
    try {
      await ensureCommitterTable(sql, this.#committerTable);
    } catch (error) {
      await closeQuietly(sql);
      throw error;
    }
    return new OpenPostgresWalTarget<T>({
      sql,
      options: this.#o,
      sinkId: this.#o.sinkId ?? context.uid,
      committerTable: this.#committerTable,
      rowsPerStatement: this.#rowsPerStatement,
    });
  }
}

interface OpenTargetOptions<T> {
  readonly sql: Sql;
  readonly options: PostgresWalTargetOptions<T>;
  readonly sinkId: string;
  readonly committerTable: string;
  readonly rowsPerStatement: number;
}

class OpenPostgresWalTarget<T> implements AtomicWalTarget<T> {
  readonly #o: OpenTargetOptions<T>;
  #closed = false;

  constructor(options: OpenTargetOptions<T>) {
    this.#o = options;
  }

  #rows(values: readonly T[], what: string): Record<string, unknown>[] {
    const { toRow, columns } = this.#o.options;
    return values.map((value, index) => {
      const row = toRow(value) as Record<string, unknown>;
      for (const column of columns) {
        if (row[column] === undefined) {
          throw new WalTargetRejectedError(
            `${what}: the row of value ${index} has no value for column '${column}' ` +
              `(use null for SQL NULL): current row is ${JSON.stringify(row)}`,
          );
        }
      }
      return row;
    });
  }

  async sendValuesOnce(values: readonly T[], id: WalCommitId): Promise<WalSendOutcome> {
    const { sql, options, sinkId, committerTable, rowsPerStatement } = this.#o;
    const what = `PostgresWalTarget: batch ${describeWalCommitId(id)} of sink '${sinkId}' ` +
      `into table '${options.table}'`;
    const rows = this.#rows(values, what);
    const columns = options.columns as string[];
    try {
      return await sql.begin(async (tx) => {
        const claimed = await tx`
          INSERT INTO ${tx(committerTable)}
            (sink_id, job_id, attempt, subtask, checkpoint_id, part, value_count)
          VALUES (${sinkId}, ${id.jobId}, ${id.attempt}, ${id.subtask}, ${id.checkpointId},
            ${id.part}, ${values.length})
          ON CONFLICT DO NOTHING
          RETURNING 1 AS claimed`;
        if (claimed.length === 0) return "already-committed" as const;
        for (let start = 0; start < rows.length; start += rowsPerStatement) {
          const chunk = rows.slice(start, start + rowsPerStatement);
          // The driver's row type wants its parameter types; toRow's values are checked by the server.
          const typed = chunk as unknown as Record<string, postgres.ParameterOrJSON<never>>[];
          await tx`INSERT INTO ${tx(options.table)} ${tx(typed, columns)}`;
        }
        return "sent" as const;
      });
    } catch (error) {
      throw classify(error, what);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeQuietly(this.#o.sql);
  }
}

/**
 * A {@linkcode CheckpointCommitter} on a PostgreSQL committer table (same
 * table as {@linkcode PostgresWalTarget}), for targets that cannot join
 * its transaction (`atomicity: "separate"`): at-least-once, see
 * `wal_sink.ts`.
 */
export class PostgresCheckpointCommitter implements CheckpointCommitter {
  readonly #sql: Sql;
  readonly #table: string;
  readonly #sinkId: string;
  #closed = false;

  private constructor(sql: Sql, table: string, sinkId: string) {
    this.#sql = sql;
    this.#table = table;
    this.#sinkId = sinkId;
  }

  /**
   * Connects and creates the committer table when absent.
   * @param options the server, the table and the sink id.
   * @param context the committer's context (its uid is the default sink id).
   * @returns the committer.
   * @throws {RangeError} for a bad table name; the driver's error when the
   *   server cannot be reached.
   */
  static async open(
    options: PostgresCommitterTableOptions,
    context: CommitterInitContext,
  ): Promise<PostgresCheckpointCommitter> {
    const table = checkName(
      "PostgresCheckpointCommitter",
      "committerTable",
      options.committerTable ?? DEFAULT_WAL_COMMITTER_TABLE,
    );
    const sql = connect(options.connection);
    try {
      await ensureCommitterTable(sql, table);
    } catch (error) {
      await closeQuietly(sql);
      throw error;
    }
    return new PostgresCheckpointCommitter(sql, table, options.sinkId ?? context.uid);
  }

  /** Whether the batch `id` has its row. */
  async isCheckpointCommitted(id: WalCommitId): Promise<boolean> {
    const rows = await this.#sql`
      SELECT 1 FROM ${this.#sql(this.#table)}
      WHERE sink_id = ${this.#sinkId} AND job_id = ${id.jobId} AND attempt = ${id.attempt}
        AND subtask = ${id.subtask} AND checkpoint_id = ${id.checkpointId} AND part = ${id.part}`;
    return rows.length > 0;
  }

  /** Inserts the batch's row (nothing when it is there). */
  async commitCheckpoint(id: WalCommitId): Promise<void> {
    await this.#sql`
      INSERT INTO ${this.#sql(this.#table)}
        (sink_id, job_id, attempt, subtask, checkpoint_id, part, value_count)
      VALUES (${this.#sinkId}, ${id.jobId}, ${id.attempt}, ${id.subtask}, ${id.checkpointId},
        ${id.part}, 0)
      ON CONFLICT DO NOTHING`;
  }

  /** Closes the connection. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeQuietly(this.#sql);
  }
}
