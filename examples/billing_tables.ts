/**
 * The MariaDB tables of the billing case study, and reading them back.
 *
 * ## The Weir job's table: one row per account update
 *
 * ```sql
 * CREATE TABLE <table> (
 *   id         BIGINT AUTO_INCREMENT PRIMARY KEY,
 *   account    VARCHAR(64) NOT NULL,
 *   bill_count INT         NOT NULL,  -- the account's bills so far, this one included
 *   total      BIGINT      NOT NULL,  -- their amounts added up, in cents
 *   bill_id    VARCHAR(64) NOT NULL,  -- the bill that made this update
 *   amount     BIGINT      NOT NULL,  -- its amount, in cents
 *   bill_time  BIGINT      NOT NULL,  -- its event time, ms since the epoch
 *   KEY (account, bill_count), KEY (bill_id)
 * ) ENGINE=InnoDB;
 * CREATE VIEW <table>_totals AS  -- per account: the latest update = its total and count
 *   SELECT account, bill_count, total FROM <table> u
 *   WHERE bill_count = (SELECT MAX(bill_count) FROM <table> WHERE account = u.account);
 * ```
 *
 * The job's sink *inserts* one row per {@linkcode AccountUpdate} inside
 * its XA transaction, instead of upserting a per-account row. A prepared XA
 * transaction keeps its row locks until `XA COMMIT`; the transaction of the
 * next checkpoint, on the same subtask, would update the same account rows
 * and wait for those locks, while the commit that releases them is
 * delivered to that very subtask: it stalls until the lock wait times out.
 * Inserts of new rows take no lock another insert waits for. The per-account
 * totals are the view `<table>_totals` (the latest update of each account),
 * and the rows are the account's changelog, so a check can tell per bill
 * what was lost or doubled. Nothing in the table is unique but `id`, so a
 * doubled update is stored and counted by the check rather than failing the
 * job. Exactly-once means: per account, the rows are the updates `1..n` of
 * the failure-free run, each bill in exactly one row, and the view shows
 * the failure-free totals.
 *
 * The copies the dedup rejected go, through a second XA sink in the same
 * checkpoints, to `<table>_copies`, so no record of the log is dropped
 * unaccounted:
 *
 * ```sql
 * CREATE TABLE <table>_copies (
 *   id BIGINT AUTO_INCREMENT PRIMARY KEY,
 *   bill_id VARCHAR(64) NOT NULL, account VARCHAR(64) NOT NULL,
 *   amount BIGINT NOT NULL, bill_time BIGINT NOT NULL, KEY (bill_id)
 * ) ENGINE=InnoDB;
 * ```
 *
 * ## The naive scheme's tables
 *
 * ```sql
 * CREATE TABLE <table> (account VARCHAR(64) PRIMARY KEY,
 *                       bill_count BIGINT NOT NULL, total BIGINT NOT NULL) ENGINE=InnoDB;
 * CREATE TABLE <table>_offsets (consumer VARCHAR(64) PRIMARY KEY,
 *                               next_seq BIGINT NOT NULL) ENGINE=InnoDB;
 * ```
 *
 * @module
 */

import mariadb from "npm:mariadb@3.5.4";

/** Where the MariaDB server is: the fields of `mariadb.createConnection` this example uses. */
export interface MariaDbConfig {
  /** Host name or address. */
  readonly host: string;
  /** TCP port. */
  readonly port: number;
  /** User name. */
  readonly user: string;
  /** Password ("" for none). */
  readonly password: string;
  /** Database (schema) of the tables. */
  readonly database: string;
}

/** The server of the project's tests: `mariadb://root@127.0.0.1:3306/test`. */
export const DEFAULT_MARIADB_URL = "mariadb://root@127.0.0.1:3306/test";

/**
 * Reads a `mariadb://user[:password]@host[:port]/database` URL.
 * @throws {TypeError} naming the URL when it is not of that form.
 */
