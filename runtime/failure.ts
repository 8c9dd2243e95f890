/**
 * Failure semantics shared by every layer: errors that decide how a job
 * reacts to a failure, not where it happened (DESIGN §16: a leaf module, so
 * `task/`, `api/`, `cluster/` and connectors import it without depending on
 * one another).
 *
 * ## Classification (Flink's `ThrowableClassifier`)
 *
 * Every failure of an attempt is classified before the restart strategy is
 * asked ({@linkcode classifyFailure}, pure):
 *
 * | class | when | what the job does |
 * |---|---|---|
 * | `NonRecoverableError` | a {@linkcode SuppressRestartsError} anywhere in the `cause` chain | fails at once, with that error's class and message, whatever the restart strategy |
 * | `RecoverableError` | anything else | the restart strategy decides (restart after a delay, or give up) |
 *
 * Flink's `ThrowableType` has two more classes (`PartitionDataMissingError`,
 * `EnvironmentError`) for its batch scheduler and JVM errors; Weir has
 * neither, so they are not here.
 *
 * ## Errors a retry cannot fix
 *
 * {@linkcode SuppressRestartsError} is Flink's `SuppressRestartsException`.
 * Its subclasses name what was wrong and where:
 *
 * - connectors: a missing input file (`FileNotReadableError`), a missing
 *   JetStream stream (`JetStreamStreamNotFoundError`), a malformed record,
 *   a SQL error a replay would hit again, …;
 * - the cluster: {@linkcode JobModuleLoadError} (a job module that throws
 *   while a worker loads it, an invalid configuration it checks while
 *   loading, a module URL the worker cannot import) and
 *   {@linkcode JobGraphMismatchError} (the worker rebuilt another graph);
 * - {@linkcode InvalidConfigurationError}: a setting that cannot work,
 *   found once the job runs (Flink's `IllegalConfigurationException`).
 *
 * Errors that *may* go away (NATS down, a timeout, a lost worker) stay plain
 * errors: the restart strategy retries them.
 *
 * @example
 * ```ts
 * import { classifyFailure, SuppressRestartsError } from "./failure.ts";
 *
 * class ExpiredDataError extends SuppressRestartsError {}
 * const error = new Error("commit failed", { cause: new ExpiredDataError("records expired") });
 * console.assert(classifyFailure(error).type === "NonRecoverableError");
 * console.assert(classifyFailure(new Error("timeout")).type === "RecoverableError");
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

/**
 * A setting of the job that cannot work, found once the job runs (e.g. an
 * option a connector can only check against the server it talks to): a
 * restart would read the same setting. Flink's
 * `IllegalConfigurationException`. Settings checked while the job is built
 * throw `RangeError`/`TypeError` before anything runs; on a worker that
 * becomes a {@linkcode JobModuleLoadError}.
 */
export class InvalidConfigurationError extends SuppressRestartsError {
  /**
   * Creates the error.
   *
   * @param message names the setting, its current value and where it was used.
   * @param options the underlying error, if any.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "InvalidConfigurationError";
  }
}

/** Where a job module failed to load; see {@linkcode JobModuleLoadError}. */
export interface JobModuleLoadErrorOptions {
  /** The job module's URL, as the worker imported it. */
  readonly moduleUrl: string;
  /** The slot (`<workerId>-s<n>`) whose thread loaded it. */
  readonly slotId: string;
  /** The job's id. */
  readonly jobId: string;
  /**
   * What went wrong, as the thread reported it (e.g. `Uncaught Error: boom`,
   * `Module not found "file:///…"`, `the job's code called Deno.exit(1)`),
   * with its location when known.
   */
  readonly reason: string;
  /** The underlying error, if any. */
  readonly cause?: unknown;
}

/**
 * A worker could not load the job's module: importing it failed (a module
 * URL the worker cannot reach or a file that is not there, a syntax error)
 * or its code threw, exited or failed a configuration check before it called
 * `execute()`. Every restart would load the same module with the same
 * arguments, so the job fails without restarts (Flink fails a job whose
 * user code cannot be loaded, e.g. on a `ClassNotFoundException`, without
 * restarting it).
 *
 * The message reads, for example,
 * `Cannot load job j-1a2b3c4d's module http://h/job.ts on slot w1-s0: Uncaught Error: boom (http://h/job.ts:12:9)`.
 */
export class JobModuleLoadError extends SuppressRestartsError {
  /** The job module's URL. */
  readonly moduleUrl: string;
  /** The slot whose thread loaded it. */
  readonly slotId: string;

  /**
   * Creates the error.
   * @param options the module, slot, job and what went wrong.
   */
  constructor(options: JobModuleLoadErrorOptions) {
    super(
      `Cannot load job ${options.jobId}'s module ${options.moduleUrl} on slot ${options.slotId}: ` +
        options.reason,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = "JobModuleLoadError";
    this.moduleUrl = options.moduleUrl;
    this.slotId = options.slotId;
  }
}

/**
 * The job module built another graph on a worker than on the client (the
 * fingerprints of the two `JobGraph`s differ): a setting that shapes the
 * graph (an environment variable, a file, the time) differs there. Every
 * restart would build the same graph again, so the job fails without
 * restarts. Flink has no counterpart: its client ships the graph itself.
 */
export class JobGraphMismatchError extends SuppressRestartsError {
  /**
   * Creates the error.
   * @param message names the slot and both fingerprints.
   */
  constructor(message: string) {
    super(message);
    this.name = "JobGraphMismatchError";
  }
}

/**
 * Flink's `ThrowableType`, as far as Weir has it: whether a failure may go
 * away on a restart.
 */
export type ThrowableType = "NonRecoverableError" | "RecoverableError";

/** What {@linkcode classifyFailure} found. */
export type FailureClassification =
  /** A retry cannot fix it: `by` is the first {@linkcode SuppressRestartsError} of the chain. */
  | { readonly type: "NonRecoverableError"; readonly by: SuppressRestartsError }
  /** The restart strategy decides. */
  | { readonly type: "RecoverableError" };

/**
 * Classifies a failure (Flink's `ThrowableClassifier.getThrowableType`):
 * `NonRecoverableError` when a {@linkcode SuppressRestartsError} is the error
 * or in its `cause` chain (the first one found, outermost first), else
 * `RecoverableError`. A cycle in the chain ends the walk. Pure.
 *
 * @param error what failed (anything thrown).
 * @returns the classification.
 */
export function classifyFailure(error: unknown): FailureClassification {
  const seen = new Set<unknown>();
  let e: unknown = error;
  while (e instanceof Error && !seen.has(e)) {
    if (e instanceof SuppressRestartsError) return { type: "NonRecoverableError", by: e };
    seen.add(e);
    e = e.cause;
  }
  return { type: "RecoverableError" };
}
