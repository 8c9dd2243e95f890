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
 * already contain, line by line (the parent being the next error up the
 * chain, shown or not); a cause whose message is contained gives
 * `\n  caused by <name> (message above)`, or nothing when its name is
 * `Error`, it is a relay ({@linkcode RELAYED_ERROR}), or the parent's
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
    const contained = isContained(cause.message, parent);
    if (!contained) text += `\n  caused by ${describeError(cause)}`;
    else if (
      cause.name !== "Error" && !isRelay(cause) && !parent.includes(`caused by ${cause.name}`)
    ) {
      text += `\n  caused by ${cause.name} (message above)`;
    }
    parent = cause.message;
    cause = cause.cause;
  }
  return text;
}

/**
 * Whether `parent` already says all of `message`: each of its lines is in
 * `parent` (a clause may have been added to the end of its first line, see
 * {@linkcode appendToFirstLine}).
 */
function isContained(message: string, parent: string): boolean {
  return message.length > 0 && message.split("\n").every((line) => parent.includes(line));
}

/**
 * The property that marks an error as a relay of another process's or
 * task's report (e.g. `TaskFailureError`, whose message is the reported
 * `<name>: <message>`): its own class name says nothing a reader needs, so
 * {@linkcode describeError} and {@linkcode chainMessage} leave it out. Set it
 * to `true` on the error's class (`readonly [RELAYED_ERROR] = true`).
 */
export const RELAYED_ERROR: unique symbol = Symbol.for("weir.relayedError");

function isRelay(error: Error): boolean {
  return (error as { [RELAYED_ERROR]?: unknown })[RELAYED_ERROR] === true;
}

/**
 * `<name>: <message>` of an `Error`; just the message for a relay (see
 * {@linkcode RELAYED_ERROR}), whose message already starts with the
 * reported error's name. Anything else: its string form. Pure.
 * @param error what was thrown or reported.
 * @returns one text (several lines when the message has `caused by` lines).
 */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return isRelay(error) ? error.message : `${error.name}: ${error.message}`;
}

/**
 * `text` with `clause` added to the end of its first line, before any
 * `\n  caused by …` lines, so a sentence about the whole failure (how to
 * resume it) is not read as part of its last cause. Pure.
 * @param text a failure text, maybe of several lines.
 * @param clause what to add (e.g. `"; it has no completed checkpoint"`).
 */
export function appendToFirstLine(text: string, clause: string): string {
  const end = text.indexOf("\n");
  return end < 0 ? text + clause : text.slice(0, end) + clause + text.slice(end);
}
