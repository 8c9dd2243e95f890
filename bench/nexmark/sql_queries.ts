/**
 * Nexmark in SQL: the query files of `sql/` (Flink nexmark's SQL text, each
 * file's header names its deviations) run through Weir's Table API, and the
 * rows of each compared with its DataStream version's (`queries.ts`).
 *
 * ## How a query file runs ({@linkcode buildSqlJob})
 *
 * 1. `sql/ddl.sql` creates the source tables `person`, `auction` and `bid`
 *    on the `nexmark` table connector, with the options the DataStream run
 *    gives its `NexmarkSource` (`${EVENTS_NUM}` and the generator's knobs
 *    are filled in), so both read the same events.
 * 2. Each statement of the query file but the last runs through
 *    `executeSql` (the blackhole `CREATE TABLE nexmark_qN`, q12's
 *    `CREATE VIEW`).
 * 3. The last statement, `INSERT INTO nexmark_qN SELECT ...`, is planned as
 *    `sqlQuery(SELECT ...)` and its changelog (`toChangelogStream`) goes to
 *    the caller's sink instead of the blackhole table: the harness's
 *    counting exactly-once blackhole, or a test's collector. So the SQL
 *    runs as written, and its rows can be checked.
 *
 * ## Comparing with the DataStream version
 *
 * Both sides' records become **normalized changes**: the row's fields in
 * the SQL's column order, TIMESTAMP text as epoch ms (the DataStream jobs
 * keep times as ms), and a sign (+1 for `+I`/`+U`, -1 for `-U`/`-D`;
 * the DataStream jobs of append-only queries emit +1 only).
 * {@linkcode datastreamChange} says how each DataStream query's record
 * maps to the SQL's columns (q7's SQL, for one, selects `price` before
 * `bidder`). Folding the changes (a multiset, +1 adds a copy, -1 removes
 * one) gives the query's final table, the same for both in any arrival
 * order: that is what a run must equal. The harness compares a digest of
 * it (the count and the signed sum of `fieldsHash`; `main.ts --sql`), the
 * test the rows themselves (`sql_test.ts`).
 *
 * Queries without a DataStream version (q9, q12, q15, q18, q19) run here
 * too, but have nothing to be compared with.
 *
 * ## Simplifications
 *
 * - The blackhole table of each file is created but not written: step 3
 *   reads the INSERT's query through the Table API instead.
 * - `--sql` runs in local mode only (a cluster's workers would need the
 *   SQL text shipped to rebuild the graph; `weir sql` does that).
 *
 * @module
 */

import {
  type DataStream,
  type Row,
  type SqlValue,
  type StreamExecutionEnvironment,
  StreamTableEnvironment,
} from "../../mod.ts";
import type { Column } from "../../runtime/table/types.ts";
import { TABLE_CONNECTOR_FACTORIES } from "../../connectors/table.ts";
import type { Bid } from "../../connectors/datagen/nexmark/model.ts";
import type { NexmarkSourceOptions } from "../../connectors/datagen/nexmark/mod.ts";
import type { Q1Bid, Q3Row, QueryName } from "./queries.ts";
import type { Q20Row } from "./q20.ts";
import type { Q11Row, Q5Row, Q7Row, Q8Row } from "./windowed_rows.ts";
import { fieldsHash } from "./queries_q4_q6.ts";

/** The query files of `sql/`, by name (`sql/<name>.sql`). */
export const SQL_QUERY_NAMES = [
  "q0",
  "q1",
  "q2",
  "q3",
  "q4",
  "q5",
  "q6",
  "q7",
  "q8",
  "q9",
  "q11",
  "q12",
  "q15",
  "q18",
  "q19",
  "q20",
  "dedup",
] as const;
/** A SQL query's name. */
export type SqlQueryName = typeof SQL_QUERY_NAMES[number];

/** Whether `name` is one of {@linkcode SQL_QUERY_NAMES}. */
export function isSqlQueryName(name: string): name is SqlQueryName {
  return (SQL_QUERY_NAMES as readonly string[]).includes(name);
}

/** One change of a query's result: its fields (normalized, see the module docs) and sign. */
export interface NormalizedChange {
  /** The row's fields in the SQL's column order; times as epoch ms. */
  readonly fields: readonly SqlValue[];
  /** +1 adds the row to the result, -1 removes one copy. */
  readonly sign: 1 | -1;
}

type ToChange = (record: unknown) => NormalizedChange;

