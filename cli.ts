/**
 * The `weir` command: runs a cluster's processes, runs job modules and talks
 * to the cluster's coordinator. Install it with
 * `deno install -g -A -n weir cli.ts` (or run `deno run -A cli.ts …`).
 *
 *     weir coordinator --nats URL [--checkpoint-bucket B] [--heartbeat-timeout MS]
 *     weir worker      --nats URL [--slots N] [--id ID] [--heartbeat-interval MS]
 *     weir list        --nats URL [--json]
 *     weir info JOB    --nats URL [--checkpoints N] [--json]
 *     weir cancel JOB  --nats URL
 *     weir savepoint JOB [DIR] --nats URL
 *     weir stop JOB --savepoint [DIR] [--drain] --nats URL
 *     weir run job.ts [-p N] [--detached] [-s SAVEPOINT] [--allow-non-restored-state]
 *                     [--restore-mode CLAIM|NO_CLAIM] [--nats URL] [-- job args]
 *     weir resume JOB|SAVEPOINT [job.ts] [-p N] [--detached] [--nats URL] [-- job args]
 *     weir read        --nats URL --stream S [--committed] [--from SEQ]
 *                      [--subject F] [--txn-bucket B] [--follow]
 *     weir stream add | ls | info | rm | publish | load | read …   (see cli/stream.ts)
 *     weir sql [-f FILE] [-p N] [--explain] [--nats URL]   (a REPL without -f; see cli/sql.ts)
 *
 * `weir <command> --help` describes a command, its options and exit codes.
 * Every command that talks to NATS takes the connection options `--nats URL`,
 * `--nats-user`, `--nats-password`, `--nats-token`, `--nats-tls-ca`,
 * `--nats-tls-cert` and `--nats-tls-key`, or the environment variables
 * `WEIR_NATS_URL`, `WEIR_NATS_USER`, `WEIR_NATS_PASSWORD`, `WEIR_NATS_TOKEN`,
 * `WEIR_NATS_TLS_CA`, `WEIR_NATS_TLS_CERT` and `WEIR_NATS_TLS_KEY`.
 *
 * The commands live in `cli/`: `servers.ts` (coordinator, worker), `jobs.ts`
 * (run, resume, list, cancel, savepoint, stop), `read.ts`, `stream.ts` (JetStream
 * streams: add, ls, info, rm, publish, load, read); `_args.ts` holds what
 * they share. A command is one {@linkcode Command} object and one row of
 * {@linkcode COMMANDS}.
 *
 * Exit codes: 0 success, 1 failure (one `error: ...` line on stderr), 2 bad
 * usage (the message, then a pointer to the command's `--help`); `weir run`
 * and `weir resume` exit with the job process's code (130 after Ctrl-C).
 *
 * @module
 */

import { type Command, UsageError } from "./cli/_args.ts";
import { coordinatorCommand, workerCommand } from "./cli/servers.ts";
import {
  cancelCommand,
  listCommand,
  resumeJobCommand,
  runCommand,
  savepointCommand,
  stopCommand,
} from "./cli/jobs.ts";
import { readCommand } from "./cli/read.ts";
import { infoCommand } from "./cli/info.ts";
import { streamCommand } from "./cli/stream.ts";
import { sqlCommand } from "./cli/sql.ts";

/** Every `weir` command by name, in the order `weir --help` lists them. */
export const COMMANDS: Readonly<Record<string, Command>> = {
  coordinator: coordinatorCommand,
  worker: workerCommand,
  run: runCommand,
  resume: resumeJobCommand,
  list: listCommand,
  info: infoCommand,
  cancel: cancelCommand,
  savepoint: savepointCommand,
  stop: stopCommand,
  read: readCommand,
  stream: streamCommand,
  sql: sqlCommand,
};

/** The text of `weir --help`. */
export function usage(): string {
  const lines = Object.values(COMMANDS).map((c) => `  ${c.summary}`).join("\n");
  return `usage: weir <command> [options]   (or: deno run -A cli.ts <command> [options])

commands:
${lines}

NATS options: --nats URL --nats-user U --nats-password P --nats-token T
              --nats-tls-ca F --nats-tls-cert F --nats-tls-key F (or WEIR_NATS_* variables)

'weir <command> --help' describes a command, its options and exit codes.
Exit codes: 0 success, 1 failure, 2 bad usage; 'weir run' and 'weir resume' exit with
the job process's code.`;
}

/** Whether `args` ask for help (`--help` or `-h` before any `--`). */
function wantsHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/**
 * Runs `weir` with `argv` (the arguments after the program's name).
 * @returns the exit code.
 * @throws {UsageError} for bad usage; other errors for failures.
 */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    console.log(usage());
    return name === undefined ? 2 : 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) {
    throw new UsageError(
      `unknown command ${JSON.stringify(name)}; the commands are: ${
        Object.keys(COMMANDS).join(", ")
      }`,
    );
  }
  if (wantsHelp(rest)) {
    console.log(command.help);
    return 0;
  }
  return await command.run(rest);
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (error) {
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
    if (error instanceof UsageError) {
      const name = Deno.args[0];
      console.error(
        name !== undefined && Object.hasOwn(COMMANDS, name) ? `see: weir ${name} --help` : usage(),
      );
    }
    Deno.exit(error instanceof UsageError ? 2 : 1);
  }
}
