/**
 * How the job module's process reports a job that failed, when the module
 * does not catch `execute()`'s rejection (`await env.execute()` at the top
 * level): one line, `error: <message>` (the message and its causes, each
 * distinct text once; `../error_chain.ts`), and exit code 1, instead of
 * Deno's `error: Uncaught (in promise) JobFailedError: …` with a stack trace
 * into Weir's internals. Flink's CLI likewise prints a failed job's
 * exception, not its own stack.
 *
 * Only *expected* failures are reported this way: the job failed for good
 * or was cancelled (`JobFailedError`), the cluster could not be reached or
 * refused the job (`ClusterRequestError`), a resume named no usable
 * checkpoint (`ResumeError`); and a job `execute()` refused before it
 * started (its planning and validation errors, {@linkcode REFUSED_JOBS}:
 * `DeliveryGuaranteeError`, `InvalidJobGraphError`,
 * `InvalidConfigurationError`, `PlanningError`, `TableConfigError`),
 * printed `error: <ErrorName>: <message>` since their messages do not say
 * what kind of error they are. Any other uncaught error (a bug, in user code
 * or Weir) keeps Deno's report with its stack. A module that catches the
 * rejection itself (tests, `examples/_cli.ts`) sees nothing of this.
 *
 * The default executor calls {@linkcode reportUncaughtJobFailures} in the
 * client and local roles from `JobExecutor.prepare`, which `execute()` and
 * `executeAsync()` call before they build and check the job graph.
 *
 * @module
 */

import { chainMessage } from "../error_chain.ts";

/** The names of the errors reported as expected failures (see the module docs). */
export const EXPECTED_FAILURES: ReadonlySet<string> = new Set([
  "JobFailedError",
  "ClusterRequestError",
  "ResumeError",
]);

/**
 * The names of the errors with which `execute()` refuses a job before it
 * starts (Flink refuses these at job build time): reported as expected
 * failures, their class name before the message.
 */
export const REFUSED_JOBS: ReadonlySet<string> = new Set([
  "DeliveryGuaranteeError",
  "InvalidJobGraphError",
  "InvalidConfigurationError",
  "PlanningError",
  "TableConfigError",
]);

/**
 * The line printed for an expected failure, or `undefined` for any other
 * error (reported by Deno as usual). Pure.
 *
 * @param reason what the uncaught rejection carried.
 * @returns `error: <chainMessage(reason)>` for {@linkcode EXPECTED_FAILURES},
 *   `error: <name>: <chainMessage(reason)>` for {@linkcode REFUSED_JOBS},
 *   or `undefined`.
 */
export function expectedFailureLine(reason: unknown): string | undefined {
  if (!(reason instanceof Error)) return undefined;
  if (EXPECTED_FAILURES.has(reason.name)) return `error: ${chainMessage(reason)}`;
  if (REFUSED_JOBS.has(reason.name)) return `error: ${reason.name}: ${chainMessage(reason)}`;
  return undefined;
}

let installed = false;

/**
 * Installs, once per thread, the handler of uncaught expected failures: it
 * prints {@linkcode expectedFailureLine} on stderr and exits with code 1.
 * Later calls do nothing.
 */
export function reportUncaughtJobFailures(): void {
  if (installed) return;
  installed = true;
  globalThis.addEventListener("unhandledrejection", (event: PromiseRejectionEvent) => {
    const line = expectedFailureLine(event.reason);
    if (line === undefined) return;
    event.preventDefault();
    console.error(line);
    Deno.exit(1);
  });
}