const insert = (fields: readonly SqlValue[]): NormalizedChange => ({ fields, sign: 1 });

const bidFields = (b: Bid | Q1Bid) => [b.auction, b.bidder, b.price, b.dateTime, b.extra];

const changeOfRow = (row: Row): NormalizedChange => ({ fields: row.fields, sign: rowSign(row) });

/** How each DataStream query's output record maps to its SQL's columns. */
const DATASTREAM_CHANGES: Readonly<Partial<Record<SqlQueryName, ToChange>>> = {
  q0: (r) => insert(bidFields(r as Bid)),
  q1: (r) => insert(bidFields(r as Q1Bid)),
  q2: (r) => insert([...(r as readonly [number, number])]),
  q3: (r) => insert([...(r as Q3Row)]),
  q4: (r) => changeOfRow(r as Row),
  q5: (r) => insert([...(r as Q5Row)]),
  q6: (r) => changeOfRow(r as Row),
  q7: (r) => {
    const b = r as Q7Row;
    return insert([b.auction, b.price, b.bidder, b.dateTime, b.extra]);
  },
  q8: (r) => insert([...(r as Q8Row)]),
  q11: (r) => insert([...(r as Q11Row)]),
  q20: (r) => {
    const j = r as Q20Row;
    return insert([
      j.auction,
      j.bidder,
      j.price,
      j.channel,
      j.url,
      j.bidDateTime,
      j.bidExtra,
      j.itemName,
      j.description,
      j.initialBid,
      j.reserve,
      j.auctionDateTime,
      j.expires,
      j.seller,
      j.category,
      j.auctionExtra,
    ]);
  },
  dedup: (r) => {
    const b = r as Bid;
    return insert([b.auction, b.bidder, b.price, b.channel, b.url, b.dateTime, b.extra]);
  },
};

/**
 * The DataStream query a SQL query is compared with (the same name), or
 * `undefined` when there is none (q9, q12, q15, q18, q19).
 */
export function datastreamQuery(query: SqlQueryName): QueryName | undefined {
  return DATASTREAM_CHANGES[query] === undefined ? undefined : query as QueryName;
}

/**
 * How the DataStream version of `query` maps its output records to normalized changes.
 * @throws {RangeError} for a query without a DataStream version.
 */
export function datastreamChange(query: SqlQueryName): (record: unknown) => NormalizedChange {
  const f = DATASTREAM_CHANGES[query];
  if (f === undefined) {
    throw new RangeError(`nexmark ${query} has no DataStream version to compare the SQL with`);
  }
  return f;
}

/** The queries whose DataStream version emits a changelog of `Row`s (the others emit inserts only). */
const DATASTREAM_CHANGELOGS: ReadonlySet<SqlQueryName> = new Set<SqlQueryName>(["q4", "q6"]);

/**
 * The sign of each output record of `query`'s DataStream version, without
 * normalizing it (what the harness counts when it does not `--check` rows).
 */
export function datastreamSign(query: SqlQueryName): (record: unknown) => 1 | -1 {
  return DATASTREAM_CHANGELOGS.has(query) ? (r) => rowSign(r as Row) : () => 1;
}

/** A changelog row's sign: +1 for `+I`/`+U`, -1 for `-U`/`-D`. */
export function rowSign(row: Row): 1 | -1 {
  return row.kind === "INSERT" || row.kind === "UPDATE_AFTER" ? 1 : -1;
}

/** TIMESTAMP text `YYYY-MM-DD HH:MM:SS[.fff]` (UTC) as epoch ms. */
function timestampMs(text: string, column: string): number {
  const ms = Date.parse(`${text.trim().replace(" ", "T")}Z`);
  if (Number.isNaN(ms)) {
    throw new TypeError(`nexmark SQL: column ${column} holds '${text}', not a TIMESTAMP`);
  }
  return ms;
}

/**
 * How the SQL query's rows, of `columns`, map to normalized changes (TIMESTAMP columns to ms).
 * @throws {TypeError} (when called) for a TIMESTAMP field that does not parse, naming the column.
 */
export function sqlChange(columns: readonly Column[]): (row: Row) => NormalizedChange {
  const times = columns.flatMap((c, i) => c.type.family === "TIMESTAMP" ? [i] : []);
  if (times.length === 0) return changeOfRow;
  return (row) => {
    const fields = [...row.fields];
    for (const i of times) {
      const v = fields[i];
      if (typeof v === "string") fields[i] = timestampMs(v, columns[i]!.name);
    }
    return changeOfRow({ kind: row.kind, fields });
  };
}

