/**
 * `weir sql`: Flink SQL from a script (`-f FILE`) or typed at a prompt (the
 * REPL, when no `-f` is given), run locally or submitted to a cluster
 * (Flink's SQL client).
 *
 * - **Statements** end with `;` (`_sql_statements.ts`): `CREATE TABLE`,
 *   `CREATE VIEW`, `SET`, `EXPLAIN`, `INSERT INTO`, `SELECT`; the REPL also
 *   takes `HELP;` and `QUIT;` (or `EXIT;`). Each job (an INSERT or a
 *   SELECT) runs to its end before the next statement.
 * - **Results** of a SELECT show as `SET 'sql-client.execution.result-mode'`
 *   says (`_sql_result_view.ts`): `changelog` (the default: `+I(Mary,1)`,
 *   `-U(...)`, `+U(...)`, `-D(...)` lines), `tableau` (a row per change with
 *   an `op` column) or `table` (the current result as a table, printed again
 *   when it changes, throttled).
 * - **Connectors:** the built-ins and every factory of `connectors/table.ts`
 *   (`nexmark`, `filesystem`, `jetstream`, `mariadb`, `postgres`).
 * - **Locally** (the default) the jobs run in this process. **On a
 *   cluster** (`--nats URL`, or `WEIR_NATS_URL`) each job statement becomes
 *   one job: the statements that set it up (`CREATE`, `SET`, rows of
 *   `values` tables) and the job statement go, as text, to the generic job
 *   module `cli/sql_job.ts`, started as `weir run` starts a job module; the
 *   workers re-plan the same text. Setup statements and `EXPLAIN` are also
 *   run here, so mistakes show at once.
 *
 * ## Simplifications
 *
 * - On a cluster a SELECT's changes come back over core NATS
 *   (`_sql_remote_result.ts`): best effort, as `print`.
 * - The REPL reads lines; there is no line editing or history.
 * - Like `print`, the result views are at-least-once: a job that restarts
 *   shows the replayed changes again.
 *
 * @module
 */

import {
  formatTableResult,
  PlanningError,
  SqlParseError,
  StreamExecutionEnvironment,
  StreamTableEnvironment,
} from "../mod.ts";
import {
  connectNats,
  type NatsConnectionOptions,
  natsOptionsFromArgs,
} from "../runtime/actor/nats_connect.ts";
import { newResultSubject, receiveResult } from "./_sql_remote_result.ts";
import { parseScript } from "../runtime/table/parser.ts";
import type { ScriptOptions } from "../runtime/table/table_environment.ts";
import { TABLE_CONNECTOR_FACTORIES } from "../connectors/table.ts";
import {
  type Command,
  EXIT_CODES_HELP,
  NATS_HELP,
  NATS_OPTIONS,
  natsArgsOf,
  parseCommandArgs,
  positiveInt,
  UsageError,
} from "./_args.ts";
import { type ResultMode, resultView } from "./_sql_result_view.ts";
import {
  splitStatements,
  type SqlStatementText,
  statementKind,
  StatementReader,
} from "./_sql_statements.ts";
import { sqlJobArgs } from "./sql_job.ts";

const REPL_HELP = `Statements end with ';' and may span lines:
  CREATE TABLE t (col TYPE, ...) WITH ('connector' = '...', ...);
  CREATE VIEW v AS SELECT ...;
  SET 'key' = 'value';   SET;   (e.g. 'sql-client.execution.result-mode' = 'table')
  INSERT INTO t SELECT ...;     INSERT INTO t VALUES (...);
  SELECT ...;                   EXPLAIN SELECT ...;
  HELP;                         QUIT; (or EXIT;)
Result modes: 'changelog' (+I/-U/+U/-D lines, the default), 'tableau', 'table'.`;

