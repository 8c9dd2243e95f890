/**
 * A deterministic source for tests, with markers that script failures,
 * checkpoints, pauses and the end of input (after Bytewax's `TestingSource`
 * with its `EOF`/`ABORT` markers).
 *
 * ```ts ignore
 * const source = TestSource.of([
 *   1, 2, 3, 4, 5,
 *   TestSource.awaitCheckpoint(), // nothing more until a checkpoint covering 1..5 completed
 *   6,
 *   TestSource.fail("crash while 7 is in flight"), // throws on attempt 0 only
 *   7, 8,
 * ]);
 * ```
 *
 * ## Splits and positions
 *
 * Each list of items is one split (`test-<i>` for list `i`); with the static
 * assignment of splits, list `i` goes to source subtask `i % parallelism`. A
 * split's position is the index of its next item, markers included, and
 * everything a marker needs is derived from the position and the split, so a
 * restore continues exactly after the checkpoint. Each split emits through
 * its own split output (created at the first poll after the split was
 * added, released when the split ends), so each has its own watermarks.
 *
 * ## Markers
 *
 * - {@linkcode TestSource.fail}: throws {@linkcode InducedFailure} when
 *   reached on the given execution attempt; skipped on any other attempt.
 * - {@linkcode TestSource.awaitCheckpoint}: emits nothing more from this
 *   split until a checkpoint whose snapshot holds this split at (or after)
 *   this position has completed. The reader remembers the positions it
 *   snapshotted per checkpoint id and learns of completion from
 *   `notifyCheckpointComplete` (completing *n* completes every earlier one).
 *   A split restored at the marker has passed it: the checkpoint it was
 *   restored from completed.
 * - {@linkcode TestSource.eof}: ends the split here, even if items follow.
 * - {@linkcode TestSource.timestamped}: emits a value with an event timestamp.
 * - {@linkcode TestSource.pause}: emits nothing from this split for `ms` of
 *   processing time (read from the reader context), counted from when the
 *   reader first reaches it; a restore at the marker pauses again in full.
 *
 * ## Invariants
 *
 * - `pollNext` emits at most `batchSize` records (default 1, so a checkpoint
 *   barrier can fall between any two records), taking turns between splits;
 *   a call that returns `END_OF_INPUT` emits nothing.
 * - Bounded (the default): a split ends after its last item, and the reader
 *   returns `END_OF_INPUT` when all its splits ended. Unbounded: a split
 *   stays open (idle) after its last item and ends only at an `eof` marker;
 *   a reader whose splits all met `eof` still returns `END_OF_INPUT`.
 * - `isAvailable` resolves when a split may progress: when a checkpoint
 *   notification releases an `awaitCheckpoint`, when a pause ends (on the
 *   context's `clock`), or on `close`. An idle unbounded reader's promise
 *   stays pending until `close`.
 *
 * @module
 */

import type {
  Boundedness,
  InputStatus,
  ReaderOutput,
  Source,
  SourceOutput,
  SourceReader,
  SourceReaderContext,
  SourceSplit,
  SplitEnumeratorContext,
} from "../../runtime/api/source.ts";
import { sleepUntil } from "../../runtime/time/clock.ts";

/** What a {@linkcode TestMarker} does; see the module docs. */
export type TestMarkerSpec =
  | { readonly kind: "fail"; readonly message: string; readonly attempt: number }
  | { readonly kind: "await-checkpoint" }
  | { readonly kind: "eof" }
  | { readonly kind: "timestamped"; readonly value: unknown; readonly timestamp: number }
  | { readonly kind: "pause"; readonly ms: number };

/**
 * A scripted event among a {@linkcode TestSource}'s items. Make them with
 * the factories on {@linkcode TestSource}; `V` is the type of the value a
 * `timestamped` marker emits (`never` for the others).
 */
export class TestMarker<out V = never> {
  /** What the marker does. */
  readonly spec: TestMarkerSpec;
  /** Carries `V` for type inference only; never set. */
  declare readonly valueType?: V;
  /**
   * Creates a marker; prefer the factories on {@linkcode TestSource}.
   * @param spec what the marker does.
   */
  constructor(spec: TestMarkerSpec) {
    this.spec = spec;
  }
}

/** Where an {@linkcode InducedFailure} happened. */
export interface InducedFailureOptions {
  /** The execution attempt it failed on. */
  readonly attempt: number;
  /** The split. */
  readonly splitId: string;
  /** The marker's index in the split. */
  readonly position: number;
  /** The source operator's name. */
  readonly operatorName: string;
}

/**
 * The failure a {@linkcode TestSource.fail} marker throws. Its message is the
 * marker's message followed by where it happened, e.g.
 * `crash (TestSource numbers, split test-0, position 6, attempt 0)`.
 */