/** A normalized change's contribution to a result's checksum: its sign times `fieldsHash`. */
export function changeHash(change: NormalizedChange): number {
  const h = fieldsHash(change.fields);
  return change.sign === 1 ? h : -h;
}

/** The text of `sql/<name>.sql` (`name` a query, or `ddl`). */
export function sqlFile(name: SqlQueryName | "ddl"): string {
  return Deno.readTextFileSync(new URL(`./sql/${name}.sql`, import.meta.url));
}

/**
 * `sql/ddl.sql` with its variables filled from `source` (the options a
 * DataStream run gives its `NexmarkSource`).
 * @throws {RangeError} for source options the `nexmark` table connector
 *   has no option for (`eventsPerSecond`, or a generator knob other than
 *   `seed`, `interEventDelayUs`).
 */
export function nexmarkDdl(source: NexmarkSourceOptions): string {
  const { events, batchSize, seed, interEventDelayUs, ...rest } = source;
  const other = Object.keys(rest).filter((k) => (rest as Record<string, unknown>)[k] !== undefined);
  if (other.length > 0) {
    throw new RangeError(
      `nexmark SQL: ddl.sql does not pass the source option(s) ${other.join(", ")} to its tables`,
    );
  }
  const vars: Record<string, string> = {
    EVENTS_NUM: String(events),
    SEED: String(seed ?? 0),
    INTER_EVENT_DELAY_US: String(interEventDelayUs ?? 1),
    BATCH_SIZE: String(batchSize ?? 1000),
  };
  return sqlFile("ddl").replace(/\$\{(\w+)\}/g, (m, name: string) => vars[name] ?? m);
}

/**
 * Splits a SQL script into its statements: at each `;` outside quotes
 * (`'...'`, `` `...` ``, `"..."`), without `--` comments; empty statements
 * are dropped.
 */
export function splitStatements(script: string): string[] {
  const out: string[] = [];
  let current = "";
  let quote: string | null = null;
  for (let i = 0; i < script.length; i++) {
    const c = script[i]!;
    if (quote !== null) {
      current += c;
      if (c === quote) quote = null;
    } else if (c === "-" && script[i + 1] === "-") {
      while (i < script.length && script[i] !== "\n") i++;
      current += "\n";
    } else if (c === ";") {
      if (current.trim() !== "") out.push(current.trim());
      current = "";
    } else {
      if (c === "'" || c === "`" || c === '"') quote = c;
      current += c;
    }
  }
  if (current.trim() !== "") out.push(current.trim());
  return out;
}

/** A SQL query's job, built on an environment (not executed). */
export interface SqlJob {
  /** The query's changelog. */
  readonly changes: DataStream<Row>;
  /** Its columns. */
  readonly columns: readonly Column[];
  /** `EXPLAIN CHANGELOG_MODE` of the query (the plan with each operator's changelog mode). */
  readonly plan: string;
}

const INSERT_SELECT = /^INSERT\s+INTO\s+(?:`[^`]+`|[\w.$]+)\s+([\s\S]+)$/i;

/**
 * Builds `query`'s SQL job on `env` (see the module docs): the source
 * tables from `ddl.sql` with `source`'s options, the file's statements,
 * and its INSERT's query as a changelog stream for the caller to sink.
 * @throws {SqlParseError} or `PlanningError` when the query does
 *   not parse or plan (the message names what is missing).
 * @throws {Error} when the file's last statement is not `INSERT INTO ... SELECT`.
 */
export async function buildSqlJob(
  env: StreamExecutionEnvironment,
  query: SqlQueryName,
  source: NexmarkSourceOptions,
): Promise<SqlJob> {
  const tEnv = StreamTableEnvironment.create(env, { connectors: TABLE_CONNECTOR_FACTORIES });
  for (const statement of splitStatements(nexmarkDdl(source))) await tEnv.executeSql(statement);
  const statements = splitStatements(sqlFile(query));
  const last = statements.pop();
  const select = last === undefined ? null : INSERT_SELECT.exec(last);
  if (select === null) {
    throw new Error(
      `nexmark ${query}: the last statement of sql/${query}.sql must be INSERT INTO ... SELECT`,
    );
  }
  for (const statement of statements) await tEnv.executeSql(statement);
  const table = tEnv.sqlQuery(select[1]!);
  const columns = table.getColumns();
  const plan = table.explain();
  return { changes: tEnv.toChangelogStream(table), columns, plan };
}