/** `weir sql [-f FILE]`. */
export const sqlCommand: Command = {
  summary: "sql [-f FILE]   Flink SQL: run a script, or a REPL on stdin; locally or --nats",
  help: `usage: weir sql [-f FILE] [-p N] [--explain] [--nats URL]

Runs Flink SQL statements: the ';'-separated statements of FILE in order, or,
without -f, the statements typed (or piped) on stdin, a REPL.
  CREATE TABLE t (col TYPE, ..., [WATERMARK FOR c AS ...,] [PRIMARY KEY (k) NOT ENFORCED])
    WITH ('connector' = 'values' | 'datagen' | 'print' | 'blackhole' | 'nexmark' |
          'filesystem' | 'jetstream' | 'mariadb' | 'postgres', ...)
  CREATE VIEW, SET 'key' = 'value', EXPLAIN, INSERT INTO t SELECT ..., SELECT ...
A SELECT shows its result as 'sql-client.execution.result-mode' says:
'changelog' (default: one +I(...), -U(...), +U(...) or -D(...) line per change),
'tableau' (a row per change) or 'table' (the current result, reprinted when it
changes). Each job runs to its end before the next statement. Errors name the
line and column; in the REPL they are printed and the REPL goes on.

Options:
  -f, --file FILE   the script (without it: read statements from stdin)
  -p N              default parallelism of the jobs (default 1, so output keeps its order)
  --explain         print each query's plan, with every operator's changelog mode,
                    on stderr before it runs

On a cluster (--nats URL or WEIR_NATS_URL) each INSERT or SELECT becomes a job
of the generic job module cli/sql_job.ts, which the workers re-plan from the
same SQL text; a SELECT's changes come back here over NATS.

${NATS_HELP}

${EXIT_CODES_HELP}`,
  async run(args) {
    const { values, positionals } = parseCommandArgs("sql", args, {
      file: { type: "string", short: "f" },
      p: { type: "string" },
      explain: { type: "boolean" },
      ...NATS_OPTIONS,
    });
    if (positionals.length > 0) {
      throw new UsageError(
        `weir sql takes no positional argument (use -f FILE): ${JSON.stringify(positionals)}`,
      );
    }
    const parallelism = positiveInt(values.p, "-p", 1);
    const natsConnection = natsOptionsFromArgs(args, Deno.env);
    const session = new SqlSession({
      parallelism,
      explain: values.explain === true,
      cluster: natsConnection === undefined ? undefined : natsArgsOf(values),
      natsConnection,
    });
    if (values.file === undefined) return await repl(session);
    let script: string;
    try {
      script = await Deno.readTextFile(values.file);
    } catch (error) {
      throw new Error(`cannot read SQL script ${values.file}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    try {
      await session.runScript(script);
    } catch (error) {
      if (error instanceof SqlParseError || error instanceof PlanningError) {
        throw new Error(`${values.file}: ${error.message}`, { cause: error });
      }
      throw error;
    }
    return 0;
  },
};

/** What a {@linkcode SqlSession} runs with. */
interface SessionOptions {
  /** Default parallelism of the jobs. */
  readonly parallelism: number;
  /** Print each query's plan on stderr. */
  readonly explain: boolean;
  /** The NATS flags to submit jobs with, or `undefined` to run locally. */
  readonly cluster: readonly string[] | undefined;
  /** The NATS connection of the cluster (for SELECT results), when `cluster` is given. */
  readonly natsConnection: NatsConnectionOptions | undefined;
}

/** How long the end of a cluster SELECT's result may lag its job's end, in ms. */
const RESULT_END_TIMEOUT_MS = 30_000;

/**
 * One SQL client session: a table environment whose catalog and options
 * live across statements, and, on a cluster, the setup statements each job
 * is submitted with.
 */
class SqlSession {
  readonly #options: SessionOptions;
  readonly #tEnv: StreamTableEnvironment;
  /** Cluster mode: the setup statements so far, in order. */
  readonly #setup: string[] = [];
  /** Cluster mode: the tables created with the `values` connector (their INSERT VALUES are setup). */
  readonly #valuesTables = new Set<string>();

  constructor(options: SessionOptions) {
    this.#options = options;
    this.#tEnv = StreamTableEnvironment.create(this.#newEnvironment(), {
      connectors: TABLE_CONNECTOR_FACTORIES,
    });
  }

  #newEnvironment = () =>
    StreamExecutionEnvironment.getExecutionEnvironment().setParallelism(
      this.#options.parallelism,
    );

  #scriptOptions(): ScriptOptions {
    return {
      newEnvironment: this.#newEnvironment,
      ...(this.#options.explain ? { onQuery: (plan: string) => console.error(plan) } : {}),
      selectSink: (columns) =>
        resultView(
          columns.map((c) => c.name),
          this.#tEnv.getConfig().get("sql-client.execution.result-mode") as ResultMode,
        ),
    };
  }

  /**
   * Runs a whole script (`-f`) statement by statement; errors name the
   * script's lines and columns.
   */
  async runScript(script: string): Promise<void> {
    const { statements, rest } = splitStatements(script);
    const all = rest === "" ? statements : [...statements, {
      text: rest,
      line: script.slice(0, script.lastIndexOf(rest)).split("\n").length,
      offset: script.lastIndexOf(rest),
    }];
    for (const statement of all) await this.run(statement, script);
  }

  /**
   * Runs one statement: locally, or, when it is a job, on the cluster. A
   * statement that answers with rows (`EXPLAIN`, `SET`) prints them.
   * @param script the script the statement is part of, if any: the text
   *   before it is passed blanked out, so that errors give the script's lines.
   */
  async run(statement: SqlStatementText, script?: string): Promise<void> {
    const text = statement.text;
    if (this.#options.cluster === undefined) {
      await this.#execute(statement, script);
      return;
    }
    const kind = statementKind(text);
    if (kind === "select") {
      await this.#submitSelect(text);
      return;
    }
    const job = kind === "insert" && !this.#insertsValuesRows(text);
    if (!job) {
      await this.#execute(statement, script);
      if (kind !== "explain") this.#setup.push(text);
      if (kind === "create") this.#noteValuesTable(text);
      return;
    }
    await this.#submit(this.#withSetup(text));
  }

  /** Runs a statement here and prints what it answers with. */
  async #execute(statement: SqlStatementText, script?: string): Promise<void> {
    const text = script === undefined
      ? statement.text
      : script.slice(0, statement.offset).replace(/[^\n]/g, " ") + statement.text + ";";
    const results = await this.#tEnv.executeScript(text, this.#scriptOptions());
    for (const result of results) {
      if (result.rows !== undefined) console.log(formatTableResult(result).trimEnd());
    }
  }

  /** Whether an INSERT statement adds rows to a `values` table (setup, not a job). */
  #insertsValuesRows(text: string): boolean {
    const [parsed] = parseScript(text);
    return parsed?.k === "insertValues" && this.#valuesTables.has(parsed.table);
  }

  #noteValuesTable(text: string): void {
    const [parsed] = parseScript(text);
    if (parsed?.k === "createTable" && parsed.options.connector === "values") {
      this.#valuesTables.add(parsed.name);
    }
  }

  /**
   * A SELECT on the cluster: its changes come back over NATS
   * (`_sql_remote_result.ts`) and show here in the session's result mode.
   */
  async #submitSelect(text: string): Promise<void> {
    const columns = this.#tEnv.sqlQuery(text).getColumns().map((c) => c.name);
    const view = resultView(
      columns,
      this.#tEnv.getConfig().get("sql-client.execution.result-mode") as ResultMode,
    );
    const nc = await connectNats({ ...this.#options.natsConnection!, name: "weir-sql-client" });
    const subject = newResultSubject();
    const result = receiveResult(nc, subject, (row) => view.invoke(row));
    try {
      await nc.flush(); // subscribed before the job can publish
      await this.#submit(this.#withSetup(text), subject);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`the end of the result did not arrive on ${subject}`)),
          RESULT_END_TIMEOUT_MS,
        );
      });
      try {
        await Promise.race([result.ended, late]);
      } finally {
        clearTimeout(timer);
      }
      view.finish();
    } finally {
      result.stop();
      await nc.close();
    }
  }

  #withSetup(text: string): string {
    return [...this.#setup, text].map((s) => `${s};`).join("\n");
  }

  /** Starts `cli/sql_job.ts` with the script and waits for the job (as `weir run`). */
  async #submit(script: string, resultSubject?: string): Promise<void> {
    const module = new URL("./sql_job.ts", import.meta.url).href;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        module,
        ...sqlJobArgs(script, this.#options.parallelism, resultSubject),
        ...this.#options.cluster!,
      ],
      stdin: "null",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
    const { code } = await child.status;
    if (code !== 0) throw new Error(`the SQL job ended with exit code ${code}`);
  }
}

/**
 * The REPL: statements from stdin until `QUIT;` or the end of input. A
 * prompt is printed only when stdin is a terminal.
 * @returns 0, or 1 when the input ended inside an unfinished statement.
 */
async function repl(session: SqlSession): Promise<number> {
  const prompt = isTerminal();
  const reader = new StatementReader();
  const show = (text: string) => {
    if (prompt) Deno.stdout.writeSync(new TextEncoder().encode(text));
  };
  show("Weir SQL. Type HELP; for help, QUIT; to leave.\nweir> ");
  for await (const line of lines(Deno.stdin.readable)) {
    const bare = /^\s*(help|quit|exit)\s*;?\s*$/i.exec(line);
    const statements = bare !== null && reader.pending === ""
      ? [{ text: bare[1]!, line: 0, offset: 0 }]
      : reader.push(line + "\n");
    for (const statement of statements) {
      const command = statement.text.toUpperCase();
      if (command === "QUIT" || command === "EXIT") return 0;
      if (command === "HELP") {
        console.log(REPL_HELP);
        continue;
      }
      try {
        await session.run(statement);
      } catch (error) {
        console.error(`[ERROR] ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    show(reader.pending === "" ? "weir> " : "    > ");
  }
  if (reader.pending !== "") {
    console.error(`[ERROR] the input ended inside a statement not ended by ';': ${reader.pending}`);
    return 1;
  }
  return 0;
}

/** The lines of a byte stream (without their `\n` or `\r\n`). */
async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffer = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, newline).replace(/\r$/, "");
      buffer = buffer.slice(newline + 1);
    }
  }
  if (buffer !== "") yield buffer;
}

function isTerminal(): boolean {
  try {
    return Deno.stdin.isTerminal();
  } catch {
    return false;
  }
}
