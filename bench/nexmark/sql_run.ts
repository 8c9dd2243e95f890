/**
 * `deno task nexmark --query q5 --sql`: a Nexmark query's SQL version
 * (`sql/q5.sql`, run as `sql_queries.ts` says) against its DataStream
 * version (`queries.ts`), in alternating rounds (SQL, DataStream, SQL,
 * ...), both in local mode over the same events, into the same
 * exactly-once blackhole (`CountingTwoPhaseCommitSink`).
 *
 * ## The check
 *
 * Each sink counts what it commits with its sign (`net`: +1 per `+I`/`+U`,
 * -1 per `-U`/`-D`): the number of rows of the table the output folds to,
 * whatever the changelog's length or order. With `--check` (`check`), each
 * sink also digests every record as a normalized change (`sql_queries.ts`):
 * the checksum sums the signed `fieldsHash` of the row's fields in the
 * SQL's column order (times as ms), so it is that of the folded table too.
 * In every round the SQL run's row count (and checksum) must equal the
 * DataStream run's, and each sink must have committed every record it
 * received, or the run fails before printing a figure. Both jobs run
 * without restarts: a failure (a checkpoint that expires under a state too
 * large for the checkpoint timeout, say) ends the run.
 *
 * The checksum is left out of the measured runs by default because its
 * cost is not small beside a cheap query's (hashing each row's fields,
 * `extra` included: measured on q0, 2M events, the DataStream run fell
 * from 4.0M to 1.6M events per CPU second) and would pull the ratio
 * towards 1; `sql_test.ts` compares the rows themselves.
 *
 * ## Figures
 *
 * As `main.ts`'s, with the SQL run as the engine and the DataStream run as
 * the baseline: `ratio` is the SQL version's events per CPU second over
 * the DataStream version's (median of the rounds' ratios). With `--check`
 * both sides pay the hashing in their sinks.
 *
 * @module
 */

import { RestartStrategies, type Row, StreamExecutionEnvironment } from "../../mod.ts";
import { expectEqual, resultLine } from "../_result.ts";
import { runRounds, type Sample } from "../_rounds.ts";
import {
  CountingTwoPhaseCommitSink,
  newTally,
  QUERIES,
  type QueryName,
  type RecordDigest,
} from "./queries.ts";
import {
  BASELINE,
  ENGINE,
  type QueryResult,
  resultFields,
  type RunFigures,
  summarize,
  table,
} from "./report.ts";
import {
  buildSqlJob,
  changeHash,
  datastreamChange,
  datastreamQuery,
  datastreamSign,
  isSqlQueryName,
  type NormalizedChange,
  rowSign,
  SQL_QUERY_NAMES,
  sqlChange,
  type SqlQueryName,
} from "./sql_queries.ts";

/** What {@linkcode runSqlQuery} runs. */
export interface RunSqlQueryOptions {
  /** The query (one with a DataStream version). */
  readonly query: SqlQueryName;
  /** Events generated per run (event numbers `0..events-1`). */
  readonly events: number;
  /** Both jobs' parallelism (default 1). */
  readonly parallelism?: number;
  /** Periodic checkpoint interval, ms; 0: only the final checkpoint (default 1000). */
  readonly checkpointInterval?: number;
  /** Rounds, each a SQL run then a DataStream run (default 3). */
  readonly rounds?: number;
  /** Where the per-round lines go (default `console.log`). */
  readonly log?: (line: string) => void;
  /** Also compare a checksum of the rows in every round (see the module docs; default false). */
  readonly check?: boolean;
}

/** A run's figures and the digest of the table its output folds to. */
interface DigestedFigures extends RunFigures {
  /** Sum mod 2^32 of the signed hashes of the committed changes. */
  readonly checksum: number;
}

interface Resolved {
  readonly query: SqlQueryName;
  readonly datastream: QueryName;
  readonly events: number;
  readonly parallelism: number;
  readonly checkpointInterval: number;
  readonly check: boolean;
}