export function parseMariaDbUrl(url: string): MariaDbConfig {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TypeError(
      `A MariaDB URL must read mariadb://user[:password]@host[:port]/database: current value is ${
        JSON.stringify(url)
      }`,
    );
  }
  const database = decodeURIComponent(u.pathname.replace(/^\//, ""));
  if (
    (u.protocol !== "mariadb:" && u.protocol !== "mysql:") || u.hostname === "" || database === ""
  ) {
    throw new TypeError(
      `A MariaDB URL must read mariadb://user[:password]@host[:port]/database: current value is ${
        JSON.stringify(url)
      }`,
    );
  }
  return {
    host: u.hostname,
    port: u.port === "" ? 3306 : Number(u.port),
    user: decodeURIComponent(u.username || "root"),
    password: decodeURIComponent(u.password),
    database,
  };
}

/**
 * Checks a table name used in SQL identifiers: 1–30 characters of
 * `[A-Za-z0-9_]` (so the names derived from it, `<table>_copies`,
 * `<table>_xa_log` … and the XA sinks' default xid prefixes `<table>` and
 * `<table>.c`, stay within MariaDB's and the sink's limits).
 * @returns the name.
 * @throws {TypeError} with the current value otherwise.
 */
export function checkTableName(table: string): string {
  if (!/^[A-Za-z0-9_]{1,30}$/.test(table)) {
    throw new TypeError(
      `A billing table name must be 1–30 characters of [A-Za-z0-9_]: current value is ${
        JSON.stringify(table)
      }`,
    );
  }
  return table;
}

/** The part of a `mariadb` driver connection this example uses. */
export interface SqlConnection {
  /** Runs one statement with `?` placeholders bound to `values`; resolves with rows or an OK packet. */
  query(sql: string, values?: unknown[]): Promise<unknown>;
  /** Closes gracefully. */
  end(): Promise<void>;
  /** Closes at once. */
  destroy(): void;
}

/** Opens one connection (numbers as JS numbers; BIGINTs here stay below 2^53). */
export async function connectMariaDb(config: MariaDbConfig): Promise<SqlConnection> {
  return await mariadb.createConnection({
    ...config,
    bigIntAsNumber: true,
    decimalAsNumber: true,
    insertIdAsNumber: true,
  });
}

/** Runs `body` on a fresh connection and closes it. */
export async function withMariaDb<R>(
  config: MariaDbConfig,
  body: (conn: SqlConnection) => Promise<R>,
): Promise<R> {
  const conn = await connectMariaDb(config);
  try {
    return await body(conn);
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}

/**
 * Creates the Weir job's table `table`, its view `<table>_totals` and the
 * copies table `<table>_copies` unless they exist.
 */
export async function createBillingTable(config: MariaDbConfig, table: string): Promise<void> {
  const t = checkTableName(table);
  await withMariaDb(config, async (conn) => {
    await conn.query(
      `CREATE TABLE IF NOT EXISTS \`${t}\` (
        id BIGINT AUTO_INCREMENT PRIMARY KEY,
        account VARCHAR(64) NOT NULL,
        bill_count INT NOT NULL,
        total BIGINT NOT NULL,
        bill_id VARCHAR(64) NOT NULL,
        amount BIGINT NOT NULL,
        bill_time BIGINT NOT NULL,
        KEY account_updates (account, bill_count),
        KEY bill (bill_id)
      ) ENGINE=InnoDB`,
    );
    await conn.query(
      `CREATE TABLE IF NOT EXISTS \`${t}_copies\` (
        id BIGINT AUTO_INCREMENT PRIMARY KEY,
        bill_id VARCHAR(64) NOT NULL,
        account VARCHAR(64) NOT NULL,
        amount BIGINT NOT NULL,
        bill_time BIGINT NOT NULL,
        KEY bill (bill_id)
      ) ENGINE=InnoDB`,
    );
    await conn.query(
      `CREATE OR REPLACE VIEW \`${t}_totals\` AS
        SELECT account, bill_count, total FROM \`${t}\` u
        WHERE bill_count = (SELECT MAX(bill_count) FROM \`${t}\` WHERE account = u.account)`,
    );
  });
}

/** Creates the naive scheme's tables `table` and `<table>_offsets` unless they exist. */
export async function createNaiveTables(config: MariaDbConfig, table: string): Promise<void> {
  const t = checkTableName(table);
  await withMariaDb(config, async (conn) => {
    await conn.query(
      `CREATE TABLE IF NOT EXISTS \`${t}\` (
        account VARCHAR(64) PRIMARY KEY,
        bill_count BIGINT NOT NULL,
        total BIGINT NOT NULL
      ) ENGINE=InnoDB`,
    );
    await conn.query(
      `CREATE TABLE IF NOT EXISTS \`${t}_offsets\` (
        consumer VARCHAR(64) PRIMARY KEY,
        next_seq BIGINT NOT NULL
      ) ENGINE=InnoDB`,
    );
  });
}

/**
 * Drops the tables and views of both schemes named after `tables`, the
 * copies table, and the XA sinks' commit log `<table>_xa_log` with its
 * fence table `<table>_xa_log_fence` (missing ones are fine).
 */
export async function dropBillingTables(
  config: MariaDbConfig,
  tables: readonly string[],
): Promise<void> {
  await withMariaDb(config, async (conn) => {
    for (const table of tables) {
      const t = checkTableName(table);
      await conn.query(`DROP VIEW IF EXISTS \`${t}_totals\``);
      await conn.query(
        `DROP TABLE IF EXISTS \`${t}\`, \`${t}_offsets\`, \`${t}_copies\`, \`${t}_xa_log\`, ` +
          `\`${t}_xa_log_fence\``,
      );
    }
  });
}

/** One row of the Weir job's table (see the module docs). */
export interface UpdateRow {
  /** The account. */
  readonly account: string;
  /** `bill_count`. */
  readonly count: number;
  /** `total`, in cents. */
  readonly total: number;
  /** `bill_id`. */
  readonly billId: string;
  /** `amount`, in cents. */
  readonly amount: number;
}

/** Every committed row of the Weir job's table `table` (read committed, so no prepared XA row). */
export async function readUpdateRows(config: MariaDbConfig, table: string): Promise<UpdateRow[]> {
  const t = checkTableName(table);
  return await withMariaDb(config, async (conn) => {
    await conn.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    const rows = await conn.query(
      `SELECT account, bill_count AS count, total, bill_id AS billId, amount FROM \`${t}\``,
    );
    return (rows as UpdateRow[]).map((r) => ({ ...r }));
  });
}

/** One row of the naive scheme's totals table. */
export interface TotalRow {
  /** The account. */
  readonly account: string;
  /** `bill_count`. */
  readonly count: number;
  /** `total`, in cents. */
  readonly total: number;
}

/** Every row of the naive scheme's totals table `table`. */
export async function readTotalRows(config: MariaDbConfig, table: string): Promise<TotalRow[]> {
  const t = checkTableName(table);
  return await withMariaDb(config, async (conn) => {
    const rows = await conn.query(
      `SELECT account, bill_count AS count, total FROM \`${t}\``,
    );
    return (rows as TotalRow[]).map((r) => ({ ...r }));
  });
}

/** Every committed row of the copies table `<table>_copies`: the rejected copies' bill ids. */
export async function readCopyIds(config: MariaDbConfig, table: string): Promise<string[]> {
  const t = checkTableName(table);
  return await withMariaDb(config, async (conn) => {
    await conn.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    const rows = await conn.query(`SELECT bill_id AS billId FROM \`${t}_copies\``);
    return (rows as { billId: string }[]).map((r) => r.billId);
  });
}
