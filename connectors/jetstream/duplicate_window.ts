/**
 * The exactly-once JetStream sink's check of its target stream's
 * `duplicate_window` (added by breaker-2, tests/breaker_sinks_test.ts). A
 * publish whose acknowledgement times out is sent again with the same
 * `Nats-Msg-Id` (`publisher.ts`: up to {@linkcode DEFAULT_PUBLISH_ATTEMPTS}
 * tries, {@linkcode DEFAULT_ACK_TIMEOUT_MS} apart); the stream drops the
 * copy only while the first is inside its duplicate window. With a shorter
 * window a lost acknowledgement stores the message twice, and both copies
 * become visible when the transaction commits: a duplicate the protocol
 * promises never to show. So a writer refuses such a stream when it opens,
 * once, naming the stream and both durations (Kafka's idempotent producer
 * relies on the broker's sequence numbers instead, which never expire
 * within a producer epoch). Pure: no I/O.
 *
 * @module
 */

import { SuppressRestartsError } from "../../runtime/failure.ts";
import { DEFAULT_ACK_TIMEOUT_MS, DEFAULT_PUBLISH_ATTEMPTS } from "./publisher.ts";

/** The shortest `duplicate_window` the exactly-once sink accepts, in ms: every try of a publish (15 s). */
export const MIN_DUPLICATE_WINDOW_MS = DEFAULT_ACK_TIMEOUT_MS * DEFAULT_PUBLISH_ATTEMPTS;

/**
 * The target stream's `duplicate_window` is shorter than the sink's
 * retries of a publish. A restart cannot change the stream's
 * configuration, so it fails the job without restarts.
 */
export class DuplicateWindowTooShortError extends SuppressRestartsError {
  /** The stream. */
  readonly stream: string;
  /**
   * Creates the error.
   * @param where who opens the stream (the sink and subtask).
   * @param stream the stream.
   * @param windowMs its `duplicate_window`, in ms.
   */
  constructor(where: string, stream: string, windowMs: number) {
    super(
      `${where}: the duplicate_window of stream ${stream} must be at least ${MIN_DUPLICATE_WINDOW_MS} ms ` +
        `(the span of a publish's retries) for exactly-once: current value is ${windowMs} ms; ` +
        `a publish retried after the window would be stored and committed twice`,
    );
    this.name = "DuplicateWindowTooShortError";
    this.stream = stream;
  }
}

/**
 * Checks a stream's `duplicate_window` for the exactly-once sink.
 * @param where who opens the stream, for the error.
 * @param stream the stream.
 * @param duplicateWindowNs the stream configuration's `duplicate_window`, in
 *   nanoseconds as JetStream reports it (undefined or 0: the server's
 *   default of 2 minutes).
 * @throws {DuplicateWindowTooShortError} when it is below {@linkcode MIN_DUPLICATE_WINDOW_MS}.
 */
export function checkDuplicateWindow(
  where: string,
  stream: string,
  duplicateWindowNs: number | undefined,
): void {
  if (duplicateWindowNs === undefined || duplicateWindowNs === 0) return;
  const windowMs = duplicateWindowNs / 1e6;
  if (windowMs < MIN_DUPLICATE_WINDOW_MS) {
    throw new DuplicateWindowTooShortError(where, stream, windowMs);
  }
}
