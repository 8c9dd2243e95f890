/**
 * The source interface connectors implement, after Flink's FLIP-27 split
 * model: a source is cut into *splits* (a file, a stream partition, a range
 * of a generator), each read by a {@linkcode SourceReader} inside one source
 * subtask. A reader's checkpointed state is the list of its splits with their
 * current positions, so a restore resumes each split right after the last
 * record that the restored checkpoint covers.
 *
 * ## Split assignment
 *
 * A source without {@linkcode Source.splitDiscovery} has static splits:
 * every source subtask calls {@linkcode Source.enumerateSplits} on the first
 * start of the job and takes the splits whose index `i` satisfies
 * `i % parallelism == subtaskIndex`; `enumerateSplits` must therefore be
 * deterministic. On restore, the splits come from the checkpoint
 * (split-redistributed operator list state), not from `enumerateSplits`.
 *
 * ## Split discovery
 *
 * A source with {@linkcode Source.splitDiscovery} finds splits that appear
 * while the job runs (a new subject, a new partition), the way Flink's
 * `FlinkKafkaConsumer` discovers partitions in every subtask
 * (`AbstractPartitionDiscoverer`, `KafkaTopicPartitionAssigner`) and Flink's
 * `KafkaSource` does periodically (`partition.discovery.interval.ms`). There
 * is no enumerator on the coordinator: ownership is a pure function, so
 * every subtask decides on its own, and alike, who reads what
 * (`split_assignment.ts`):
 *
 * - A split is owned by subtask `splitOwner(splitId, parallelism)` (a hash
 *   of the id modulo the parallelism), at the first start, at every
 *   discovery and at every restore. The owner depends on nothing else, so
 *   it is stable across restarts and is the same in every subtask.
 * - Splits are checkpointed as *union* operator list state: on restore every
 *   subtask sees every checkpointed split and keeps those it owns at the new
 *   parallelism, so a resume at another parallelism (1→3, 3→1) hands each
 *   split, with its position, to exactly one subtask.
 * - Every `intervalMs` (processing time, on the job's clock) each subtask
 *   calls its {@linkcode SplitDiscoverer}; of the splits it returns, the
 *   subtask adds the ones it owns and does not hold yet to its reader
 *   (`addSplits`), on the mailbox thread. A discovered split carries the
 *   position a *new* split starts from (e.g. a subject's first message:
 *   records published before the discovery must not be lost).
 * - A split discovered after the last checkpoint is in no checkpoint; after
 *   a failure it is discovered again and read again from its start, while
 *   everything downstream rolls back to that checkpoint too: exactly once.
 * - Discovery runs only for continuous-unbounded sources and only while the
 *   subtask runs; `intervalMs` 0 keeps owner assignment and union restore
 *   but discovers nothing after the first start.
 * - A discovery that fails (throws) fails the attempt, as a failing split
 *   enumerator fails a Flink job; the restart strategy decides what follows.
 *
 * ## Watermarks per split
 *
 * A reader emits each split's records through
 * `output.createOutputForSplit(splitId)` and releases that output when the
 * split is finished (Flink's FLIP-27 split-local outputs): each split then
 * has its own watermark generator and idleness, and one split far ahead in
 * event time does not make the others' records late. A source subtask that
 * owns no split is idle from the start; if the source is unbounded, its
 * reader is never polled and it never ends, so it emits no end-of-time
 * watermark.
 *
 * ## Threading
 *
 * All reader methods run on the subtask's mailbox loop, never concurrently.
 *
 * @module
 */

import type { OutputTag } from "./output_tag.ts";
import type { Clock } from "../time/clock.ts";
import type { WatermarkOutput } from "../time/watermark.ts";

/** Whether a source ends. A bounded job finishes when all its sources end. */
export type Boundedness = "bounded" | "continuous-unbounded";

/** A piece of a source's input. It must be MessagePack-encodable: it is checkpointed. */
export interface SourceSplit {
  /** Identifies the split, stable across restores (e.g. a file path, a partition). */
  readonly splitId: string;
}

/** What the source gets when it enumerates its splits. */
export interface SplitEnumeratorContext {
  /** The source operator's parallelism. */
  readonly parallelism: number;
}

/** What a reader gets when it is created. */
export interface SourceReaderContext {
  /** This source subtask's index. */
  readonly subtaskIndex: number;
  /** The source's parallelism. */
  readonly parallelism: number;
  /** The execution attempt (0 first, +1 per restart). */
  readonly attempt: number;
  /** The source operator's name, for error messages. */
  readonly operatorName: string;
  /** The current processing time, in ms (`clock.now()`). */
  currentProcessingTime(): number;
  /** The job's processing-time clock: wake-ups for rate limits and pauses go through it. */
  readonly clock: Clock;
}

/** What {@linkcode SourceReader.pollNext} reports. */
export type InputStatus = "MORE_AVAILABLE" | "NOTHING_AVAILABLE" | "END_OF_INPUT";

/**
 * Where a reader emits the records of one split (Flink's `SourceOutput`).
 * Each split output runs its own watermark generator and idleness check
 * (from the source's `WatermarkStrategy`); the source subtask emits the
 * minimum watermark over its active split outputs. A record makes its split
 * active again.
 *
 * The watermark methods let a source that knows its event-time progress
 * (e.g. from the broker) emit it directly, as `WatermarkOutput` allows in
 * Flink: `emitWatermark` advances this split's watermark (ms; one not above
 * the split's last is ignored), `markIdle` leaves the split out of the
 * minimum until it is active again.
 */
