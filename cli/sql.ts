/**
 * `weir sql -f FILE`: runs a Flink SQL script locally, statement by
 * statement (`StreamTableEnvironment.executeScript`): `CREATE TABLE` with
 * the `values`, `datagen`, `print` and `blackhole` connectors, `INSERT INTO`
 * and `SELECT`. A SELECT prints its changelog on stdout, one change per
 * line (`+I(Mary,1)`, `-U(Mary,1)`, `+U(Mary,2)`, `-D(...)`). Each job
 * (INSERT or SELECT) runs to its end on a fresh environment before the
 * next statement.
 *
 * Not yet: an interactive REPL, submitting to a cluster (`--nats`), and a
 * refreshing-table view of results; `README.md` ("SQL and the Table API")
 * lists the SQL supported now.
 *
 * @module
 */

import {
  PlanningError,
  SqlParseError,
  StreamExecutionEnvironment,
  StreamTableEnvironment,
} from "../mod.ts";
import { executionRole } from "../runtime/cluster/role.ts";
import { TABLE_CONNECTOR_FACTORIES } from "../connectors/table.ts";
import {
  atMostPositionals,
  type Command,
  EXIT_CODES_HELP,
  parseCommandArgs,
  positiveInt,
  UsageError,
} from "./_args.ts";

/** `weir sql -f FILE`. */
export const sqlCommand: Command = {
  summary: "sql -f FILE   run a Flink SQL script locally (CREATE TABLE, INSERT INTO, SELECT)",
  help: `usage: weir sql -f FILE [-p N] [--explain]

Runs the ';'-separated statements of FILE in order, in this process:
  CREATE TABLE t (col TYPE, ...) WITH ('connector' = 'values' | 'datagen' | 'print' | 'blackhole', ...)
  INSERT INTO t VALUES (...), ...     (into a 'values' table: its rows; into a sink: a job)
  INSERT INTO t SELECT ...            (a job writing the query's changelog into sink t)
  SELECT ...                          (a job printing the query's changelog on stdout)
Changes print one per line as +I(...), -U(...), +U(...), -D(...). Each job
runs to its end before the next statement. Errors name the line and column.

Options:
  -f, --file FILE   the script (required)
  -p N              default parallelism of the jobs (default 1, so output keeps its order)
  --explain         print each query's plan, with every operator's changelog mode,
                    on stderr before it runs

Not yet: an interactive REPL, submitting to a cluster (--nats), a refreshing
table view of results. See README.md, "SQL and the Table API".

${EXIT_CODES_HELP}`,
  async run(args) {
    const { values, positionals } = parseCommandArgs("sql", args, {
      file: { type: "string", short: "f" },
      p: { type: "string" },
      explain: { type: "boolean" },
    });
    atMostPositionals("sql", positionals, 0, "no positional argument (use -f FILE)");
    if (values.file === undefined) {
      throw new UsageError("weir sql needs -f FILE (the REPL is not there yet)");
    }
    const parallelism = positiveInt(values.p, "-p", 1);
    if (executionRole() !== "local") {
      throw new UsageError(
        "weir sql runs locally only for now: unset WEIR_NATS_URL (cluster submission of SQL jobs is not there yet)",
      );
    }
    let script: string;
    try {
      script = await Deno.readTextFile(values.file);
    } catch (error) {
      throw new Error(`cannot read SQL script ${values.file}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const environment = () =>
      StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(parallelism);
    const tEnv = StreamTableEnvironment.create(environment(), {
      connectors: TABLE_CONNECTOR_FACTORIES,
    });
    try {
      await tEnv.executeScript(script, {
        newEnvironment: environment,
        ...(values.explain ? { onQuery: (plan: string) => console.error(plan) } : {}),
      });
    } catch (error) {
      if (error instanceof SqlParseError || error instanceof PlanningError) {
        throw new Error(`${values.file}: ${error.message}`, { cause: error });
      }
      throw error;
    }
    return 0;
  },
};