export class InducedFailure extends Error {
  /** The execution attempt it failed on. */
  readonly attempt: number;
  /** The split. */
  readonly splitId: string;
  /** The marker's index in the split. */
  readonly position: number;

  /**
   * Creates the failure of a `fail` marker.
   * @param message the marker's message.
   * @param options where it happened.
   */
  constructor(message: string, options: InducedFailureOptions) {
    super(
      `${message} (TestSource ${options.operatorName}, split ${options.splitId}, position ${options.position}, attempt ${options.attempt})`,
    );
    this.name = "InducedFailure";
    this.attempt = options.attempt;
    this.splitId = options.splitId;
    this.position = options.position;
  }
}

/** One list of a {@linkcode TestSource}. Plain data, MessagePack-encodable. */
export interface TestSplit extends SourceSplit {
  /** `test-<i>`. */
  readonly splitId: string;
  /** The index of the split's list. */
  readonly list: number;
  /** The index of the next item (markers count). */
  readonly position: number;
  /** True when the split comes from a snapshot: `position` is covered by a completed checkpoint once restored. */
  readonly fromCheckpoint: boolean;
}

/** Options of {@linkcode TestSource.of} and {@linkcode TestSource.perSubtask}. */
export interface TestSourceOptions {
  /** End each split after its last item (default true); else stay idle there. */
  readonly bounded?: boolean;
  /** Records per `pollNext` call at most (default 1). */
  readonly batchSize?: number;
}

/** An item of a {@linkcode TestSource}: a record or a marker. */
export type TestItem<T> = T | TestMarker<T>;

/**
 * A deterministic, checkpointable source of scripted items (see the module
 * docs). Exactly-once with checkpoints: positions are item indexes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ManualClock } from "../../runtime/time/manual_clock.ts";
 * import { RecordingReaderOutput } from "./reader_output.ts";
 * import { TestSource } from "./test_source.ts";
 *
 * const source = TestSource.of([1, 2, TestSource.eof(), 3]);
 * const reader = source.createReader({
 *   subtaskIndex: 0,
 *   parallelism: 1,
 *   attempt: 0,
 *   operatorName: "numbers",
 *   currentProcessingTime: () => 0,
 *   clock: new ManualClock(),
 * });
 * reader.addSplits(source.enumerateSplits({ parallelism: 1 }));
 * const output = new RecordingReaderOutput<number>();
 * while (reader.pollNext(output) !== "END_OF_INPUT");
 * assert.deepEqual(output.recordsOf("test-0"), [1, 2]);
 * ```
 */
export class TestSource<T> implements Source<T, TestSplit> {
  /** `"bounded"` unless created with `bounded: false`. */
  readonly boundedness: Boundedness;
  /** The items of each split. */
  readonly lists: ReadonlyArray<ReadonlyArray<TestItem<T>>>;
  /** Records per `pollNext` call at most. */
  readonly batchSize: number;