function digestOf(change: (record: unknown) => NormalizedChange): RecordDigest {
  return { hash: (r) => changeHash(change(r)), sign: (r) => change(r).sign };
}

async function run(
  o: Resolved,
  side: "sql" | "datastream",
): Promise<DigestedFigures> {
  const directory = await Deno.makeTempDir({ prefix: "weir-nexmark-sql-" });
  try {
    const env = StreamExecutionEnvironment.getExecutionEnvironment();
    env.setParallelism(o.parallelism);
    // A restart would put recovery into the figures: a run that fails (a
    // checkpoint that expires, say) ends the benchmark instead.
    env.setRestartStrategy(RestartStrategies.noRestart());
    if (o.checkpointInterval > 0) env.enableCheckpointing(o.checkpointInterval, { directory });
    else env.setCheckpointDirectory(directory);
    const tally = newTally();
    const source = { events: o.events };
    if (side === "sql") {
      const job = await buildSqlJob(env, o.query, source);
      const change = sqlChange(job.columns);
      const sign = (r: unknown) => rowSign(r as Row);
      const digest: RecordDigest = {
        hash: o.check ? (r) => changeHash(change(r as Row)) : () => 0,
        sign,
      };
      job.changes.sinkTo(new CountingTwoPhaseCommitSink(tally, undefined, digest)).uid("blackhole");
    } else {
      const digest: RecordDigest = o.check
        ? digestOf(datastreamChange(o.query))
        : { hash: () => 0, sign: datastreamSign(o.query) };
      QUERIES[o.datastream](env, { source, tally, digest });
    }
    const t0 = performance.now();
    const result = await env.execute(`nexmark-${side}-${o.query}`);
    const seconds = (performance.now() - t0) / 1000;
    if (tally.committed !== tally.records) {
      throw new Error(
        `nexmark ${o.query} (${side}): the sink received ${tally.records} records but committed ` +
          `${tally.committed}`,
      );
    }
    return {
      count: tally.net,
      checksum: tally.checksum,
      seconds,
      checkpoints: result.checkpoints.completed,
    };
  } finally {
    await Deno.remove(directory, { recursive: true });
  }
}

function positiveInteger(name: string, value: number): number {
  if (!(Number.isSafeInteger(value) && value > 0)) {
    throw new RangeError(
      `Cannot run Nexmark SQL as '${name}' must be a positive integer: current value is ${value}`,
    );
  }
  return value;
}

function describe(o: Resolved, s: Sample<RunFigures>, rounds: number): string {
  const cpuSeconds = s.cpuMs / 1000;
  return `${o.query} round ${s.round}/${rounds} ${s.variant === ENGINE ? "sql" : "datastream"}: ` +
    `rows ${s.value.count}, ${s.value.seconds.toFixed(2)} s, CPU ${cpuSeconds.toFixed(2)} s, ` +
    `${(o.events / cpuSeconds / 1e6).toFixed(3)}M events per CPU s, ` +
    `${s.value.checkpoints} checkpoints`;
}

/**
 * Runs `options.rounds` rounds of `options.query`'s SQL and DataStream
 * versions, checks each round (see the module docs) and logs one line per run.
 * @returns the medians: the SQL version as the engine, the DataStream
 *   version as the baseline.
 * @throws {RangeError} for a query without a DataStream version, or
 *   `events`, `parallelism`, `rounds` that are not positive integers.
 * @throws {Error} when a round's SQL and DataStream digests differ, or a
 *   sink did not commit every record it received.
 * @throws {SqlParseError} or `PlanningError` when the SQL does not plan.
 */
