/**
 * Failure semantics shared by every layer: errors that decide how a job
 * reacts to a failure, not where it happened (DESIGN §16: a leaf module, so
 * `task/`, `api/` and connectors import it without depending on `cluster/`).
 *
 * - {@linkcode SuppressRestartsError} anywhere in a failure's `cause` chain
 *   fails the job under every restart strategy (Flink's
 *   `SuppressRestartsException`). Extend it for errors a retry cannot fix
 *   (a corrupt checkpoint, a commit whose data has expired), so they end the
 *   job once instead of restarting forever.
 *
 * @example
 * ```ts
 * import { SuppressRestartsError } from "./failure.ts";
 *
 * class ExpiredDataError extends SuppressRestartsError {}
 * const error = new Error("commit failed", { cause: new ExpiredDataError("records expired") });
 * console.assert(error.cause instanceof SuppressRestartsError);
 * ```
 *
 * @module
 */

/**
 * Throw this (or put it in a `cause` chain) to fail the job without restarts,
 * whatever the strategy: for errors that a restart cannot fix. Flink's
 * `SuppressRestartsException`. Subclasses keep the behaviour.
 */
export class SuppressRestartsError extends Error {
  /**
   * Creates the error.
   *
   * @param message what went wrong.
   * @param options the underlying error, if any.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SuppressRestartsError";
  }
}
