/**
 * Ctrl-C (SIGINT) in a job's client process: a waiting client (local mode,
 * or attached to a cluster job) cancels its job on the first Ctrl-C and
 * prints the command that resumes it (see `default_executor.ts` and
 * `client.ts`). This leaf module only installs and removes the listener.
 *
 * @module
 */

/**
 * Calls `handler` on each SIGINT (Ctrl-C) until the returned function is
 * called. While a listener is installed, SIGINT no longer ends the process
 * by itself. Where signals cannot be listened to, it does nothing.
 *
 * @param handler called once per SIGINT.
 * @returns the function that removes the listener.
 */
export function onInterrupt(handler: () => void): () => void {
  try {
    Deno.addSignalListener("SIGINT", handler);
  } catch {
    return () => {};
  }
  return () => Deno.removeSignalListener("SIGINT", handler);
}