export async function runSqlQuery(options: RunSqlQueryOptions): Promise<QueryResult> {
  const datastream = datastreamQuery(options.query);
  if (datastream === undefined) {
    throw new RangeError(
      `nexmark ${options.query} has no DataStream version to compare its SQL with`,
    );
  }
  const o: Resolved = {
    query: options.query,
    datastream,
    events: positiveInteger("events", options.events),
    parallelism: positiveInteger("parallelism", options.parallelism ?? 1),
    checkpointInterval: options.checkpointInterval ?? 1000,
    check: options.check ?? false,
  };
  const count = positiveInteger("rounds", options.rounds ?? 3);
  const log = options.log ?? console.log;
  const rounds = await runRounds<DigestedFigures>({
    rounds: count,
    before: () => (globalThis as { gc?: () => void }).gc?.(),
    variants: [
      { name: ENGINE, run: () => run(o, "sql") },
      {
        name: BASELINE,
        run: async ({ round, earlier }) => {
          const ds = await run(o, "datastream");
          const sql = earlier[0]!.value;
          const what = `nexmark ${o.query}, ${o.events} events, round ${round}`;
          expectEqual(
            `${what}: rows of the SQL result (expected: the DataStream's)`,
            ds.count,
            sql.count,
          );
          expectEqual(
            `${what}: checksum of the SQL result (expected: the DataStream's)`,
            ds.checksum,
            sql.checksum,
          );
          return ds;
        },
      },
    ],
    onSample: (s) => log(describe(o, s, count)),
  });
  return summarize({ query: o.query, events: o.events, rounds });
}

/** What `main.ts --sql` passes to {@linkcode sqlMain}. */
export interface SqlMainOptions {
  /** `--query`'s value (ignored with `all`). */
  readonly query: string;
  /** `--all`: every SQL query with a DataStream version; those that do not plan are listed. */
  readonly all: boolean;
  /** Events per run. */
  readonly events: number;
  /** Rounds. */
  readonly rounds: number;
  /** Parallelism of both jobs. */
  readonly parallelism: number;
  /** Checkpoint interval, ms (0: final checkpoint only). */
  readonly checkpointInterval: number;
  /** `--check`: compare a checksum of the rows too, in every round. */
  readonly check: boolean;
}

/**
 * `deno task nexmark --sql`: runs the queries, prints a line per run, the
 * queries that do not plan (with `all`), a markdown table (SQL as
 * "engine", DataStream as "baseline") and a `RESULT ... mode=sql` line per
 * query.
 * @throws {Error} for an unknown query, or as {@linkcode runSqlQuery}
 *   (without `all`, also when the query does not plan).
 */
export async function sqlMain(o: SqlMainOptions): Promise<void> {
  const comparable = SQL_QUERY_NAMES.filter((q) => datastreamQuery(q) !== undefined);
  if (!o.all && !isSqlQueryName(o.query)) {
    throw new Error(
      `Unknown --query '${o.query}' with --sql: expected one of ${comparable.join(", ")}`,
    );
  }
  const queries = o.all ? comparable : [o.query as SqlQueryName];
  console.log(
    `Nexmark in SQL against DataStream, ${o.events} events per query, ${o.rounds} rounds (SQL, ` +
      `DataStream, ...; medians), parallelism ${o.parallelism}, local mode, checkpoint interval ` +
      `${o.checkpointInterval} ms, exactly-once blackhole sink; "engine" is the SQL version, ` +
      `"baseline" the DataStream version; checked: rows${o.check ? " and their checksum" : ""}`,
  );
  const results: QueryResult[] = [];
  const notPlanned: string[] = [];
  for (const query of queries) {
    try {
      results.push(await runSqlQuery({ ...o, query }));
    } catch (error) {
      if (!o.all || !(error instanceof Error) || !/PlanningError|SqlParseError/.test(error.name)) {
        throw error;
      }
      notPlanned.push(`${query}: ${error.name}: ${error.message}`);
    }
  }
  if (notPlanned.length > 0) console.log(`Not planned:\n${notPlanned.join("\n")}`);
  if (o.all) console.log(table(results));
  for (const r of results) console.log(resultLine({ ...resultFields(r), mode: "sql" }));
}
