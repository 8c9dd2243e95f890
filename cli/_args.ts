/**
 * What every `weir` command shares: the {@linkcode Command} shape the
 * dispatch table of `cli.ts` holds, {@linkcode UsageError} (exit code 2),
 * argument parsing with the NATS connection options, and small value checks
 * that name the flag and its current value.
 *
 * Each command parses its own arguments strictly ({@linkcode parseCommandArgs}):
 * an option it does not know is bad usage, never ignored.
 *
 * @module
 */

import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { type NatsConnectionOptions, natsOptionsFromArgs } from "../runtime/actor/nats_connect.ts";

/**
 * One `weir` command: a row of the dispatch table in `cli.ts`. Another
 * command is added by writing one such object and one line in that table.
 */
export interface Command {
  /**
   * Its line in `weir --help`: the synopsis, then what it does, e.g.
   * `"list [--json]    list jobs and workers"`.
   */
  readonly summary: string;
  /** The text of `weir <command> --help`: usage, options and exit codes. */
  readonly help: string;
  /**
   * Runs the command.
   * @param args the arguments after the command's name.
   * @returns the process's exit code.
   * @throws {UsageError} for bad usage (exit code 2); any other error is a
   *   failure (exit code 1, printed as one `error: …` line).
   */
  run(args: string[]): Promise<number>;
}

/** Bad usage of a command: `weir` prints the message and exits with code 2. */
export class UsageError extends Error {
  /** The error class name. */
  override name = "UsageError";
}

/** The exit codes every command shares (as `weir <command> --help` says). */
export const EXIT_CODES_HELP =
  `Exit codes: 0 success, 1 failure (one 'error: ...' line on stderr), 2 bad usage.`;

/** The NATS connection flags, as `parseArgs` options (see `runtime/actor/nats_connect.ts`). */
export const NATS_OPTIONS = {
  nats: { type: "string" },
  "nats-user": { type: "string" },
  "nats-password": { type: "string" },
  "nats-token": { type: "string" },
  "nats-tls-ca": { type: "string" },
  "nats-tls-cert": { type: "string" },
  "nats-tls-key": { type: "string" },
} as const satisfies ParseArgsOptionsConfig;

/** The names of {@linkcode NATS_OPTIONS}, in order. */
export const NATS_FLAGS: readonly (keyof typeof NATS_OPTIONS)[] = Object.keys(
  NATS_OPTIONS,
) as (keyof typeof NATS_OPTIONS)[];

/** The NATS connection options' help, shared by every command. */
export const NATS_HELP =
  `NATS options: --nats URL (comma-separated for several servers), --nats-user U,
--nats-password P, --nats-token T, --nats-tls-ca F, --nats-tls-cert F, --nats-tls-key F,
or the variables WEIR_NATS_URL, WEIR_NATS_USER, ... (flags win).`;

/**
 * Parses `args` strictly with `options` (which should include
 * {@linkcode NATS_OPTIONS} where the command connects).
 *
 * @param command the command's name, for messages.
 * @param args the arguments after the command's name.
 * @param options the command's options, as for `node:util`'s `parseArgs`.
 * @returns the parsed values and positionals.
 * @throws {UsageError} naming the command and the unknown option, the
 *   option missing its value, or the value given to a flag.
 */
export function parseCommandArgs<O extends ParseArgsOptionsConfig>(
  command: string,
  args: string[],
  options: O,
): ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: true }>> {
  try {
    return parseArgs({ args, options, allowPositionals: true });
  } catch (error) {
    if ((error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      throw new UsageError(`weir ${command}: ${(error as Error).message}`, { cause: error });
    }
    throw error;
  }
}

/**
 * The NATS connection options of `args` and the environment.
 * @throws {UsageError} when neither gives a URL.
 * @throws {TypeError} when a NATS flag is missing its value.
 */
export function requireNats(command: string, args: readonly string[]): NatsConnectionOptions {
  const options = natsOptionsFromArgs(args, Deno.env);
  if (options === undefined) {
    throw new UsageError(`weir ${command} needs --nats URL (or WEIR_NATS_URL)`);
  }
  return options;
}

/** The NATS flags present in parsed `values`, as arguments to pass on (`--nats URL ...`). */
export function natsArgsOf(
  values: { readonly [K in keyof typeof NATS_OPTIONS]?: string },
): string[] {
  const out: string[] = [];
  for (const flag of NATS_FLAGS) {
    const v = values[flag];
    if (v !== undefined) out.push(`--${flag}`, v);
  }
  return out;
}

/**
 * `value` as a positive integer, or `fallback` when absent.
 * @throws {UsageError} naming `flag` and the value when it is not a positive
 *   integer, or when it is absent and there is no fallback.
 */
export function positiveInt(value: string | undefined, flag: string, fallback?: number): number {
  if (value === undefined) {
    if (fallback === undefined) throw new UsageError(`${flag} is required`);
    return fallback;
  }
  const n = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(
      `${flag} must be a positive integer: current value is ${JSON.stringify(value)}`,
    );
  }
  return n;
}

/**
 * `value` as a switch: `"on"` true, `"off"` false, absent `fallback`.
 * @throws {UsageError} naming `flag` and the value otherwise.
 */
export function onOff(value: string | undefined, flag: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (value === "on") return true;
  if (value === "off") return false;
  throw new UsageError(`${flag} must be on or off: current value is ${JSON.stringify(value)}`);
}

/**
 * At most `max` positionals.
 * @throws {UsageError} naming the command and the extra arguments.
 */
export function atMostPositionals(
  command: string,
  positionals: readonly string[],
  max: number,
  what: string,
): void {
  if (positionals.length > max) {
    throw new UsageError(
      `weir ${command} takes ${what}; unexpected: ${JSON.stringify(positionals.slice(max))}`,
    );
  }
}

/** Resolves with the signal's name on the first SIGINT or SIGTERM. */
export function untilSignal(): Promise<"SIGINT" | "SIGTERM"> {
  return new Promise((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      Deno.addSignalListener(signal, () => resolve(signal));
    }
  });
}
