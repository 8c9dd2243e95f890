/**
 * Subject discovery of a `JetStreamSource` (Flink's partition discovery,
 * `partition.discovery.interval.ms` of `KafkaSource`): which subjects of a
 * stream match the source's filter now, as splits. The runtime owns the
 * rest (see "Split discovery" in `runtime/api/source.ts`): which subtask
 * reads which split (a hash of the split id), union restore, the period.
 *
 * ## Offset of a discovered subject
 *
 * A subject found by a discovery is read from its first message (offset 0:
 * the split's ordered consumer starts at stream sequence 1 with the
 * subject as its filter). Its records were published before the discovery
 * saw it, and possibly before the job started: starting anywhere else would
 * lose them. `startPosition` applies only to the subjects enumerated at the
 * job's first start.
 *
 * ## Invariants
 *
 * - {@linkcode subjectSplits} is pure: the same subjects give the same
 *   splits, sorted by subject, so every subtask sees the same list.
 * - A discoverer opens one NATS connection on its first discovery and
 *   keeps it until `close`; a discovery asks the server once for the
 *   stream's info with `subjects_filter` (the client pages the subject
 *   list).
 *
 * @module
 */

import { jetstreamApi, type NatsConnection } from "../../runtime/actor/nats_deps.ts";
import { connectNats, type NatsConnectionOptions } from "../../runtime/actor/nats_connect.ts";
import type { SplitDiscoverer } from "../../runtime/api/source.ts";
import type { JetStreamSplit } from "./split_state.ts";
import { streamError } from "./stream_not_found.ts";

/** Whether `filter` has a NATS wildcard token (`*` or `>`), so that it may match many subjects. */
export function hasWildcard(filter: string): boolean {
  return filter.split(".").some((token) => token === "*" || token === ">");
}

/**
 * The splits of `subjects` in `stream`, sorted by subject, each from
 * `offset` (0 for a discovered subject) and unbounded.
 * @param options the stream, the subjects (any order, each once) and the start offset.
 * @returns one split per subject, id `<stream>:<subject>`.
 */
export function subjectSplits(
  options: {
    readonly stream: string;
    readonly subjects: Iterable<string>;
    readonly offset: number;
  },
): JetStreamSplit[] {
  return [...options.subjects].sort().map((subject) => ({
    splitId: `${options.stream}:${subject}`,
    stream: options.stream,
    subject,
    offset: options.offset,
    stopAt: null,
  }));
}

/**
 * The subjects of `stream` with messages now that match `filter`.
 * @throws {JetStreamStreamNotFoundError} naming the stream and the filter
 *   when the stream does not exist (the job fails without restarts).
 * @throws {Error} naming the stream and the filter when NATS does not answer.
 */
export async function matchingSubjects(
  nc: NatsConnection,
  stream: string,
  filter: string,
): Promise<string[]> {
  try {
    const jsm = await jetstreamApi.jetstreamManager(nc);
    const info = await jsm.streams.info(stream, { subjects_filter: filter });
    return Object.keys(info.state.subjects ?? {});
  } catch (error) {
    throw streamError(
      `Cannot list the subjects of stream ${stream} matching ${filter}: ${
        error instanceof Error ? error.message : error
      }`,
      stream,
      error,
    );
  }
}

/** Options of {@linkcode JetStreamSubjectDiscoverer}. */
export interface JetStreamSubjectDiscovererOptions {
  /** How to connect (its own connection, opened on the first discovery). */
  readonly connection: NatsConnectionOptions;
  /** The stream. */
  readonly stream: string;
  /** The subject filter, with wildcards. */
  readonly filterSubject: string;
}

/**
 * The discoverer of one source subtask: every subject of the stream that
 * matches the filter now, as a split from the subject's first message.
 */
export class JetStreamSubjectDiscoverer implements SplitDiscoverer<JetStreamSplit> {
  readonly #o: JetStreamSubjectDiscovererOptions;
  #nc: Promise<NatsConnection> | undefined;
  #closed = false;

  /** Creates the discoverer; no I/O until the first discovery. */
  constructor(options: JetStreamSubjectDiscovererOptions) {
    this.#o = options;
  }

  /**
   * Every matching subject's split, sorted, at offset 0.
   * @throws {JetStreamStreamNotFoundError} naming the stream and filter when
   *   the stream does not exist (the job fails without restarts).
   * @throws {Error} naming the stream and filter when NATS cannot be reached,
   *   or when the discoverer is closed.
   */
  async discoverSplits(): Promise<JetStreamSplit[]> {
    const { stream, filterSubject } = this.#o;
    if (this.#closed) {
      throw new Error(`The subject discoverer of stream ${stream} is closed`);
    }
    this.#nc ??= connectNats({ name: `weir-discovery-${stream}`, ...this.#o.connection });
    let nc: NatsConnection;
    try {
      nc = await this.#nc;
    } catch (error) {
      this.#nc = undefined;
      throw new Error(
        `Cannot discover the subjects of stream ${stream}: ${
          error instanceof Error ? error.message : error
        }`,
        { cause: error },
      );
    }
    const subjects = await matchingSubjects(nc, stream, filterSubject);
    return subjectSplits({ stream, subjects, offset: 0 });
  }

  /** Closes the connection, if one was opened. */
  async close(): Promise<void> {
    this.#closed = true;
    const nc = this.#nc;
    this.#nc = undefined;
    if (nc !== undefined) await nc.then((c) => c.close(), () => {});
  }
}
