/**
 * A Weir source of Nexmark events (Beam's and Flink's Nexmark "generator"
 * source), splittable, rate-limited and exactly-once with checkpoints.
 *
 * ## Splits: interleaved
 *
 * With parallelism `p`, subtask `i` generates event numbers `i`, `i + p`,
 * `i + 2p`, ... below `events` (split `nexmark-<i>`), as
 * `SequenceSource` does. A split's position is its next event number; since
 * event *n* is a pure function of the config and *n* (see
 * {@linkcode NexmarkGenerator}), a restored split regenerates exactly the
 * events it had not yet emitted. Each event is emitted with its `dateTime`
 * as the event timestamp.
 *
 * ## Invariants
 *
 * - Every event number below `events` is emitted by exactly one split, each
 *   split in increasing order; a reader with several splits takes one event
 *   from each in turn.
 * - A `pollNext` call emits at most `batchSize` events; one that returns
 *   `END_OF_INPUT` emits nothing.
 * - With `eventsPerSecond` = *r*, the whole source emits at most *r* events
 *   per second of processing time (each of the `p` readers *r* ÷ *p*, with a
 *   token bucket of 100 ms).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NexmarkSource } from "./source.ts";
 *
 * const splits = new NexmarkSource({ events: 100 }).enumerateSplits({ parallelism: 2 });
 * assert.deepEqual(splits.map((s) => [s.splitId, s.next, s.step]), [
 *   ["nexmark-0", 0, 2],
 *   ["nexmark-1", 1, 2],
 * ]);
 * ```
 *
 * @module
 */

import type {
  Boundedness,
  Source,
  SourceOutput,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
  SplitEnumeratorContext,
} from "../../../runtime/api/source.ts";
import {
  checkPacing,
  type InterleavedRange,
  InterleavedReader,
  interleavedSplits,
} from "../interleaved_reader.ts";
import { type NexmarkConfig, NexmarkGenerator } from "./generator.ts";
import type { NexmarkEvent } from "./model.ts";

/** One interleaved part of a {@linkcode NexmarkSource}. Plain data, MessagePack-encodable. */
export interface NexmarkSplit extends SourceSplit {
  /** `nexmark-<i>`. */
  readonly splitId: string;
  /** The next event number to generate (the split's position). */
  readonly next: number;
  /** The distance between two event numbers of this split: the enumerating parallelism. */
  readonly step: number;
  /** The total number of events of the source (event numbers are below it), or `Infinity`. */
  readonly events: number;
}

/** Options of {@linkcode NexmarkSource}: the generator's knobs plus how much and how fast. */
export interface NexmarkSourceOptions extends NexmarkConfig {
  /** Total events, a safe integer >= 0, or `Infinity` for an unbounded source. */
  readonly events: number;
  /**
   * Total rate over all subtasks, events per second of processing time (> 0);
   * unlimited when absent. When given and `interEventDelayUs` is not, event
   * time advances at this rate too (`interEventDelayUs = 1e6 / eventsPerSecond`,
   * as Beam derives it from its event rate).
   */
  readonly eventsPerSecond?: number;
  /** Events per `pollNext` call at most (integer >= 1, default 1000). */
  readonly batchSize?: number;
}

/**
 * Nexmark events `0..events-1` in interleaved splits (see the module docs).
 * Bounded unless `events` is `Infinity`.
 */
export class NexmarkSource implements Source<NexmarkEvent, NexmarkSplit> {
  /** `"continuous-unbounded"` when `events` is `Infinity`, else `"bounded"`. */
  readonly boundedness: Boundedness;
  /** Total events, or `Infinity`. */
  readonly events: number;
  /** The total rate limit in events per second, or `undefined` for none. */
  readonly eventsPerSecond: number | undefined;
  /** Events per `pollNext` call at most. */
  readonly batchSize: number;
  /** The generator's config, as each reader builds its generator from it. */
  readonly config: NexmarkConfig;

  /**
   * Creates a Nexmark source.
   * @param options see {@linkcode NexmarkSourceOptions}.
   * @throws {RangeError} when `events`, `eventsPerSecond`, `batchSize` or a generator knob is invalid.
   */
  constructor(options: NexmarkSourceOptions) {
    const { events, eventsPerSecond, batchSize, ...config } = options;
    if (events !== Number.POSITIVE_INFINITY && !(Number.isSafeInteger(events) && events >= 0)) {
      throw new RangeError(
        `Cannot create a NexmarkSource as 'events' must be Infinity or a safe integer >= 0: current value is ${events}`,
      );
    }
    const batch = checkPacing("NexmarkSource", "eventsPerSecond", eventsPerSecond, batchSize);
    this.config = config.interEventDelayUs === undefined && eventsPerSecond !== undefined
      ? { ...config, interEventDelayUs: 1e6 / eventsPerSecond }
      : config;
    new NexmarkGenerator(this.config); // validates the knobs now rather than in every reader
    this.events = events;
    this.eventsPerSecond = eventsPerSecond;
    this.batchSize = batch;
    this.boundedness = events === Number.POSITIVE_INFINITY ? "continuous-unbounded" : "bounded";
  }

  /**
   * `parallelism` interleaved splits: split `i` starts at event `i` and steps
   * by `parallelism`. Splits starting at or past `events` are returned too
   * (already finished), so split `i` always goes to subtask `i`.
   * @throws {RangeError} when `parallelism` is not a positive integer.
   */
  enumerateSplits(context: SplitEnumeratorContext): NexmarkSplit[] {
    return interleavedSplits("NexmarkSource", "nexmark", context.parallelism, 0)
      .map((split) => ({ ...split, events: this.events }));
  }

  /** Creates the reader of one source subtask; its rate is `eventsPerSecond / parallelism`. */
  createReader(context: SourceReaderContext): SourceReader<NexmarkEvent, NexmarkSplit> {
    const rate = this.eventsPerSecond === undefined
      ? undefined
      : this.eventsPerSecond / context.parallelism;
    return new NexmarkReader(context, new NexmarkGenerator(this.config), this.batchSize, rate);
  }
}

/** Emits the Nexmark event of each number of its splits, stamped with its event time. */
class NexmarkReader extends InterleavedReader<NexmarkEvent, NexmarkSplit> {
  readonly #generator: NexmarkGenerator;

  constructor(
    context: SourceReaderContext,
    generator: NexmarkGenerator,
    batchSize: number,
    rate: number | undefined,
  ) {
    super(context, "NexmarkSource", batchSize, rate);
    this.#generator = generator;
  }

  protected toRange({ splitId, next, step, events }: NexmarkSplit): InterleavedRange | undefined {
    if (!(next >= 0)) return undefined;
    return { splitId, next, step, last: events - 1 };
  }

  protected fromRange({ splitId, next, step, last }: InterleavedRange): NexmarkSplit {
    return { splitId, next, step, events: last + 1 };
  }

  protected emit(n: number, output: SourceOutput<NexmarkEvent>): void {
    const generator = this.#generator;
    output.collect(generator.event(n), generator.timestampOf(n));
  }
}