  private constructor(
    lists: ReadonlyArray<ReadonlyArray<TestItem<T>>>,
    options: TestSourceOptions,
  ) {
    const batchSize = options.batchSize ?? 1;
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new RangeError(
        `Cannot create a TestSource as 'batchSize' must be a positive integer: current value is ${batchSize}`,
      );
    }
    this.lists = lists.map((list) => [...list]);
    this.batchSize = batchSize;
    this.boundedness = options.bounded === false ? "continuous-unbounded" : "bounded";
  }

  /**
   * A source with one split holding `items`.
   * @param items records and markers, in order (the array is copied).
   * @param options see {@linkcode TestSourceOptions}.
   * @throws {RangeError} when `batchSize` is not a positive integer.
   */
  static of<T>(items: ReadonlyArray<TestItem<T>>, options: TestSourceOptions = {}): TestSource<T> {
    return new TestSource<T>([items], options);
  }

  /**
   * A source with one split per list; list `i` is split `test-<i>` and goes
   * to source subtask `i` when there are as many lists as subtasks.
   * @param lists the items of each split (copied).
   * @param options see {@linkcode TestSourceOptions}.
   * @throws {RangeError} when `batchSize` is not a positive integer.
   */
  static perSubtask<T>(
    lists: ReadonlyArray<ReadonlyArray<TestItem<T>>>,
    options: TestSourceOptions = {},
  ): TestSource<T> {
    return new TestSource<T>(lists, options);
  }

  /**
   * A marker that throws {@linkcode InducedFailure} with `message` when the
   * reader reaches it on execution attempt `attempt` (default 0), and is
   * skipped on every other attempt.
   * @throws {RangeError} when `attempt` is not a non-negative integer.
   */
  static fail(message: string, options: { readonly attempt?: number } = {}): TestMarker {
    const attempt = options.attempt ?? 0;
    if (!Number.isInteger(attempt) || attempt < 0) {
      throw new RangeError(
        `Cannot create a fail marker as 'attempt' must be a non-negative integer: current value is ${attempt}`,
      );
    }
    return new TestMarker({ kind: "fail", message, attempt });
  }

  /** A marker that holds the split until a checkpoint taken at or after it has completed. */
  static awaitCheckpoint(): TestMarker {
    return new TestMarker({ kind: "await-checkpoint" });
  }

  /** A marker that ends the split, even if items follow. */
  static eof(): TestMarker {
    return new TestMarker({ kind: "eof" });
  }

  /**
   * A marker that emits `value` with event timestamp `timestamp` (ms).
   * @throws {RangeError} when `timestamp` is not a finite number.
   */
  static timestamped<V>(value: V, timestamp: number): TestMarker<V> {
    if (!Number.isFinite(timestamp)) {
      throw new RangeError(
        `Cannot create a timestamped marker as 'timestamp' must be a finite number: current value is ${timestamp}`,
      );
    }
    return new TestMarker<V>({ kind: "timestamped", value, timestamp });
  }

  /**
   * A marker that holds the split for `ms` of processing time.
   * @throws {RangeError} when `ms` is negative or not finite.
   */
  static pause(ms: number): TestMarker {
    if (!(Number.isFinite(ms) && ms >= 0)) {
      throw new RangeError(
        `Cannot create a pause marker as 'ms' must be a non-negative number: current value is ${ms}`,
      );
    }
    return new TestMarker({ kind: "pause", ms });
  }

  /** One split per list, `test-<i>`, at position 0 (independent of parallelism). */
  enumerateSplits(_context: SplitEnumeratorContext): TestSplit[] {
    return this.lists.map((_, i) => ({
      splitId: `test-${i}`,
      list: i,
      position: 0,
      fromCheckpoint: false,
    }));
  }

  /** Creates the reader of one source subtask. */
  createReader(context: SourceReaderContext): SourceReader<T, TestSplit> {
    return new TestSourceReader(this, context);
  }
}

interface SplitState<T> {
  readonly splitId: string;
  readonly list: number;
  readonly items: ReadonlyArray<TestItem<T>>;
  /** The split's output, created at the first `pollNext` after the split was added. */
  output: SourceOutput<T> | undefined;
  position: number;
  /** The highest position of this split that a completed checkpoint covers (-1: none). */
  completedThrough: number;
  /** When the pause at `position` ends, once the reader reached it. */
  pauseUntil: number | undefined;
}

type Step = "emitted" | "progressed" | "blocked" | "ended";

/** Why a split cannot progress now, or undefined when it can. */
type Blocked = { readonly until: "checkpoint" | "idle" } | {
  readonly until: "time";
  readonly atMs: number;
};

class TestSourceReader<T> implements SourceReader<T, TestSplit> {
  readonly #source: TestSource<T>;
  readonly #context: SourceReaderContext;
  readonly #bounded: boolean;
  /** Splits not ended, in assignment order. */
  #active: SplitState<T>[] = [];
  #assigned = 0;
  #cursor = 0;
  /** Positions per split at each checkpoint this reader snapshotted and has not yet seen complete. */
  #snapshots = new Map<number, Array<readonly [string, number]>>();
  #waiter: { readonly promise: Promise<void>; readonly wake: () => void } | undefined;
  #closed = false;

  constructor(source: TestSource<T>, context: SourceReaderContext) {
    this.#source = source;
    this.#context = context;
    this.#bounded = source.boundedness === "bounded";
  }

