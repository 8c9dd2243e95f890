/**
 * What the examples share on the command line: a failed job ends the process
 * with one readable error line (the message names the job, the failing
 * subtask and how to resume) and exit code 1, instead of an uncaught stack.
 *
 * @module
 */

/** Prints `error: <message>` on stderr and exits with 1. */
export function exitWithError(error: unknown): never {
  console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
  Deno.exit(1);
}