export interface SourceOutput<T> extends WatermarkOutput {
  /**
   * Emits one record, with an event timestamp in ms when the source has one
   * (the strategy's timestamp assigner may replace it).
   */
  collect(record: T, timestamp?: number): void;
}

/**
 * Where a reader emits records (Flink's `ReaderOutput`). A reader that
 * reads splits emits each split's records through the output
 * `createOutputForSplit(splitId)` returns, so that every split gets its own
 * watermarks; records collected on this main output count as one more
 * "split" of their own from the first such record on. The runtime passes
 * the same `ReaderOutput` to every `pollNext` of a reader, so a reader may
 * keep the split outputs it created.
 */
export interface ReaderOutput<T> extends SourceOutput<T> {
  /**
   * Emits `value` to a side output, e.g. a dead-letter record for input the
   * reader could not parse.
   */
  output<X>(tag: OutputTag<X>, value: X): void;
  /**
   * The output of split `splitId`, created on the first call (later calls
   * return the same output until it is released). A split restored from a
   * checkpoint resumes the watermark (and generator state) it had then.
   */
  createOutputForSplit(splitId: string): SourceOutput<T>;
  /**
   * Releases the output of split `splitId` once the split is finished: it no
   * longer counts in the subtask's watermark. Releasing a split without an
   * output does nothing.
   */
  releaseOutputForSplit(splitId: string): void;
}

/**
 * Reads the splits assigned to one source subtask (Flink's `SourceReader`).
 *
 * `pollNext` is called again and again from the mailbox loop while the
 * subtask's outputs have credit. It should emit a bounded batch (up to about
 * a thousand records) and return; it must not block.
 */
export interface SourceReader<T, Split extends SourceSplit> {
  /** Called once before the first `addSplits`. */
  start?(): void | Promise<void>;
  /** Assigns splits (fresh, or restored with their positions). */
  addSplits(splits: Split[]): void;
  /**
   * Emits available records into `output`.
   * @returns `MORE_AVAILABLE` to be called again at once, `NOTHING_AVAILABLE`
   *   to be called again after {@linkcode SourceReader.isAvailable} resolves,
   *   or `END_OF_INPUT` when every split is exhausted (bounded sources only).
   * @throws any error; it fails the job's attempt (recovery follows the restart strategy).
   */
  pollNext(output: ReaderOutput<T>): InputStatus | Promise<InputStatus>;
  /** Resolves when `pollNext` may have records again. Defaults to a short wait. */
  isAvailable?(): Promise<void>;
  /**
   * The reader's splits with their current positions: everything emitted so
   * far is before these positions. Called in the synchronous part of a
   * checkpoint, so the positions match the barrier exactly.
   */
  snapshotState(checkpointId: number): Split[];
  /** Checkpoint `checkpointId` completed. */
  notifyCheckpointComplete?(checkpointId: number): void | Promise<void>;
  /** Releases resources. Called once on finish or cancel. */
  close?(): void | Promise<void>;
}

/**
 * Finds the splits that exist now, for one source subtask (Flink's
 * `AbstractPartitionDiscoverer`). Created once per subtask attempt; calls
 * never overlap.
 */
export interface SplitDiscoverer<Split extends SourceSplit> {
  /**
   * Every split that exists now, each at the position a newly discovered
   * split starts from (split ids as `enumerateSplits` gives them). The
   * runtime keeps those the subtask owns and does not hold yet.
   * @throws any error; it fails the attempt (see "Split discovery").
   */
  discoverSplits(): Split[] | Promise<Split[]>;
  /** Releases resources (a connection). Called once when the subtask closes. */
  close?(): void | Promise<void>;
}

/** Owner assignment and periodic discovery of a source; see "Split discovery" in the module docs. */
export interface SplitDiscovery<Split extends SourceSplit> {
  /**
   * Processing time between the end of one discovery and the start of the
   * next, in ms (an integer ≥ 0); 0 discovers nothing after the first
   * start (owner assignment and union restore still apply).
   */
  readonly intervalMs: number;
  /** Creates the discoverer of one source subtask (no I/O until its first call). */
  createDiscoverer(context: SourceReaderContext): SplitDiscoverer<Split>;
}

/** A source of records of type `T`, cut into splits (Flink's `Source`). */
export interface Source<T, Split extends SourceSplit = SourceSplit> {
  /** Whether the source ends. */
  readonly boundedness: Boundedness;
  /**
   * The source's splits on the first start of the job. Deterministic: every
   * source subtask calls it and keeps its share.
   */
  enumerateSplits(context: SplitEnumeratorContext): Split[] | Promise<Split[]>;
  /** Creates the reader of one source subtask. */
  createReader(context: SourceReaderContext): SourceReader<T, Split>;
  /**
   * When present, splits are owned by hash and may be discovered at run
   * time (see "Split discovery" in the module docs); when absent, splits are
   * static and spread round-robin.
   */
  readonly splitDiscovery?: SplitDiscovery<Split>;
}
