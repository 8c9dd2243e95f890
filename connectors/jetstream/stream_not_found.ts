/**
 * A JetStream stream that does not exist: the one failure of the JetStream
 * source that a restart cannot fix. The server answers a request about a
 * deleted (or never created) stream with JetStream API error code 10059,
 * `"stream not found"`; a restarted job would ask again and get the same
 * answer, restarting forever. So the source fails the job once, with a
 * {@linkcode JetStreamStreamNotFoundError} (a `SuppressRestartsError`)
 * naming the stream and keeping the server's error as `cause`.
 *
 * Only that answer counts: it comes from a server that was reached and has
 * JetStream running. NATS being down, restarting or slow (timeouts, no
 * responders, closed connections) stays an ordinary error, so the job's
 * restart strategy keeps restarting it until NATS is back.
 *
 * The idea is Flink's `SuppressRestartsException` for a failure a retry
 * cannot fix (Kafka's source likewise fails for good on an
 * `UnknownTopicOrPartitionException` once metadata says the topic is gone).
 *
 * @module
 */

import { jetstreamApi } from "../../runtime/actor/nats_deps.ts";
import { SuppressRestartsError } from "../../runtime/cluster/restart_strategy.ts";

/**
 * Whether `error` is the server's "stream not found" (JetStream API error
 * code 10059), directly or as the `cause` of an error that wraps it (at
 * most 8 levels deep).
 * @param error anything thrown.
 * @returns `true` only for that JetStream API error.
 */
export function isStreamNotFound(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth++) {
    if (
      current instanceof jetstreamApi.JetStreamApiError &&
      current.code === jetstreamApi.JetStreamApiCodes.StreamNotFound
    ) {
      return true;
    }
    current = current instanceof Error ? current.cause : undefined;
  }
  return false;
}

/**
 * The stream a JetStream source reads does not exist (JetStream API error
 * 10059 from a reachable server): the job fails without restarts. The
 * message names the stream and what the source was doing; `cause` is the
 * server's error.
 */
export class JetStreamStreamNotFoundError extends SuppressRestartsError {
  /** The stream that does not exist. */
  readonly stream: string;

  /**
   * Builds the error.
   * @param message what failed, naming the stream (e.g. `Cannot read in stream orders: stream not found`).
   * @param options `stream`: the stream's name; `cause`: the server's error.
   */
  constructor(message: string, options: { readonly stream: string; readonly cause: unknown }) {
    super(
      `${message} (JetStream API error 10059: the stream ${options.stream} does not exist; it was deleted or never created, and restarting cannot bring it back, so the job fails without restarts)`,
      { cause: options.cause },
    );
    this.name = "JetStreamStreamNotFoundError";
    this.stream = options.stream;
  }
}

/**
 * `new Error(message, { cause })`, or a
 * {@linkcode JetStreamStreamNotFoundError} when `cause` says the stream does
 * not exist.
 * @param message what failed, naming the stream.
 * @param stream the stream's name.
 * @param cause what was thrown.
 * @returns the error to throw.
 */
export function streamError(message: string, stream: string, cause: unknown): Error {
  return isStreamNotFound(cause)
    ? new JetStreamStreamNotFoundError(message, { stream, cause })
    : new Error(message, { cause });
}