  addSplits(splits: TestSplit[]): void {
    for (const { splitId, list, position, fromCheckpoint } of splits) {
      const items = this.#source.lists[list];
      if (
        items === undefined || !Number.isInteger(position) || position < 0 ||
        position > items.length
      ) {
        throw new Error(
          `Cannot add split ${splitId} to TestSource ${this.#context.operatorName}: list ${list} at position ${position} does not exist (the source has ${this.#source.lists.length} lists)`,
        );
      }
      this.#assigned++;
      this.#active.push({
        splitId,
        list,
        items,
        position,
        completedThrough: fromCheckpoint ? position : -1,
        pauseUntil: undefined,
        output: undefined,
      });
    }
  }

  pollNext(output: ReaderOutput<T>): InputStatus {
    for (const split of this.#active) split.output ??= output.createOutputForSplit(split.splitId);
    let emitted = 0;
    let stuck = 0;
    while (emitted < this.#source.batchSize && this.#active.length > 0) {
      if (stuck >= this.#active.length) break;
      if (this.#cursor >= this.#active.length) this.#cursor = 0;
      const split = this.#active[this.#cursor]!;
      switch (this.#step(split, split.output!)) {
        case "emitted":
          emitted++;
          stuck = 0;
          this.#cursor++;
          break;
        case "progressed":
          stuck = 0;
          break;
        case "blocked":
          stuck++;
          this.#cursor++;
          break;
        case "ended":
          stuck = 0;
          this.#active.splice(this.#cursor, 1);
          output.releaseOutputForSplit(split.splitId);
          break;
      }
    }
    if (emitted > 0) return "MORE_AVAILABLE";
    if (this.#active.length === 0 && (this.#bounded || this.#assigned > 0)) return "END_OF_INPUT";
    return "NOTHING_AVAILABLE";
  }

  isAvailable(): Promise<void> {
    if (this.#waiter !== undefined) return this.#waiter.promise;
    if (this.#active.length === 0 && (this.#bounded || this.#assigned > 0)) {
      return Promise.resolve(); // pollNext reports the end
    }
    let wakeAt = Number.POSITIVE_INFINITY;
    for (const split of this.#active) {
      const blocked = this.#blocked(split);
      if (blocked === undefined) return Promise.resolve();
      if (blocked.until === "time") wakeAt = Math.min(wakeAt, blocked.atMs);
    }
    if (this.#closed) return Promise.resolve();
    let resolve!: () => void;
    const promise = new Promise<void>((r) => resolve = r);
    const sleep = wakeAt === Number.POSITIVE_INFINITY
      ? undefined
      : sleepUntil(this.#context.clock, wakeAt);
    const waiter = {
      promise,
      wake: () => {
        if (this.#waiter === waiter) this.#waiter = undefined;
        sleep?.cancel();
        resolve();
      },
    };
    sleep?.promise.then(waiter.wake);
    this.#waiter = waiter;
    return promise;
  }

  snapshotState(checkpointId: number): TestSplit[] {
    this.#snapshots.set(
      checkpointId,
      this.#active.map((split) => [split.splitId, split.position] as const),
    );
    return this.#active.map(({ splitId, list, position }) => ({
      splitId,
      list,
      position,
      fromCheckpoint: true,
    }));
  }

  notifyCheckpointComplete(checkpointId: number): void {
    for (const [id, positions] of this.#snapshots) {
      if (id > checkpointId) continue;
      this.#snapshots.delete(id);
      for (const [splitId, position] of positions) {
        const split = this.#active.find((s) => s.splitId === splitId);
        if (split !== undefined && position > split.completedThrough) {
          split.completedThrough = position;
        }
      }
    }
    if (this.#active.some((split) => this.#blocked(split) === undefined)) this.#waiter?.wake();
  }

  close(): void {
    this.#closed = true;
    this.#waiter?.wake();
  }

  /** Handles the item at the split's position, emitting into the split's output. */
  #step(split: SplitState<T>, output: SourceOutput<T>): Step {
    const { position, items } = split;
    if (position >= items.length) return this.#bounded ? "ended" : "blocked";
    const item = items[position];
    if (!(item instanceof TestMarker)) {
      split.position++;
      output.collect(item as T);
      return "emitted";
    }
    const spec = item.spec;
    switch (spec.kind) {
      case "timestamped":
        split.position++;
        output.collect(spec.value as T, spec.timestamp);
        return "emitted";
      case "eof":
        return "ended";
      case "fail":
        if (spec.attempt === this.#context.attempt) {
          throw new InducedFailure(spec.message, {
            attempt: this.#context.attempt,
            splitId: split.splitId,
            position,
            operatorName: this.#context.operatorName,
          });
        }
        split.position++;
        return "progressed";
      case "await-checkpoint":
        if (split.completedThrough < position) return "blocked";
        split.position++;
        return "progressed";
      case "pause": {
        const now = this.#context.currentProcessingTime();
        split.pauseUntil ??= now + spec.ms;
        if (now < split.pauseUntil) return "blocked";
        split.pauseUntil = undefined;
        split.position++;
        return "progressed";
      }
    }
  }

  /** Why `split` cannot progress now (without changing it), or undefined if it can. */
  #blocked(split: SplitState<T>): Blocked | undefined {
    const { position, items } = split;
    if (position >= items.length) return this.#bounded ? undefined : { until: "idle" };
    const item = items[position];
    if (!(item instanceof TestMarker)) return undefined;
    const spec = item.spec;
    if (spec.kind === "await-checkpoint" && split.completedThrough < position) {
      return { until: "checkpoint" };
    }
    if (spec.kind === "pause" && split.pauseUntil !== undefined) {
      const now = this.#context.currentProcessingTime();
      if (now < split.pauseUntil) return { until: "time", atMs: split.pauseUntil };
    }
    return undefined;
  }
}
