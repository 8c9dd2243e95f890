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
 * Assignment is static for now: every source subtask calls
 * {@linkcode Source.enumerateSplits} on the first start of the job and takes
 * the splits whose index `i` satisfies `i % parallelism == subtaskIndex`;
 * `enumerateSplits` must therefore be deterministic. On restore, the splits
 * come from the checkpoint (split-redistributed operator list state), not
 * from `enumerateSplits`. A dynamic split enumerator on the coordinator
 * (discovering new partitions at run time) is not part of this interface yet.
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
}
