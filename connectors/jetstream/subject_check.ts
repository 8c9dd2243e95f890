/**
 * Why a JetStream sink's publish got "no responders": no stream stores the
 * subject (the sink's `subject` function produced one its stream does not
 * capture: a restart would produce it again), or the stream's server is
 * away for a moment (a restart may succeed). The decision is pure
 * ({@linkcode decideNoResponders}, with NATS subject matching in
 * {@linkcode subjectMatches}); {@linkcode explainPublishFailure} looks up
 * the stream's subjects once, after a publish failed that way, and turns
 * the failure into a {@linkcode JetStreamSubjectNotStoredError} (a
 * `SuppressRestartsError`) when the stream exists and none of its subjects
 * matches. Otherwise the failure stays as it is, and the job restarts.
 *
 * With `deliveryGuarantee: "none"` the sink publishes without awaiting
 * acknowledgements, so no "no responders" answer reaches it: records to a
 * subject no stream stores are dropped without an error there (the
 * stream's existence is still checked when the writer opens).
 *
 * The idea is Flink's `SuppressRestartsException` for a failure a retry
 * cannot fix; Kafka's producer likewise fails for good on an unknown topic
 * once metadata says so.
 *
 * @module
 */

import { jetstreamApi, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import type { SinkContext } from "../../runtime/api/sink.ts";
import type { SinkWriter } from "../../runtime/api/sink_v2.ts";
import { SuppressRestartsError } from "../../runtime/failure.ts";
import { PublishError } from "./publisher.ts";
import { isStreamNotFound, JetStreamStreamNotFoundError } from "./stream_not_found.ts";

/**
 * Whether NATS subject `subject` matches subject filter `pattern` (`*`
 * matches one token, a final `>` one or more). Performs no I/O.
 * @param pattern a stream subject, e.g. `orders.*.created` or `orders.>`.
 * @param subject a concrete subject, e.g. `orders.eu.created`.
 */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return i === p.length - 1 && s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== "*" && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}

/** What {@linkcode decideNoResponders} decided. */
export type NoRespondersDecision =
  | { readonly kind: "not-stored"; readonly subjects: readonly string[] }
  | { readonly kind: "retry" };

/**
 * Decides a "no responders" publish: permanent when the stream's subjects
 * (as its info reports them) do not match `subject`, retryable otherwise
 * (the stream does store it: its server was away). Performs no I/O.
 * @param streamSubjects the stream's configured subjects.
 * @param subject the subject the sink published to.
 */
export function decideNoResponders(
  streamSubjects: readonly string[],
  subject: string,
): NoRespondersDecision {
  return streamSubjects.some((p) => subjectMatches(p, subject))
    ? { kind: "retry" }
    : { kind: "not-stored", subjects: streamSubjects };
}

/**
 * A JetStream sink published to a subject its stream does not store: the
 * job fails without restarts (a restart would publish the same record to
 * the same subject). Names the subject, the stream and its subjects.
 */
export class JetStreamSubjectNotStoredError extends SuppressRestartsError {
  /** The subject published to. */
  readonly subject: string;
  /** The sink's stream. */
  readonly stream: string;
  /**
   * Builds the error.
   * @param message names the sink, the subject, the stream and its subjects.
   * @param options the subject, the stream and the publish error.
   */
  constructor(
    message: string,
    options: { readonly subject: string; readonly stream: string; readonly cause: unknown },
  ) {
    super(message, { cause: options.cause });
    this.name = "JetStreamSubjectNotStoredError";
    this.subject = options.subject;
    this.stream = options.stream;
  }
}

/** The "no responders" `PublishError` in `error`'s cause chain, if any (at most 8 levels). */
export function noRespondersIn(error: unknown): PublishError | undefined {
  let current = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (current instanceof PublishError && current.message.includes("no responders")) {
      return current;
    }
    current = current.cause;
  }
  return undefined;
}

/**
 * Explains a failed publish of a JetStream sink: for a "no responders"
 * failure, asks the server for the stream's subjects and returns a
 * {@linkcode JetStreamSubjectNotStoredError} when none matches, a
 * {@linkcode JetStreamStreamNotFoundError} when the stream is gone;
 * otherwise (another failure, a matching subject, or the lookup failing
 * too) `error` itself.
 * @param options the sink's open connection, its stream, who it is (for the message) and the error.
 * @returns the error to throw.
 */
export async function explainPublishFailure(options: {
  readonly nc: NatsConnection;
  readonly stream: string;
  readonly where: string;
  readonly error: unknown;
}): Promise<unknown> {
  const { nc, stream, where, error } = options;
  const publish = noRespondersIn(error);
  if (publish === undefined || nc.isClosed()) return error;
  let subjects: readonly string[];
  try {
    const info = await (await jetstreamApi.jetstreamManager(nc)).streams.info(stream);
    subjects = info.config.subjects ?? [];
  } catch (lookup) {
    if (isStreamNotFound(lookup)) {
      return new JetStreamStreamNotFoundError(`${where}: cannot publish to stream ${stream}`, {
        stream,
        cause: error,
      });
    }
    return error;
  }
  const decided = decideNoResponders(subjects, publish.subject);
  if (decided.kind === "retry") return error;
  return new JetStreamSubjectNotStoredError(
    `${where}: ${
      error instanceof Error ? error.message : String(error)
    }: subject ${publish.subject} is not stored by stream ${stream}, whose subjects are ${
      JSON.stringify(decided.subjects)
    }: the sink's subject function must give subjects the stream captures (or add the subject ` +
      `to the stream); a restart would publish to it again, so the job fails without restarts`,
    { subject: publish.subject, stream, cause: error },
  );
}

/**
 * Makes `writer`'s failures in `write`, `flush` and `prepareCommit` go
 * through {@linkcode explainPublishFailure} first (the writer's connection
 * is still open then). The writer is changed in place (its own properties
 * shadow those three methods, which keep running bound to it) and
 * returned, so its class, getters and private fields stay as they were.
 * @param writer the sink's writer (owns `nc` and closes it).
 * @param options its open connection, its stream, and who it is for messages.
 * @returns `writer`.
 */
export function explainPublishFailures<W extends SinkWriter<unknown, unknown, never>>(
  writer: W,
  options: { readonly nc: NatsConnection; readonly stream: string; readonly where: string },
): W {
  const explain = async (error: unknown): Promise<never> => {
    throw await explainPublishFailure({ ...options, error });
  };
  const write = writer.write.bind(writer);
  const flush = writer.flush.bind(writer);
  const prepareCommit = writer.prepareCommit?.bind(writer);
  const target = writer as {
    -readonly [K in keyof SinkWriter<unknown, unknown, never>]: SinkWriter<
      unknown,
      unknown,
      never
    >[K];
  };
  target.write = (value: unknown, context: SinkContext): void | Promise<void> => {
    let pending: void | Promise<void>;
    try {
      pending = write(value, context);
    } catch (error) {
      return explain(error);
    }
    if (pending instanceof Promise) return pending.catch(explain);
  };
  target.flush = async (endOfInput: boolean): Promise<void> => {
    try {
      await flush(endOfInput);
    } catch (error) {
      await explain(error);
    }
  };
  if (prepareCommit !== undefined) {
    target.prepareCommit = async (checkpointId: number) => {
      try {
        return await prepareCommit(checkpointId);
      } catch (error) {
        return await explain(error);
      }
    };
  }
  return writer;
}
