/**
 * One text for an error and its `cause` chain, each distinct message once
 * ({@linkcode chainMessage}; pure). A wrapper's message usually embeds its
 * cause's (`Subtask Sink (1/1) [v0#0, attempt 0] of job j failed: <the
 * sink's message>`), and every layer that reported a failure (task, worker,
 * coordinator) used to append the whole chain again, so one configuration
 * error was printed about eight times. Here a cause whose message is
 * already contained in its parent's message is printed by its name only
 * (`caused by FileNotReadableError (message above)`; nothing for a plain
 * `Error`): the wrapper's message carries the text, and the `cause` objects
 * stay on the error for code that inspects them (`instanceof
 * SuppressRestartsError`). Java's
 * `Throwable.printStackTrace` prints every cause's line; Flink's
 * `ExceptionUtils.stringifyException` does the same; this is the shorter
 * form for logs and failure reports.
 *
 * A leaf module (DESIGN §16): no imports.
 *
 * @example
 * ```ts
 * import { chainMessage } from "./error_chain.ts";
 *
 * const root = new TypeError("table t does not exist");
 * const wrapped = new Error(`Subtask Sink (1/1) failed: ${root.message}`, { cause: root });
 * console.assert(
 *   chainMessage(wrapped) ===
 *     "Subtask Sink (1/1) failed: table t does not exist\n  caused by TypeError (message above)",
 * );
 * ```
 *
 * @module
 */

/**
 * The message of `error` followed by one `\n  caused by <name>: <message>`
 * line per cause in its chain whose message its parent's message does not
 * already contain (the parent being the next error up the chain, shown or
 * not); a cause whose message is contained gives `\n  caused by <name>
 * (message above)`, or nothing when its name is `Error` or the parent's
 * message already says `caused by <name>` (a report relayed from a worker). A cycle in the chain ends it. Performs no I/O.
 * @param error the outermost error.
 * @returns the text; just `error.message` when every cause is contained in it.
 */
export function chainMessage(error: Error): string {
  let text = error.message;
  let parent = error.message;
  const seen = new Set<unknown>([error]);
  let cause: unknown = error.cause;
  while (cause instanceof Error && !seen.has(cause)) {
    seen.add(cause);
    const contained = cause.message.length > 0 && parent.includes(cause.message);
    if (!contained) text += `\n  caused by ${cause.name}: ${cause.message}`;
    else if (cause.name !== "Error" && !parent.includes(`caused by ${cause.name}`)) {
      text += `\n  caused by ${cause.name} (message above)`;
    }
    parent = cause.message;
    cause = cause.cause;
  }
  return text;
}
